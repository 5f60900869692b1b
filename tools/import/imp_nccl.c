/*
 * NCCL topology XML (what NCCL_TOPO_DUMP_FILE writes, or a hand-written
 * NCCL_TOPO_FILE): system > cpu > pci... > gpu (> nvlink, c2c) and nic >
 * net; and RCCL's, the same with AMD's fields (gpu's gcn, > xgmi). One
 * file is one host. GPUs are numbered by their `dev`; NVLink (or xGMI)
 * counts per peer times the generation's per-link rate (preset from `sm`,
 * RCCL's `gcn`, or --gpu) give the fabric, PCIe switches and link width x
 * speed give a PCIe fabric when there is neither, and each GPU's nearest
 * NICs (PCIe tree distance) serve it (imp_nics.c). A GPU's C2C link to its
 * CPU (Grace) carries no collective traffic: read, not modelled.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "imp.h"
#include "xml.h"

#define MAX_GPUS 64
#define MAX_NETS 64

typedef struct {
    const char *file;
    char *err;
    const hccn_xml_el_t *gpu[MAX_GPUS], *net[MAX_NETS];
    int ngpus, nnets;
} host_t;

static const char *const a_system[] = {"version", NULL};
static const char *const a_cpu[] = {"numaid", "affinity", "arch", "vendor",
                                    "familyid", "modelid", "host_hash", NULL};
static const char *const a_pci[] = {
    "busid", "class", "vendor", "device", "subsystem_vendor",
    "subsystem_device", "link_speed", "link_width", NULL};
static const char *const a_gpu[] = {"dev", "sm", "rank", "gdr", "arch", "gcn",
                                    NULL};
static const char *const a_nvlink[] = {"target", "count", "tclass", NULL};
static const char *const a_c2c[] = {"count", "bw", NULL};
static const char *const a_nic[] = {NULL};
static const char *const a_net[] = {"name", "dev", "speed", "port", "latency",
                                    "guid", "maxconn", "gdr", "coll", NULL};

static int need_attr(host_t *h, const hccn_xml_el_t *e, const char *a,
                     const char **out)
{
    if ((*out = hccn_xml_get(e, a)) != NULL)
        return 0;
    return hccn_imp_fail(h->err, "%s:%d: <%s>: attribute '%s' is required",
                         h->file, e->line, e->name, a);
}

static int int_attr(host_t *h, const hccn_xml_el_t *e, const char *a, long lo,
                    long hi, long *out)
{
    const char *v;
    char *end;
    if (need_attr(h, e, a, &v))
        return -1;
    *out = strtol(v, &end, 0);
    if (end == v || *end != '\0' || *out < lo || *out > hi)
        return hccn_imp_fail(h->err, "%s:%d: <%s>: %s=\"%s\": must be an "
                             "integer in %ld..%ld", h->file, e->line, e->name,
                             a, v, lo, hi);
    return 0;
}

/* Which children each element may have; elements are checked as walked. */
static int check_el(host_t *h, const hccn_xml_el_t *e)
{
    const char *p = e->parent ? e->parent->name : "";
    const char *const *attrs = NULL;
    int ok = 0;
    if (!strcmp(e->name, "system"))
        ok = e->parent == NULL, attrs = a_system;
    else if (!strcmp(e->name, "cpu"))
        ok = !strcmp(p, "system"), attrs = a_cpu;
    else if (!strcmp(e->name, "pci"))
        ok = !strcmp(p, "cpu") || !strcmp(p, "pci"), attrs = a_pci;
    else if (!strcmp(e->name, "gpu"))
        ok = !strcmp(p, "pci"), attrs = a_gpu;
    else if (!strcmp(e->name, "nvlink") || !strcmp(e->name, "xgmi"))
        ok = !strcmp(p, "gpu"), attrs = a_nvlink;
    else if (!strcmp(e->name, "c2c"))
        ok = !strcmp(p, "gpu"), attrs = a_c2c;
    else if (!strcmp(e->name, "nic"))
        ok = !strcmp(p, "pci") || !strcmp(p, "cpu"), attrs = a_nic;
    else if (!strcmp(e->name, "net"))
        ok = !strcmp(p, "nic"), attrs = a_net;
    if (!ok)
        return hccn_imp_fail(h->err, "%s:%d: <%s>: %s", h->file, e->line,
                             e->name, attrs ? "not allowed here" :
                             "unknown element (system, cpu, pci, gpu, "
                             "nvlink, xgmi, c2c, nic, net)");
    return hccn_xml_allow(e, attrs, h->file, h->err);
}

static int walk(host_t *h, const hccn_xml_el_t *e)
{
    if (check_el(h, e))
        return -1;
    if (!strcmp(e->name, "gpu")) {
        if (h->ngpus == MAX_GPUS)
            return hccn_imp_fail(h->err, "%s:%d: <gpu>: more than %d GPUs",
                                 h->file, e->line, MAX_GPUS);
        h->gpu[h->ngpus++] = e;
    } else if (!strcmp(e->name, "net")) {
        if (h->nnets == MAX_NETS)
            return hccn_imp_fail(h->err, "%s:%d: <net>: more than %d NICs",
                                 h->file, e->line, MAX_NETS);
        h->net[h->nnets++] = e;
    }
    for (int i = 0; i < e->nkids; i++)
        if (walk(h, e->kids[i]))
            return -1;
    return 0;
}

/* GPUs in `dev` order; devs must be 0..n-1. */
static int order_gpus(host_t *h)
{
    const hccn_xml_el_t *by_dev[MAX_GPUS] = {0};
    for (int g = 0; g < h->ngpus; g++) {
        long dev;
        const char *bus;
        if (int_attr(h, h->gpu[g], "dev", 0, h->ngpus - 1, &dev) ||
            need_attr(h, h->gpu[g]->parent, "busid", &bus))
            return -1;
        if (by_dev[dev] != NULL)
            return hccn_imp_fail(h->err, "%s:%d: <gpu>: dev %ld repeats line "
                                 "%d", h->file, h->gpu[g]->line, dev,
                                 by_dev[dev]->line);
        by_dev[dev] = h->gpu[g];
    }
    memcpy(h->gpu, by_dev, sizeof(by_dev[0]) * (size_t)h->ngpus);
    return 0;
}

static int depth(const hccn_xml_el_t *e)
{
    int d = 0;
    for (; e; e = e->parent)
        d++;
    return d;
}

/* The PCIe distance NCCL ranks NICs by: first whether the path stays under
 * a PCIe switch (PIX/PXB), goes through a CPU (PHB) or between CPUs (SYS),
 * then the elements crossed. */
static double tree_distance(const hccn_xml_el_t *a, const hccn_xml_el_t *b)
{
    int da = depth(a), db = depth(b), d = 0;
    for (; da > db; da--, d++)
        a = a->parent;
    for (; db > da; db--, d++)
        b = b->parent;
    for (; a != b; d += 2) {
        a = a->parent;
        b = b->parent;
    }
    return d + (!strcmp(a->name, "pci") ? 0 : !strcmp(a->name, "cpu") ? 1000
                                                                      : 2000);
}

/* Per direction, from link_speed ("16.0 GT/s PCIe") x link_width: 8b/10b
 * below 8 GT/s, 128b/130b from 8 GT/s (PCIe 3.0) on. 0 when not given. */
static double pcie_GBps(const hccn_xml_el_t *e)
{
    const char *sp = hccn_xml_get(e, "link_speed");
    const char *w = hccn_xml_get(e, "link_width");
    double gt = sp ? strtod(sp, NULL) : 0, width = w ? strtod(w, NULL) : 0;
    if (!(gt > 0 && gt <= 256 && width >= 1 && width <= 32))
        return 0;
    return hccn_imp_round(gt * width * (gt >= 8 ? 128.0 / 130 : 0.8) / 8);
}

static int busid_of(host_t *h, int g, const char **out)
{
    return need_attr(h, h->gpu[g]->parent, "busid", out);
}

/* NVLink (or xGMI) counts: links[a*n+b] to GPU peers, sw[a] to
 * NVSwitches. */
static int read_nvlinks(host_t *h, int *links, int *sw)
{
    for (int a = 0; a < h->ngpus; a++)
        for (int k = 0; k < h->gpu[a]->nkids; k++) {
            const hccn_xml_el_t *l = h->gpu[a]->kids[k];
            const char *target, *tclass = hccn_xml_get(l, "tclass"), *bus;
            long count;
            if (!strcmp(l->name, "c2c"))
                continue;
            if (need_attr(h, l, "target", &target) ||
                int_attr(h, l, "count", 1, 64, &count))
                return -1;
            int b = 0;
            for (; b < h->ngpus; b++)
                if (busid_of(h, b, &bus) == 0 && !strcasecmp(bus, target))
                    break;
            if (b < h->ngpus && b != a)
                links[a * h->ngpus + b] += (int)count;
            else if (b == h->ngpus && tclass && !strcmp(tclass, "0x068000") &&
                     !strcmp(l->name, "nvlink"))
                sw[a] += (int)count;
            else
                return hccn_imp_fail(h->err, "%s:%d: <%s>: target %s is "
                                     "neither another GPU of this file nor "
                                     "an NVSwitch (an nvlink of tclass "
                                     "0x068000)", h->file, l->line, l->name,
                                     target);
        }
    return 0;
}

static int nvswitch(host_t *h, hccn_imp_topo_t *t, hccn_imp_node_t *n,
                    const hccn_imp_preset_t *p, const int *links,
                    const int *sw)
{
    int least = sw[0], direct = 0;
    for (int a = 0; a < h->ngpus; a++) {
        if (sw[a] == 0)
            return hccn_imp_fail(h->err, "%s:%d: <gpu>: GPU %d has no "
                                 "NVSwitch link while others have: not "
                                 "supported", h->file, h->gpu[a]->line, a);
        if (sw[a] != least)
            hccn_imp_note(t, "%s: GPU %d has %d NVSwitch links, GPU 0 %d: "
                          "the least is used for all", h->file, a, sw[a],
                          least);
        least = sw[a] < least ? sw[a] : least;
        for (int b = 0; b < h->ngpus; b++)
            direct += links[a * h->ngpus + b];
    }
    if (direct)
        hccn_imp_note(t, "%s: direct GPU-GPU NVLinks besides the NVSwitch "
                      "ones are not modelled", h->file);
    return hccn_imp_nvlink_fabric(t, n, links, least, p, h->file, h->err);
}

static int pcie_fabric(host_t *h, hccn_imp_topo_t *t, hccn_imp_node_t *n,
                       const hccn_imp_preset_t *p)
{
    const hccn_xml_el_t *grp[MAX_GPUS];
    double bw = 0, host = 0;
    if ((n->group_of = malloc((size_t)h->ngpus * sizeof(int))) == NULL)
        return hccn_imp_fail(h->err, "out of memory");
    for (int a = 0; a < h->ngpus; a++) {
        const hccn_xml_el_t *pe = h->gpu[a]->parent;
        const hccn_xml_el_t *up = strcmp(pe->parent->name, "pci") ? pe
                                                                  : pe->parent;
        double b = pcie_GBps(pe), u = pcie_GBps(up);
        int g = 0;
        while (g < n->ngroups && grp[g] != up)
            g++;
        if (g == n->ngroups)
            grp[n->ngroups++] = up;
        n->group_of[a] = g;
        b = b > 0 ? b : p->pcie_GBps;
        u = u > 0 ? u : p->pcie_GBps;
        if ((bw > 0 && b != bw) || (host > 0 && u != host))
            hccn_imp_note(t, "%s: PCIe links of different widths or speeds: "
                          "the narrowest is used for all", h->file);
        bw = bw > 0 && bw < b ? bw : b;
        host = host > 0 && host < u ? host : u;
    }
    n->fabric = HCCN_IMP_FAB_PCIE;
    n->fab_bw = bw;
    n->host_bw = host;
    n->fab_lat = n->host_lat = HCCN_IMP_PCIE_LAT_US;
    n->p2p = 1;
    hccn_imp_source(t, "fabric", "%s: no NVLink; %d PCIe group(s) (GPUs "
                    "under one PCIe switch, or alone on a root port); GPU "
                    "link %g GB/s and uplink %g GB/s from link_speed x "
                    "link_width (128b/130b from 8 GT/s); latency %g us per "
                    "crossing assumed", h->file, n->ngroups, bw, host,
                    HCCN_IMP_PCIE_LAT_US);
    return hccn_imp_note(t, "%s: PCIe peer-to-peer assumed on (p2p true): "
                         "the XML does not say whether the driver allows it",
                         h->file);
}

static int fabric(host_t *h, hccn_imp_topo_t *t, hccn_imp_node_t *n,
                  const hccn_imp_preset_t *p)
{
    int *links = calloc((size_t)h->ngpus * h->ngpus, sizeof(int));
    int sw[MAX_GPUS] = {0}, any = 0, anysw = 0, rc;
    if (links == NULL)
        return hccn_imp_fail(h->err, "out of memory");
    if (h->ngpus == 1 || read_nvlinks(h, links, sw)) {
        free(links);
        return h->ngpus == 1 ? 0 : -1;
    }
    for (int a = 0; a < h->ngpus; a++)
        for (int b = 0; b < h->ngpus; b++) {
            int x = links[a * h->ngpus + b], y = links[b * h->ngpus + a];
            any |= x;
            anysw |= sw[a];
            if (x != y)
                hccn_imp_note(t, "%s: GPU %d lists %d NVLinks to GPU %d, "
                              "which lists %d back: the smaller is used",
                              h->file, a, x, b, y);
            links[a * h->ngpus + b] = x < y ? x : y;
        }
    if (anysw)
        rc = nvswitch(h, t, n, p, links, sw);
    else if (any)
        rc = hccn_imp_nvlink_fabric(t, n, links, 0, p, h->file, h->err);
    else
        rc = pcie_fabric(h, t, n, p);
    free(links);
    return rc;
}

static int nics(host_t *h, hccn_imp_topo_t *t, hccn_imp_node_t *n,
                const hccn_imp_opts_t *o)
{
    double dist[MAX_GPUS * MAX_NETS], bw[MAX_NETS];
    char *names[MAX_NETS];
    for (int k = 0; k < h->nnets; k++) {
        long mbps;
        const char *name;
        if (need_attr(h, h->net[k], "name", &name) ||
            int_attr(h, h->net[k], "speed", 1, 1000000000L, &mbps))
            return -1;
        names[k] = (char *)name;
        bw[k] = o->nic_gbps > 0 ? o->nic_gbps / 8 : hccn_imp_round(mbps / 8000.0);
        for (int g = 0; g < h->ngpus; g++)
            dist[g * h->nnets + k] = tree_distance(h->gpu[g], h->net[k]);
    }
    if (h->nnets > 0)
        hccn_imp_source(t, "nics", "%s: %d <net> elements; bandwidth = speed "
                        "(Mb/s) / 8000 GB/s%s; each GPU served by the NICs "
                        "nearest it in the PCIe tree; latency %g us assumed",
                        h->file, h->nnets, o->nic_gbps > 0 ? " (--nic-gbps "
                        "given instead)" : "", HCCN_IMP_NIC_LAT_US);
    return hccn_imp_assign_nics(t, n, dist, h->ngpus, h->nnets, bw, names,
                                h->file, h->err);
}

/* The preset RCCL's gcn names ("gfx942", "gfx942:sramecc+:xnack-"):
 * NULL where none is known. */
static const hccn_imp_preset_t *preset_gcn(const char *gcn)
{
    return !strncmp(gcn, "gfx942", 6) && (gcn[6] == '\0' || gcn[6] == ':')
           ? hccn_imp_preset("mi300x") : NULL;
}

static int read_host(host_t *h, hccn_imp_topo_t *t, const hccn_imp_opts_t *o,
                     int index)
{
    long sm;
    if (h->ngpus == 0)
        return hccn_imp_fail(h->err, "%s: no <gpu> element", h->file);
    if (order_gpus(h) || int_attr(h, h->gpu[0], "sm", 10, 1000, &sm))
        return -1;
    for (int g = 1; g < h->ngpus; g++) {
        long s2;
        if (int_attr(h, h->gpu[g], "sm", 10, 1000, &s2))
            return -1;
        if (s2 != sm)
            return hccn_imp_fail(h->err, "%s:%d: <gpu>: sm=%ld differs from "
                                 "GPU 0's sm=%ld: one GPU model per host is "
                                 "supported", h->file, h->gpu[g]->line, s2, sm);
    }
    /* RCCL's sm is the GPU's compute unit count, its gcn the model. */
    const char *gcn = hccn_xml_get(h->gpu[0], "gcn");
    const hccn_imp_preset_t *p = o->model ? hccn_imp_preset(o->model)
                                 : gcn ? preset_gcn(gcn)
                                       : hccn_imp_preset_sm((int)sm);
    if (p == NULL)
        return hccn_imp_fail(h->err, "%s:%d: <gpu>: %s%s: no preset (give "
                             "--gpu: %s)", h->file, h->gpu[0]->line,
                             o->model ? "--gpu " : gcn ? "gcn=" : "sm=",
                             o->model ? o->model : gcn ? gcn
                             : hccn_xml_get(h->gpu[0], "sm"),
                             hccn_imp_preset_names());
    char name[64];
    snprintf(name, sizeof(name), "host%d", index);
    hccn_imp_node_t *n = hccn_imp_add_type(t, name, h->ngpus);
    if (n == NULL)
        return hccn_imp_fail(h->err, "out of memory");
    hccn_imp_set_npu(t, n, p);
    if (!o->model && index == 0 && gcn)
        hccn_imp_note(t, "%s: gcn=%s read as preset %s (%s); --gpu chooses "
                      "another model of that architecture", h->file, gcn,
                      p->name, p->what);
    else if (!o->model && index == 0)
        hccn_imp_note(t, "%s: sm=%ld read as preset %s (%s); --gpu chooses "
                      "another model of that generation", h->file, sm,
                      p->name, p->what);
    return fabric(h, t, n, p) || nics(h, t, n, o);
}

int hccn_imp_nccl_text(const char *text, size_t len, const char *file,
                       const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                       char *err)
{
    host_t h = {.file = file, .err = err};
    hccn_xml_el_t *root = hccn_xml_parse(text, len, file, err);
    if (root == NULL)
        return -1;
    int rc = walk(&h, root);
    if (rc == 0 && strcmp(root->name, "system"))
        rc = hccn_imp_fail(err, "%s:%d: <%s>: the root must be <system>",
                           file, root->line, root->name);
    if (rc == 0)
        rc = read_host(&h, t, o, t->ntypes);
    hccn_xml_free(root);
    return rc;
}

int hccn_imp_nccl(const char *const *files, int nfiles,
                  const hccn_imp_opts_t *o, hccn_imp_topo_t *t, char *err)
{
    return hccn_imp_hosts(files, nfiles, hccn_imp_nccl_text,
                          "NCCL topology XML", o, t, err);
}
