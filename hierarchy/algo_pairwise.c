/*
 * "pairwise": pairwise-exchange alltoall. In step k = 1..p-1 rank r sends
 * its block for peer to peer and receives the block for r from the peer
 * that targets it: peer = r XOR k when p is a power of two (every step is a
 * perfect matching: r and r^k exchange), else r+k, receiving from r-k.
 *
 * Alltoall has no in-place form, so no step overwrites bytes another step
 * reads: the steps are independent, and the order above is only the order
 * in which each rank lists (and the runtime posts) them. The own block is a
 * COPY nothing waits for. docs/algorithms.md gives bytes and times.
 */
#include "hierarchy/algo_util.h"

static int is_pow2(int p)
{
    return (p & (p - 1)) == 0;
}

static void build_alltoall(hccn_sched_t *s, const hccn_coll_args_t *a)
{
    const int p = a->nranks;
    uint64_t b = a->count * a->esize;
    for (int r = 0; r < p; r++)
        hccn_sched_local(s, r, 0, HCCN_BUF_SEND, (uint64_t)r * b,
                         HCCN_BUF_RECV, (uint64_t)r * b, b, NULL, 0);
    for (int k = 1; k < p; k++)
        for (int r = 0; r < p; r++) {
            int to = is_pow2(p) ? r ^ k : hccn_hier_mod(r + k, p);
            hccn_sched_xfer(s, r, HCCN_BUF_SEND, (uint64_t)to * b, NULL, 0,
                            to, HCCN_BUF_RECV, (uint64_t)r * b, NULL, 0, b, 0,
                            HCCN_BUF_SEND, 0, NULL, NULL);
        }
    hccn_hier_stamp(s, 1);
}

/* Builds the pairwise alltoall schedule of args; NULL for any other
 * collective, bad arguments or no memory. */
hccn_sched_t *hccn_hier_pairwise_build(const hccn_coll_args_t *args)
{
    if (!hccn_hier_args_ok(args, 1u << HCCN_COLL_ALLTOALL))
        return NULL;
    hccn_sched_t *s = hccn_sched_new(args->nranks, "pairwise");
    if (s == NULL || args->count == 0)
        return s;
    build_alltoall(s, args);
    return hccn_hier_finish(s, 0);
}
