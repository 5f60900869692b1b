/*
 * Shared by the NCCL XML and nvidia-smi importers: which NIC serves which
 * GPU (from PCIe distances), and the intra-node fabric from NVLink counts.
 * Where hccn's format cannot say what the input says (several NICs per GPU,
 * uneven NVLink meshes), the closest form is written and a note says so.
 */
#include <stdlib.h>
#include <string.h>

#include "imp.h"

static int find(int *parent, int x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

/* The NICs nearest GPU g: near[k] = 1 for them; -1 when none reachable. */
static int nearest(const double *dist, int g, int nnics, char *near)
{
    double best = -1;
    for (int k = 0; k < nnics; k++) {
        double d = dist[g * nnics + k];
        if (d >= 0 && (best < 0 || d < best))
            best = d;
    }
    for (int k = 0; k < nnics; k++)
        near[k] = best >= 0 && dist[g * nnics + k] == best;
    return best < 0 ? -1 : 0;
}

static void list_names(char *buf, size_t cap, char *const *names,
                       const int *idx, int n)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "%s%s", i ? ", " : "", names[idx[i]]);
    }
}

static void list_ints(char *buf, size_t cap, const int *v, int n)
{
    buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t l = strlen(buf);
        snprintf(buf + l, cap - l, "%s%d", i ? "," : "", v[i]);
    }
}

/* One component: GPUs gs[0..ng-1] whose nearest NICs are ns[0..nk-1]. */
static int place(hccn_imp_topo_t *t, hccn_imp_node_t *n, const int *gs,
                 int ng, const int *ns, int nk, const double *bw,
                 char *const *names)
{
    char gl[256], nl[512];
    list_ints(gl, sizeof(gl), gs, ng);
    list_names(nl, sizeof(nl), names, ns, nk);
    if (nk == ng) {          /* one each, in PCI order */
        for (int i = 0; i < ng; i++)
            if (hccn_imp_add_nic(n, &gs[i], 1, bw[ns[i]], HCCN_IMP_NIC_LAT_US))
                return -1;
        if (ng > 1)
            hccn_imp_note(t, "%s: GPUs %s and NICs %s are at the same PCIe "
                          "distance: paired one to one in PCI order (the "
                          "PCIe switch they share is not a limit in the "
                          "model)", n->name, gl, nl);
        return 0;
    }
    if (nk > ng && nk % ng == 0) {   /* several NICs per GPU: summed */
        int per = nk / ng;
        for (int i = 0; i < ng; i++) {
            double sum = 0;
            for (int j = 0; j < per; j++)
                sum += bw[ns[i * per + j]];
            if (hccn_imp_add_nic(n, &gs[i], 1, hccn_imp_round(sum),
                                 HCCN_IMP_NIC_LAT_US))
                return -1;
        }
        hccn_imp_note(t, "%s: GPUs %s have %d NICs each (%s): each GPU's "
                      "NICs are written as one NIC of their summed "
                      "bandwidth", n->name, gl, per, nl);
        return 0;
    }
    double sum = 0;          /* shared: one NIC of the summed bandwidth */
    for (int j = 0; j < nk; j++)
        sum += bw[ns[j]];
    if (hccn_imp_add_nic(n, gs, ng, hccn_imp_round(sum), HCCN_IMP_NIC_LAT_US))
        return -1;
    hccn_imp_note(t, "%s: GPUs %s share NIC(s) %s: written as one NIC of %g "
                  "GB/s serving them all", n->name, gl, nl,
                  hccn_imp_round(sum));
    return 0;
}

static int place_all(hccn_imp_topo_t *t, hccn_imp_node_t *n, int *parent,
                     const char *near, int ngpus, int nnics, const double *bw,
                     char *const *names, int *gs, int *ns)
{
    for (int root = 0; root < ngpus; root++) {
        if (find(parent, root) != root)
            continue;
        int ng = 0, nk = 0;
        for (int g = 0; g < ngpus; g++)
            if (find(parent, g) == root)
                gs[ng++] = g;
        for (int k = 0; k < nnics; k++)
            for (int i = 0; i < ng; i++)
                if (near[gs[i] * nnics + k]) {
                    ns[nk++] = k;
                    break;
                }
        if (place(t, n, gs, ng, ns, nk, bw, names))
            return -1;
    }
    return 0;
}

int hccn_imp_assign_nics(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                         const double *dist, int ngpus, int nnics,
                         const double *nic_GBps, char *const *names,
                         const char *file, char *err)
{
    if (nnics == 0)
        return 0;
    char *near = calloc((size_t)ngpus * nnics, 1);
    int *parent = malloc((size_t)(ngpus + 2 * nnics + ngpus) * sizeof(int));
    int rc = -1;
    if (near == NULL || parent == NULL) {
        hccn_imp_fail(err, "%s: out of memory", file);
        goto out;
    }
    int *owner = parent + ngpus, *gs = owner + nnics, *ns = gs + ngpus;
    for (int g = 0; g < ngpus; g++)
        parent[g] = g;
    for (int k = 0; k < nnics; k++)
        owner[k] = -1;
    for (int g = 0; g < ngpus; g++) {
        if (nearest(dist, g, nnics, near + (size_t)g * nnics)) {
            hccn_imp_fail(err, "%s: GPU %d: no NIC is reachable", file, g);
            goto out;
        }
        for (int k = 0; k < nnics; k++) {
            if (!near[g * nnics + k])
                continue;
            if (owner[k] >= 0)
                parent[find(parent, g)] = find(parent, owner[k]);
            owner[k] = g;
        }
    }
    for (int k = 0; k < nnics; k++)
        if (owner[k] < 0)
            hccn_imp_note(t, "%s: NIC %s (%g GB/s) is not the nearest NIC of "
                          "any GPU (a storage or management port): left out",
                          n->name, names[k], nic_GBps[k]);
    rc = place_all(t, n, parent, near, ngpus, nnics, nic_GBps, names, gs, ns);
    if (rc)
        hccn_imp_fail(err, "%s: out of memory", file);
out:
    free(near);
    free(parent);
    return rc;
}

/* ---- NVLink ---- */

static int uneven_mesh(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                       const int *links, const hccn_imp_preset_t *p)
{
    int g = n->nnpus, least = -1;
    for (int a = 0; a < g; a++) {
        int sum = 0;
        for (int b = 0; b < g; b++)
            sum += a == b ? 0 : links[a * g + b];
        if (least < 0 || sum < least)
            least = sum;
    }
    n->fabric = HCCN_IMP_FAB_MESH;
    n->fab_bw = hccn_imp_round(least * p->link_GBps / (g - 1));
    for (int a = 0; a < g; a++)
        for (int b = a + 1; b < g; b++)
            hccn_imp_note(t, "%s: NVLink GPU%d-GPU%d: %d links = %g GB/s, "
                          "written as %g GB/s", n->name, a, b,
                          links[a * g + b],
                          hccn_imp_round(links[a * g + b] * p->link_GBps),
                          n->fab_bw);
    return hccn_imp_note(t, "%s: the NVLink counts differ between GPU pairs "
                         "(a hybrid cube mesh or partial mesh), which the "
                         "format cannot express: written as a full mesh "
                         "whose pair bandwidth is a GPU's total NVLink "
                         "bandwidth (%d links x %g GB/s, the least of any "
                         "GPU) spread over its %d peers",
                         n->name, least, p->link_GBps, g - 1);
}

int hccn_imp_nvlink_fabric(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                           const int *links, int to_switch,
                           const hccn_imp_preset_t *p, const char *file,
                           char *err)
{
    int g = n->nnpus, first = -1, even = 1;
    if (p->link_GBps <= 0)
        return hccn_imp_fail(err, "%s: NVLinks found, but preset %s has no "
                             "NVLink rate (choose --gpu)", file, p->name);
    n->fab_lat = p->fab_lat_us;
    if (to_switch) {
        n->fabric = HCCN_IMP_FAB_SWITCH;
        n->fab_bw = hccn_imp_round(to_switch * p->link_GBps);
        return hccn_imp_source(t, "fabric", "%s: each GPU has %d NVLinks to "
                               "NVSwitch x %g GB/s per link (preset %s) = %g "
                               "GB/s per direction; latency %g us assumed",
                               file, to_switch, p->link_GBps, p->name,
                               n->fab_bw, n->fab_lat);
    }
    for (int a = 0; a < g; a++)
        for (int b = 0; b < g; b++)
            if (a != b) {
                if (first < 0)
                    first = links[a * g + b];
                even &= links[a * g + b] == first;
            }
    hccn_imp_source(t, "fabric", "%s: NVLink counts per GPU pair x %g GB/s "
                    "per link (preset %s); latency %g us assumed", file,
                    p->link_GBps, p->name, p->fab_lat_us);
    if (even) {
        n->fabric = HCCN_IMP_FAB_MESH;
        n->fab_bw = hccn_imp_round(first * p->link_GBps);
        return 0;
    }
    return uneven_mesh(t, n, links, p);
}
