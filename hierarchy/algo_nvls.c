/*
 * "nvls": collectives reduced and multicast inside the node's switch
 * (NVLink SHARP-like), for communicators whose ranks are all NPUs of one
 * node whose switch fabric declares in-switch reduction of the call's
 * dtype and operator (docs/topology.md; args->in_switch says so).
 * Elsewhere it is the same exchange without the switch's help: mesh's
 * schedule (as hier falls back to a ring), so the row runs and is priced
 * everywhere and, tying with mesh, is never chosen by cost where the
 * switch does not reduce.
 *
 * allreduce       per chunk: every rank sends each other rank's block up
 *                 once; the switch reduces the p-1 contributions to a
 *                 block and sends the result down once to the block's
 *                 owner, which adds its own part; the owner sends the
 *                 block up once and the switch multicasts it to the p-1
 *                 others. Each NPU's link carries about S up and S down
 *                 (ring: 2(p-1)/p S each way). Chunks pipeline: chunk c's
 *                 multicast (mostly the links down) overlaps chunk c+1's
 *                 reduction (mostly the links up).
 * reduce_scatter  the reduction part alone, for the blocks of SEND
 * allgather       the multicast part alone, of every rank's SEND
 *
 * Transfers name the part of their route they cross (hccn_step_t.via,
 * device_sim/flow_via.c): a contribution goes up to the switch and
 * through its reduction unit, one per block also down; a multicast copy
 * crosses the whole route once, the others only their way down. The
 * contributions to block j land in SCRATCH slots of rank j and are
 * combined there in ascending rank order by REDUCE steps done by the
 * switch (no NPU cost); the owner then adds the sum to its own part, one
 * REDUCE on the NPU. docs/algorithms.md gives bytes, times and the order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/engine.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

enum { PHASE_REDUCE = 1, PHASE_GATHER = 2 };

/* Default chunk of the pipelined allreduce: p blocks of this size, so
 * that each transfer is large enough for a bulk protocol where a stack
 * picks protocols by size (docs/algorithms.md, nvls). */
#define HCCN_NVLS_BLOCK ((uint64_t)2 << 20)

/* SCRATCH sets of the allreduce: chunk c's contributions land in set
 * c % NV_SETS, so NV_SETS chunks may be in reduction at once (enough to
 * cover a chunk's latency and step costs with the next ones' bytes). */
#define NV_SETS 4

/* Block j of len bytes (SEND soff on the contributors, RECV doff on j)
 * reduced into j's RECV through the switch, in chunk position c: rank j's
 * own part is COPYed first (red_begin, after gate; UINT32_MAX: none), the
 * p-1 contributions land in SCRATCH set c%NV_SETS and are combined in the
 * order they come (red_part), the sum is added to the own part
 * (red_end). A multicast reads the same fields: rank j's block at soff
 * (of its SEND or RECV) to every other rank's RECV at doff. */
typedef struct {
    uint64_t soff, doff, len;   /* in: the block */
    uint32_t gate;              /* in: what its COPY waits for */
    uint64_t set;               /* its SCRATCH set */
    uint32_t cp, acc, free_dep; /* its COPY, the sum so far, what frees the
                                   set */
} red_t;

/* Per rank pair bookkeeping of one build, p x p each: the last SEND of
 * the reduction (up[i*p+j]: i to j) and of the multicast (mc[j*p+i]),
 * UINT32_MAX before the first. fin[j*NV_SETS+k]: the last REDUCE of rank
 * j's chunk with SCRATCH set k, which frees the set. */
typedef struct {
    int p;
    int cyclic;              /* the network's order (reduce_blocks) */
    uint32_t *up, *mc, *fin;
    uint64_t slot;           /* bytes of one SCRATCH slot */
    red_t *red;              /* per block of a chunk */
} nv_t;

/* The pipelining chunk of a, in bytes (hccn_hier_chunk's rules). */
static uint64_t nv_chunk(const hccn_coll_args_t *a)
{
    return hccn_hier_chunk(a, (uint64_t)a->nranks * HCCN_NVLS_BLOCK);
}

static void set_via(hccn_sched_t *s, int rank, uint32_t step, int via)
{
    if (step != UINT32_MAX && !s->failed)
        s->ranks[rank].steps[step].via = (uint8_t)via;
}

/* The number of deps in d[0..2) that are real steps, packed first. */
static uint32_t pack(uint32_t *d)
{
    if (d[0] == UINT32_MAX) {
        d[0] = d[1];
        d[1] = UINT32_MAX;
    }
    return (d[0] != UINT32_MAX) + (d[1] != UINT32_MAX);
}

/* Block j's COPY of the own part, and its SCRATCH set. */
static void red_begin(hccn_sched_t *s, const nv_t *v, red_t *r, int j, int c)
{
    uint32_t gate = r->gate;
    r->set = (uint64_t)(c % NV_SETS) * (uint64_t)(v->p - 1) * v->slot;
    r->free_dep = v->fin[j * NV_SETS + c % NV_SETS];
    r->acc = UINT32_MAX;
    r->cp = hccn_sched_local(s, j, 0, HCCN_BUF_SEND, r->soff, HCCN_BUF_RECV,
                             r->doff, r->len, &gate, gate != UINT32_MAX);
}

/* Rank i's part of block j, the k-th to come (0 .. p-2; the last carries
 * the sum down). */
static void red_part(hccn_sched_t *s, nv_t *v, red_t *r, int j, int i, int k)
{
    const int p = v->p;
    uint32_t si = UINT32_MAX, ri = UINT32_MAX, *last = &v->up[i * p + j];
    uint64_t at = r->set + (uint64_t)k * v->slot;
    hccn_sched_xfer(s, i, HCCN_BUF_SEND, r->soff, last, *last != UINT32_MAX,
                    j, HCCN_BUF_SCRATCH, at, &r->free_dep,
                    r->free_dep != UINT32_MAX, r->len, 0, HCCN_BUF_SEND, 0,
                    &si, &ri);
    int via = k == p - 2 ? HCCN_SIM_VIA_UP_DOWN : HCCN_SIM_VIA_UP;
    set_via(s, i, si, via);
    set_via(s, j, ri, via);
    *last = si;
    if (k > 0) {
        uint32_t d[2] = {r->acc, ri};
        r->acc = hccn_sched_local(s, j, 1, HCCN_BUF_SCRATCH, at,
                                  HCCN_BUF_SCRATCH, r->set, r->len, d,
                                  pack(d));
        set_via(s, j, r->acc, 1);
    } else {
        r->acc = ri;
    }
}

/* The sum added to j's own part; returns that REDUCE. */
static uint32_t red_end(hccn_sched_t *s, nv_t *v, red_t *r, int j, int c)
{
    uint32_t d[2] = {r->acc, r->cp};
    uint32_t fin = hccn_sched_local(s, j, 1, HCCN_BUF_SCRATCH, r->set,
                                    HCCN_BUF_RECV, r->doff, r->len, d,
                                    pack(d));
    v->fin[j * NV_SETS + c % NV_SETS] = fin;
    return fin;
}

/* Blocks r[0..p) reduced into their owners in chunk position c; writes
 * each block's last REDUCE to fin. In the node's switch, block by block,
 * the others' parts in ascending rank order. In the network's
 * (v->cyclic), in rounds: round k brings every block j the part of rank
 * j+1+k, so that every rank's steps come in the same order relative to
 * it, as folding needs (hierarchy/fold.h): every node then does what
 * node 0 does. */
static void reduce_blocks(hccn_sched_t *s, nv_t *v, red_t *r, int c,
                          uint32_t *fin)
{
    const int p = v->p;
    if (!v->cyclic) {
        for (int j = 0; j < p; j++) {
            red_begin(s, v, &r[j], j, c);
            for (int i = 0, k = 0; i < p; i++)
                if (i != j)
                    red_part(s, v, &r[j], j, i, k++);
            fin[j] = red_end(s, v, &r[j], j, c);
        }
        return;
    }
    for (int j = 0; j < p; j++)
        red_begin(s, v, &r[j], j, c);
    for (int k = 0; k < p - 1; k++)
        for (int j = 0; j < p; j++)
            red_part(s, v, &r[j], j, hccn_hier_mod(j + 1 + k, p), k);
    for (int j = 0; j < p; j++)
        fin[j] = red_end(s, v, &r[j], j, c);
}

/* The copy of rank j's (sbuf, off, len) to rank i = j+k's RECV at doff:
 * the copy to j+1 crosses the whole route, the others their way down. It
 * waits for `after` on j and for the previous multicast from j to i; on i,
 * with up, for i's contribution to block j (in place they are the same
 * bytes). */
static void mc_copy(hccn_sched_t *s, nv_t *v, int j, int k, hccn_buf_t sbuf,
                    uint64_t off, uint64_t doff, uint64_t len,
                    uint32_t after, int up)
{
    const int p = v->p;
    int i = hccn_hier_mod(j + k, p);
    uint32_t *last = &v->mc[j * p + i], sd[2] = {after, *last};
    uint32_t rd = up ? v->up[i * p + j] : UINT32_MAX, si = UINT32_MAX,
             ri = UINT32_MAX;
    hccn_sched_xfer(s, j, sbuf, off, sd, pack(sd), i, HCCN_BUF_RECV, doff,
                    &rd, rd != UINT32_MAX, len, 0, HCCN_BUF_SEND, 0, &si, &ri);
    int via = k == 1 ? HCCN_SIM_VIA_ROUTE : HCCN_SIM_VIA_DOWN;
    set_via(s, j, si, via);
    set_via(s, i, ri, via);
    *last = si;
}

/* Every rank j's block b[j] (of sbuf) multicast, after after[j] (NULL:
 * nothing): rank by rank, or (v->cyclic) in rounds, round k carrying
 * every j's copy to j+k. */
static void multicast_all(hccn_sched_t *s, nv_t *v, hccn_buf_t sbuf,
                          const red_t *b, const uint32_t *after, int up)
{
    const int p = v->p;
    if (v->cyclic) {
        for (int k = 1; k < p; k++)
            for (int j = 0; j < p; j++)
                mc_copy(s, v, j, k, sbuf, b[j].soff, b[j].doff, b[j].len,
                        after != NULL ? after[j] : UINT32_MAX, up);
    } else {
        for (int j = 0; j < p; j++)
            for (int k = 1; k < p; k++)
                mc_copy(s, v, j, k, sbuf, b[j].soff, b[j].doff, b[j].len,
                        after != NULL ? after[j] : UINT32_MAX, up);
    }
}

static int nv_init(nv_t *v, int p, uint64_t slot, int cyclic)
{
    size_t pp = (size_t)p * (size_t)p;
    v->p = p;
    v->cyclic = cyclic;
    v->slot = slot;
    v->up = hccn_sim_malloc(pp * sizeof(uint32_t));
    v->mc = hccn_sim_malloc(pp * sizeof(uint32_t));
    v->fin = hccn_sim_malloc((size_t)p * NV_SETS * sizeof(uint32_t));
    v->red = hccn_sim_malloc((size_t)p * sizeof(red_t));
    if (v->up == NULL || v->mc == NULL || v->fin == NULL || v->red == NULL)
        return -1;
    for (size_t k = 0; k < pp; k++)
        v->up[k] = v->mc[k] = UINT32_MAX;
    for (int k = 0; k < NV_SETS * p; k++)
        v->fin[k] = UINT32_MAX;
    return 0;
}

static void nv_free(nv_t *v)
{
    hccn_sim_free(v->up);
    hccn_sim_free(v->mc);
    hccn_sim_free(v->fin);
    hccn_sim_free(v->red);
}

/* One chunk of q elements at byte offset base: reduce every block into its
 * owner, then multicast it. A multicast receive of block j on rank i waits
 * for i's contribution to j (in place they are the same bytes). */
static void allreduce_chunk(hccn_sched_t *s, nv_t *v,
                            const hccn_coll_args_t *a, uint64_t base,
                            uint64_t q, int c, uint32_t *fin)
{
    const int p = v->p;
    for (int j = 0; j < p; j++) {
        hccn_span_t b = hccn_hier_block(q, a->esize, p, j);
        v->red[j] = (red_t){.soff = base + b.off, .doff = base + b.off,
                            .len = b.len,
                            .gate = c > 0 ? fin[j] : UINT32_MAX};
    }
    reduce_blocks(s, v, v->red, c, fin);
    hccn_hier_stamp(s, PHASE_REDUCE);
    multicast_all(s, v, HCCN_BUF_RECV, v->red, fin, 1);
    hccn_hier_stamp(s, PHASE_GATHER);
}

static int build_allreduce(hccn_sched_t *s, const hccn_coll_args_t *a,
                           int cyclic)
{
    const int p = a->nranks;
    uint64_t chunk = nv_chunk(a), n = a->count;
    uint64_t per = chunk / a->esize;        /* elements per chunk */
    uint64_t first = n < per ? n : per;
    nv_t v;
    uint32_t *fin = hccn_sim_malloc((size_t)p * sizeof(uint32_t));
    if (fin == NULL || nv_init(&v, p, hccn_hier_block(first, a->esize, p,
                                                      0).len, cyclic) != 0) {
        hccn_sim_free(fin);
        nv_free(&v);
        return -1;
    }
    uint64_t sets = (n + per - 1) / per < NV_SETS ? (n + per - 1) / per
                                                  : NV_SETS;
    s->scratch_bytes = (size_t)(sets * (uint64_t)(p - 1) * v.slot);
    int c = 0;
    for (uint64_t at = 0; at < n && !s->failed; at += per, c++) {
        uint64_t q = n - at < per ? n - at : per;
        allreduce_chunk(s, &v, a, at * a->esize, q, c, fin);
    }
    hccn_sim_free(fin);
    nv_free(&v);
    return 0;
}

static int build_reduce_scatter(hccn_sched_t *s, const hccn_coll_args_t *a,
                                int cyclic)
{
    const int p = a->nranks;
    uint64_t b = a->count * a->esize;
    nv_t v;
    uint32_t *fin = hccn_sim_malloc((size_t)p * sizeof(uint32_t));
    if (fin == NULL || nv_init(&v, p, b, cyclic) != 0) {
        hccn_sim_free(fin);
        nv_free(&v);
        return -1;
    }
    s->scratch_bytes = (size_t)((uint64_t)(p - 1) * b);
    for (int j = 0; j < p; j++)
        v.red[j] = (red_t){.soff = (uint64_t)j * b, .doff = 0, .len = b,
                           .gate = UINT32_MAX};
    reduce_blocks(s, &v, v.red, 0, fin);
    hccn_hier_stamp(s, PHASE_REDUCE);
    hccn_sim_free(fin);
    nv_free(&v);
    return 0;
}

/* Every rank's SEND copied to its own place in RECV, then multicast
 * (rank by rank, each one's copy before its multicast; or, cyclic, all
 * the copies, then the rounds). */
static int build_allgather(hccn_sched_t *s, const hccn_coll_args_t *a,
                           int cyclic)
{
    const int p = a->nranks;
    uint64_t b = a->count * a->esize;
    nv_t v;
    if (nv_init(&v, p, b, cyclic) != 0) {
        nv_free(&v);
        return -1;
    }
    for (int j = 0; j < p; j++) {
        v.red[j] = (red_t){.soff = 0, .doff = (uint64_t)j * b, .len = b};
        hccn_sched_local(s, j, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                         v.red[j].doff, b, NULL, 0);
        if (!cyclic)
            for (int k = 1; k < p; k++)
                mc_copy(s, &v, j, k, HCCN_BUF_SEND, 0, v.red[j].doff, b,
                        UINT32_MAX, 0);
    }
    if (cyclic)
        multicast_all(s, &v, HCCN_BUF_SEND, v.red, NULL, 0);
    hccn_hier_stamp(s, PHASE_GATHER);
    nv_free(&v);
    return 0;
}

static int build_order(hccn_sched_t *s, const hccn_coll_args_t *a,
                       int cyclic)
{
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:      return build_allreduce(s, a, cyclic);
    case HCCN_COLL_REDUCE_SCATTER: return build_reduce_scatter(s, a, cyclic);
    default:                       return build_allgather(s, a, cyclic);
    }
}

static int build(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    return build_order(s, a, 0);
}

static int build_cyclic(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    return build_order(s, a, 1);
}

hccn_sched_t *hccn_hier_mesh_build(const hccn_coll_args_t *args);

/* The in-switch schedule of args (allreduce, reduce_scatter, allgather)
 * named name, whichever switch the routes meet (sharp's too), in the
 * order of reduce_blocks: cyclic for the network's switch; NULL on
 * malformed arguments or no memory. */
hccn_sched_t *hccn_hier_nvls_sched(const hccn_coll_args_t *args,
                                   const char *name, int cyclic)
{
    return hccn_hier_flat(args, name, cyclic ? build_cyclic : build);
}

/* The nvls row's builder (algos.c): the in-switch schedule where
 * args->in_switch has HCCN_IN_SWITCH_ONE, else mesh's; NULL for other
 * collectives or malformed arguments. */
hccn_sched_t *hccn_hier_nvls_build(const hccn_coll_args_t *args)
{
    unsigned mask = (1u << HCCN_COLL_ALLREDUCE) |
                    (1u << HCCN_COLL_REDUCE_SCATTER) |
                    (1u << HCCN_COLL_ALLGATHER);
    if (!hccn_hier_args_ok(args, mask))
        return NULL;
    if (args->in_switch & HCCN_IN_SWITCH_ONE)
        return hccn_hier_nvls_sched(args, "nvls", 0);
    /* No switch reduces: the same pattern without it, mesh's schedule
     * under the row's name. */
    hccn_sched_t *s = hccn_hier_mesh_build(args);
    if (s != NULL)
        snprintf(s->algo, sizeof(s->algo), "nvls");
    return s;
}

int hccn_hier_in_switch(const hccn_sim_topo_t *topo, const int *world, int n,
                        hccn_coll_t coll, int dtype, int op)
{
    if (topo == NULL || world == NULL || n < 2 ||
        (coll != HCCN_COLL_ALLREDUCE && coll != HCCN_COLL_REDUCE_SCATTER &&
         coll != HCCN_COLL_ALLGATHER))
        return 0;
    int node0 = topo->npus[world[0]].node, one = 1, nodes = 1;
    for (int r = 0; r < n; r++) {
        int node = topo->npus[world[r]].node;
        one &= node == node0;
        if (coll == HCCN_COLL_ALLGATHER ? topo->nodes[node].reduce_link < 0
            : hccn_sim_topo_reduce_node(topo, node, dtype, op) < 0)
            nodes = 0;
    }
    int in = !nodes ? 0 : one ? HCCN_IN_SWITCH_ONE : HCCN_IN_SWITCH_NODES;
    return one ? in : in | hccn_hier_net_switch(topo, world, n, coll, dtype,
                                                op);
}

int hccn_hier_level_switch(const hccn_coll_args_t *a, const char *algo)
{
    if (algo != NULL && strcmp(algo, "sharp") == 0)
        return a->in_switch & HCCN_IN_SWITCH_NET
                   ? HCCN_IN_SWITCH_NET | HCCN_IN_SWITCH_NET_FLAT : 0;
    return (a->in_switch & HCCN_IN_SWITCH_NODES) && algo != NULL &&
                   strcmp(algo, "nvls") == 0
               ? HCCN_IN_SWITCH_ONE : 0;
}

/* ------------------------------------------------- hierarchical row --- */

/* hier_nvls: hier's composition (levels.h) with nvls inside every node
 * and, across a power of two of nodes, halving-doubling: a chunk crosses
 * the network in 2 log2 N steps a rank, the depth of the library's NVLS
 * tree (a ring's 2 (N - 1) steps of its network latency leave the top
 * latency-bound from four nodes). On other node counts hd's extra ranks
 * fold in at a price above the ring's (3 nodes, 1 GiB: 6162 us against
 * 4521), so a ring there. Where the nodes' switches do not reduce, nvls
 * is mesh's schedule, and the row is hier_mh's or hier's (which wins the
 * tie). */
static const hccn_level_choice_t hier_nvls_hd = {"hier_nvls", 2,
                                                 {"nvls", "hd", NULL}};
static const hccn_level_choice_t hier_nvls_ring = {"hier_nvls", 2,
                                                   {"nvls", "ring", NULL}};

static const hccn_level_choice_t *hier_nvls_levels(const hccn_coll_args_t *a)
{
    int n = a->view != NULL ? a->view->nnodes : 0;
    return n > 0 && (n & (n - 1)) == 0 ? &hier_nvls_hd : &hier_nvls_ring;
}

hccn_sched_t *hccn_hier_hier_build_levels(const hccn_coll_args_t *args);

/* The hier_nvls row's builder and closed form (algos.c): hier's with
 * the levels above. */
hccn_sched_t *hccn_hier_hier_nvls_build(const hccn_coll_args_t *args)
{
    hccn_coll_args_t a = *args;
    a.levels = hier_nvls_levels(args);
    return hccn_hier_hier_build_levels(&a);
}

double hccn_hier_cm_hier_nvls(hccn_cm_t *m, const hccn_cm_team_t *t,
                              const hccn_coll_args_t *args)
{
    hccn_coll_args_t a = *args;
    a.levels = hier_nvls_levels(args);
    return hccn_hier_cm_hier_levels(m, t, &a);
}

/* ------------------------------------------------------- closed form --- */

typedef hccn_hier_nv_form_t nv_form_t;

/* The figures of group g for transfers of b bytes; -1 when the group is
 * not on one reducing switch. */
static int form_of(hccn_cm_t *m, const hccn_cm_team_t *t, int g, uint64_t b,
                   nv_form_t *f)
{
    const hccn_sim_topo_t *topo = m->pl->topo;
    int r0 = hccn_hier_cm_member(t, g, 0), r1 = hccn_hier_cm_member(t, g, 1);
    int links[HCCN_SIM_ROUTE_MAX], unit = -1, a = m->pl->world[r0];
    double lat;
    int n = hccn_sim_topo_route(topo, a, m->pl->world[r1], links, &lat);
    if (hccn_sim_topo_reduce_split(topo, a, links, n, &unit) != 0 || n != 2)
        return -1;
    hccn_cm_xf_t x = {.src = r0, .dst = r1, .bytes = b};
    double step = hccn_hier_cm_protocol(m, &x);
    f->alpha = m->lat_off ? 0.0 : lat + step;
    f->ulat = 0.0;
    f->up = 1.0 / (x.eff * topo->links[links[0]].bw);
    f->down = 1.0 / (x.eff * topo->links[links[1]].bw);
    f->unit = 1.0 / (x.eff * topo->links[unit].bw);
    return 0;
}

/* The reduction part for blocks of b bytes alone: contributions drain at
 * the most loaded of the link up (p-1 of them) and the unit (p(p-1)). */
static double nv_t1(const nv_form_t *f, int p, double b)
{
    return f->alpha + f->ulat + hccn_hier_cm_max((p - 1) * b * f->up,
                                       (double)p * (p - 1) * b * f->unit);
}

/* The multicast alone: p-1 copies meet on every link down. */
static double nv_t2(const nv_form_t *f, int p, double b)
{
    return f->alpha + (p - 1) * b * f->down;
}

/* The links' time of a chunk of blocks of b bytes while the previous
 * chunk's multicast runs: p b each way, p(p-1) b through the unit. */
static double nv_stage(hccn_cm_t *m, const nv_form_t *f, int p, double b)
{
    double stage = hccn_hier_cm_max(p * b * f->up, p * b * f->down);
    stage = hccn_hier_cm_max(stage, (double)p * (p - 1) * b * f->unit);
    return hccn_hier_cm_max(stage, b * m->r);
}

/* Pipelined allreduce: the first chunk's reduction, then per chunk the
 * busier of its reduction and the previous chunk's multicast sharing the
 * links (p b each way, p(p-1) b through the unit), then the last chunk's
 * multicast. One chunk: exact for even blocks. */
static double nv_allreduce(hccn_cm_t *m, const nv_form_t *f, int p,
                           const hccn_coll_args_t *a)
{
    uint64_t per = nv_chunk(a) / a->esize;
    uint64_t n = a->count, k = (n + per - 1) / per;
    double b0 = (double)hccn_hier_block(n < per ? n : per, a->esize, p, 0).len;
    double bl = (double)hccn_hier_block(n - (k - 1) * per, a->esize, p, 0).len;
    double t = hccn_hier_cm_max(nv_t1(f, p, b0), b0 * m->m) + b0 * m->r;
    for (uint64_t c = 1; c < k; c++)
        t += nv_stage(m, f, p, c == k - 1 ? bl : b0);
    return t + nv_t2(f, p, bl);
}

double hccn_hier_cm_nvls_stage(hccn_cm_t *m, const hccn_cm_team_t *t,
                               uint64_t b)
{
    double most = 0.0;
    for (int g = 0; g < t->ngroups; g++) {
        nv_form_t f;
        if (form_of(m, t, g, b, &f) != 0)
            return -1.0;
        most = hccn_hier_cm_max(most, nv_stage(m, &f, t->size, (double)b));
    }
    return most;
}

/* The nvls row's closed form (cost_internal.h): the forms above where
 * the switch reduces, mesh's elsewhere. */
double hccn_hier_cm_nvls(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a)
{
    const int p = t->size;
    if (!(a->in_switch & HCCN_IN_SWITCH_ONE))
        return hccn_hier_cm_mesh(m, t, a);   /* mesh's schedule */
    if (p < 2 || a->count == 0)
        return 0.0;
    double end = 0.0, one;
    uint64_t blk = a->coll == HCCN_COLL_ALLREDUCE
                       ? hccn_hier_block(a->count, a->esize, p, 0).len
                       : a->count * a->esize;
    for (int g = 0; g < t->ngroups; g++) {
        nv_form_t f;
        uint64_t per = nv_chunk(a) / a->esize;
        if (a->coll == HCCN_COLL_ALLREDUCE && a->count > per)
            blk = hccn_hier_block(per, a->esize, p, 0).len;
        if (form_of(m, t, g, blk, &f) != 0)
            return hccn_hier_cm_mesh(m, t, a);  /* not on one switch */
        if ((one = hccn_hier_nv_time(m, &f, p, a)) < 0.0)
            return HCCN_COST_NONE;
        end = hccn_hier_cm_max(end, one);
    }
    return end;
}

/* The transfer size a group's form is taken at: an allreduce's block of
 * its first chunk, else the whole SEND. */
uint64_t hccn_hier_nv_block(const hccn_coll_args_t *a)
{
    uint64_t per = nv_chunk(a) / a->esize;
    if (a->coll != HCCN_COLL_ALLREDUCE)
        return a->count * a->esize;
    return hccn_hier_block(a->count < per ? a->count : per, a->esize,
                           a->nranks, 0).len;
}

double hccn_hier_nv_time(hccn_cm_t *m, const hccn_hier_nv_form_t *f, int p,
                         const hccn_coll_args_t *a)
{
    double b = (double)(a->count * a->esize);
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        return nv_allreduce(m, f, p, a);
    case HCCN_COLL_REDUCE_SCATTER:
        return hccn_hier_cm_max(nv_t1(f, p, b), b * m->m) + b * m->r;
    case HCCN_COLL_ALLGATHER:
        return hccn_hier_cm_max(nv_t2(f, p, b), b * m->m);
    default:
        return HCCN_COST_NONE;
    }
}
