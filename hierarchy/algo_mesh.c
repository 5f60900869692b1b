/*
 * "mesh": every rank talks to every other directly, all transfers of a
 * phase at once (meant for fully connected topologies).
 *
 * allreduce       reduce-scatter phase, then every rank sends its reduced
 *                 block to all others
 * reduce_scatter  rank j receives block j from every peer at once and
 *                 reduces them one after another
 * allgather       every rank sends its block to all others
 * alltoall        rank r sends block j to rank j
 * broadcast       root sends to all; reduce: all send to root, root reduces
 * scatter/gather  root sends block j to j / receives block j from j
 * barrier         every rank sends a 0-byte message to every other
 * alltoallv, allgatherv, reduce_scatterv
 *                 as alltoall, allgather and reduce_scatter, with the
 *                 blocks' own sizes and displacements (coll.h); the
 *                 SCRATCH slots hold the largest block
 *
 * A rank's own data is a COPY nothing waits for. Reductions at rank j: the
 * transfer from j+1 is a RECV_REDUCE straight into the destination (adding
 * j's own SEND block), the others land in SCRATCH and are added by REDUCE
 * steps chained in peer order j+2, j+3, ..., j-1. docs/algorithms.md gives
 * bytes and times.
 */
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

enum { PHASE_REDUCE = 1, PHASE_GATHER = 2 };

/* Block i of a's count split over its ranks (see hccn_hier_block). */
static hccn_span_t block(const hccn_coll_args_t *a, int i)
{
    return hccn_hier_block(a->count, a->esize, a->nranks, i);
}

/* A plain transfer without dependencies; returns the SEND step. */
static uint32_t move(hccn_sched_t *s, int from, hccn_buf_t sbuf,
                     uint64_t soff, int to, hccn_buf_t dbuf, uint64_t doff,
                     uint64_t bytes)
{
    uint32_t si = UINT32_MAX;
    hccn_sched_xfer(s, from, sbuf, soff, NULL, 0, to, dbuf, doff, NULL, 0,
                    bytes, 0, HCCN_BUF_SEND, 0, &si, NULL);
    return si;
}

/* ------------------------------------------------------ reduce to one --- */

/* Every peer i of rank j sends `bytes` from its SEND at soff(i) = src_off;
 * rank j ends with the sum of all ranks' blocks at (dbuf, doff), its own
 * from SEND at src_off. Peer j+1's block is a RECV_REDUCE into the
 * destination, the rest go to SCRATCH slots of `bytes` (slot k-2 for peer
 * j+k) and are REDUCEd in order. sends[i], if not NULL, gets peer i's
 * SEND step. Returns the last step on j that writes the destination. */
static uint32_t reduce_to(hccn_sched_t *s, int j, uint64_t src_off,
                          uint64_t bytes, hccn_buf_t dbuf, uint64_t doff,
                          uint32_t *sends)
{
    const int p = s->nranks;
    uint32_t last = UINT32_MAX, si = UINT32_MAX;
    hccn_sched_xfer(s, hccn_hier_mod(j + 1, p), HCCN_BUF_SEND, src_off, NULL,
                    0, j, dbuf, doff, NULL, 0, bytes, 1, HCCN_BUF_SEND,
                    src_off, &si, &last);
    if (sends != NULL)
        sends[hccn_hier_mod(j + 1, p)] = si;
    for (int k = 2; k < p; k++) {
        uint32_t ri = UINT32_MAX;
        uint64_t slot = (uint64_t)(k - 2) * bytes;
        hccn_sched_xfer(s, hccn_hier_mod(j + k, p), HCCN_BUF_SEND, src_off,
                        NULL, 0, j, HCCN_BUF_SCRATCH, slot, NULL, 0, bytes, 0,
                        HCCN_BUF_SEND, 0, &si, &ri);
        if (sends != NULL)
            sends[hccn_hier_mod(j + k, p)] = si;
        uint32_t deps[2] = {last, ri};
        last = hccn_sched_local(s, j, 1, HCCN_BUF_SCRATCH, slot, dbuf, doff,
                                bytes, deps, 2);
    }
    return last;
}

/* Phase 1 reduces block j at rank j (into RECV); phase 2 sends it from
 * there to every other rank. A phase-2 receive of block j on rank i
 * overwrites the bytes (in place) that i's phase-1 send to j read, so it
 * depends on that send; the phase-2 send from j to i also waits for j's
 * phase-1 send to i, so one link never carries two transfers at once. */
static int build_allreduce(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = a->nranks;
    uint32_t *sent = hccn_sim_calloc((size_t)p * (size_t)p, sizeof(uint32_t));
    uint32_t *done = hccn_sim_calloc((size_t)p, sizeof(uint32_t));
    if (sent == NULL || done == NULL) {
        hccn_sim_free(sent);
        hccn_sim_free(done);
        return -1;
    }
    s->scratch_bytes = (size_t)((uint64_t)(p - 2) * block(a, 0).len);
    /* sent[j * p + i]: rank i's phase-1 SEND to j. */
    for (int j = 0; j < p; j++) {
        hccn_span_t b = block(a, j);
        done[j] = reduce_to(s, j, b.off, b.len, HCCN_BUF_RECV, b.off,
                            &sent[(size_t)j * p]);
    }
    hccn_hier_stamp(s, PHASE_REDUCE);
    for (int j = 0; j < p && !s->failed; j++) {
        hccn_span_t b = block(a, j);
        for (int k = 1; k < p; k++) {
            int i = hccn_hier_mod(j + k, p);
            uint32_t sdeps[2] = {done[j], sent[(size_t)i * p + j]};
            hccn_sched_xfer(s, j, HCCN_BUF_RECV, b.off, sdeps, 2, i,
                            HCCN_BUF_RECV, b.off, &sent[(size_t)j * p + i], 1,
                            b.len, 0, HCCN_BUF_SEND, 0, NULL, NULL);
        }
    }
    hccn_hier_stamp(s, PHASE_GATHER);
    hccn_sim_free(sent);
    hccn_sim_free(done);
    return 0;
}

static void build_reduce_scatter(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    uint64_t b = a->count * a->esize;
    s->scratch_bytes = (size_t)((uint64_t)(s->nranks - 2) * b);
    for (int j = 0; j < s->nranks; j++)
        reduce_to(s, j, (uint64_t)j * b, b, HCCN_BUF_RECV, 0, NULL);
    hccn_hier_stamp(s, PHASE_REDUCE);
}

static void build_reduce(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    uint64_t n = a->count * a->esize;
    s->scratch_bytes = (size_t)((uint64_t)(s->nranks - 2) * n);
    reduce_to(s, a->root, 0, n, HCCN_BUF_RECV, 0, NULL);
    hccn_hier_stamp(s, PHASE_REDUCE);
}

/* ------------------------------------------------------- data moves --- */

static void build_allgather(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = s->nranks;
    uint64_t b = a->count * a->esize;
    for (int r = 0; r < p; r++)
        hccn_sched_local(s, r, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                         (uint64_t)r * b, b, NULL, 0);
    /* Round by round, so that every rank's steps come in the same order
     * relative to it (a SEND to r + k, a receive from r - k): the part of
     * each rank is rank 0's, shifted, as folding needs (fold.h). */
    for (int k = 1; k < p; k++)
        for (int r = 0; r < p; r++)
            move(s, r, HCCN_BUF_SEND, 0, hccn_hier_mod(r + k, p), HCCN_BUF_RECV,
                 (uint64_t)r * b, b);
    hccn_hier_stamp(s, PHASE_GATHER);
}

/* No in-place form: a receive of block i would overwrite the block the
 * rank still sends to i. */
static void build_alltoall(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = s->nranks;
    uint64_t b = a->count * a->esize;
    for (int r = 0; r < p; r++) {
        hccn_sched_local(s, r, 0, HCCN_BUF_SEND, (uint64_t)r * b,
                         HCCN_BUF_RECV, (uint64_t)r * b, b, NULL, 0);
        for (int k = 1; k < p; k++) {
            int j = hccn_hier_mod(r + k, p);
            move(s, r, HCCN_BUF_SEND, (uint64_t)j * b, j, HCCN_BUF_RECV,
                 (uint64_t)r * b, b);
        }
    }
    hccn_hier_stamp(s, PHASE_GATHER);
}

/* Broadcast (whole SEND to every RECV) and scatter (block i to rank i)
 * differ only in the source offset. */
static void build_from_root(hccn_sched_t *s, const hccn_coll_args_t *a,
                            int blocks)
{
    const int p = s->nranks, root = a->root;
    uint64_t b = a->count * a->esize;
    hccn_sched_local(s, root, 0, HCCN_BUF_SEND,
                     blocks ? (uint64_t)root * b : 0, HCCN_BUF_RECV, 0, b,
                     NULL, 0);
    for (int k = 1; k < p; k++) {
        int i = hccn_hier_mod(root + k, p);
        move(s, root, HCCN_BUF_SEND, blocks ? (uint64_t)i * b : 0, i,
             HCCN_BUF_RECV, 0, b);
    }
    hccn_hier_stamp(s, PHASE_GATHER);
}

static void build_gather(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = s->nranks, root = a->root;
    uint64_t b = a->count * a->esize;
    hccn_sched_local(s, root, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                     (uint64_t)root * b, b, NULL, 0);
    for (int k = 1; k < p; k++) {
        int i = hccn_hier_mod(root + k, p);
        move(s, i, HCCN_BUF_SEND, 0, root, HCCN_BUF_RECV, (uint64_t)i * b, b);
    }
    hccn_hier_stamp(s, PHASE_GATHER);
}

/* 0-byte messages; the barrier is over when the last one has arrived. */
static void build_barrier(hccn_sched_t *s)
{
    const int p = s->nranks;
    for (int r = 0; r < p; r++)
        for (int k = 1; k < p; k++)
            move(s, r, HCCN_BUF_SEND, 0, hccn_hier_mod(r + k, p),
                 HCCN_BUF_RECV, 0, 0);
    hccn_hier_stamp(s, PHASE_GATHER);
}

/* ----------------------------------------------------- v-collectives --- */

static int build_v(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = s->nranks;
    if (a->coll == HCCN_COLL_REDUCE_SCATTERV) {
        s->scratch_bytes =
            (size_t)((uint64_t)(p - 2) * hccn_hier_vmax(a, a->vcounts));
        for (int j = 0; j < p; j++) {
            hccn_span_t b = hccn_hier_vblock(a, a->vcounts, a->vsdispls, j);
            reduce_to(s, j, b.off, b.len, HCCN_BUF_RECV, 0, NULL);
        }
        hccn_hier_stamp(s, PHASE_REDUCE);
        return 0;
    }
    for (int r = 0; r < p; r++) {
        hccn_hier_vown(s, a, r);
        for (int k = 1; k < p; k++) {
            int j = hccn_hier_mod(r + k, p);
            if (a->coll == HCCN_COLL_ALLGATHERV) {
                hccn_span_t b = hccn_hier_vblock(a, a->vcounts, a->vrdispls,
                                                 r);
                move(s, r, HCCN_BUF_SEND, 0, j, HCCN_BUF_RECV, b.off, b.len);
            } else {
                move(s, r, HCCN_BUF_SEND,
                     hccn_hier_vblock(a, a->vcounts, a->vsdispls, j).off, j,
                     HCCN_BUF_RECV,
                     hccn_hier_vblock(a, a->vrcounts, a->vrdispls, r).off,
                     hccn_hier_a2av_bytes(a, r, j));
            }
        }
    }
    hccn_hier_stamp(s, PHASE_GATHER);
    return 0;
}

/* ------------------------------------------------------------- entry --- */

static int build(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        return build_allreduce(s, a);
    case HCCN_COLL_REDUCE_SCATTER:
        build_reduce_scatter(s, a);
        break;
    case HCCN_COLL_REDUCE:
        build_reduce(s, a);
        break;
    case HCCN_COLL_ALLGATHER:
        build_allgather(s, a);
        break;
    case HCCN_COLL_ALLTOALL:
        build_alltoall(s, a);
        break;
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_SCATTER:
        build_from_root(s, a, a->coll == HCCN_COLL_SCATTER);
        break;
    case HCCN_COLL_GATHER:
        build_gather(s, a);
        break;
    default:
        build_barrier(s);
        break;
    }
    return 0;
}

/* Builds the mesh schedule of args (see the top of this file); NULL on bad
 * arguments or no memory. */
hccn_sched_t *hccn_hier_mesh_build(const hccn_coll_args_t *args)
{
    if (!hccn_hier_args_ok(args, (1u << HCCN_COLL_COUNT) - 1))
        return NULL;
    if (hccn_coll_is_v(args->coll))
        return hccn_hier_vflat(args, "mesh", build_v);
    return hccn_hier_flat(args, "mesh", build);
}

/* ------------------------------------------------------------ cost --- */

/* The closed form of the schedules above (docs/selection.md): the all-pairs
 * phases priced from a sample of shifts, links shared. */

/* The all-pairs phase of every group, priced from the shifts ks[0..ns):
 * x[(s * ngroups + g) * size + j] joins member j of group g and member
 * j + ks[s], from that peer to j when into is set, else from j to it; it
 * carries block j (blocks) or bytes. Returns the number of transfers. */
static size_t mesh_pairs(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a, const int *ks, int ns,
                         int into, int blocks, uint64_t bytes)
{
    size_t n = 0;
    for (int s = 0; s < ns; s++)
        for (int g = 0; g < t->ngroups; g++)
            for (int j = 0; j < t->size; j++) {
                int me = hccn_hier_cm_member(t, g, j);
                int peer = hccn_hier_cm_member(t, g, j + ks[s]);
                uint64_t b = blocks ? hccn_hier_cm_block(a, j) : bytes;
                m->x[n++] = into ? hccn_hier_cm_xf(peer, me, b)
                                 : hccn_hier_cm_xf(me, peer, b);
            }
    hccn_hier_cm_flows(m, m->x, n, (double)(t->size - 1) / ns);
    return n;
}

/* Member j of group g reduces what member j+k sends in the order k = 1,
 * 2, ..., one reduction after another: the last one ends at the latest,
 * over k, arrival of k plus the size-k reductions from k on. */
static double reduce_chain(const hccn_cm_t *m, const hccn_cm_team_t *t,
                           const int *ks, int ns, int g, int j)
{
    double end = 0.0;
    for (int s = 0; s < ns; s++) {
        const hccn_cm_xf_t *x =
            &m->x[((size_t)s * t->ngroups + g) * t->size + j];
        end = hccn_hier_cm_max(end, hccn_hier_cm_time(x) +
                                        (double)(t->size - ks[s]) *
                                            (double)x->bytes * m->r);
    }
    return end;
}

/* Phase 1 reduces block j at member j; phase 2 sends it from there to
 * every other member as soon as it is reduced. */
static double mesh_allreduce(hccn_cm_t *m, const hccn_cm_team_t *t,
                             const hccn_coll_args_t *a, const int *ks, int ns)
{
    double *done = hccn_sim_calloc((size_t)m->p, sizeof(double));
    if (done == NULL) {
        m->failed = 1;
        return 0.0;
    }
    mesh_pairs(m, t, a, ks, ns, 1, 1, 0);
    for (int g = 0; g < t->ngroups; g++)
        for (int j = 0; j < t->size; j++)
            done[hccn_hier_cm_member(t, g, j)] =
                reduce_chain(m, t, ks, ns, g, j);
    size_t n = mesh_pairs(m, t, a, ks, ns, 0, 1, 0);
    double end = hccn_hier_cm_slowest(m->x, n, done);
    hccn_sim_free(done);
    return end;
}

double hccn_hier_cm_mesh(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a)
{
    int ks[HCCN_CM_SAMPLE], ns = hccn_hier_cm_shifts(t->size, ks);
    uint64_t b = hccn_hier_cm_whole(a);
    double end = 0.0;
    switch (a->coll) {
    case HCCN_COLL_ALLREDUCE:
        return mesh_allreduce(m, t, a, ks, ns);
    case HCCN_COLL_REDUCE_SCATTER:
        mesh_pairs(m, t, a, ks, ns, 1, 0, b);
        for (int g = 0; g < t->ngroups; g++)
            for (int j = 0; j < t->size; j++)
                end = hccn_hier_cm_max(end, reduce_chain(m, t, ks, ns, g, j));
        return end;
    case HCCN_COLL_ALLGATHER:
    case HCCN_COLL_ALLTOALL:
        end = hccn_hier_cm_slowest(m->x, mesh_pairs(m, t, a, ks, ns, 0, 0, b),
                                   NULL);
        return hccn_hier_cm_max(end, hccn_hier_cm_copy(m, b));
    case HCCN_COLL_BARRIER:
        return hccn_hier_cm_slowest(m->x, mesh_pairs(m, t, a, ks, ns, 0, 0, 0),
                                    NULL);
    case HCCN_COLL_BROADCAST:
    case HCCN_COLL_SCATTER:
        return hccn_hier_cm_max(hccn_hier_cm_star(m, t, a->root, 0, b, 0),
                                hccn_hier_cm_copy(m, b));
    case HCCN_COLL_GATHER:
        return hccn_hier_cm_max(hccn_hier_cm_star(m, t, a->root, 1, b, 0),
                                hccn_hier_cm_copy(m, b));
    case HCCN_COLL_REDUCE:
        return hccn_hier_cm_star(m, t, a->root, 1, b, 1);
    default:
        return HCCN_COST_NONE;
    }
}
