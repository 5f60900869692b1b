/*
 * Small helpers shared by the schedule builders (hierarchy/algo_*.c): rank
 * arithmetic, block splits, argument checks, phase stamping. Pure functions
 * of their arguments, no transport types; internal to hierarchy/.
 */
#ifndef HCCN_HIERARCHY_ALGO_UTIL_H
#define HCCN_HIERARCHY_ALGO_UTIL_H

#include <stdint.h>

#include "hierarchy/coll.h"

/* A byte range of a buffer. */
typedef struct {
    uint64_t off, len;
} hccn_span_t;

/* a mod p in 0..p-1 for any sign of a (p > 0). */
int hccn_hier_mod(int a, int p);

/* The largest power of two <= p (p >= 1), and its base-2 logarithm. */
int hccn_hier_pow2_floor(int p);
int hccn_hier_log2(int p);

/* Block i, in bytes, when count elements of esize bytes are split into
 * parts near-equal contiguous blocks, the first count % parts of them one
 * element longer. */
hccn_span_t hccn_hier_block(uint64_t count, size_t esize, int parts, int i);

/* 1 for the collectives with a root (broadcast, reduce, scatter, gather). */
int hccn_hier_is_rooted(hccn_coll_t coll);

/* 1 when a is well formed for a builder that implements the collectives of
 * mask (bit 1u << coll): coll in mask, nranks >= 1, esize > 0, root in
 * range for rooted collectives, and 4 * p * count * esize fits in 64 bits.
 * 0 with the reason recorded (HCCN_ERR_UNSUPPORTED, device_sim/fail.h). */
int hccn_hier_args_ok(const hccn_coll_args_t *a, unsigned mask);

/* NULL, recording HCCN_ERR_INTERNAL: a composition row's builder was
 * called without args->levels. */
hccn_sched_t *hccn_hier_no_levels(void);

/* 1 when p * count * esize fits in 64 bits with shift bits to spare; 0
 * with the reason recorded (HCCN_ERR_UNSUPPORTED). */
int hccn_hier_count_fits(const hccn_coll_args_t *a, int shift);

/* The default pipelining chunks of the algorithms that pipeline, in
 * bytes: one constant each, read by the algorithm's builder and by its
 * cost form alike (docs/algorithms.md says why each is what it is). */
#define HCCN_RING_CHUNK ((uint64_t)1 << 20)
#define HCCN_TREE_CHUNK ((uint64_t)1 << 20)
#define HCCN_HIER_CHUNK ((uint64_t)4 << 20)    /* hier, hier_rr, hier_mh */
#define HCCN_HIER3_CHUNK ((uint64_t)4 << 20)   /* hier3, hier3_hd */

/* Default chunks of a pipelined schedule: at most this many divided by
 * the ranks over the whole message (count * esize). */
#define HCCN_HIER_CHUNK_BUDGET 65536

/* The pipelining chunk of a in bytes: a->chunk_bytes, or when 0 dflt,
 * grown so that the message (count * esize) makes at most
 * max(1, HCCN_HIER_CHUNK_BUDGET / nranks) chunks; rounded down to whole
 * elements and at least one element. */
uint64_t hccn_hier_chunk(const hccn_coll_args_t *a, uint64_t dflt);

/* Gives every step of s that has no phase yet the phase ph (no-op once
 * construction has failed). */
void hccn_hier_stamp(hccn_sched_t *s, int ph);

/* Ends a build: frees s and returns NULL if construction failed (or rc is
 * non-zero), else returns s. */
hccn_sched_t *hccn_hier_finish(hccn_sched_t *s, int rc);

/* The frame of a flat builder: a schedule named name, empty for count 0
 * (barrier aside), the own-block COPY alone for one rank, else what
 * build(s, args) adds (non-zero: failure). Returns hccn_hier_finish's. */
hccn_sched_t *hccn_hier_flat(const hccn_coll_args_t *args, const char *name,
                             int (*build)(hccn_sched_t *,
                                          const hccn_coll_args_t *));

/* ---------------------------------------------------- v-collectives --- */

/* Block i of a v-collective buffer, in bytes: counts[i] elements at
 * element displacement displs[i]. A NULL array stands for uniform blocks
 * (coll.h): counts[i] = a->count, displs[i] = i * a->count. */
hccn_span_t hccn_hier_vblock(const hccn_coll_args_t *a,
                             const uint64_t *counts, const uint64_t *displs,
                             int i);

/* The largest block of counts, in bytes. */
uint64_t hccn_hier_vmax(const hccn_coll_args_t *a, const uint64_t *counts);

/* ALLTOALLV: bytes from rank i to rank j in rank a->me's view (coll.h):
 * me's sendcounts[j] when i == me, its recvcounts[i] when j == me, else 0
 * (a->count for every pair without arrays). */
uint64_t hccn_hier_a2av_bytes(const hccn_coll_args_t *a, int i, int j);

/* The COPY of rank r's own block from SEND to RECV (see coll.h for where
 * each v-collective keeps it); returns the step. */
uint32_t hccn_hier_vown(hccn_sched_t *s, const hccn_coll_args_t *a, int r);

/* The frame of a v-collective builder: a schedule named name, empty when
 * every block is empty (ALLGATHERV and REDUCE_SCATTERV only: their counts
 * are common to all ranks, ALLTOALLV's are not), the own-block COPY alone
 * for one rank, else what build(s, args) adds (non-zero: failure). */
hccn_sched_t *hccn_hier_vflat(const hccn_coll_args_t *args, const char *name,
                              int (*build)(hccn_sched_t *,
                                           const hccn_coll_args_t *));

#endif /* HCCN_HIERARCHY_ALGO_UTIL_H */
