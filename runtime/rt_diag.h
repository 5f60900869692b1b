/*
 * The runtime's logging, its trace of operations and the diagnosis of a
 * run that stopped (log.c, optrace.c, diag.c): part of rt.h, which
 * includes it at its end; included alone it brings rt.h first.
 */
#ifndef HCCN_RUNTIME_RT_DIAG_H
#define HCCN_RUNTIME_RT_DIAG_H

#include "runtime/rt.h"

/* ------------------------------------------------------------- logging */

enum { HCCN_LOG_WARN = 1, HCCN_LOG_INFO = 2, HCCN_LOG_TRACE = 3 };

/* 1 if messages of this level are printed (HCCN_DEBUG=WARN|INFO|TRACE). */
int hccn_rt_log_on(int level);
void hccn_rt_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Posts one half of a point-to-point message. */
hccn_status_t hccn_rt_p2p_post(hccn_comm_t *comm, int is_send, void *buf,
                               size_t bytes, int peer, rt_op_t **out);

/* Moves every outstanding operation of ctx as far as it can without
 * blocking; returns 1 if anything moved. */
int hccn_rt_progress(hccn_ctx_t *ctx);

/* Blocks until op's data has moved and its simulated end is known; the
 * rank's clock becomes max(clock, end). Returns the op's status. */
hccn_status_t hccn_rt_op_wait(rt_op_t *op);
void hccn_rt_op_free(rt_op_t *op);

/* Moves op's bytes to the end (its simulated end is known to be past);
 * returns its status. */
hccn_status_t hccn_rt_op_finish_data(rt_op_t *op);

/* Hands the operation *fut out as a future: *fut becomes its token, kept
 * on the rank's list until freed. On no memory the operation is completed
 * and freed, *fut is NULL and the error is returned (runtime/p2p.c). */
hccn_status_t hccn_rt_future_publish(hccn_future_t **fut);
/* Ends op's future token (why: RT_GONE_*), if it has one. */
void hccn_rt_future_forget(rt_op_t *op, int why);
/* Frees every future of ctx the program did not free (after the run). */
void hccn_rt_futures_free(hccn_ctx_t *ctx);
/* Frees what a rank left in an open group (after the run); returns how
 * many operations it had posted there. */
int hccn_rt_group_forget(hccn_ctx_t *ctx);

/* Completes a blocking call's operation: waits and frees it, or inside a
 * group hands it to hccn_group_end. */
hccn_status_t hccn_rt_complete(rt_op_t *op);

/* Checks that [ptr, ptr+bytes) is in the calling rank's arena. */
hccn_status_t hccn_rt_check_buf(hccn_ctx_t *ctx, const void *ptr,
                                uint64_t bytes, const char *opname,
                                const char *what);

/* HCCN_OK unless the allocation that starts at ptr is a buffer of an
 * operation of ctx that has not completed (HCCN_ERR_INPROGRESS, naming the
 * operation; runtime/inflight.c). */
hccn_status_t hccn_rt_check_inflight(hccn_ctx_t *ctx, const void *ptr);

/* Finishes every outstanding operation of ctx (at the end of a run). */
void hccn_rt_drain(hccn_ctx_t *ctx);

/* ---------------------------------------------------------------- traces */

/* Records a completed operation (slices of it, its phases and steps) in
 * the trace attached to the cluster's engine; nothing without one or when
 * the operation failed (runtime/optrace.c). */
void hccn_rt_trace_op(const rt_op_t *op);

/* Records compute of ctx's rank from t0 to t1 (simulated seconds). */
void hccn_rt_trace_compute(hccn_ctx_t *ctx, double t0, double t1);

/* Notes a collective just posted on comm: its mark, and its selection for
 * hccn_comm_last_choice (spec: the override it was chosen under). */
void hccn_rt_note_post(rt_op_t *op, const hccn_coll_args_t *a,
                       const hccn_algo_t *algo, const char *spec);

/* Adds a completed operation / a stretch of compute to the rank's
 * communication summary when one is being kept (sim_stats.c). */
void hccn_rt_summary_op(rt_op_t *op);
void hccn_rt_summary_compute(hccn_ctx_t *ctx, double t0, double t1);
/* Drops the rank's summary and mark (the end of a run). */
void hccn_rt_summary_end(hccn_ctx_t *ctx);

/* HCCN_TRACE=FILE: attaches the process's trace to a new cluster, and
 * detaches it (writing FILE) when the cluster goes (sim_trace.c). */
void hccn_rt_env_trace_attach(hccn_cluster_t *cl);
void hccn_rt_env_trace_detach(hccn_cluster_t *cl);

/* ------------------------------------------------------------ diagnosis */

/* Blocks the calling rank until done(arg) holds, moving its outstanding
 * operations meanwhile. Fails with HCCN_ERR_ABORTED if comm is aborted,
 * HCCN_ERR_REMOTE if gone(arg, &who) (may be NULL) says a comm rank (a
 * rank of the cluster when comm is NULL) the wait still needs has
 * returned from its function, and HCCN_ERR_TIMEOUT on
 * a deadlock (every live rank stuck, reported at once) or after the
 * cluster's timeout; messages carry every rank's state. */
hccn_status_t hccn_rt_block(hccn_ctx_t *ctx, rt_comm_t *comm,
                            int (*done)(void *), int (*gone)(void *, int *),
                            void *arg, const char *what);

/* As hccn_rt_block, for a wait on op: messages name "<what> <op>" (what
 * may be NULL), described only if the wait fails. */
/* 1 if op is a collective small enough to be driven (exec.c). */
int hccn_rt_op_small(const rt_op_t *op);

/* 1 while another rank's thread runs op's steps (a driven collective):
 * its thread must not give op up (abort, timeout) before the driver hands
 * it back, which it does in bounded time without waiting for anyone. */
int hccn_rt_op_held(const rt_op_t *op);

/* 1 once collective op is past the point where a revoke may fail it: every
 * member has joined its rendezvous with a matching call (so all its bytes
 * will move), or its bytes have moved. An abort, a departed peer or the
 * fault plan (the engine) may still fail it. */
int hccn_rt_op_committed(const rt_op_t *op);

/* Called by op's thread before it sleeps waiting for op's bytes: a small
 * collective declares its engine wait then (it does not before it moves
 * its bytes, in case a driver declares it; a sleeping rank must not hold
 * the simulated time back). */
void hccn_rt_op_idle(rt_op_t *op);

hccn_status_t hccn_rt_block_op(const rt_op_t *op, int (*done)(void *),
                               int (*gone)(void *, int *), void *arg,
                               const char *what);

/* Notes that ctx made progress (wakes nobody; defeats deadlock checks). */
void hccn_rt_progressed(hccn_ctx_t *ctx);

/* Marks the rank as returned from its function and wakes every rank. */
void hccn_rt_rank_finished(hccn_ctx_t *ctx);

/* Records the operation the rank waits for (NULL when done waiting). */
void hccn_rt_set_current(hccn_ctx_t *ctx, rt_op_t *op);

/* The line of ctx's rank in a state report. */
void hccn_rt_rank_state(hccn_ctx_t *ctx, char *buf, size_t len);

/* Writes one line per rank: what it waits for, or what it did last. */
void hccn_rt_state_report(hccn_cluster_t *cl, char *buf, size_t len);

/* One-line description of an operation ("allreduce #3 on comm 1"). */
int hccn_rt_op_describe(const rt_op_t *op, char *buf, size_t len);

#endif /* HCCN_RUNTIME_RT_DIAG_H */
