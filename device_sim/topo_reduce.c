/*
 * In-switch reduction (docs/topology.md, "In-switch reduction"): a switch
 * fabric's "reduce" object, the switch's reduction unit in the graph, and
 * how a transfer through that unit splits its route.
 *
 * The unit is one more directed link, from the node's switch to itself,
 * whose bandwidth is the bytes of contributions the switch combines per
 * second. Transfers that the switch reduces cross it as they cross a wire,
 * so concurrent reductions share it max-min fairly like any other link.
 * The units come after every other link (in node order), so a file
 * without "reduce" has the graph it always had.
 *
 * A "switch" network may reduce too (network.reduce, InfiniBand
 * SHARP-like): its unit is a link from the network switch to itself,
 * after the nodes' units, with the reduce object's latency.
 */
#include <string.h>

#include "device_sim/topo_internal.h"

typedef hccn_sim_jctx_t jctx_t;

/* The dtypes and operators a file may name, in the order of hccn.h. */
static const char *const dtype_names[HCCN_DTYPE_COUNT] = {
    "int8", "uint8", "int16", "uint16", "int32", "uint32",
    "int64", "uint64", "fp16", "bf16", "fp32", "fp64"};
static const char *const op_names[HCCN_REDOP_COUNT] = {"sum", "prod", "max",
                                                       "min", "avg"};

/* Default capabilities: what NVLink SHARP documents (sum, min, max on
 * fp32, fp16, bf16; docs/topology.md). */
#define DEFAULT_DTYPES \
    ((1u << HCCN_FP32) | (1u << HCCN_FP16) | (1u << HCCN_BF16))
#define DEFAULT_OPS ((1u << HCCN_SUM) | (1u << HCCN_MAX) | (1u << HCCN_MIN))

/* obj.key, an optional non-empty array of names out of names[0..n), as a
 * bit mask in *mask (left alone when absent). A name given twice or one
 * not in the list is an error at its index. */
static hccn_status_t parse_names(jctx_t *c, json_object *obj, const char *key,
                                 const char *const *names, int n,
                                 unsigned *mask)
{
    json_object *arr = NULL;
    int has = 0;
    hccn_status_t st = hccn_sim_jtyped(c, obj, key, json_type_array,
                                       "an array", &arr, &has);
    if (st || !has)
        return st;
    size_t len = json_object_array_length(arr), old = hccn_sim_jkey(c, key);
    if (len == 0) {
        hccn_sim_jpop(c, old);
        return hccn_sim_jfail_key(c, key, "must not be empty");
    }
    unsigned m = 0;
    for (size_t i = 0; i < len && st == HCCN_OK; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        size_t o2 = hccn_sim_jindex(c, i);
        const char *s = json_object_is_type(v, json_type_string)
                            ? json_object_get_string(v) : NULL;
        int k = 0;
        while (s != NULL && k < n && strcmp(s, names[k]) != 0)
            k++;
        hccn_sim_jgot_t got;
        if (s == NULL || k == n)
            st = hccn_sim_jfail(c, "must be one of %s (got %s)",
                                n == HCCN_DTYPE_COUNT
                                    ? "int8, uint8, int16, uint16, int32, "
                                      "uint32, int64, uint64, fp16, bf16, "
                                      "fp32, fp64"
                                    : "sum, prod, max, min, avg",
                                hccn_sim_jgot(v, &got));
        else if (m & (1u << k))
            st = hccn_sim_jfail(c, "\"%s\" is listed twice", s);
        else
            m |= 1u << k;
        hccn_sim_jpop(c, o2);
    }
    hccn_sim_jpop(c, old);
    if (st == HCCN_OK)
        *mask = m;
    return st;
}

hccn_status_t hccn_sim_parse_reduce(hccn_sim_jctx_t *c, json_object *f,
                                    hccn_sim_type_spec_t *t)
{
    static const char *const keys[] = {"bw_GBps", "dtypes", "ops", NULL};
    json_object *r = NULL;
    int has = 0;
    hccn_status_t st = hccn_sim_jtyped(c, f, "reduce", json_type_object,
                                       "an object", &r, &has);
    if (st || !has)
        return st;
    if (t->fabric != HCCN_SIM_FABRIC_SWITCH)
        return hccn_sim_jfail_key(c, "reduce", "only allowed when type is "
                                  "\"switch\"");
    size_t old = hccn_sim_jkey(c, "reduce");
    t->red_dtypes = DEFAULT_DTYPES;
    t->red_ops = DEFAULT_OPS;
    if ((st = hccn_sim_jkeys(c, r, keys)) == HCCN_OK &&
        (st = hccn_sim_jbw(c, r, "bw_GBps", &t->red_bw, NULL)) == HCCN_OK &&
        (st = parse_names(c, r, "dtypes", dtype_names, HCCN_DTYPE_COUNT,
                          &t->red_dtypes)) == HCCN_OK)
        st = parse_names(c, r, "ops", op_names, HCCN_REDOP_COUNT, &t->red_ops);
    hccn_sim_jpop(c, old);
    return st;
}

hccn_status_t hccn_sim_parse_net_reduce(hccn_sim_jctx_t *c, json_object *o,
                                        hccn_sim_net_spec_t *net)
{
    static const char *const keys[] = {"bw_GBps", "lat_us", "dtypes", "ops",
                                       NULL};
    json_object *r = NULL;
    int has = 0;
    hccn_status_t st = hccn_sim_jtyped(c, o, "reduce", json_type_object,
                                       "an object", &r, &has);
    if (st || !has)
        return st;
    if (net->kind != HCCN_SIM_NET_SWITCH)
        return hccn_sim_jfail_key(c, "reduce", "only allowed when type is "
                                  "\"switch\" (the one switch reduces)");
    size_t old = hccn_sim_jkey(c, "reduce");
    net->red_dtypes = DEFAULT_DTYPES;
    net->red_ops = DEFAULT_OPS;
    if ((st = hccn_sim_jkeys(c, r, keys)) == HCCN_OK &&
        (st = hccn_sim_jbw(c, r, "bw_GBps", &net->red_bw, NULL)) == HCCN_OK &&
        (st = hccn_sim_jlat(c, r, "lat_us", &net->red_lat, NULL)) == HCCN_OK &&
        (st = parse_names(c, r, "dtypes", dtype_names, HCCN_DTYPE_COUNT,
                          &net->red_dtypes)) == HCCN_OK)
        st = parse_names(c, r, "ops", op_names, HCCN_REDOP_COUNT,
                         &net->red_ops);
    hccn_sim_jpop(c, old);
    return st;
}

long long hccn_sim_reduce_units(const hccn_sim_spec_t *spec)
{
    long long n = 0;
    for (int i = 0; i < spec->ntypes; i++)
        if (spec->types[i].red_bw > 0.0 && spec->types[i].nnpus > 1)
            n += spec->types[i].nnodes;
    return n + (spec->net.red_bw > 0.0 &&
                spec->net.kind == HCCN_SIM_NET_SWITCH && spec->nnodes > 1);
}

int hccn_sim_topo_reduce_net(const hccn_sim_topo_t *topo, int dtype, int op)
{
    if (topo->net_reduce_link < 0 || dtype < 0 || dtype >= HCCN_DTYPE_COUNT ||
        op < 0 || op >= HCCN_REDOP_COUNT ||
        !(topo->net_reduce_dtypes & (1u << dtype)) ||
        !(topo->net_reduce_ops & (1u << op)))
        return -1;
    return topo->net_reduce_link;
}

int hccn_sim_topo_reduce_node(const hccn_sim_topo_t *topo, int node,
                              int dtype, int op)
{
    if (node < 0 || node >= topo->nnodes)
        return -1;
    const hccn_sim_node_t *nd = &topo->nodes[node];
    if (nd->reduce_link < 0 || dtype < 0 || dtype >= HCCN_DTYPE_COUNT ||
        op < 0 || op >= HCCN_REDOP_COUNT ||
        !(nd->reduce_dtypes & (1u << dtype)) || !(nd->reduce_ops & (1u << op)))
        return -1;
    return nd->reduce_link;
}

/* The index of the first of links[0..n) entering the switch of unit rl
 * (*unit set to rl), or -1 (rl < 0: no unit). */
static int split_at(const hccn_sim_topo_t *topo, int rl, const int *links,
                    int n, int *unit)
{
    if (rl < 0)
        return -1;
    int sw = topo->links[rl].src;
    for (int k = 0; k < n; k++)
        if (topo->links[links[k]].dst == sw) {
            *unit = rl;
            return k;
        }
    return -1;
}

int hccn_sim_topo_reduce_split(const hccn_sim_topo_t *topo, int src,
                               const int *links, int n, int *unit)
{
    int node = topo->npus[src].node;
    int k = split_at(topo, topo->nodes[node].reduce_link, links, n, unit);
    return k >= 0 ? k : split_at(topo, topo->net_reduce_link, links, n, unit);
}
