/*
 * ASTRA-sim network YAML (analytical backend): `topology` (one building
 * block per dimension: Ring, FullyConnected, Switch), `npus_count`,
 * `bandwidth` (GB/s, GB = 2^30 bytes) and `latency` (ns) per dimension.
 *
 * Dimension 0 is the node (its fabric), dimension 1 the NICs and the network
 * between nodes, dimension 2 a leaf/spine level above (docs/import.md).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "imp.h"
#include "yaml.h"

#define MAX_DIMS 3
enum { RING, FULLY, SWITCH };

typedef struct {
    int n;
    int kind[MAX_DIMS], npus[MAX_DIMS], line[MAX_DIMS];
    double bw[MAX_DIMS], lat_ns[MAX_DIMS];
} dims_t;

static const char *const kinds[] = {"Ring", "FullyConnected", "Switch"};

static int need_list(const hccn_yaml_doc_t *d, const char *key,
                     const char *file, int ndims, const hccn_yaml_entry_t **e,
                     char *err)
{
    *e = hccn_yaml_get(d, key);
    if (*e == NULL)
        return hccn_imp_fail(err, "%s: %s: required", file, key);
    if (!(*e)->is_list)
        return hccn_imp_fail(err, "%s:%d: %s: must be a list", file,
                             (*e)->line, key);
    if (ndims >= 0 && (*e)->nitems != ndims)
        return hccn_imp_fail(err, "%s:%d: %s: has %d entries, topology has "
                             "%d", file, (*e)->line, key, (*e)->nitems, ndims);
    return 0;
}

static int number(const hccn_yaml_entry_t *e, int i, const char *file,
                  double lo, int integer, double *out, char *err)
{
    char *end;
    double v = strtod(e->items[i], &end);
    if (*end != '\0' || !isfinite(v) || v < lo || v > 1e12 ||
        (integer && v != floor(v)))
        return hccn_imp_fail(err, "%s:%d: %s[%d]: '%s' is not %s >= %g",
                             file, e->item_lines[i], e->key, i, e->items[i],
                             integer ? "an integer" : "a number", lo);
    *out = v;
    return 0;
}

static int read_dims(const hccn_yaml_doc_t *d, const char *file, dims_t *x,
                     char *err)
{
    static const char *const keys[] = {"topology", "npus_count", "bandwidth",
                                       "latency"};
    const hccn_yaml_entry_t *e[4];
    for (int i = 0; i < d->n; i++) {
        int ok = 0;
        for (int k = 0; k < 4; k++)
            ok |= !strcmp(d->e[i].key, keys[k]);
        if (!ok)
            return hccn_imp_fail(err, "%s:%d: %s: unknown key (allowed: "
                                 "topology, npus_count, bandwidth, latency)",
                                 file, d->e[i].line, d->e[i].key);
    }
    if (need_list(d, "topology", file, -1, &e[0], err))
        return -1;
    x->n = e[0]->nitems;
    if (x->n < 1 || x->n > MAX_DIMS)
        return hccn_imp_fail(err, "%s:%d: topology: %d dimensions (supported: "
                             "1 to %d)", file, e[0]->line, x->n, MAX_DIMS);
    for (int k = 1; k < 4; k++)
        if (need_list(d, keys[k], file, x->n, &e[k], err))
            return -1;
    for (int i = 0; i < x->n; i++) {
        double v = 0;
        x->kind[i] = -1;
        for (int k = 0; k < 3; k++)
            if (!strcmp(e[0]->items[i], kinds[k]))
                x->kind[i] = k;
        if (x->kind[i] < 0)
            return hccn_imp_fail(err, "%s:%d: topology[%d]: '%s' is not "
                                 "supported (Ring, FullyConnected, Switch)",
                                 file, e[0]->item_lines[i], i, e[0]->items[i]);
        x->line[i] = e[0]->item_lines[i];
        if (number(e[1], i, file, 1, 1, &v, err))
            return -1;
        if (v > 65536)
            return hccn_imp_fail(err, "%s:%d: npus_count[%d]: %g is more "
                                 "than 65536", file, e[1]->item_lines[i], i, v);
        x->npus[i] = (int)v;
        if (i == 0 && v > 1024)
            return hccn_imp_fail(err, "%s:%d: npus_count[0]: %g NPUs in "
                                 "dimension 0 (the node); hccn's nodes hold "
                                 "at most 1024", file, e[1]->item_lines[0], v);
        if (number(e[2], i, file, 1e-9, 0, &x->bw[i], err) ||
            number(e[3], i, file, 0, 0, &x->lat_ns[i], err))
            return -1;
    }
    return 0;
}

/* GB/s with GB = 2^30 bytes, to hccn's GB = 10^9 bytes. */
static double gib(double b)
{
    return hccn_imp_round(b * 1073741824.0 / 1e9);
}

static void node_fabric(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                        const dims_t *x, const char *file)
{
    double lat = x->lat_ns[0] / 1000;
    if (x->npus[0] == 1)
        return;
    n->fab_bw = gib(x->bw[0]);
    n->fabric = x->kind[0] == RING    ? HCCN_IMP_FAB_RING
                : x->kind[0] == FULLY ? HCCN_IMP_FAB_MESH
                                      : HCCN_IMP_FAB_SWITCH;
    n->fab_lat = x->kind[0] == SWITCH ? hccn_imp_round(2 * lat) : lat;
    hccn_imp_source(t, "fabric", "%s:%d: dimension 0 %s of %d NPUs, %g GB/s "
                    "(x 2^30 / 10^9 = %g GB/s), latency %g ns%s", file,
                    x->line[0], kinds[x->kind[0]], x->npus[0], x->bw[0],
                    n->fab_bw, x->lat_ns[0],
                    x->kind[0] == SWITCH ? " per link, 2 links per "
                                           "transfer (NPU-switch-NPU)" : "");
}

static void dim1(hccn_imp_topo_t *t, const dims_t *x, const char *file)
{
    double lat = x->lat_ns[1] / 1000;
    t->net = HCCN_IMP_NET_SWITCH;
    t->net_lat = x->kind[1] == FULLY ? 0 : lat;
    hccn_imp_source(t, "nics", "%s:%d: dimension 1 %s of %d nodes: one NIC "
                    "per NPU of %g GB/s (%g x 2^30 / 10^9), latency %g ns on "
                    "the NIC link%s", file, x->line[1], kinds[x->kind[1]],
                    x->npus[1], gib(x->bw[1]), x->bw[1], x->lat_ns[1],
                    x->kind[1] == FULLY ? "" : " and again at the switch");
    if (x->kind[1] != SWITCH)
        hccn_imp_note(t, "dimension 1 is a %s between nodes; hccn's network "
                      "is a switch: written as one switch with the same "
                      "per-NPU bandwidth%s", kinds[x->kind[1]],
                      x->kind[1] == RING ? " (a ring's multi-hop routes "
                                           "are not modelled)" : "");
}

static void dim2(hccn_imp_topo_t *t, const dims_t *x, const char *file)
{
    double b1 = gib(x->bw[1]), b2 = gib(x->bw[2]);
    t->net = HCCN_IMP_NET_LEAF_SPINE;
    t->nodes_per_leaf = x->npus[1];
    t->oversub = b2 >= b1 ? 1 : hccn_imp_round(b1 / b2);
    t->spine_lat = x->kind[2] == FULLY ? 0 : hccn_imp_round(2 * x->lat_ns[2]
                                                            / 1000);
    hccn_imp_source(t, "network", "%s:%d: dimension 2 %s of %d groups of "
                    "%d nodes: a leaf per group, the leaves joined by a "
                    "spine; uplink per NPU %g GB/s (oversubscription %g = "
                    "%g / %g), spine latency %g us", file, x->line[2],
                    kinds[x->kind[2]], x->npus[2], x->npus[1], b2, t->oversub,
                    b1, b2, t->spine_lat);
    if (b2 > b1)
        hccn_imp_note(t, "dimension 2 (%g GB/s) is faster than dimension 1 "
                      "(%g GB/s); hccn's uplinks cannot exceed the NICs "
                      "under them: oversubscription 1", b2, b1);
    if (x->kind[2] != SWITCH)
        hccn_imp_note(t, "dimension 2 is a %s; written as a spine switch",
                      kinds[x->kind[2]]);
}

static int build(const dims_t *x, const char *file, const hccn_imp_opts_t *o,
                 hccn_imp_topo_t *t, char *err)
{
    const hccn_imp_preset_t *p = hccn_imp_preset(o->model ? o->model
                                                          : "generic");
    if (p == NULL)
        return hccn_imp_fail(err, "--npu %s: no such preset (%s)", o->model,
                             hccn_imp_preset_names());
    hccn_imp_node_t *n = hccn_imp_add_type(t, "astrasim-dim0", x->npus[0]);
    if (n == NULL)
        return hccn_imp_fail(err, "out of memory");
    hccn_imp_set_npu(t, n, p);
    hccn_imp_note(t, "NPU figures (memory, reduction) are not in ASTRA-sim "
                  "network files: preset %s", p->name);
    node_fabric(t, n, x, file);
    if (x->n == 1)
        return 0;
    long long nodes = (long long)x->npus[1] * (x->n == 3 ? x->npus[2] : 1);
    if (nodes > 65536)
        return hccn_imp_fail(err, "%s:%d: npus_count: %lld nodes (dimensions "
                             "1 and up) is more than 65536", file, x->line[1],
                             nodes);
    n->count = (int)nodes;
    for (int j = 0; j < n->nnpus; j++)
        if (hccn_imp_add_nic(n, &j, 1, gib(x->bw[1]), x->lat_ns[1] / 1000))
            return hccn_imp_fail(err, "out of memory");
    dim1(t, x, file);
    if (x->n == 3)
        dim2(t, x, file);
    return 0;
}

int hccn_imp_astrasim_text(const char *text, size_t len, const char *file,
                           const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                           char *err)
{
    hccn_yaml_doc_t d;
    dims_t x = {0};
    if (hccn_yaml_parse(text, len, file, &d, err))
        return -1;
    int rc = read_dims(&d, file, &x, err);
    hccn_yaml_free(&d);
    if (rc == 0)
        rc = build(&x, file, o, t, err);
    if (rc == 0 && t->description == NULL &&
        (t->description = malloc(256)) != NULL)
        snprintf(t->description, 256, "Imported from ASTRA-sim network file "
                 "%s (%d dimension%s)", file, x.n, x.n > 1 ? "s" : "");
    return rc;
}

int hccn_imp_astrasim(const char *file, const hccn_imp_opts_t *o,
                      hccn_imp_topo_t *t, char *err)
{
    size_t len;
    char *text = hccn_imp_read_file(file, &len, err);
    if (text == NULL)
        return -1;
    int rc = hccn_imp_astrasim_text(text, len, file, o, t, err);
    free(text);
    return rc;
}
