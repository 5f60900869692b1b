/*
 * "sharp": collectives reduced inside the network switch (InfiniBand
 * SHARP-like, NCCL's CollNet), for communicators whose ranks are on
 * nodes of their own, one rank per node, on a "switch" network that
 * declares reduction of the call's dtype and operator (network.reduce,
 * docs/topology.md; args->in_switch has HCCN_IN_SWITCH_NET_FLAT).
 *
 * The exchange is nvls's (algo_nvls.c), with the network switch in the
 * place of the node's: per chunk every rank sends each other rank's
 * block up once, the switch combines the p-1 contributions to a block in
 * ascending rank order and sends the sum down once to the block's owner,
 * which adds its own part; the owner sends the block up once and the
 * switch multicasts it. Each NIC sends about S and receives about S (a
 * ring: 2(p-1)/p S each way). reduce_scatter is the reduction part alone,
 * allgather the multicast part alone.
 *
 * hier_sharp and hier_nvls_sharp compose it as hier does (levels.h):
 * reduce-scatter inside every node (mesh, or nvls where the node's switch
 * reduces), sharp's allreduce across nodes among the ranks of one local
 * index (each through its own NIC, all through the one switch's unit),
 * allgather inside nodes.
 *
 * Where the network does not reduce, each row is the same exchange
 * without the switch's help, as nvls is mesh's there: sharp is mesh's
 * schedule and form, hier_sharp hier's, hier_nvls_sharp hier_nvls's, each
 * under its own name. Tying with that earlier row, it is never chosen by
 * the cost model there (every row runs and is priced on every topology,
 * as the table's tests require). docs/algorithms.md has the
 * bytes, the closed form and the order of the reduction.
 */
#include <stdio.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

hccn_sched_t *hccn_hier_nvls_sched(const hccn_coll_args_t *args,
                                   const char *name, int cyclic);
hccn_sched_t *hccn_hier_hier_build_levels(const hccn_coll_args_t *args);

static const unsigned SHARP_COLLS = 1u << HCCN_COLL_ALLREDUCE |
                                    1u << HCCN_COLL_REDUCE_SCATTER |
                                    1u << HCCN_COLL_ALLGATHER;

int hccn_hier_net_switch(const hccn_sim_topo_t *topo, const int *world,
                         int n, hccn_coll_t coll, int dtype, int op)
{
    if (topo == NULL || world == NULL || n < 2 || topo->nnodes < 2 ||
        !(SHARP_COLLS & 1u << coll) ||
        (coll == HCCN_COLL_ALLGATHER
             ? topo->net_reduce_link < 0
             : hccn_sim_topo_reduce_net(topo, dtype, op) < 0))
        return 0;
    unsigned char *seen = hccn_sim_calloc((size_t)topo->nnodes, 1);
    int node0 = topo->npus[world[0]].node, several = 0, flat = seen != NULL;
    for (int r = 0; r < n; r++) {
        int node = topo->npus[world[r]].node;
        several |= node != node0;
        if (seen != NULL) {
            flat &= !seen[node];
            seen[node] = 1;
        }
    }
    hccn_sim_free(seen);    /* without memory: not flat (hier_sharp only) */
    if (!several)
        return 0;
    return HCCN_IN_SWITCH_NET | (flat ? HCCN_IN_SWITCH_NET_FLAT : 0);
}

/* Row `name`'s schedule where the network does not reduce: `other`'s
 * (the same exchange without the switch's help) under the row's name. */
static hccn_sched_t *fallback(const hccn_coll_args_t *a, const char *name,
                              const char *other)
{
    hccn_sched_t *s = hccn_hier_algo_find(other)->build(a);
    if (s != NULL)
        snprintf(s->algo, sizeof(s->algo), "%s", name);
    return s;
}

/* The sharp row's builder (algos.c): nvls's schedule through the network
 * switch where args->in_switch has HCCN_IN_SWITCH_NET_FLAT, else mesh's;
 * NULL for other collectives or malformed arguments. */
hccn_sched_t *hccn_hier_sharp_build(const hccn_coll_args_t *args)
{
    if (!hccn_hier_args_ok(args, SHARP_COLLS))
        return NULL;
    if (!(args->in_switch & HCCN_IN_SWITCH_NET_FLAT))
        return fallback(args, "sharp", "mesh");
    return hccn_hier_nvls_sched(args, "sharp", 1);
}

/* ------------------------------------------------- hierarchical rows --- */

/* Each hierarchical row: its levels where the network reduces, and the
 * row whose schedule and form it is elsewhere. */
typedef struct {
    hccn_level_choice_t lv;
    const char *other;
} sharp_row_t;

static const sharp_row_t hier_sharp = {{"hier_sharp", 2,
                                        {"mesh", "sharp", NULL}}, "hier"};
static const sharp_row_t hier_nvls_sharp = {
    {"hier_nvls_sharp", 2, {"nvls", "sharp", NULL}}, "hier_nvls"};

static hccn_sched_t *build_levels(const hccn_coll_args_t *args,
                                  const sharp_row_t *row)
{
    if (!hccn_hier_args_ok(args, SHARP_COLLS))
        return NULL;
    if (!(args->in_switch & HCCN_IN_SWITCH_NET))
        return fallback(args, row->lv.name, row->other);
    hccn_coll_args_t a = *args;
    a.levels = &row->lv;
    return hccn_hier_hier_build_levels(&a);
}

/* The hier_sharp row's builder (algos.c): hier's composition with mesh
 * inside nodes and sharp across where the network reduces, else hier's
 * schedule; NULL for other collectives or malformed arguments. */
hccn_sched_t *hccn_hier_hier_sharp_build(const hccn_coll_args_t *args)
{
    return build_levels(args, &hier_sharp);
}

/* The hier_nvls_sharp row's builder (algos.c): as hier_sharp's with nvls
 * inside nodes (mesh's schedule where a node's switch does not reduce);
 * hier_nvls's schedule where the network does not reduce. */
hccn_sched_t *hccn_hier_hier_nvls_sharp_build(const hccn_coll_args_t *args)
{
    return build_levels(args, &hier_nvls_sharp);
}

static double cm_levels(hccn_cm_t *m, const hccn_cm_team_t *t,
                        const hccn_coll_args_t *args, const sharp_row_t *row)
{
    if (!(SHARP_COLLS & 1u << args->coll))
        return HCCN_COST_NONE;
    if (!(args->in_switch & HCCN_IN_SWITCH_NET))
        return hccn_hier_cm_form(row->other)(m, t, args);
    hccn_coll_args_t a = *args;
    a.levels = &row->lv;
    return hccn_hier_cm_hier_levels(m, t, &a);
}

double hccn_hier_cm_hier_sharp(hccn_cm_t *m, const hccn_cm_team_t *t,
                               const hccn_coll_args_t *args)
{
    return cm_levels(m, t, args, &hier_sharp);
}

double hccn_hier_cm_hier_nvls_sharp(hccn_cm_t *m, const hccn_cm_team_t *t,
                                    const hccn_coll_args_t *args)
{
    return cm_levels(m, t, args, &hier_nvls_sharp);
}

/* ------------------------------------------------------- closed form --- */

/* Seconds per byte of the slowest finite link of links[lo..hi) at
 * efficiency eff (0 when all are infinite). */
static double slowest(const hccn_sim_topo_t *topo, const int *links, int lo,
                      int hi, double eff)
{
    double w = 0.0;
    for (int k = lo; k < hi; k++)
        w = hccn_hier_cm_max(w, 1.0 / (eff * topo->links[links[k]].bw));
    return w;
}

/* The figures of group g (blocks of b bytes): each member's way up to the
 * network switch and way down from it (the slowest member's), the latency
 * of member 0 -> 1's route, and the unit shared by the G groups of t
 * (every group's contributions cross the one unit). -1 when a route does
 * not pass the reducing switch. */
static int form_of(hccn_cm_t *m, const hccn_cm_team_t *t, int g, uint64_t b,
                   hccn_hier_nv_form_t *f)
{
    const hccn_sim_topo_t *topo = m->pl->topo;
    const int *world = m->pl->world;
    int links[HCCN_SIM_ROUTE_MAX], unit = -1, p = t->size;
    hccn_cm_xf_t x = {.src = hccn_hier_cm_member(t, g, 0),
                      .dst = hccn_hier_cm_member(t, g, 1), .bytes = b};
    double step = hccn_hier_cm_protocol(m, &x), lat;
    *f = (hccn_hier_nv_form_t){0.0, 0.0, 0.0, 0.0, 0.0};
    for (int i = 0; i < p; i++) {
        int a = world[hccn_hier_cm_member(t, g, i)];
        int c = world[hccn_hier_cm_member(t, g, (i + 1) % p)];
        int n = hccn_sim_topo_route(topo, a, c, links, &lat);
        int k = n > 0 ? hccn_sim_topo_reduce_split(topo, a, links, n, &unit)
                      : -1;
        if (k < 0 || unit != topo->net_reduce_link)
            return -1;
        f->up = hccn_hier_cm_max(f->up, slowest(topo, links, 0, k + 1, x.eff));
        f->down = hccn_hier_cm_max(f->down,
                                   slowest(topo, links, k + 1, n, x.eff));
        if (i == 0)
            f->alpha = m->lat_off ? 0.0 : lat + step;
    }
    f->ulat = m->lat_off ? 0.0 : topo->links[unit].lat;
    f->unit = (double)t->ngroups / (x.eff * topo->links[unit].bw);
    return 0;
}

int hccn_hier_cm_sharp_form(hccn_cm_t *m, const hccn_cm_team_t *t,
                            uint64_t b, hccn_hier_nv_form_t *f)
{
    return t->size >= 2 ? form_of(m, t, 0, b, f) : -1;
}

/* The sharp row's closed form (cost_internal.h): nvls's forms with the
 * network's figures where args->in_switch has HCCN_IN_SWITCH_NET_FLAT,
 * else mesh's. Exact for one chunk of even blocks when nothing
 * else shares the links. */
double hccn_hier_cm_sharp(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a)
{
    const int p = t->size;
    if (!(SHARP_COLLS & 1u << a->coll))
        return HCCN_COST_NONE;
    if (!(a->in_switch & HCCN_IN_SWITCH_NET_FLAT))
        return hccn_hier_cm_mesh(m, t, a);   /* mesh's schedule */
    if (p < 2 || a->count == 0)
        return 0.0;
    double end = 0.0;
    for (int g = 0; g < t->ngroups; g++) {
        hccn_hier_nv_form_t f;
        if (form_of(m, t, g, hccn_hier_nv_block(a), &f) != 0)
            return hccn_hier_cm_mesh(m, t, a);  /* not through the unit */
        end = hccn_hier_cm_max(end, hccn_hier_nv_time(m, &f, p, a));
    }
    return end;
}
