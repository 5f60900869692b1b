/*
 * hccn — hierarchical collective communication on a simulated NPU cluster.
 *
 * A cluster is made from a JSON topology file. hccn_cluster_run() starts one
 * thread per simulated NPU (a "rank") and calls the user's function on each
 * with that rank's context. Inside, ranks allocate device memory from their
 * own arena and call point-to-point and collective operations exactly as they
 * would call HCCL or NCCL; every operation moves the real bytes and reports
 * the time it would take on the described cluster (simulated seconds).
 *
 * Conventions: every function returns hccn_status_t (0 on success, a negative
 * code on error) unless it is a pure query. On error the calling thread's
 * hccn_last_error() says what and where. Handles are owned by the rank that
 * created them and are used only on its thread; communicator handles and
 * futures are checked tokens: one used after its destroy/free call, after
 * the run that made it ended, or by another rank is HCCN_ERR_INVALID naming
 * the rank that used it and what it was (docs/api.md, "Lifetimes").
 */
#ifndef HCCN_HCCN_H
#define HCCN_HCCN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCCN_VERSION_MAJOR 0
#define HCCN_VERSION_MINOR 1

/* Marks the functions libhccn exports: the library is built with hidden
 * visibility, so only the functions of the public headers are its ABI. */
#if defined(__GNUC__) || defined(__clang__)
#define HCCN_API __attribute__((visibility("default")))
#else
#define HCCN_API
#endif

/* Status codes: X(name, value, message). */
#define HCCN_STATUS_MAP(X)                                                    \
    X(HCCN_OK, 0, "success")                                                  \
    X(HCCN_ERR_INVALID, -1, "invalid argument")                               \
    X(HCCN_ERR_NOMEM, -2, "out of memory")                                    \
    X(HCCN_ERR_TOPOLOGY, -3, "invalid topology")                              \
    X(HCCN_ERR_MISMATCH, -4, "ranks disagree on a collective call")           \
    X(HCCN_ERR_TIMEOUT, -5, "timed out waiting for other ranks")              \
    X(HCCN_ERR_REMOTE, -6, "a peer rank failed or left")                      \
    X(HCCN_ERR_UNSUPPORTED, -7, "operation not supported")                    \
    X(HCCN_ERR_IO, -8, "input/output error")                                  \
    X(HCCN_ERR_ABORTED, -9, "communicator aborted")                           \
    X(HCCN_ERR_INPROGRESS, -10, "operation still in progress")                \
    X(HCCN_ERR_FAULT, -11, "simulated hardware fault")                        \
    X(HCCN_ERR_INTERNAL, -12, "internal error")                               \
    X(HCCN_ERR_REVOKED, -13, "communicator revoked")

typedef enum {
#define HCCN_STATUS_ENUM(name, value, msg) name = value,
    HCCN_STATUS_MAP(HCCN_STATUS_ENUM)
#undef HCCN_STATUS_ENUM
} hccn_status_t;

/* Name ("HCCN_ERR_NOMEM") and message of a status code; never NULL. */
HCCN_API const char *hccn_status_name(hccn_status_t status);
HCCN_API const char *hccn_strerror(hccn_status_t status);

/* The detailed message of the last error on the calling thread ("" if none).
 * Valid until the next hccn call on that thread. */
HCCN_API const char *hccn_last_error(void);

/* ------------------------------------------------------------------------ */
/* Data types and reduction operators.                                       */

typedef enum {
    HCCN_INT8 = 0,
    HCCN_UINT8,
    HCCN_INT16,
    HCCN_UINT16,
    HCCN_INT32,
    HCCN_UINT32,
    HCCN_INT64,
    HCCN_UINT64,
    HCCN_FP16,
    HCCN_BF16,
    HCCN_FP32,
    HCCN_FP64,
    HCCN_DTYPE_COUNT
} hccn_dtype_t;

typedef enum {
    HCCN_SUM = 0,
    HCCN_PROD,
    HCCN_MAX,
    HCCN_MIN,
    HCCN_AVG,
    HCCN_REDOP_COUNT
} hccn_redop_t;

/* Size in bytes of one element (0 for an invalid dtype) and names. */
HCCN_API size_t hccn_dtype_size(hccn_dtype_t dtype);
HCCN_API const char *hccn_dtype_name(hccn_dtype_t dtype);
HCCN_API const char *hccn_redop_name(hccn_redop_t op);

/* ------------------------------------------------------------------------ */
/* Clusters, ranks and device memory.                                        */

typedef struct hccn_cluster hccn_cluster_t;
typedef struct hccn_ctx hccn_ctx_t;     /* one simulated NPU, seen by its thread */
typedef struct hccn_comm hccn_comm_t;   /* one rank's handle on a communicator */
typedef struct hccn_future hccn_future_t;

typedef struct {
    size_t struct_size;      /* sizeof(hccn_cluster_opts_t), for growth */
    int bind_threads;        /* bind NPU threads to host cores round robin */
    double timeout_s;        /* wall-clock wait limit; <= 0: HCCN_TIMEOUT or 300 */
    /* A collective in which every rank moves at most drive_bytes bytes is
     * driven: the last rank to call it moves every rank's bytes on its own
     * thread while the others sleep. Same results and simulated times as
     * the threaded path, far fewer thread switches on a small host.
     * 0: HCCN_DRIVE_BYTES, else 65536; < 0: never. */
    long long drive_bytes;
    /* Host-load stress, for testing a program (and hccn) against thread
     * interleavings that a quiet host rarely shows: a rank that finds
     * nothing to do in a wait sleeps a pseudo-random 0 to jitter_us
     * microseconds before it looks at its peers again, as if descheduled.
     * Results and simulated times do not change; only wall time grows.
     * 0: HCCN_JITTER_US, else none; < 0: none. */
    int jitter_us;
    /* One cluster across several processes (docs/processes.md): this
     * process's rank among proc_world processes and a rendezvous
     * directory they share (one host), or "tcp:HOST:PORT", the host
     * process's address (several hosts). Process 0, the host, runs the
     * timing engine and every rank's thread; in the others (clients)
     * hccn_cluster_run runs fn for their own ranks only, and their
     * ctx/comm/future calls are made on the host. 0 / NULL: from
     * HCCN_PROC_RANK, HCCN_PROC_WORLD, HCCN_RENDEZVOUS, else Open MPI's
     * OMPI_COMM_WORLD_RANK/SIZE; proc_world <= 1: this process alone. */
    int proc_rank;
    int proc_world;
    const char *rendezvous;
} hccn_cluster_opts_t;

/* Creates a cluster from a topology file (path) or a JSON text (json, with
 * name used in error messages). opts may be NULL. On error *out is NULL and
 * hccn_last_error() names the file, the JSON path and the rule broken. */
HCCN_API hccn_status_t hccn_cluster_create(const char *path,
                                           const hccn_cluster_opts_t *opts,
                                           hccn_cluster_t **out);
HCCN_API hccn_status_t hccn_cluster_create_json(const char *json, const char *name,
                                                const hccn_cluster_opts_t *opts,
                                                hccn_cluster_t **out);

/* Destroys a cluster that is not running; frees every arena. NULL is a no-op.
 * Called while the cluster runs, or on a cluster already destroyed, it
 * destroys nothing and sets the last error. */
HCCN_API void hccn_cluster_destroy(hccn_cluster_t *cluster);

/* Number of simulated NPUs (ranks) and nodes. */
HCCN_API int hccn_cluster_size(const hccn_cluster_t *cluster);
HCCN_API int hccn_cluster_nodes(const hccn_cluster_t *cluster);

/* Several processes (docs/processes.md): this process's rank among them
 * and their count (0 and 1 for a cluster of one process; -1 and 0 for a
 * pointer that is no live cluster), and whether rank runs its function in
 * this process (1) or another (0). In a client process (proc_rank > 0)
 * every call a rank's function makes on its ctx, communicators and futures
 * is valid (it is made on the host); hccn_cluster_add_fault/clear_faults,
 * hccn_trace_attach/write and hccn_cluster_link_stats act on the client's
 * own copy of the cluster, which times nothing: call them in the host.
 * Handles are used only on their rank's thread (hccn_comm_abort too). */
HCCN_API int hccn_cluster_proc_rank(const hccn_cluster_t *cluster);
HCCN_API int hccn_cluster_proc_world(const hccn_cluster_t *cluster);
HCCN_API int hccn_cluster_rank_local(const hccn_cluster_t *cluster, int rank);

typedef hccn_status_t (*hccn_rank_fn)(hccn_ctx_t *ctx, void *arg);

/* Runs fn(ctx, arg) on every NPU thread and returns when all have returned.
 * rank_status, if not NULL, receives each rank's status (cluster size
 * entries). Returns HCCN_OK if every rank returned HCCN_OK, otherwise the
 * status of the lowest failing rank, and hccn_last_error() names it. */
HCCN_API hccn_status_t hccn_cluster_run(hccn_cluster_t *cluster, hccn_rank_fn fn,
                                        void *arg, hccn_status_t *rank_status);

/* Faults, planned before a run (the topology file's "faults" section does
 * the same; docs/faults.md). Every later run replays the plan. */
typedef enum {
    HCCN_FAULT_LINK_DOWN,    /* the link carries nothing from at_s on */
    HCCN_FAULT_LINK_SLOW,    /* its bandwidth x factor (0 < factor <= 1) */
    HCCN_FAULT_NPU_SLOW,     /* the NPU's reductions, copies and compute
                                take factor (>= 1) times longer */
    HCCN_FAULT_NPU_FAIL,     /* the NPU fails at at_s */
} hccn_fault_kind_t;

typedef struct {
    size_t struct_size;      /* sizeof(hccn_fault_t) */
    hccn_fault_kind_t kind;
    const char *link;        /* link faults: "SRC->DST" by device names */
    int npu;                 /* NPU faults: the NPU's rank */
    double at_s;             /* simulated time it starts */
    double factor;           /* *_SLOW */
} hccn_fault_t;

HCCN_API hccn_status_t hccn_cluster_add_fault(hccn_cluster_t *cluster,
                                              const hccn_fault_t *fault);
/* Forgets the faults added by hccn_cluster_add_fault (not the file's). */
HCCN_API hccn_status_t hccn_cluster_clear_faults(hccn_cluster_t *cluster);

/* The calling rank's index, the cluster size, its node and index in node. */
HCCN_API int hccn_rank(const hccn_ctx_t *ctx);
HCCN_API int hccn_nranks(const hccn_ctx_t *ctx);
HCCN_API int hccn_node(const hccn_ctx_t *ctx);
HCCN_API int hccn_local_rank(const hccn_ctx_t *ctx);
HCCN_API hccn_cluster_t *hccn_ctx_cluster(const hccn_ctx_t *ctx);

/* Device memory. Allocations are 256-byte aligned and come from the rank's
 * arena; exhaustion gives HCCN_ERR_NOMEM and changes nothing. Freeing an
 * allocation that an operation not yet complete reads or writes gives
 * HCCN_ERR_INPROGRESS and frees nothing. */
HCCN_API hccn_status_t hccn_malloc(hccn_ctx_t *ctx, size_t bytes, void **ptr);
HCCN_API hccn_status_t hccn_free(hccn_ctx_t *ctx, void *ptr);

typedef struct {
    size_t total;        /* arena size */
    size_t used;         /* bytes in live allocations (rounded to 256) */
    size_t largest_free; /* largest allocation that would succeed now */
    size_t allocations;  /* live allocations */
} hccn_mem_info_t;

HCCN_API hccn_status_t hccn_mem_info(hccn_ctx_t *ctx, hccn_mem_info_t *info);

/* Maps any pointer to the rank whose arena holds it and the offset in that
 * arena. Returns HCCN_ERR_INVALID (rank -1) for a pointer in no arena. */
HCCN_API hccn_status_t hccn_ptr_info(const hccn_cluster_t *cluster, const void *ptr,
                                     int *rank, size_t *offset);

/* ------------------------------------------------------------------------ */
/* Simulated time.                                                           */

/* The rank's simulated clock, in seconds since the cluster started running. */
HCCN_API double hccn_time(hccn_ctx_t *ctx);

/* Simulated duration, in seconds, of the last blocking operation (or of the
 * last future waited for) on this rank: its end minus the time it was called. */
HCCN_API double hccn_last_duration(hccn_ctx_t *ctx);

/* Advances the rank's compute timeline: seconds of simulated compute, or a
 * FLOP count at the NPU's peak (peak_TFLOPS in the topology: its one rate,
 * or its fp16 rate, else bf16's, when it gives one per dtype), or a FLOP
 * count at the peak for dtype (the file's rate for dtype; a file that
 * gives one number gives it for every dtype). A rate the file does not
 * give is an error naming the field. */
HCCN_API hccn_status_t hccn_compute(hccn_ctx_t *ctx, double seconds);
HCCN_API hccn_status_t hccn_compute_flops(hccn_ctx_t *ctx, double flops);
HCCN_API hccn_status_t hccn_compute_flops_dtype(hccn_ctx_t *ctx, double flops,
                                                hccn_dtype_t dtype);

/* ------------------------------------------------------------------------ */
/* Communicators.                                                            */

/* The world communicator of the calling rank (all ranks of the cluster, in
 * rank order). Owned by the cluster; never freed by the user. */
HCCN_API hccn_comm_t *hccn_comm_world(hccn_ctx_t *ctx);

HCCN_API int hccn_comm_rank(const hccn_comm_t *comm);
HCCN_API int hccn_comm_size(const hccn_comm_t *comm);

#define HCCN_SPLIT_NOCOLOR (-1)

/* Splits comm (NCCL's ncclCommSplit): every rank of comm calls it; ranks
 * with the same color >= 0 form a new communicator, ordered by (key, rank
 * in comm). A rank passing HCCN_SPLIT_NOCOLOR gets *out = NULL. */
HCCN_API hccn_status_t hccn_comm_split(hccn_comm_t *comm, int color, int key,
                                       hccn_comm_t **out);

/* A sub-communicator of the listed ranks of comm, in list order (HCCL's
 * sub-communicator). Every rank of comm calls it with the same list; ranks
 * not in the list get *out = NULL. */
HCCN_API hccn_status_t hccn_comm_create(hccn_comm_t *comm, const int *ranks, int n,
                                        hccn_comm_t **out);

/* Frees the calling rank's handle; the communicator goes when every member
 * has destroyed its handle. Futures of a destroyed communicator fail with
 * HCCN_ERR_INVALID. The world communicator cannot be destroyed. */
HCCN_API hccn_status_t hccn_comm_destroy(hccn_comm_t *comm);

/* Aborts a communicator: every rank's pending and future operations on it
 * fail promptly with HCCN_ERR_ABORTED. Any member may call it. */
HCCN_API hccn_status_t hccn_comm_abort(hccn_comm_t *comm);

/* Per-communicator options: an algorithm choice in HCCN_ALGO's grammar
 * (NULL: back to the environment and the cost model), and compressed
 * transfers for fp32 allreduce/reduce_scatter/allgather. Set by every rank
 * alike. */
HCCN_API hccn_status_t hccn_comm_set_algo(hccn_comm_t *comm, const char *spec);

enum {
    HCCN_COMPRESS_NONE = 0,
    HCCN_COMPRESS_FP16 = 1,   /* fp32 data crosses links as fp16 */
    HCCN_COMPRESS_BF16 = 2,   /* ... as bf16 */
};
HCCN_API hccn_status_t hccn_comm_set_compression(hccn_comm_t *comm, int compress);

/* ------------------------------------------------------------------------ */
/* Point-to-point. Sends and receives between a pair of ranks of a
 * communicator match in the order they are posted (NCCL semantics). */

HCCN_API hccn_status_t hccn_send(hccn_comm_t *comm, const void *buf, size_t count,
                                 hccn_dtype_t dtype, int peer);
HCCN_API hccn_status_t hccn_recv(hccn_comm_t *comm, void *buf, size_t count,
                                 hccn_dtype_t dtype, int peer);
HCCN_API hccn_status_t hccn_isend(hccn_comm_t *comm, const void *buf, size_t count,
                                  hccn_dtype_t dtype, int peer, hccn_future_t **fut);
HCCN_API hccn_status_t hccn_irecv(hccn_comm_t *comm, void *buf, size_t count,
                                  hccn_dtype_t dtype, int peer, hccn_future_t **fut);

/* ------------------------------------------------------------------------ */
/* Futures. A future completes when its data has moved and its simulated end
 * time has passed on the rank's clock; waiting advances the clock to it. */

/* Blocks until the operation completes; the clock becomes max(clock, end).
 * Returns the operation's status. A future may be waited for once. */
HCCN_API hccn_status_t hccn_wait(hccn_future_t *fut);

/* Sets *done to 1 if the operation has completed by the rank's current
 * simulated time, else 0. Never advances the clock. */
HCCN_API hccn_status_t hccn_test(hccn_future_t *fut, int *done);

/* Simulated start (call) and end times of a completed operation. */
HCCN_API hccn_status_t hccn_future_times(const hccn_future_t *fut, double *start,
                                         double *end);

/* Frees a completed (waited) future. Freeing a pending one is an error. */
HCCN_API hccn_status_t hccn_future_free(hccn_future_t *fut);

/* Groups (NCCL's ncclGroupStart/End): between start and end, blocking
 * calls of this rank only post their operation; hccn_group_end waits for
 * all of them (in posting order) and returns the first error. Groups nest;
 * the outermost end waits. */
HCCN_API hccn_status_t hccn_group_start(hccn_ctx_t *ctx);
HCCN_API hccn_status_t hccn_group_end(hccn_ctx_t *ctx);

/* ------------------------------------------------------------------------ */
/* The library's allocator (docs/api.md, "Allocator"). Every heap allocation
 * of hccn goes through malloc_fn/calloc_fn/realloc_fn/free_fn (each gets
 * user); before hccn maps device memory (an arena) or starts a host thread
 * it asks reserve_fn, which refuses with nonzero (NULL: always granted). A
 * refused or failed request ends as HCCN_ERR_NOMEM naming what and where. */
typedef enum {
    HCCN_RESOURCE_MAPPING,   /* bytes of device memory (an arena, a pool) */
    HCCN_RESOURCE_THREAD,    /* a host thread (an NPU's); bytes: 0 */
} hccn_resource_t;

typedef struct {
    size_t struct_size;      /* sizeof(hccn_allocator_t), for growth */
    void *(*malloc_fn)(size_t bytes, void *user);
    void *(*calloc_fn)(size_t n, size_t size, void *user);
    void *(*realloc_fn)(void *ptr, size_t bytes, void *user);
    void (*free_fn)(void *ptr, void *user);
    int (*reserve_fn)(hccn_resource_t kind, size_t bytes, void *user);
    void *user;
} hccn_allocator_t;

/* Sets the allocator (NULL: libc's). Only while the library holds no
 * memory (no cluster, topology, trace or prediction alive), else
 * HCCN_ERR_INVALID naming how many blocks are live; not thread-safe. */
HCCN_API hccn_status_t hccn_set_allocator(const hccn_allocator_t *a);

/* Recovery after a failure (docs/faults.md, "Recovery"), in the manner of
 * MPI's ULFM. A failed member is one whose NPU failed (fault plan) or that
 * returned from its function; the others are survivors. */

/* Revokes comm: every pending and later operation on it, of any kind and
 * on every rank, fails at once with HCCN_ERR_REVOKED. Any member may call
 * it; agree, shrink and grow still work on a revoked communicator. */
HCCN_API hccn_status_t hccn_comm_revoke(hccn_comm_t *comm);

/* Fault-tolerant agreement among the survivors of comm: *flag (in: this
 * rank's value) becomes the bitwise AND of the survivors' values, the same
 * on every survivor, however many members failed before or during it.
 * Afterwards hccn_comm_failed lists the failed members. A rank whose NPU
 * failed gets HCCN_ERR_FAULT. */
HCCN_API hccn_status_t hccn_comm_agree(hccn_comm_t *comm, int *flag);

/* The comm ranks that the calling rank's last agree/shrink/grow on comm
 * found failed, in increasing order: up to max of them into ranks (may
 * be NULL when max is 0), and their number into *n. */
HCCN_API hccn_status_t hccn_comm_failed(hccn_comm_t *comm, int *ranks,
                                        int max, int *n);

/* A new communicator of comm's survivors (an agreement on who they are),
 * in comm's order: survivor i (counting from 0 in comm rank order) is rank
 * i of *out. Usable at once; comm stays as it was (revoked or not). */
HCCN_API hccn_status_t hccn_comm_shrink(hccn_comm_t *comm, hccn_comm_t **out);

/* A new communicator of comm's members followed by the n cluster ranks
 * listed (not members of comm; a spare NPU, say), in list order. Every
 * member of comm calls it, and each listed rank calls it with comm NULL
 * and the same list. */
HCCN_API hccn_status_t hccn_comm_grow(hccn_comm_t *comm, const int *ranks,
                                      int n, hccn_comm_t **out);

/* What recovery costs in simulated time (docs/faults.md): a failure is
 * detected detect_s seconds after it happens (a heartbeat timeout; an
 * agreement cannot start earlier), and making a communicator in
 * shrink/grow costs init_s seconds after its message rounds. Negative:
 * keep the current value. Between runs only. */
typedef struct {
    size_t struct_size;      /* sizeof(hccn_recovery_opts_t) */
    double detect_s;         /* default 1e-3 */
    double init_s;           /* default 1e-4 */
} hccn_recovery_opts_t;

HCCN_API hccn_status_t hccn_cluster_set_recovery(hccn_cluster_t *cluster,
                                                 const hccn_recovery_opts_t *opts);

#ifdef __cplusplus
}
#endif

#include "hccn/hccn_coll.h"

#endif /* HCCN_HCCN_H */
