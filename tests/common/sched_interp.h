/*
 * A serial interpreter of schedules, for tests: it runs every step of every
 * rank on host buffers, in one thread, in an order that respects the
 * dependencies and SEND/RECV pairing, and says what went wrong when it
 * cannot.
 *
 * Execution model (the runtime's, made serial):
 * - a step may run once all its dependencies are complete;
 * - a SEND "runs" by offering its bytes; it completes only when its
 *   RECV/RECV_REDUCE has run;
 * - a RECV/RECV_REDUCE may run once its SEND has been offered, and reads
 *   the sender's bytes at that moment (the runtime pulls from the sender's
 *   buffer), so a step that rewrites a sent region too early corrupts the
 *   result, as it would on the device;
 * - COPY with source and destination the same bytes is skipped.
 *
 * Each sweep collects every runnable step and runs them, in index order or
 * shuffled by a seed. Besides running, the interpreter reports:
 * - a stuck schedule (a sweep makes no progress before everything ran);
 * - accesses outside a rank's buffers (lengths as given) or writes to SEND;
 * - races (optional): two steps of one rank that touch overlapping host
 *   bytes, at least one writing, with neither depending on the other. A
 *   SEND reads its source until its receiver has consumed it. Host bytes
 *   are compared, so in-place aliasing of SEND and RECV counts.
 *
 * sched_interp_time() evaluates the time of a schedule in the uncontended
 * timing model, to check an algorithm's closed form without a topology.
 *
 * In place: pass the same host memory as send and recv (or recv inside
 * send, or send inside recv, as the collective's in-place form requires).
 */
#ifndef HCCN_TEST_SCHED_INTERP_H
#define HCCN_TEST_SCHED_INTERP_H

#include <stddef.h>
#include <stdint.h>

#include "hierarchy/coll.h"
#include "hierarchy/sched.h"

/* dst = a op b elementwise over bytes; dst may equal a or b. */
typedef void (*sched_interp_reduce_fn)(void *dst, const void *a,
                                       const void *b, size_t bytes,
                                       void *ctx);

/* One rank's host buffers. A pointer may be NULL when its length is 0. */
typedef struct {
    void *send;
    size_t send_bytes;
    void *recv;
    size_t recv_bytes;
} sched_interp_bufs_t;

typedef struct {
    sched_interp_reduce_fn reduce;
    void *reduce_ctx;
    unsigned long long seed;  /* 0: index order; else shuffled sweeps */
    int check_races;          /* 1: fail on unordered conflicting steps */
} sched_interp_opts_t;

/* Runs schedule s on bufs[0..s->nranks). SCRATCH is allocated here (filled
 * with a 0xCD pattern, so reading it before writing shows up in results).
 * Returns 0, or -1 with a one-line reason in why (which may be NULL). */
int sched_interp_run(const hccn_sched_t *s, const sched_interp_bufs_t *bufs,
                     const sched_interp_opts_t *opts, char *why, size_t len);

/* The timing model of docs/algorithms.md, uncontended: one link per
 * ordered pair of ranks with latency alpha (s) and bandwidth bw (bytes/s);
 * RECV_REDUCE and REDUCE cost bytes / reduce_bw, COPY bytes / mem_bw (free
 * when mem_bw is 0); local work of a rank runs first come, first served. */
typedef struct {
    double alpha, bw, reduce_bw, mem_bw;
} sched_interp_timing_t;

/* Completion time of the last step of s in that model (every COPY is
 * charged, as out of place). Transfers that become ready on one link at
 * the same instant drain one after another (together they end when two
 * flows sharing the link would). Returns -1 when a transfer finds its
 * link busy with one begun earlier (the model then no longer applies), -2
 * on no memory. */
double sched_interp_time(const hccn_sched_t *s,
                         const sched_interp_timing_t *tp);

/* A sched_interp_reduce_fn: 32-bit integer sum that wraps (int32 and
 * uint32 alike); ctx unused. */
void sched_interp_sum_u32(void *dst, const void *a, const void *b,
                          size_t bytes, void *ctx);

/* A sched_interp_reduce_fn: fp32 sum, rounded at every addition (a float
 * result shows the order of its sum); ctx unused. */
void sched_interp_sum_f32(void *dst, const void *a, const void *b,
                          size_t bytes, void *ctx);

/* Host buffers of one collective call for up to SCHED_INTERP_MAXP ranks:
 * one allocation per rank, SEND and RECV apart out of place, overlapping
 * as the in-place form says in place (recv = send + rank * count for
 * reduce_scatter, send = recv + rank * count for allgather, the same
 * otherwise); 4 guard bytes of 0xEE after each. SEND holds gen(rank, i)
 * for its 32-bit elements. */
#define SCHED_INTERP_MAXP 64
typedef struct {
    sched_interp_bufs_t b[SCHED_INTERP_MAXP];
    uint32_t *mem[SCHED_INTERP_MAXP], *mem2[SCHED_INTERP_MAXP];
    uint64_t sb[SCHED_INTERP_MAXP], rb[SCHED_INTERP_MAXP];
} sched_interp_host_t;

void sched_interp_host_setup(sched_interp_host_t *h, const hccn_coll_args_t *a,
                             int inplace, uint32_t (*gen)(int, uint64_t));
void sched_interp_host_free(sched_interp_host_t *h, int nranks);

/* Bytes rank sends in s (the sum of its SEND steps). */
unsigned long long sched_interp_bytes_sent(const hccn_sched_t *s, int rank);

#endif /* HCCN_TEST_SCHED_INTERP_H */
