/*
 * "pairwise": pairwise-exchange alltoall. In step k = 1..p-1 rank r sends
 * its block for peer to peer and receives the block for r from the peer
 * that targets it: peer = r XOR k when p is a power of two (every step is a
 * perfect matching: r and r^k exchange), else r+k, receiving from r-k.
 *
 * Alltoall has no in-place form, so no step overwrites bytes another step
 * reads: the steps are independent, and the order above is only the order
 * in which each rank lists (and the runtime posts) them. The own block is a
 * COPY nothing waits for. Alltoallv is the same exchange with each
 * pair's own block (rank me's view, coll.h). docs/algorithms.md gives
 * bytes and times.
 */
#include "hierarchy/algo_util.h"
#include "hierarchy/cost_internal.h"

static int is_pow2(int p)
{
    return (p & (p - 1)) == 0;
}

/* The transfer of rank r's block for rank to: alltoall's fixed blocks or
 * alltoallv's own ones. */
static void exchange(hccn_sched_t *s, const hccn_coll_args_t *a, int r,
                     int to)
{
    uint64_t b = a->count * a->esize;
    uint64_t soff = (uint64_t)to * b, doff = (uint64_t)r * b;
    if (a->coll == HCCN_COLL_ALLTOALLV) {
        soff = hccn_hier_vblock(a, a->vcounts, a->vsdispls, to).off;
        doff = hccn_hier_vblock(a, a->vrcounts, a->vrdispls, r).off;
        b = hccn_hier_a2av_bytes(a, r, to);
    }
    hccn_sched_xfer(s, r, HCCN_BUF_SEND, soff, NULL, 0, to, HCCN_BUF_RECV,
                    doff, NULL, 0, b, 0, HCCN_BUF_SEND, 0, NULL, NULL);
}

static int build_alltoall(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = a->nranks;
    uint64_t b = a->count * a->esize;
    for (int r = 0; r < p; r++)
        if (a->coll == HCCN_COLL_ALLTOALLV)
            hccn_hier_vown(s, a, r);
        else
            hccn_sched_local(s, r, 0, HCCN_BUF_SEND, (uint64_t)r * b,
                             HCCN_BUF_RECV, (uint64_t)r * b, b, NULL, 0);
    for (int k = 1; k < p; k++)
        for (int r = 0; r < p; r++)
            exchange(s, a, r, is_pow2(p) ? r ^ k : hccn_hier_mod(r + k, p));
    hccn_hier_stamp(s, 1);
    return 0;
}

/* Builds the pairwise alltoall or alltoallv schedule of args; NULL for
 * any other collective, bad arguments or no memory. */
hccn_sched_t *hccn_hier_pairwise_build(const hccn_coll_args_t *args)
{
    if (!hccn_hier_args_ok(args, 1u << HCCN_COLL_ALLTOALL |
                                     1u << HCCN_COLL_ALLTOALLV))
        return NULL;
    if (args->coll == HCCN_COLL_ALLTOALLV)
        return hccn_hier_vflat(args, "pairwise", build_alltoall);
    hccn_sched_t *s = hccn_sched_new(args->nranks, "pairwise");
    if (s == NULL || args->count == 0)
        return s;
    build_alltoall(s, args);
    return hccn_hier_finish(s, 0);
}

/* ------------------------------------------------------------ cost --- */

/* The closed form of the schedule above (docs/selection.md). */

/* Every block is its own transfer and none waits for another: all of them
 * run at once, as mesh's alltoall. */
double hccn_hier_cm_pairwise(hccn_cm_t *m, const hccn_cm_team_t *t,
                             const hccn_coll_args_t *a)
{
    return a->coll == HCCN_COLL_ALLTOALL ? hccn_hier_cm_mesh(m, t, a)
                                         : HCCN_COST_NONE;
}
