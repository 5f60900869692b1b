/*
 * Topology file validation: a parsed JSON document -> hccn_sim_spec_t.
 *
 * Every rule of docs/topology.md is checked here (the NICs in topo_nics.c,
 * the links fabric in topo_links.c, fat trees in topo_tree.c), and every
 * error is one line "<source>: <json path>: <rule broken>" (the typed
 * getters of topo_json.c write it). The parser walks the document in a fixed order (version first,
 * then unknown keys, then the keys in the order the format lists them), so a
 * file with several errors always reports the same one.
 */
#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_GBPS 1e9        /* sanity caps, so that sums stay finite */
#define MAX_US 1e9
#define MAX_TFLOPS 1e9
#define MAX_OVERSUB 1e6

typedef hccn_sim_jctx_t jctx_t;

hccn_status_t hccn_sim_jbw(hccn_sim_jctx_t *c, json_object *o,
                          const char *key, double *out, int *present)
{
    double x = 0.0;
    hccn_status_t st = hccn_sim_jnum_floor(c, o, key, 0, 1, HCCN_SIM_MIN_GBPS,
                                           MAX_GBPS, &x, present);
    if (st == HCCN_OK && (present == NULL || *present))
        *out = x * 1e9;
    return st;
}

hccn_status_t hccn_sim_jlat(hccn_sim_jctx_t *c, json_object *o,
                           const char *key, double *out, int *present)
{
    double x = 0.0;
    hccn_status_t st = hccn_sim_jnum(c, o, key, 0, 0, MAX_US, &x, present);
    if (st == HCCN_OK && (present == NULL || *present))
        *out = x * 1e-6;
    return st;
}

static hccn_status_t get_object(jctx_t *c, json_object *o, const char *key,
                                json_object **out, int *present)
{
    return hccn_sim_jtyped(c, o, key, json_type_object, "an object", out,
                           present);
}

/* ------------------------------------------------------------------------ */
/* node_types[i].npu and .fabric                                            */

/* npu.peak_TFLOPS as an object: a rate per dtype (docs/topology.md). The
 * rate without a dtype (hccn_compute_flops) is fp16's, else bf16's. */
static hccn_status_t parse_peaks(jctx_t *c, json_object *o,
                                 hccn_sim_type_spec_t *t)
{
    static const struct {
        const char *key;
        hccn_dtype_t dtype;
    } kinds[] = {{"fp64", HCCN_FP64}, {"fp32", HCCN_FP32},
                 {"fp16", HCCN_FP16}, {"bf16", HCCN_BF16},
                 {"int8", HCCN_INT8}};
    static const char *const keys[] = {"fp64", "fp32", "fp16", "bf16",
                                       "int8", NULL};
    size_t old = hccn_sim_jkey(c, "peak_TFLOPS");
    hccn_status_t st = hccn_sim_jkeys(c, o, keys);
    for (size_t i = 0; st == HCCN_OK && i < sizeof(kinds) / sizeof(*kinds);
         i++) {
        double tf = 0.0;
        int has = 0;
        st = hccn_sim_jnum_floor(c, o, kinds[i].key, 0, 1, HCCN_SIM_MIN_TFLOPS,
                                 MAX_TFLOPS, &tf, &has);
        if (st == HCCN_OK && has)
            t->peak_flops_of[kinds[i].dtype] = tf * 1e12;
    }
    hccn_sim_jpop(c, old);
    t->peak_flops = t->peak_flops_of[HCCN_FP16] > 0.0
                        ? t->peak_flops_of[HCCN_FP16]
                        : t->peak_flops_of[HCCN_BF16];
    return st;
}

static hccn_status_t parse_npu(jctx_t *c, json_object *o,
                               hccn_sim_type_spec_t *t)
{
    static const char *const keys[] = {"count", "arena_MiB", "reduce_bw_GBps",
                                       "mem_bw_GBps", "peak_TFLOPS", NULL};
    long long n = 0, mib = 0;
    double tflops = 0.0;
    int has;
    hccn_status_t st;
    json_object *peaks = NULL;
    int by_dtype = json_object_object_get_ex(o, "peak_TFLOPS", &peaks) &&
                   json_object_is_type(peaks, json_type_object);
    if ((st = hccn_sim_jkeys(c, o, keys)) ||
        (st = hccn_sim_jint(c, o, "count", 1, HCCN_SIM_MAX_NPUS_PER_NODE, &n,
                            NULL)) ||
        (st = hccn_sim_jint(c, o, "arena_MiB", 1, HCCN_SIM_MAX_ARENA_MIB,
                            &mib, NULL)) ||
        (st = hccn_sim_jbw(c, o, "reduce_bw_GBps", &t->reduce_bw, NULL)) ||
        (st = hccn_sim_jbw(c, o, "mem_bw_GBps", &t->mem_bw, &has)) ||
        (st = by_dtype ? parse_peaks(c, peaks, t)
                       : hccn_sim_jnum_floor(c, o, "peak_TFLOPS", 0, 1,
                                             HCCN_SIM_MIN_TFLOPS, MAX_TFLOPS,
                                             &tflops, &has)))
        return st;
    t->nnpus = (int)n;
    t->arena_bytes = (size_t)mib << 20;
    if (!by_dtype)
        t->peak_flops = tflops * 1e12;
    return HCCN_OK;
}

/* groups[g]: a non-empty array of NPUs not yet in a group. */
static hccn_status_t parse_group(jctx_t *c, json_object *grp, int g,
                                 hccn_sim_type_spec_t *t)
{
    hccn_sim_jgot_t got;
    if (!json_object_is_type(grp, json_type_array))
        return hccn_sim_jfail(c, "must be an array of NPU indices (got %s)",
                              hccn_sim_jgot(grp, &got));
    return hccn_sim_jclaim(c, grp, t->nnpus, t->group_of, g,
                           "is already in groups");
}

static hccn_status_t parse_groups(jctx_t *c, json_object *f,
                                  hccn_sim_type_spec_t *t)
{
    json_object *arr = NULL;
    hccn_status_t st = hccn_sim_jarray(c, f, "groups", &arr);
    if (st)
        return st;
    size_t ng = json_object_array_length(arr);
    if (ng == 0)
        return hccn_sim_jfail_key(c, "groups", "must not be empty");
    t->group_of = hccn_sim_malloc((size_t)t->nnpus * sizeof(int));
    if (t->group_of == NULL)
        return hccn_sim_jnomem(c);
    for (int j = 0; j < t->nnpus; j++)
        t->group_of[j] = -1;
    size_t old = hccn_sim_jkey(c, "groups");
    for (size_t g = 0; g < ng && st == HCCN_OK; g++) {
        size_t mark = hccn_sim_jindex(c, g);
        st = parse_group(c, json_object_array_get_idx(arr, g), (int)g, t);
        hccn_sim_jpop(c, mark);
    }
    hccn_sim_jpop(c, old);
    for (int j = 0; j < t->nnpus && st == HCCN_OK; j++)
        if (t->group_of[j] < 0)
            st = hccn_sim_jfail_key(c, "groups", "NPU %d is in no group", j);
    t->ngroups = (int)ng;
    return st;
}

static hccn_status_t parse_ring(jctx_t *c, json_object *f,
                                hccn_sim_type_spec_t *t)
{
    int has;
    hccn_status_t st = hccn_sim_jbool(c, f, "bidirectional",
                                      &t->bidirectional, &has);
    if (st)
        return st;
    if (!has)
        t->bidirectional = 1;
    int n = t->nnpus;
    int hops = n <= 2 ? n - 1 : t->bidirectional ? n / 2 : n - 1;
    if (hops > HCCN_SIM_ROUTE_MAX)
        return hccn_sim_jfail(c, "a %s ring of %d NPUs has routes of %d "
                              "links, more than the %d a route may have "
                              "(use a switch or a mesh)",
                              t->bidirectional ? "bidirectional" : "one-way",
                              n, hops, HCCN_SIM_ROUTE_MAX);
    return HCCN_OK;
}

static hccn_status_t parse_pcie(jctx_t *c, json_object *f,
                                hccn_sim_type_spec_t *t)
{
    int has;
    hccn_status_t st;
    if ((st = parse_groups(c, f, t)) ||
        (st = hccn_sim_jbw(c, f, "host_bw_GBps", &t->host_bw, NULL)) ||
        (st = hccn_sim_jlat(c, f, "host_lat_us", &t->host_lat, &has)) ||
        (st = hccn_sim_jbool(c, f, "p2p", &t->p2p, &has)))
        return st;
    if (!has)
        t->p2p = 1;
    return hccn_sim_parse_staged(c, f, t);
}

/* fabric.type -> t->fabric. */
static hccn_status_t parse_fabric_type(jctx_t *c, json_object *f,
                                       hccn_sim_type_spec_t *t)
{
    static const char *const names[] = {"mesh", "switch", "ring", "pcie",
                                        "links"};
    static const hccn_sim_fabric_t kinds[] = {
        HCCN_SIM_FABRIC_MESH, HCCN_SIM_FABRIC_SWITCH, HCCN_SIM_FABRIC_RING,
        HCCN_SIM_FABRIC_PCIE, HCCN_SIM_FABRIC_LINKS};
    const char *type = NULL;
    json_object *v;
    hccn_sim_jgot_t got;
    hccn_status_t st = hccn_sim_jstring(c, f, "type", &type, NULL);
    if (st)
        return st;
    for (int k = 0; k < 5; k++)
        if (strcmp(type, names[k]) == 0) {
            t->fabric = kinds[k];
            return HCCN_OK;
        }
    json_object_object_get_ex(f, "type", &v);
    return hccn_sim_jfail_key(c, "type", "must be one of mesh, switch, ring, "
                              "pcie, links (got %s)", hccn_sim_jgot(v, &got));
}

static hccn_status_t parse_fabric(jctx_t *c, json_object *f,
                                  hccn_sim_type_spec_t *t)
{
    static const char *const keys[] = {
        "type", "bw_GBps", "lat_us", "bidirectional", "groups",
        "host_bw_GBps", "host_lat_us", "p2p", "links", "efficiency", "reduce",
        "staged", NULL};
    static const char *const pcie_only[] = {"groups", "host_bw_GBps",
                                            "host_lat_us", "p2p", "staged"};
    hccn_status_t st;
    if ((st = hccn_sim_jkeys(c, f, keys)) ||
        (st = parse_fabric_type(c, f, t)) ||
        (st = hccn_sim_jbw(c, f, "bw_GBps", &t->fab_bw, NULL)) ||
        (st = hccn_sim_jlat(c, f, "lat_us", &t->fab_lat, NULL)))
        return st;
    int ring = t->fabric == HCCN_SIM_FABRIC_RING;
    int pcie = t->fabric == HCCN_SIM_FABRIC_PCIE;
    int links = t->fabric == HCCN_SIM_FABRIC_LINKS;
    if ((!ring && (st = hccn_sim_jforbid(c, f, "bidirectional",
                                         "when type is \"ring\""))) ||
        (!links && (st = hccn_sim_jforbid(c, f, "links",
                                          "when type is \"links\""))))
        return st;
    for (int k = 0; k < 5 && !pcie; k++)
        if ((st = hccn_sim_jforbid(c, f, pcie_only[k],
                                   "when type is \"pcie\"")))
            return st;
    if (ring)
        st = parse_ring(c, f, t);
    else if (pcie)
        st = parse_pcie(c, f, t);
    else if (links)
        st = hccn_sim_parse_links(c, f, t);
    if (st == HCCN_OK)
        st = hccn_sim_jefficiency(c, f, pcie ? HCCN_SIM_LINK_PCIE
                                             : HCCN_SIM_LINK_FABRIC,
                                  &t->fab_bw, &t->host_bw, 1);
    if (st == HCCN_OK)
        st = hccn_sim_parse_reduce(c, f, t);
    if (t->nnpus == 1)
        t->fabric = HCCN_SIM_FABRIC_NONE;  /* validated, then ignored */
    return st;
}

/* ------------------------------------------------------------------------ */
/* node_types[i], network, sources                                          */

/* Runs parse on obj.key with the path extended by key. */
typedef hccn_status_t (*parse_fn)(jctx_t *, json_object *,
                                  hccn_sim_type_spec_t *);
static hccn_status_t parse_at(jctx_t *c, const char *key, parse_fn parse,
                              json_object *v, hccn_sim_type_spec_t *t)
{
    size_t old = hccn_sim_jkey(c, key);
    hccn_status_t st = parse(c, v, t);
    hccn_sim_jpop(c, old);
    return st;
}

static hccn_status_t parse_type(jctx_t *c, json_object *o,
                                hccn_sim_type_spec_t *t)
{
    static const char *const keys[] = {"name", "count", "npu", "fabric",
                                       "nics", NULL};
    json_object *npu = NULL, *fabric = NULL, *nics;
    const char *name;
    long long count = 0;
    int has_name, has_fabric;
    hccn_status_t st;
    if ((st = hccn_sim_jobject(c, o)) || (st = hccn_sim_jkeys(c, o, keys)) ||
        (st = hccn_sim_jstring(c, o, "name", &name, &has_name)) ||
        (st = hccn_sim_jint(c, o, "count", 1, HCCN_SIM_MAX_NODES_PER_TYPE,
                            &count, NULL)) ||
        (st = get_object(c, o, "npu", &npu, NULL)) ||
        (st = parse_at(c, "npu", parse_npu, npu, t)) ||
        (st = get_object(c, o, "fabric", &fabric, &has_fabric)))
        return st;
    t->nnodes = (int)count;
    if (!has_fabric && t->nnpus > 1)
        return hccn_sim_jfail_key(c, "fabric", "required when npu.count > 1");
    if (has_fabric && (st = parse_at(c, "fabric", parse_fabric, fabric, t)))
        return st;
    if (json_object_object_get_ex(o, "nics", &nics))
        return parse_at(c, "nics", hccn_sim_parse_nics, nics, t);
    return HCCN_OK;
}

static hccn_status_t parse_network_type(jctx_t *c, json_object *o,
                                        hccn_sim_net_spec_t *net)
{
    const char *type = NULL;
    json_object *v;
    hccn_sim_jgot_t got;
    hccn_status_t st = hccn_sim_jstring(c, o, "type", &type, NULL);
    if (st)
        return st;
    if (strcmp(type, "switch") == 0) {
        net->kind = HCCN_SIM_NET_SWITCH;
        return HCCN_OK;
    }
    if (strcmp(type, "leaf_spine") == 0) {
        net->kind = HCCN_SIM_NET_LEAF_SPINE;
        return HCCN_OK;
    }
    if (strcmp(type, "fat_tree") == 0) {
        net->kind = HCCN_SIM_NET_FAT_TREE;
        return HCCN_OK;
    }
    json_object_object_get_ex(o, "type", &v);
    return hccn_sim_jfail_key(c, "type", "must be one of switch, leaf_spine, "
                              "fat_tree (got %s)", hccn_sim_jgot(v, &got));
}

static hccn_status_t parse_network(jctx_t *c, json_object *o,
                                   hccn_sim_net_spec_t *net)
{
    static const char *const keys[] = {"type", "lat_us", "nodes_per_leaf",
                                       "oversubscription", "spine_lat_us",
                                       "levels", "reduce", NULL};
    static const char *const leaf_only[] = {"nodes_per_leaf",
                                            "oversubscription",
                                            "spine_lat_us"};
    long long per = 0;
    int has;
    hccn_status_t st;
    if ((st = hccn_sim_jkeys(c, o, keys)) ||
        (st = parse_network_type(c, o, net)) ||
        (st = hccn_sim_jlat(c, o, "lat_us", &net->lat, NULL)) ||
        (st = hccn_sim_parse_net_reduce(c, o, net)))
        return st;
    net->oversub = 1.0;
    net->spine_lat = net->lat;
    if (net->kind != HCCN_SIM_NET_FAT_TREE &&
        (st = hccn_sim_jforbid(c, o, "levels", "when type is \"fat_tree\"")))
        return st;
    if (net->kind != HCCN_SIM_NET_LEAF_SPINE) {
        for (int k = 0; k < 3 && st == HCCN_OK; k++)
            st = hccn_sim_jforbid(c, o, leaf_only[k],
                                  "when type is \"leaf_spine\"");
        if (st == HCCN_OK && net->kind == HCCN_SIM_NET_FAT_TREE)
            st = hccn_sim_parse_tree(c, o, net);
        return st;
    }
    if ((st = hccn_sim_jint(c, o, "nodes_per_leaf", 1, HCCN_SIM_MAX_NPUS,
                            &per, NULL)) ||
        (st = hccn_sim_jnum(c, o, "oversubscription", 1, 0, MAX_OVERSUB,
                            &net->oversub, &has)) ||
        (st = hccn_sim_jlat(c, o, "spine_lat_us", &net->spine_lat, &has)))
        return st;
    net->nodes_per_leaf = (int)per;
    return HCCN_OK;
}

/* "sources", "notes": an object of strings or an array of strings; not
 * interpreted. */
static hccn_status_t check_sources(jctx_t *c, json_object *v)
{
    hccn_sim_jgot_t got;
    hccn_status_t st = HCCN_OK;
    if (json_object_is_type(v, json_type_array)) {
        for (size_t i = 0; i < json_object_array_length(v) && !st; i++) {
            json_object *s = json_object_array_get_idx(v, i);
            if (json_object_is_type(s, json_type_string))
                continue;
            size_t old = hccn_sim_jindex(c, i);
            st = hccn_sim_jfail(c, "must be a string (got %s)",
                                hccn_sim_jgot(s, &got));
            hccn_sim_jpop(c, old);
        }
        return st;
    }
    if (!json_object_is_type(v, json_type_object))
        return hccn_sim_jfail(c, "must be an object or an array of strings "
                              "(got %s)", hccn_sim_jgot(v, &got));
    struct json_object_iterator it = json_object_iter_begin(v);
    struct json_object_iterator end = json_object_iter_end(v);
    for (; !st && !json_object_iter_equal(&it, &end);
         json_object_iter_next(&it)) {
        json_object *s = json_object_iter_peek_value(&it);
        if (!json_object_is_type(s, json_type_string))
            st = hccn_sim_jfail_key(c, json_object_iter_peek_name(&it),
                                    "must be a string (got %s)",
                                    hccn_sim_jgot(s, &got));
    }
    return st;
}

/* ------------------------------------------------------------------------ */
/* Rules about the whole cluster                                            */

/* Reports msg at node_types[i] (+ ".key" unless key is NULL). */
static hccn_status_t fail_type(jctx_t *c, int i, const char *key,
                               const char *msg)
{
    size_t old = hccn_sim_jkey(c, "node_types");
    hccn_sim_jindex(c, (size_t)i);
    hccn_status_t st = key ? hccn_sim_jfail_key(c, key, "%s", msg)
                           : hccn_sim_jfail(c, "%s", msg);
    hccn_sim_jpop(c, old);
    return st;
}

static hccn_status_t check_totals(jctx_t *c, hccn_sim_spec_t *spec)
{
    long long npus = 0, nodes = 0;
    char msg[128];
    for (int i = 0; i < spec->ntypes; i++) {
        const hccn_sim_type_spec_t *t = &spec->types[i];
        npus += (long long)t->nnodes * t->nnpus;
        nodes += t->nnodes;
        if (npus > HCCN_SIM_MAX_NPUS) {
            snprintf(msg, sizeof(msg), "the cluster would have %lld NPUs, "
                     "more than %d", npus, HCCN_SIM_MAX_NPUS);
            return fail_type(c, i, "count", msg);
        }
    }
    spec->nnpus = (int)npus;
    spec->nnodes = (int)nodes;
    return HCCN_OK;
}

static hccn_status_t check_multinode(jctx_t *c, const hccn_sim_spec_t *spec)
{
    char msg[128];
    if (spec->nnodes < 2)
        return HCCN_OK;
    for (int i = 0; i < spec->ntypes; i++) {
        const hccn_sim_type_spec_t *t = &spec->types[i];
        if (t->nnics == 0)
            return fail_type(c, i, "nics", "required when the cluster has "
                             "more than one node");
        for (int j = 0; j < t->nnpus; j++)
            if (t->nic_of[j] < 0) {
                snprintf(msg, sizeof(msg), "NPU %d is served by no NIC", j);
                return fail_type(c, i, "nics", msg);
            }
    }
    if (spec->net.kind == HCCN_SIM_NET_NONE)
        return hccn_sim_jfail_key(c, "network", "required when the cluster "
                                  "has more than one node");
    return HCCN_OK;
}

static hccn_status_t check_links(jctx_t *c, const hccn_sim_spec_t *spec)
{
    int per[HCCN_SIM_MAX_TIERS];
    long long links = 2LL * (spec->net.kind == HCCN_SIM_NET_FAT_TREE
                                 ? hccn_sim_tree_switches(spec, per)
                                 : hccn_sim_spec_leaves(spec));
    int has_net = spec->net.kind != HCCN_SIM_NET_NONE;
    char msg[128];
    for (int i = 0; i < spec->ntypes; i++) {
        const hccn_sim_type_spec_t *t = &spec->types[i];
        links += hccn_sim_type_links(t, has_net) * t->nnodes;
        if (links > HCCN_SIM_MAX_LINKS) {
            snprintf(msg, sizeof(msg), "the cluster would have more than %d "
                     "directed links (a mesh node of n NPUs has n*(n-1))",
                     HCCN_SIM_MAX_LINKS);
            return fail_type(c, i, NULL, msg);
        }
    }
    return HCCN_OK;
}

/* ------------------------------------------------------------------------ */
/* The document                                                             */

static hccn_status_t parse_types(jctx_t *c, json_object *doc,
                                 hccn_sim_spec_t *spec)
{
    json_object *arr = NULL;
    hccn_status_t st = hccn_sim_jarray(c, doc, "node_types", &arr);
    if (st)
        return st;
    size_t n = json_object_array_length(arr);
    if (n == 0)
        return hccn_sim_jfail_key(c, "node_types", "must not be empty");
    if (n > HCCN_SIM_MAX_NPUS)
        return hccn_sim_jfail_key(c, "node_types", "has more than %d entries",
                                  HCCN_SIM_MAX_NPUS);
    spec->types = hccn_sim_calloc(n, sizeof(*spec->types));
    if (spec->types == NULL)
        return hccn_sim_jnomem(c);
    spec->ntypes = (int)n;
    size_t old = hccn_sim_jkey(c, "node_types");
    for (size_t i = 0; i < n && st == HCCN_OK; i++) {
        size_t mark = hccn_sim_jindex(c, i);
        st = parse_type(c, json_object_array_get_idx(arr, i),
                        &spec->types[i]);
        hccn_sim_jpop(c, mark);
    }
    hccn_sim_jpop(c, old);
    return st;
}

static hccn_status_t check_version(jctx_t *c, json_object *doc)
{
    json_object *v;
    hccn_sim_jgot_t got;
    if (!json_object_is_type(doc, json_type_object))
        return hccn_sim_jfail(c, "must be a JSON object (got %s)",
                              hccn_sim_jgot(doc, &got));
    if (!json_object_object_get_ex(doc, "version", &v))
        return hccn_sim_jfail_key(c, "version", "required");
    if (!json_object_is_type(v, json_type_int) ||
        json_object_get_int64(v) != 1)
        return hccn_sim_jfail_key(c, "version", "must be 1 (got %s)",
                                  hccn_sim_jgot(v, &got));
    return HCCN_OK;
}

static hccn_status_t parse_doc(jctx_t *c, json_object *doc,
                               hccn_sim_spec_t *spec)
{
    static const char *const keys[] = {"version", "name", "description",
                                       "sources", "notes", "node_types",
                                       "network", "faults", "stack",
                                       "software", NULL};
    json_object *v = NULL;
    const char *name = NULL, *desc;
    int has;
    hccn_status_t st;
    if ((st = check_version(c, doc)) || (st = hccn_sim_jkeys(c, doc, keys)) ||
        (st = hccn_sim_jstring(c, doc, "name", &name, &has)) ||
        (st = hccn_sim_jstring(c, doc, "description", &desc, &has)))
        return st;
    for (int k = 0; k < 2 && st == HCCN_OK; k++) {
        const char *key = k ? "notes" : "sources";
        if (!json_object_object_get_ex(doc, key, &v))
            continue;
        size_t old = hccn_sim_jkey(c, key);
        st = check_sources(c, v);
        hccn_sim_jpop(c, old);
    }
    if (st == HCCN_OK && name != NULL &&
        (spec->name = hccn_sim_topo_strndup(name, strlen(name))) == NULL)
        st = hccn_sim_jnomem(c);
    if (st || (st = parse_types(c, doc, spec)) ||
        (st = get_object(c, doc, "network", &v, &has)))
        return st;
    if (has) {
        size_t old = hccn_sim_jkey(c, "network");
        st = parse_network(c, v, &spec->net);
        hccn_sim_jpop(c, old);
    }
    if (st || (st = check_totals(c, spec)) || (st = check_multinode(c, spec)))
        return st;
    if (spec->nnodes == 1)
        spec->net.kind = HCCN_SIM_NET_NONE;  /* validated, then ignored */
    return check_links(c, spec);
}

hccn_status_t hccn_sim_spec_parse(json_object *doc, const char *source,
                                  const double *link_eff,
                                  hccn_sim_spec_t *spec, char *err,
                                  size_t errlen)
{
    jctx_t c = {.source = source, .err = err, .errlen = errlen,
                .link_eff = link_eff};
    memset(spec, 0, sizeof(*spec));
    hccn_status_t st = parse_doc(&c, doc, spec);
    if (st != HCCN_OK)
        hccn_sim_spec_free(spec);
    return st;
}

void hccn_sim_spec_free(hccn_sim_spec_t *spec)
{
    for (int i = 0; i < spec->ntypes; i++) {
        hccn_sim_type_spec_t *t = &spec->types[i];
        hccn_sim_free(t->group_of);
        hccn_sim_free(t->conn);
        hccn_sim_free(t->pair);
        hccn_sim_free(t->nic_of);
        hccn_sim_free(t->nic_bw);
        hccn_sim_free(t->nic_lat);
        hccn_sim_free(t->nic_attach_bw);
        hccn_sim_free(t->nic_group);
    }
    hccn_sim_free(spec->types);
    hccn_sim_free(spec->name);
    memset(spec, 0, sizeof(*spec));
}
