/*
 * "hier3", "hier3_hd": three-level hierarchical collectives for networks
 * with a leaf/spine tier (HCCL's level0/level1/level2). A pod is the nodes
 * under one leaf switch (args->view->pod). Level 0 is the ranks of one
 * node (mesh), level 1 the ranks with the same local index on the nodes of
 * one pod (ring, through the leaf), level 2 the ranks with the same local
 * index and the same position in their pod across pods (through the
 * spine): ring for hier3, halving-doubling for hier3_hd. With P pods of M
 * nodes of L ranks:
 *
 * allreduce       per chunk of the message (a multiple of L * M elements,
 *                 args->chunk_bytes, default 4 MiB), q = chunk / L:
 *                 P1 intra-node reduce-scatter into L blocks of q ->
 *                 P2 intra-pod reduce-scatter of each block into M pieces
 *                 of q / M -> P3 inter-pod allreduce of each piece ->
 *                 P4 intra-pod allgather -> P5 intra-node allgather. Each
 *                 level runs its phases one at a time (level 0: every P1,
 *                 then the P5s; level 1: every P2, then the P4s; level 2:
 *                 the P3s), in chunk order, so the levels overlap: chunk
 *                 c+1 climbs while chunk c crosses the spine. The count %
 *                 (L * M) elements left over go last: intra-node, intra-
 *                 pod, then inter-pod allreduce.
 * reduce_scatter  intra-node reduce-scatter of all the data -> intra-pod
 *                 reduce-scatter of the rank's 1/L -> inter-pod reduce-
 *                 scatter of its 1/(L M) into RECV (hier_levels.h)
 * allgather       the reverse: inter-pod allgather of the rank's own
 *                 block, intra-pod allgather of those, intra-node
 *                 allgather into RECV
 *
 * A trivial level degrades to two (never a rejection): one pod, one node
 * per pod, pods of different node counts, no pods in the view, or
 * reduce_scatter/allgather on ranks that are not pod-, node-major give
 * hier's schedule (mesh inside nodes, ring across); one rank per node
 * gives hier's schedule with pods in the role of nodes. Not applicable
 * (NULL) where hier is not. docs/algorithms.md gives bytes and times.
 */
#include <stdlib.h>

#include "hierarchy/algo_util.h"
#include "hierarchy/compose.h"
#include "hierarchy/hier_levels.h"

#define HIER3_DEFAULT_CHUNK ((uint64_t)4 << 20)

hccn_sched_t *hccn_hier_hier_build(const hccn_coll_args_t *args);

enum { PH_1 = 1, PH_2, PH_3, PH_4, PH_5, PH_TAIL };

typedef struct {
    const char *sched;        /* schedule name */
    const char *l[3];         /* flat algorithms of levels 0, 1 and 2 */
} variant3_t;

static const variant3_t HIER3 = {"hier3(mesh,ring,ring)",
                                 {"mesh", "ring", "ring"}};
static const variant3_t HIER3_HD = {"hier3(mesh,ring,hd)",
                                    {"mesh", "ring", "hd"}};

typedef struct {
    hccn_sched_t *s;
    const hccn_coll_args_t *a;
    const variant3_t *v;
    int P, M, L;
    int *at;                  /* [(p * M + m) * L + l]: the rank there */
    int *grp;                 /* a group's ranks, max(P, M, L) entries */
    hccn_frontier_t *f[3];    /* last steps of each rank's level-l phase */
    hccn_frontier_t *tmp;
    uint64_t sbase[3];        /* where each level's SCRATCH starts */
} h3_t;

/* ------------------------------------------------------------ shape --- */

/* The shape of a pod-structured view: P pods of M nodes of L ranks, and
 * pos[n], node n's position among its pod's nodes (by node index). */
typedef struct {
    int P, M, L;
    int *pos;
} shape3_t;

/* Counts ranks per node and nodes per pod. Returns 1 for an even shape
 * (every node L ranks, every pod M nodes), 0 otherwise or when the view
 * has no usable pods; -1 on no memory. */
static int shape3(const hccn_hier_view_t *v, shape3_t *sh)
{
    int N = v->nnodes, rc = 1;
    int *size = calloc((size_t)N, sizeof(int));
    int *npod = calloc((size_t)N, sizeof(int));
    int *pnodes = calloc((size_t)(v->npods > 0 ? v->npods : 1), sizeof(int));
    sh->pos = malloc((size_t)N * sizeof(int));
    if (!size || !npod || !pnodes || !sh->pos) {
        rc = -1;
        goto out;
    }
    for (int n = 0; n < N; n++)
        npod[n] = -1;
    if (v->pod == NULL || v->npods < 1)
        rc = 0;
    for (int r = 0; r < v->nranks && rc > 0; r++) {
        int n = v->node[r], p = v->pod[r];
        if (n < 0 || n >= N || v->local[r] < 0 || p < 0 || p >= v->npods ||
            (npod[n] >= 0 && npod[n] != p)) {
            rc = 0;
        } else {
            size[n]++;
            npod[n] = p;
        }
    }
    for (int n = 0; n < N && rc > 0; n++) {
        rc = size[n] == size[0] && size[0] > 0;
        if (rc > 0)
            sh->pos[n] = pnodes[npod[n]]++;
    }
    for (int r = 0; r < v->nranks && rc > 0; r++)
        rc = v->local[r] < size[0];
    for (int p = 0; p < v->npods && rc > 0; p++)
        rc = pnodes[p] == pnodes[0];
    sh->P = v->npods;
    sh->M = rc > 0 ? pnodes[0] : 0;
    sh->L = rc > 0 ? size[0] : 0;
out:
    free(size);
    free(npod);
    free(pnodes);
    return rc;
}

/* 1 if rank r is (pod * M + position) * L + local for every r. */
static int pod_major(const hccn_hier_view_t *v, const shape3_t *sh)
{
    for (int r = 0; r < v->nranks; r++)
        if (r != (v->pod[r] * sh->M + sh->pos[v->node[r]]) * sh->L +
                     v->local[r])
            return 0;
    return 1;
}

/* hier on the view with pods as nodes: node = pod, local = the rank's
 * position among the pod's ranks (one rank per node). */
static hccn_sched_t *pods_as_nodes(const hccn_coll_args_t *a)
{
    const hccn_hier_view_t *v = a->view;
    int *mem = calloc(2 * (size_t)a->nranks + (size_t)v->npods, sizeof(int));
    if (mem == NULL)
        return NULL;
    int *local = mem + a->nranks, *seen = mem + 2 * a->nranks;
    for (int r = 0; r < a->nranks; r++) {
        mem[r] = v->pod[r];
        local[r] = seen[v->pod[r]]++;
    }
    hccn_hier_view_t pv = {a->nranks, mem, local, v->npods, NULL, 0};
    hccn_coll_args_t sa = *a;
    sa.view = &pv;
    sa.fold_rep = NULL;         /* pods are not nodes: built whole */
    hccn_sched_t *s = hccn_hier_hier_build(&sa);
    free(mem);
    return s;
}

/* ------------------------------------------------------ composition --- */

static int h3_init(h3_t *h, hccn_sched_t *s, const hccn_coll_args_t *a,
                   const variant3_t *v, const shape3_t *sh)
{
    const hccn_hier_view_t *vw = a->view;
    int most = sh->P > sh->M ? sh->P : sh->M;
    *h = (h3_t){.s = s, .a = a, .v = v, .P = sh->P, .M = sh->M, .L = sh->L};
    h->at = malloc((size_t)a->nranks * sizeof(int));
    h->grp = malloc((size_t)(most > sh->L ? most : sh->L) * sizeof(int));
    for (int l = 0; l < 3; l++)
        h->f[l] = hccn_frontier_new(a->nranks);
    h->tmp = hccn_frontier_new(a->nranks);
    if (!h->at || !h->grp || !h->f[0] || !h->f[1] || !h->f[2] || !h->tmp)
        return -1;
    for (int r = 0; r < a->nranks; r++)
        h->at[r] = -1;
    for (int r = 0; r < a->nranks; r++)
        h->at[(vw->pod[r] * sh->M + sh->pos[vw->node[r]]) * sh->L +
              vw->local[r]] = r;
    for (int r = 0; r < a->nranks; r++)
        if (h->at[r] < 0)
            return -1;   /* two ranks in one place: not a placement */
    return 0;
}

static void h3_free(h3_t *h)
{
    free(h->at);
    free(h->grp);
    for (int l = 0; l < 3; l++)
        hccn_frontier_free(h->f[l]);
    hccn_frontier_free(h->tmp);
}

/* The ranks of group g of level l, in member order: level 0 group (p, m)
 * = g = p * M + m by local index; level 1 group (p, l) = g = p * L + l by
 * position; level 2 group (m, l) = g = m * L + l by pod. */
static const int *group(h3_t *h, int lvl, int g)
{
    const int M = h->M, L = h->L;
    if (lvl == 0)
        for (int l = 0; l < L; l++)
            h->grp[l] = h->at[g * L + l];
    else if (lvl == 1)
        for (int m = 0; m < M; m++)
            h->grp[m] = h->at[((g / L) * M + m) * L + g % L];
    else
        for (int p = 0; p < h->P; p++)
            h->grp[p] = h->at[(p * M + g / L) * L + g % L];
    return h->grp;
}

/* Members of a level-l group, and the number of groups. */
static int gsize(const h3_t *h, int lvl)
{
    return lvl == 0 ? h->L : lvl == 1 ? h->M : h->P;
}

static int ngroups(const h3_t *h, int lvl)
{
    return lvl == 0 ? h->P * h->M : lvl == 1 ? h->P * h->L : h->M * h->L;
}

/* Where group g of level l sits in the placement: its member-0 rank's pod,
 * position and local index. */
static void coords(const h3_t *h, int lvl, int g, int *p, int *m, int *l)
{
    *p = lvl == 2 ? 0 : g / (lvl == 0 ? h->M : h->L);
    *m = lvl == 0 ? g % h->M : lvl == 1 ? 0 : g / h->L;
    *l = lvl == 0 ? 0 : g % h->L;
}

static hccn_sched_t *flat(const h3_t *h, int lvl, hccn_coll_t coll,
                          uint64_t count)
{
    const hccn_algo_t *al = hccn_hier_algo_find(h->v->l[lvl]);
    hccn_coll_args_t sa = {.coll = coll, .nranks = gsize(h, lvl),
                           .count = count, .esize = h->a->esize,
                           .chunk_bytes = h->a->chunk_bytes};
    return al != NULL ? al->build(&sa) : NULL;
}

/* tmp = a | b. */
static const hccn_frontier_t *both(h3_t *h, const hccn_frontier_t *a,
                                   const hccn_frontier_t *b)
{
    if (hccn_frontier_copy(h->tmp, a) != 0 ||
        hccn_frontier_merge(h->tmp, b) != 0)
        h->s->failed = 1;
    return h->tmp;
}

/* Where a group's buffer sits: member 0 of the group at pod p, position
 * m, local index l has its byte 0 at off + p * cp + m * cm + l * cl of buf,
 * member i at that plus i * stride. */
typedef struct {
    hccn_buf_t buf;
    uint64_t off, cp, cm, cl, stride;
} where_t;

static hccn_bufmap_t place(const where_t *w, int p, int m, int l)
{
    return (hccn_bufmap_t){w->buf, w->off + (uint64_t)p * w->cp +
                                       (uint64_t)m * w->cm +
                                       (uint64_t)l * w->cl,
                           w->stride};
}

/* Runs coll on count elements in every group of level lvl, SEND and RECV
 * where given, after `after` (NULL: nothing), its sinks into level lvl's
 * frontier. Failures set h->s->failed. */
static void level_run(h3_t *h, int lvl, hccn_coll_t coll, uint64_t count,
                      where_t snd, where_t rcv, const hccn_frontier_t *after,
                      int phase)
{
    for (int g = 0; g < ngroups(h, lvl) && !h->s->failed; g++) {
        int p, m, l;
        coords(h, lvl, g, &p, &m, &l);
        hccn_compose_t how = {
            .ranks = group(h, lvl, g), .after = after, .phase = phase,
            .map = {place(&snd, p, m, l), place(&rcv, p, m, l),
                    {HCCN_BUF_SCRATCH, h->sbase[lvl], 0}}};
        hccn_sched_t *sub = flat(h, lvl, coll, count);
        hccn_sched_compose(h->s, sub, &how, h->f[lvl]);
        hccn_sched_free(sub);
    }
}

/* SCRATCH bytes a flat schedule of level lvl needs (0 if none). */
static uint64_t probe(const h3_t *h, int lvl, hccn_coll_t coll,
                      uint64_t count)
{
    hccn_sched_t *s = count > 0 ? flat(h, lvl, coll, count) : NULL;
    uint64_t b = s != NULL ? s->scratch_bytes : 0;
    hccn_sched_free(s);
    return b;
}

static where_t in(hccn_buf_t buf, uint64_t off, uint64_t cp, uint64_t cm,
                  uint64_t cl, uint64_t stride)
{
    return (where_t){buf, off, cp, cm, cl, stride};
}

/* -------------------------------------------------------- allreduce --- */

/* The chunk in elements: a multiple of L * M, at least L * M. */
static uint64_t chunk_elems(const h3_t *h)
{
    uint64_t lm = (uint64_t)h->L * (uint64_t)h->M;
    uint64_t c = hccn_hier_chunk(h->a, HIER3_DEFAULT_CHUNK) / h->a->esize;
    c -= c % lm;
    return c < lm ? lm : c;
}

/* P1, P2 and P3 of the chunk at byte o with blocks of b bytes (pieces of
 * pb); P3's sinks are kept in f3 for the chunk's P4. */
static void ar_up(h3_t *h, uint64_t o, uint64_t b, uint64_t pb,
                  hccn_frontier_t *f3)
{
    const size_t e = h->a->esize;
    level_run(h, 0, HCCN_COLL_REDUCE_SCATTER, b / e,
              in(HCCN_BUF_SEND, o, 0, 0, 0, 0),
              in(HCCN_BUF_RECV, o, 0, 0, 0, b), h->f[0], PH_1);
    level_run(h, 1, HCCN_COLL_REDUCE_SCATTER, pb / e,
              in(HCCN_BUF_RECV, o, 0, 0, b, 0),
              in(HCCN_BUF_RECV, o, 0, 0, b, pb), both(h, h->f[0], h->f[1]),
              PH_2);
    level_run(h, 2, HCCN_COLL_ALLREDUCE, pb / e,
              in(HCCN_BUF_RECV, o, 0, pb, b, 0),
              in(HCCN_BUF_RECV, o, 0, pb, b, 0), both(h, h->f[1], h->f[2]),
              PH_3);
    if (hccn_frontier_copy(f3, h->f[2]) != 0)
        h->s->failed = 1;
}

/* P4 and P5 of the chunk at byte o, once its P3 (f3) is done. */
static void ar_down(h3_t *h, uint64_t o, uint64_t b, uint64_t pb,
                    const hccn_frontier_t *f3)
{
    const size_t e = h->a->esize;
    level_run(h, 1, HCCN_COLL_ALLGATHER, pb / e,
              in(HCCN_BUF_RECV, o, 0, 0, b, pb),
              in(HCCN_BUF_RECV, o, 0, 0, b, 0), both(h, h->f[1], f3), PH_4);
    level_run(h, 0, HCCN_COLL_ALLGATHER, b / e,
              in(HCCN_BUF_RECV, o, 0, 0, 0, b),
              in(HCCN_BUF_RECV, o, 0, 0, 0, 0), both(h, h->f[0], h->f[1]),
              PH_5);
}

/* The last t elements at byte o: allreduce inside nodes, then pods, then
 * across pods, each level in place on RECV. */
static void ar_tail(h3_t *h, uint64_t o, uint64_t t)
{
    where_t r = in(HCCN_BUF_RECV, o, 0, 0, 0, 0);
    level_run(h, 0, HCCN_COLL_ALLREDUCE, t, in(HCCN_BUF_SEND, o, 0, 0, 0, 0),
              r, h->f[0], PH_TAIL);
    level_run(h, 1, HCCN_COLL_ALLREDUCE, t, r, r, both(h, h->f[0], h->f[1]),
              PH_TAIL);
    level_run(h, 2, HCCN_COLL_ALLREDUCE, t, r, r, both(h, h->f[1], h->f[2]),
              PH_TAIL);
}

/* Levels overlap in time, so each gets its own SCRATCH range. */
static void ar_scratch(h3_t *h, uint64_t q0, uint64_t tail)
{
    uint64_t s0 = probe(h, 0, HCCN_COLL_REDUCE_SCATTER, q0);
    uint64_t s0b = probe(h, 0, HCCN_COLL_ALLGATHER, q0);
    uint64_t s0t = probe(h, 0, HCCN_COLL_ALLREDUCE, tail);
    uint64_t s1 = probe(h, 1, HCCN_COLL_REDUCE_SCATTER, q0 / h->M);
    uint64_t s1b = probe(h, 1, HCCN_COLL_ALLGATHER, q0 / h->M);
    uint64_t s1t = probe(h, 1, HCCN_COLL_ALLREDUCE, tail);
    s0 = s0b > s0 ? s0b : s0;
    s1 = s1b > s1 ? s1b : s1;
    h->sbase[1] = s0t > s0 ? s0t : s0;
    h->sbase[2] = h->sbase[1] + (s1t > s1 ? s1t : s1);
}

static int build_allreduce(h3_t *h)
{
    const size_t e = h->a->esize;
    const uint64_t lm = (uint64_t)h->L * (uint64_t)h->M, ce = chunk_elems(h);
    uint64_t main = h->a->count / lm * lm, tail = h->a->count - main;
    size_t K = (size_t)((main + ce - 1) / ce);
    ar_scratch(h, (main < ce ? main : ce) / (uint64_t)h->L, tail);
    hccn_frontier_t **f3 = calloc(K + 1, sizeof(*f3));
    if (f3 == NULL)
        return -1;
    for (size_t k = 0; k < K && !h->s->failed; k++) {
        uint64_t off = k * ce, len = main - off < ce ? main - off : ce;
        uint64_t b = len / (uint64_t)h->L * e;
        f3[k] = hccn_frontier_new(h->a->nranks);
        if (f3[k] == NULL)
            h->s->failed = 1;
        else
            ar_up(h, off * e, b, b / (uint64_t)h->M, f3[k]);
    }
    for (size_t k = 0; k < K && !h->s->failed; k++) {
        uint64_t off = k * ce, len = main - off < ce ? main - off : ce;
        uint64_t b = len / (uint64_t)h->L * e;
        ar_down(h, off * e, b, b / (uint64_t)h->M, f3[k]);
    }
    if (tail > 0 && !h->s->failed)
        ar_tail(h, main * e, tail);
    for (size_t k = 0; k < K; k++)
        hccn_frontier_free(f3[k]);
    free(f3);
    return 0;
}

/* ------------------------------------------ reduce_scatter, allgather --- */

/* Reduce-scatter inside nodes, then inside pods on 1/L of the data, then
 * across pods on 1/(L M); allgather the other way round (hier_levels.h):
 * each level carries the least bytes it can, the spine the least of all. */
static int build_rs_ag(h3_t *h)
{
    int rs = h->a->coll == HCCN_COLL_REDUCE_SCATTER;
    hccn_hier_levels_t lv = {.k = 3, .n = {h->L, h->M, h->P},
                             .algo = {h->v->l[0], h->v->l[1], h->v->l[2]},
                             .phase = {rs ? PH_1 : PH_3, PH_2,
                                       rs ? PH_3 : PH_1}};
    return hccn_hier_levels_rs_ag(h->s, h->a, &lv);
}

/* ------------------------------------------------------------- entry --- */

static const unsigned AR_RS_AG = 1u << HCCN_COLL_ALLREDUCE |
                                 1u << HCCN_COLL_REDUCE_SCATTER |
                                 1u << HCCN_COLL_ALLGATHER;

static hccn_sched_t *build3(const hccn_coll_args_t *a, const variant3_t *v,
                            const shape3_t *sh)
{
    h3_t h;
    hccn_sched_t *s = hccn_sched_new(a->nranks, v->sched);
    if (s == NULL || a->count == 0)
        return s;
    int rc = h3_init(&h, s, a, v, sh);
    if (rc == 0 && a->coll == HCCN_COLL_ALLREDUCE)
        rc = build_allreduce(&h);
    else if (rc == 0)
        rc = build_rs_ag(&h);
    h3_free(&h);
    return hccn_hier_finish(s, rc);
}

static hccn_sched_t *build(const hccn_coll_args_t *a, const variant3_t *v)
{
    const hccn_hier_view_t *vw = a->view;
    if (!hccn_hier_args_ok(a, AR_RS_AG) || vw == NULL ||
        vw->nranks != a->nranks || vw->nnodes < 1 ||
        a->count > (UINT64_MAX >> 4) / a->esize / (uint64_t)a->nranks)
        return NULL;
    shape3_t sh = {0, 0, 0, NULL};
    int even = shape3(vw, &sh);
    int three = even > 0 && sh.P > 1 && sh.M > 1 && sh.L > 1 &&
                (a->coll == HCCN_COLL_ALLREDUCE || pod_major(vw, &sh));
    hccn_sched_t *s = NULL;
    if (three)
        s = build3(a, v, &sh);
    else if (even > 0 && sh.L == 1 && sh.P > 1 && sh.M > 1)
        s = pods_as_nodes(a);
    else if (even >= 0)
        s = hccn_hier_hier_build(a);
    free(sh.pos);
    return s;
}

/* Builds hier3 (mesh inside nodes, ring inside pods, ring across pods)
 * for args; NULL when it does not apply (where hier does not), on bad
 * arguments or no memory. */
hccn_sched_t *hccn_hier_hier3_build(const hccn_coll_args_t *args)
{
    return build(args, &HIER3);
}

/* As hccn_hier_hier3_build with halving-doubling across pods. */
hccn_sched_t *hccn_hier_hier3_hd_build(const hccn_coll_args_t *args)
{
    return build(args, &HIER3_HD);
}
