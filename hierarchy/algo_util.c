/*
 * Helpers shared by the schedule builders (see algo_util.h).
 */
#include <stdio.h>

#include "device_sim/fail.h"
#include "hierarchy/algo_util.h"

int hccn_hier_mod(int a, int p)
{
    return ((a % p) + p) % p;
}

int hccn_hier_pow2_floor(int p)
{
    int q = 1;
    while (q <= p / 2)
        q *= 2;
    return q;
}

int hccn_hier_log2(int p)
{
    int k = 0;
    while ((1 << (k + 1)) <= p)
        k++;
    return k;
}

hccn_span_t hccn_hier_block(uint64_t count, size_t esize, int parts, int i)
{
    uint64_t p = (uint64_t)parts, ui = (uint64_t)i;
    uint64_t q = count / p, rem = count % p;
    hccn_span_t s = {(ui * q + (ui < rem ? ui : rem)) * esize,
                     (q + (ui < rem ? 1 : 0)) * esize};
    return s;
}

int hccn_hier_is_rooted(hccn_coll_t coll)
{
    return coll == HCCN_COLL_BROADCAST || coll == HCCN_COLL_REDUCE ||
           coll == HCCN_COLL_SCATTER || coll == HCCN_COLL_GATHER;
}

/* A v-collective has all the arrays it reads or none (uniform blocks),
 * and me is a rank; records why not. */
static int v_args_ok(const hccn_coll_args_t *a)
{
    int none = !a->vcounts && !a->vrcounts && !a->vsdispls && !a->vrdispls;
    int ok = 1;
    switch (a->coll) {
    case HCCN_COLL_ALLTOALLV:
        ok = none || (a->vcounts && a->vrcounts && a->vsdispls && a->vrdispls);
        if (ok && (a->me < 0 || a->me >= a->nranks)) {
            hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "building for rank %d, not "
                          "one of the %d ranks", a->me, a->nranks);
            return 0;
        }
        break;
    case HCCN_COLL_ALLGATHERV:
        ok = none || (a->vcounts && a->vrdispls);
        break;
    case HCCN_COLL_REDUCE_SCATTERV:
        ok = none || (a->vcounts && a->vsdispls);
        break;
    default:
        break;
    }
    if (!ok)
        hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "%s needs all of its count and "
                      "displacement arrays or none", hccn_coll_name(a->coll));
    return ok;
}

/* Records that the collective of a is not among those of mask. */
static int not_served(const hccn_coll_args_t *a, unsigned mask)
{
    char list[256];
    size_t w = 0;
    list[0] = '\0';
    for (int c = 0; c < HCCN_COLL_COUNT && w < sizeof(list); c++)
        if (mask & 1u << c)
            w += (size_t)snprintf(list + w, sizeof(list) - w, "%s%s",
                                  w ? ", " : "", hccn_coll_name((hccn_coll_t)c));
    hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "it does not serve %s (it serves %s)",
                  hccn_coll_name(a->coll), list);
    return 0;
}

int hccn_hier_args_ok(const hccn_coll_args_t *a, unsigned mask)
{
    if ((unsigned)a->coll >= HCCN_COLL_COUNT) {
        hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "unknown collective %d",
                      (int)a->coll);
        return 0;
    }
    if (!(mask & 1u << a->coll))
        return not_served(a, mask);
    if (a->nranks < 1 || a->esize == 0) {
        hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "%d ranks of %zu-byte elements",
                      a->nranks, a->esize);
        return 0;
    }
    if (!v_args_ok(a))
        return 0;
    if (hccn_hier_is_rooted(a->coll) &&
        (a->root < 0 || a->root >= a->nranks)) {
        hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "root %d is not one of the %d "
                      "ranks", a->root, a->nranks);
        return 0;
    }
    /* SEND/RECV sizes, up to p * count * esize, must fit comfortably. */
    return hccn_hier_count_fits(a, 2);
}

int hccn_hier_count_fits(const hccn_coll_args_t *a, int shift)
{
    if (a->count <= (UINT64_MAX >> shift) / a->esize / (uint64_t)a->nranks)
        return 1;
    hccn_sim_fail(HCCN_ERR_UNSUPPORTED, "count %llu of %zu-byte elements on "
                  "%d ranks: the schedule's sizes would overflow 64 bits",
                  (unsigned long long)a->count, a->esize, a->nranks);
    return 0;
}

uint64_t hccn_hier_chunk(const hccn_coll_args_t *a, uint64_t dflt)
{
    uint64_t c = a->chunk_bytes;
    if (c == 0) {
        /* At most HCCN_HIER_CHUNK_BUDGET / p chunks of the message, so
         * that a schedule holds O(budget) pipelined phases whatever p:
         * on thousands of ranks the chunks grow instead of the schedule. */
        uint64_t p = a->nranks > 0 ? (uint64_t)a->nranks : 1;
        uint64_t most = HCCN_HIER_CHUNK_BUDGET / p;
        uint64_t bytes = a->count * a->esize;
        most = most > 0 ? most : 1;
        c = dflt;
        if (bytes / most >= c) {
            c = bytes / most + (bytes % most != 0);
            c += (a->esize - c % a->esize) % a->esize;
        }
    }
    c -= c % a->esize;
    return c < a->esize ? a->esize : c;
}

void hccn_hier_stamp(hccn_sched_t *s, int ph)
{
    if (s->failed)
        return;
    for (int r = 0; r < s->nranks; r++)
        for (uint32_t i = 0; i < s->ranks[r].nsteps; i++)
            if (s->ranks[r].steps[i].phase == 0)
                s->ranks[r].steps[i].phase = (uint8_t)ph;
}

hccn_sched_t *hccn_hier_finish(hccn_sched_t *s, int rc)
{
    if (s != NULL && (rc != 0 || s->failed)) {
        hccn_sched_free(s);
        return NULL;
    }
    return s;
}

hccn_sched_t *hccn_hier_flat(const hccn_coll_args_t *args, const char *name,
                             int (*build)(hccn_sched_t *,
                                          const hccn_coll_args_t *))
{
    hccn_sched_t *s = hccn_sched_new(args->nranks, name);
    if (s == NULL ||
        (args->count == 0 && args->coll != HCCN_COLL_BARRIER))
        return s;
    if (args->nranks == 1) {
        /* Only the own-block COPY remains (and barrier is empty). */
        if (args->coll != HCCN_COLL_BARRIER)
            hccn_sched_local(s, 0, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV, 0,
                             args->count * args->esize, NULL, 0);
        hccn_hier_stamp(s, 1);
    } else if (build(s, args) != 0) {
        s->failed = 1;
    }
    return hccn_hier_finish(s, 0);
}

/* ----------------------------------------------------- v-collectives --- */

hccn_span_t hccn_hier_vblock(const hccn_coll_args_t *a,
                             const uint64_t *counts, const uint64_t *displs,
                             int i)
{
    uint64_t n = counts != NULL ? counts[i] : a->count;
    uint64_t d = displs != NULL ? displs[i] : (uint64_t)i * a->count;
    hccn_span_t s = {d * a->esize, n * a->esize};
    return s;
}

uint64_t hccn_hier_vmax(const hccn_coll_args_t *a, const uint64_t *counts)
{
    uint64_t m = counts == NULL ? a->count : 0;
    for (int i = 0; counts != NULL && i < a->nranks; i++)
        if (counts[i] > m)
            m = counts[i];
    return m * a->esize;
}

uint64_t hccn_hier_a2av_bytes(const hccn_coll_args_t *a, int i, int j)
{
    if (a->vcounts == NULL)
        return a->count * a->esize;
    if (i == a->me)
        return a->vcounts[j] * a->esize;
    if (j == a->me)
        return a->vrcounts[i] * a->esize;
    return 0;
}

uint32_t hccn_hier_vown(hccn_sched_t *s, const hccn_coll_args_t *a, int r)
{
    hccn_span_t sb, rb;
    switch (a->coll) {
    case HCCN_COLL_ALLTOALLV:
        sb = hccn_hier_vblock(a, a->vcounts, a->vsdispls, r);
        rb = hccn_hier_vblock(a, a->vrcounts, a->vrdispls, r);
        return hccn_sched_local(s, r, 0, HCCN_BUF_SEND, sb.off, HCCN_BUF_RECV,
                                rb.off, hccn_hier_a2av_bytes(a, r, r), NULL,
                                0);
    case HCCN_COLL_ALLGATHERV:
        rb = hccn_hier_vblock(a, a->vcounts, a->vrdispls, r);
        return hccn_sched_local(s, r, 0, HCCN_BUF_SEND, 0, HCCN_BUF_RECV,
                                rb.off, rb.len, NULL, 0);
    default:
        sb = hccn_hier_vblock(a, a->vcounts, a->vsdispls, r);
        return hccn_sched_local(s, r, 0, HCCN_BUF_SEND, sb.off, HCCN_BUF_RECV,
                                0, sb.len, NULL, 0);
    }
}

hccn_sched_t *hccn_hier_vflat(const hccn_coll_args_t *args, const char *name,
                              int (*build)(hccn_sched_t *,
                                           const hccn_coll_args_t *))
{
    hccn_sched_t *s = hccn_sched_new(args->nranks, name);
    if (s == NULL)
        return NULL;
    int empty = args->coll != HCCN_COLL_ALLTOALLV || args->vcounts == NULL;
    for (int i = 0; i < args->nranks && empty; i++)
        empty = hccn_hier_vblock(args, args->vcounts, NULL, i).len == 0;
    if (empty)
        return s;
    if (args->nranks == 1) {
        hccn_hier_vown(s, args, 0);
        hccn_hier_stamp(s, 1);
    } else if (build(s, args) != 0) {
        s->failed = 1;
    }
    return hccn_hier_finish(s, 0);
}
