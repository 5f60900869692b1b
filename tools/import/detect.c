/*
 * hccn-topo detect: this host, as hwloc sees it. With GPUs or accelerators
 * among hwloc's OS devices (cuda*, nvml*, rsmi*, opencl*), one NPU per
 * accelerator on a PCIe fabric (groups by PCIe parent, link speeds from
 * hwloc), NICs (mlx5_*, eth*, ...) served by PCIe distance. Without, a CPU
 * cluster: one NPU per core (or per NUMA node, --per numa) on a
 * shared-memory switch. Memory bandwidth from hwloc's memory attributes
 * where the firmware gives it, else a stated assumption (docs/import.md).
 */
#include <stdlib.h>
#include <string.h>

#include <hwloc.h>

#include "imp.h"

#define MAX_ACC 64
#define MAX_NIC 64
/* One DDR4-3200 channel (25.6 GB/s), per NUMA node, when hwloc has none. */
#define ASSUMED_NUMA_GBPS 25.6
#define SHM_LAT_US 0.5

typedef struct {
    hwloc_topology_t topo;
    hccn_imp_topo_t *t;
    char *err;
    hwloc_obj_t acc[MAX_ACC], nic[MAX_NIC];
    int nacc, nnic;
} det_t;

static int starts(const char *s, const char *p)
{
    return s && !strncmp(s, p, strlen(p));
}

/* The accelerators (one per PCIe device) and NICs hwloc lists. */
static void find_osdevs(det_t *d)
{
    hwloc_obj_t o = NULL;
    while ((o = hwloc_get_next_osdev(d->topo, o)) != NULL) {
        const char *n = o->name;
        int acc = starts(n, "cuda") || starts(n, "nvml") ||
                  starts(n, "rsmi") || starts(n, "opencl");
        int net = o->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS ||
                  o->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK;
        hwloc_obj_t pci = hwloc_get_non_io_ancestor_obj(d->topo, o);
        pci = o->parent && o->parent->type == HWLOC_OBJ_PCI_DEVICE ? o->parent
                                                                   : pci;
        if (acc) {
            int dup = 0;
            for (int i = 0; i < d->nacc; i++)
                dup |= d->acc[i]->parent == o->parent &&
                       o->parent->type == HWLOC_OBJ_PCI_DEVICE;
            if (!dup && d->nacc < MAX_ACC)
                d->acc[d->nacc++] = o;
        } else if (net && d->nnic < MAX_NIC) {
            d->nic[d->nnic++] = o;
        }
        (void)pci;
    }
}

static double numa_bw(det_t *d, hwloc_obj_t numa, int *measured)
{
    hwloc_uint64_t v = 0;
    struct hwloc_location loc = {.type = HWLOC_LOCATION_TYPE_OBJECT,
                                 .location.object = numa};
    if (hwloc_memattr_get_value(d->topo, HWLOC_MEMATTR_ID_BANDWIDTH, numa,
                                &loc, 0, &v) == 0 && v > 0) {
        *measured = 1;
        return v * 1048576.0 / 1e9;   /* MiB/s */
    }
    *measured = 0;
    return ASSUMED_NUMA_GBPS;
}

static void describe_host(det_t *d, int cores, int numas)
{
    int pk = hwloc_get_nbobjs_by_type(d->topo, HWLOC_OBJ_PACKAGE);
    int pus = hwloc_get_nbobjs_by_type(d->topo, HWLOC_OBJ_PU);
    int l3 = hwloc_get_nbobjs_by_type(d->topo, HWLOC_OBJ_L3CACHE);
    hwloc_obj_t c = hwloc_get_obj_by_type(d->topo, HWLOC_OBJ_L3CACHE, 0);
    hwloc_obj_t root = hwloc_get_root_obj(d->topo);
    hccn_imp_source(d->t, "host", "hwloc: %d package(s), %d NUMA node(s), %d "
                    "core(s), %d PU(s), %d L3 cache(s) of %llu KiB, %llu MiB "
                    "of memory, %d accelerator(s), %d NIC(s)", pk, numas,
                    cores, pus, l3,
                    c ? (unsigned long long)c->attr->cache.size / 1024 : 0ULL,
                    (unsigned long long)root->total_memory >> 20, d->nacc,
                    d->nnic);
}

static int cpu_cluster(det_t *d, const hccn_imp_opts_t *o)
{
    int cores = hwloc_get_nbobjs_by_type(d->topo, HWLOC_OBJ_CORE);
    int numas = hwloc_get_nbobjs_by_type(d->topo, HWLOC_OBJ_NUMANODE);
    int measured = 0;
    cores = cores > 0 ? cores : 1;
    numas = numas > 0 ? numas : 1;
    double bw = numa_bw(d, hwloc_get_obj_by_type(d->topo, HWLOC_OBJ_NUMANODE,
                                                 0), &measured);
    int npus = o->per_numa ? numas : cores;
    if (npus > 1024)
        return hccn_imp_fail(d->err, "detect: %d NPUs: more than 1024 (use "
                             "--per numa)", npus);
    double share = bw * numas / npus;  /* memory bandwidth per NPU */
    hccn_imp_node_t *n = hccn_imp_add_type(d->t, "this-host", npus);
    if (n == NULL)
        return hccn_imp_fail(d->err, "out of memory");
    unsigned long long mem = hwloc_get_root_obj(d->topo)->total_memory >> 20;
    n->arena_mib = (long)(mem / (unsigned)npus);
    n->arena_mib = n->arena_mib < 1 ? 1 : n->arena_mib > 1048576 ? 1048576
                                                                : n->arena_mib;
    n->mem_bw = hccn_imp_round(share / 2);
    n->reduce_bw = hccn_imp_round(share / 3);
    if (npus > 1) {
        n->fabric = HCCN_IMP_FAB_SWITCH;
        n->fab_bw = n->mem_bw;
        n->fab_lat = SHM_LAT_US;
    }
    describe_host(d, cores, numas);
    hccn_imp_source(d->t, "npu", "no accelerator: a CPU cluster of one NPU "
                    "per %s; arena = memory / NPUs; memory bandwidth %g GB/s "
                    "per NUMA node (%s), shared by the NPUs of the node: copy "
                    "= share / 2, reduction = share / 3",
                    o->per_numa ? "NUMA node" : "core", bw,
                    measured ? "hwloc memory attribute" : "assumed: one "
                    "DDR4-3200 channel, 25.6 GB/s");
    hccn_imp_note(d->t, "the cores talk through shared memory: a switch "
                  "fabric at the copy bandwidth, %g us per message assumed; "
                  "caches and NUMA distances are not modelled", SHM_LAT_US);
    return 0;
}

/* hwloc keeps link speeds as floats: 7 significant digits. */
static double float_GBps(float x)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%.7g", (double)x);
    return strtod(buf, NULL);
}

static double pcie_link(hwloc_obj_t o)
{
    for (; o; o = o->parent)
        if (o->type == HWLOC_OBJ_PCI_DEVICE && o->attr->pcidev.linkspeed > 0)
            return float_GBps(o->attr->pcidev.linkspeed);
    return 0;
}

/* The upstream link of a PCIe switch (a bridge below another bridge). */
static double bridge_link(hwloc_obj_t b)
{
    if (b == NULL || b->type != HWLOC_OBJ_BRIDGE ||
        b->attr->bridge.upstream_type != HWLOC_OBJ_BRIDGE_PCI)
        return 0;
    return float_GBps(b->attr->bridge.upstream.pci.linkspeed);
}

static hwloc_obj_t pci_parent(hwloc_obj_t o)
{
    while (o && o->type != HWLOC_OBJ_PCI_DEVICE)
        o = o->parent;
    return o && o->parent ? o->parent : o;
}

static int hops(hwloc_obj_t a, hwloc_obj_t b)
{
    int n = 0;
    for (hwloc_obj_t x = a; x; x = x->parent, n++) {
        int m = 0;
        for (hwloc_obj_t y = b; y; y = y->parent, m++)
            if (x == y)
                return n + m;
    }
    return 1 << 20;
}

static int accel_cluster(det_t *d, const hccn_imp_opts_t *o)
{
    const hccn_imp_preset_t *p = hccn_imp_preset(o->model ? o->model
                                                          : "generic");
    if (p == NULL)
        return hccn_imp_fail(d->err, "--gpu %s: no such preset (%s)",
                             o->model, hccn_imp_preset_names());
    hccn_imp_node_t *n = hccn_imp_add_type(d->t, "this-host", d->nacc);
    if (n == NULL || (n->group_of = malloc(MAX_ACC * sizeof(int))) == NULL)
        return hccn_imp_fail(d->err, "out of memory");
    hccn_imp_set_npu(d->t, n, p);
    hwloc_obj_t up[MAX_ACC];
    double bw = 0, host = 0;
    for (int a = 0; a < d->nacc; a++) {
        hwloc_obj_t par = pci_parent(d->acc[a]);
        int g = 0;
        while (g < n->ngroups && up[g] != par)
            g++;
        if (g == n->ngroups)
            up[n->ngroups++] = par;
        n->group_of[a] = g;
        double b = pcie_link(d->acc[a]), u = bridge_link(par);
        bw = bw > 0 && (b <= 0 || bw < b) ? bw : b;
        host = host > 0 && (u <= 0 || host < u) ? host : u;
    }
    n->fabric = d->nacc > 1 ? HCCN_IMP_FAB_PCIE : HCCN_IMP_FAB_NONE;
    n->fab_bw = bw > 0 ? bw : p->pcie_GBps;
    n->host_bw = host > 0 ? host : n->fab_bw;
    n->fab_lat = n->host_lat = HCCN_IMP_PCIE_LAT_US;
    hccn_imp_source(d->t, "fabric", "hwloc: %d accelerators in %d PCIe "
                    "groups (by PCIe parent), link %g GB/s (%s), uplink %g "
                    "GB/s (%s)", d->nacc, n->ngroups, n->fab_bw,
                    bw > 0 ? "hwloc linkspeed" : p->name, n->host_bw,
                    host > 0 ? "the PCIe switch's linkspeed" : "as the link");
    hccn_imp_note(d->t, "hwloc does not see NVLink: PCIe only, p2p assumed "
                  "on; NPU figures from preset %s (--gpu to choose)", p->name);
    double dist[MAX_ACC * MAX_NIC], nbw[MAX_NIC];
    char *names[MAX_NIC];
    double gbps = o->nic_gbps > 0 ? o->nic_gbps : p->nic_Gbps;
    for (int k = 0; k < d->nnic; k++) {
        names[k] = d->nic[k]->name;
        nbw[k] = gbps / 8;
        for (int a = 0; a < d->nacc; a++)
            dist[a * d->nnic + k] = hops(d->acc[a], d->nic[k]);
    }
    if (d->nnic > 0)
        hccn_imp_note(d->t, "hwloc gives no NIC speed: %g Gb/s (%s)", gbps,
                      o->nic_gbps > 0 ? "--nic-gbps" : p->name);
    describe_host(d, hwloc_get_nbobjs_by_type(d->topo, HWLOC_OBJ_CORE),
                  hwloc_get_nbobjs_by_type(d->topo, HWLOC_OBJ_NUMANODE));
    return hccn_imp_assign_nics(d->t, n, dist, d->nacc, d->nnic, nbw, names,
                                "detect", d->err);
}

int hccn_imp_detect(const hccn_imp_opts_t *o, hccn_imp_topo_t *t, char *err)
{
    det_t d = {.t = t, .err = err};
    if (hwloc_topology_init(&d.topo))
        return hccn_imp_fail(err, "detect: hwloc_topology_init failed");
    hwloc_topology_set_io_types_filter(d.topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    int rc;
    if (hwloc_topology_load(d.topo)) {
        rc = hccn_imp_fail(err, "detect: hwloc_topology_load failed");
    } else {
        find_osdevs(&d);
        rc = d.nacc > 0 ? accel_cluster(&d, o) : cpu_cluster(&d, o);
    }
    hwloc_topology_destroy(d.topo);
    if (rc == 0 && (t->description = strdup("This host, detected by hwloc "
                                            "(hccn-topo detect)")) == NULL)
        rc = hccn_imp_fail(err, "out of memory");
    return rc;
}
