/*
 * A collective is a schedule: for each rank of a communicator, an ordered
 * list of steps (send, receive, receive-and-reduce, copy, local reduce) with
 * explicit dependencies on earlier steps of the same rank. Algorithms only
 * build schedules; the runtime executes them on the NPU threads (moving real
 * bytes) and the timing engine times them.
 *
 * Buffers are named, not pointers: each rank has a SEND buffer, a RECV buffer
 * and a private SCRATCH buffer of sched->scratch_bytes. Offsets and sizes are
 * in bytes. A SEND and the RECV/RECV_REDUCE that consumes it share an xfer id.
 *
 * Data semantics of each step on rank r:
 *   SEND(peer, xfer, src)                 src bytes become visible to peer
 *   RECV(peer, xfer, dst)                 dst = data of the matching SEND
 *   RECV_REDUCE(peer, xfer, src, dst)     dst = src op data (elementwise)
 *   COPY(src, dst)                        dst = src
 *   REDUCE(src, dst)                      dst = src op dst
 * A step may start when all its dependencies are complete; a SEND is
 * complete when its receiver has consumed the data, so a step that
 * overwrites a sent region must depend on that SEND.
 *
 * Schedules are immutable once built and may be shared by threads.
 */
#ifndef HCCN_HIERARCHY_SCHED_H
#define HCCN_HIERARCHY_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "device_sim/engine.h"
#include "hccn/hccn.h"

typedef enum {
    HCCN_BUF_SEND = 0,
    HCCN_BUF_RECV = 1,
    HCCN_BUF_SCRATCH = 2,
} hccn_buf_t;

typedef enum {
    HCCN_STEP_SEND,
    HCCN_STEP_RECV,
    HCCN_STEP_RECV_REDUCE,
    HCCN_STEP_COPY,
    HCCN_STEP_REDUCE,
} hccn_step_kind_t;

typedef struct {
    uint8_t kind;
    uint8_t src_buf, dst_buf;
    uint8_t phase;          /* algorithm phase, for traces (0 = none) */
    uint8_t via;            /* SEND/RECV/RECV_REDUCE: the part of the route
                               (hccn_sim_via_t, both sides alike); REDUCE:
                               not 0 when the switch does it (no cost on
                               the NPU: its unit carried the bytes) */
    int32_t peer;           /* communicator rank */
    uint32_t xfer;
    uint64_t src_off, dst_off, bytes;
    uint32_t dep_off, ndeps;
} hccn_step_t;

typedef struct {
    hccn_step_t *steps;
    uint32_t nsteps, capsteps;
    uint32_t *deps;
    uint32_t ndeps, capdeps;
} hccn_sched_rank_t;

typedef struct {
    int32_t rank;
    uint32_t step;
} hccn_sched_ref_t;

typedef struct hccn_sched {
    int nranks;
    char algo[48];          /* e.g. "ring", "hier(mesh,ring)" */
    size_t scratch_bytes;   /* per rank */
    hccn_sched_rank_t *ranks;
    uint32_t nxfers, capxfers;
    hccn_sched_ref_t *xfer_send;   /* xfer -> its SEND step */
    hccn_sched_ref_t *xfer_recv;   /* xfer -> its RECV/RECV_REDUCE step */
    int failed;             /* an allocation failed while building */
    /* Built folded (coll.h, fold_rep): only node 0's ranks have steps; a
     * transfer between two of them pairs as usual; one from a rank left out
     * has as xfer_send the copy of its SEND in node 0 (rank and step), one
     * to a rank left out has no xfer_recv (rank -1). Such a schedule
     * describes the timing of the full one and is run only folded. */
    int folded;
    /* The call reduces in a node's switch (hccn_hier_nvswitch_call): the
     * stack's launch of such calls applies (device_sim/software.h). */
    int nvswitch;
    /* > 1: the call's transfers are slices of blocks this many times
     * their size, and take the protocol of the block (the library picks
     * one per call, for its data: hccn_hier_proto_scale); 0 or 1: each
     * its own. */
    uint32_t proto_scale;
    /* The library algorithm whose step costs the call's transfers take
     * (HCCN_SIM_FAM_*, hccn_hier_family: its ring across nodes, its tree;
     * device_sim/software.h). */
    int family;
    /* > 0: the call is the library tree's allreduce of this many bytes
     * (hccn_sim_call_t.tree_bytes: the stack's tree_bw applies). */
    uint64_t tree_bytes;
    void *slab;             /* hccn_sched_reserve's mapping, or NULL */
    size_t slab_len;
} hccn_sched_t;

/* A new empty schedule for nranks ranks; NULL on no memory. */
hccn_sched_t *hccn_sched_new(int nranks, const char *algo);
void hccn_sched_free(hccn_sched_t *s);

/* Appends a step to rank's list and returns its index. deps are indices of
 * earlier steps of that rank. On allocation failure sets s->failed and
 * returns UINT32_MAX (later calls keep failing; check once at the end). */
uint32_t hccn_sched_add(hccn_sched_t *s, int rank, const hccn_step_t *step,
                        const uint32_t *deps, uint32_t ndeps);

/* One transfer: a SEND on src_rank and a RECV (op_reduce == 0) or
 * RECV_REDUCE on dst_rank, paired by a fresh xfer id. For RECV_REDUCE,
 * (lbuf, loff) is the local operand on dst_rank. Each side gets its own
 * dependency list. The step indices are returned through *send_step and
 * *recv_step (either may be NULL). */
void hccn_sched_xfer(hccn_sched_t *s, int src_rank, hccn_buf_t sbuf,
                     uint64_t soff, const uint32_t *sdeps, uint32_t nsdeps,
                     int dst_rank, hccn_buf_t dbuf, uint64_t doff,
                     const uint32_t *ddeps, uint32_t nddeps, uint64_t bytes,
                     int reduce, hccn_buf_t lbuf, uint64_t loff,
                     uint32_t *send_step, uint32_t *recv_step);

/* hccn_sched_xfer in a schedule built folded (folded, above) whose ranks
 * 0 .. nkeep-1 get steps: a side on a rank left out gets none. A SEND to
 * a rank left out has no RECV (rank -1); a RECV from one names copy, the
 * SEND of the sender's copy in node 0, as its SEND. Nothing when both
 * ranks are left out. */
void hccn_sched_xfer_kept(hccn_sched_t *s, int nkeep, hccn_sched_ref_t copy,
                          int src_rank, hccn_buf_t sbuf, uint64_t soff,
                          const uint32_t *sdeps, uint32_t nsdeps,
                          int dst_rank, hccn_buf_t dbuf, uint64_t doff,
                          const uint32_t *ddeps, uint32_t nddeps,
                          uint64_t bytes, int reduce, hccn_buf_t lbuf,
                          uint64_t loff, uint32_t *send_step,
                          uint32_t *recv_step);

/* A local COPY (reduce == 0) or REDUCE step on rank. */
uint32_t hccn_sched_local(hccn_sched_t *s, int rank, int reduce,
                          hccn_buf_t sbuf, uint64_t soff, hccn_buf_t dbuf,
                          uint64_t doff, uint64_t bytes, const uint32_t *deps,
                          uint32_t ndeps);

/* Number of steps of rank so far (the index the next step will get). */
uint32_t hccn_sched_nsteps(const hccn_sched_t *s, int rank);

/* Makes room on every rank r for steps[r] more steps and deps[r] more
 * dependencies, and for nxfers more transfers, so that a builder that
 * knows how much it will add does not grow the arrays step by step (each
 * growth copies them). A big schedule's room is one mapping (not asking
 * for huge pages: see device_sim/pool.c). Only room: a builder may still
 * add more. On no memory sets s->failed. */
void hccn_sched_reserve(hccn_sched_t *s, const uint32_t *steps,
                        const uint32_t *deps, uint32_t nxfers);

/* Makes room for n more transfers in s's pairing tables; -1 on no memory
 * (s->failed set). */
int hccn_sched_xfer_room(hccn_sched_t *s, uint32_t n);

/* The timing-engine task of step st of a rank on NPU npu (world maps the
 * communicator's ranks to NPUs): kind, peer, bytes, dependencies (indices
 * into the rank's deps array) and local cost: reductions at the NPU's
 * reduce bandwidth, copies at its memory bandwidth (free without one). The
 * caller sets the match key. */
void hccn_sched_step_task(const hccn_step_t *st, const hccn_sim_npu_t *npu,
                          const int *world, hccn_sim_task_t *t);

/* Checks the invariants (deps backwards, every xfer paired, sizes and via
 * equal, buffers named, ranks in range). Returns 0, or -1 with a reason in
 * why, also recorded (HCCN_ERR_INTERNAL, "built an invalid schedule: ..."). */
int hccn_sched_validate(const hccn_sched_t *s, char *why, size_t len);

#endif /* HCCN_HIERARCHY_SCHED_H */
