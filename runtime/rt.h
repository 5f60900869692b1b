/*
 * Runtime internals: clusters, rank contexts, communicators, operations.
 *
 * Threads: each rank's context, communicator handles and operations are used
 * only by that rank's thread. What ranks share (a communicator's rendezvous
 * slots, schedule cache and mailboxes) is guarded by the communicator's lock
 * or by atomics, as noted at each field.
 */
#ifndef HCCN_RUNTIME_RT_H
#define HCCN_RUNTIME_RT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "device_sim/arena.h"
#include "device_sim/engine.h"
#include "device_sim/fail.h"
#include "device_sim/launch.h"
#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "hierarchy/select.h"

#define RT_SLOTS 64        /* collectives a rank may run ahead of another */
#define RT_BOX_DEPTH 64    /* sends a rank may post ahead to one peer */
#define RT_ERR_MAX 1024

/* Limits (docs/topology.md, "Limits"). A cluster with data makes each NPU
 * a thread and an arena mapping; Linux's defaults allow 32768 threads
 * (kernel.pid_max) and 65530 mappings (vm.max_map_count; a thread's stack
 * takes two more). Its arenas, reserved and not committed, must fit in half
 * of a 47-bit address space. (Timing-only runs: HCCN_MAX_TIMING_NPUS,
 * runtime/predict.h.) */
#define HCCN_MAX_CLUSTER_NPUS 16384
#define HCCN_MAX_ARENA_TOTAL_MIB (64ull << 20)

typedef struct rt_comm rt_comm_t;
typedef struct rt_pair rt_pair_t;     /* runtime/pairs.c */
typedef struct hccn_future rt_op_t;   /* an operation is its future */

/* ----------------------------------------------------------------- errors */

/* Sets the calling thread's last-error message and returns status: the
 * library's one way to fail (device_sim/fail.h), by the runtime's name. */
#define hccn_rt_error hccn_sim_fail
void hccn_rt_error_clear(void);

/* ---------------------------------------------------------------- handles */

/* What the API hands out (runtime/handle.c): communicator handles and
 * futures are tokens, resolved through a table that remembers, after a
 * handle is freed, what it was and how it went. */
enum { RT_H_COMM = 1, RT_H_FUTURE = 2 };
enum { RT_GONE_NONE, RT_GONE_DESTROYED, RT_GONE_RUN_END, RT_GONE_CLUSTER,
       RT_GONE_FUTURE_FREE };

typedef struct {
    int world;                    /* a handle on the world communicator */
    int rank;                     /* the owner's world rank */
    int size;                     /* comm size */
    uint64_t uid;                 /* the communicator */
    uint64_t seq;                 /* futures: the operation's number */
    const char *name;             /* futures: the operation ("allreduce") */
} rt_handle_info_t;

/* A new token for obj of kind, owned by owner (described by info, which is
 * copied); NULL on no memory. */
void *hccn_rt_handle_new(int kind, void *obj, const hccn_ctx_t *owner,
                         const rt_handle_info_t *info);
/* Ends token (why: RT_GONE_*); later lookups report it as gone. A token
 * that is not live is ignored. */
void hccn_rt_handle_free(void *token, int why);
/* The object behind token of kind, or the error (named after fn, with the
 * calling rank) for NULL, a stray value, a stale token or, with own set, a
 * token owned by another rank than the caller. */
hccn_status_t hccn_rt_handle_get(const char *fn, int kind, const void *token,
                                 int own, void **obj);
/* HCCN_OK if ctx is the calling thread's own context, else the error
 * naming the caller's rank and whose context it passed. */
hccn_status_t hccn_rt_ctx_check(const char *fn, const hccn_ctx_t *ctx);
/* The context of the rank whose function runs on this thread (NULL on any
 * other thread); set by the run around the rank's function. */
void hccn_rt_set_self(hccn_ctx_t *ctx);
hccn_ctx_t *hccn_rt_self(void);

/* Adds cl to the live clusters (-1 on no memory), or takes it out (1 if it
 * was there). */
int hccn_rt_cluster_register(const hccn_cluster_t *cl);
int hccn_rt_cluster_forget(const hccn_cluster_t *cl);
/* HCCN_OK if cl is a live cluster, else the error (named after fn). */
hccn_status_t hccn_rt_cluster_check(const char *fn, const hccn_cluster_t *cl);
/* HCCN_OK if ctx may be read: the caller's own, or a context of a live
 * cluster (queries only; calls that change state use hccn_rt_ctx_check). */
hccn_status_t hccn_rt_ctx_query(const char *fn, const hccn_ctx_t *ctx);

/* ---------------------------------------------------------------- cluster */

/* What names an operation in reports (kept after the operation is freed). */
typedef struct {
    int kind;                     /* RT_OP_*, or -1: none */
    int coll;                     /* fingerprint kind of a collective */
    uint64_t seq;                 /* collective or message number */
    int peer;
    uint64_t uid;                 /* communicator */
} rt_op_desc_t;

struct hccn_ctx {
    hccn_cluster_t *cl;
    int rank;
    hccn_sim_bell_t bell;         /* rung by peers when they make progress */
    hccn_comm_t *world;
    double last_duration;
    rt_op_t *ops_head, *ops_tail; /* outstanding operations, post order */
    _Atomic int finished;         /* its function returned */
    _Atomic int time_wait;        /* blocked on what the timing engine
                                     decides (a batch's end, a test):
                                     only then do its wake-ups ring */
    int waiting;                  /* asleep in a wait (cl->state_lock) */
    uint64_t wait_epoch;          /* cl->epoch when it fell asleep */
    pthread_mutex_t cur_lock;     /* cur and last: the rank's own lock, so
                                     that waits take no cluster-wide one */
    rt_op_t *cur;                 /* the operation it waits for */
    const char *cur_call;         /* or the call it waits in, without an
                                     operation (a grow, an agreement) */
    rt_op_desc_t last;            /* the last operation it completed */
    uint64_t jitter_rng;          /* xorshift state of its jitter sleeps */
    int group_depth;              /* hccn_group_start nesting */
    int inflight;                 /* operations posted and not yet waited
                                     for (nor freed after hccn_test) */
    rt_op_t **group_ops;          /* posted inside the group, to wait */
    int ngroup, capgroup;
    rt_op_t *futures;             /* handed out and not yet freed (freed
                                     when the run ends) */
    char errmsg[RT_ERR_MAX];      /* message of the rank's failure */
    int mark;                     /* HCCN_MARK_* of the ops it posts now */
    struct rt_summary *sum;       /* hccn_summary_mark's record, or NULL */
};

struct hccn_cluster {
    hccn_sim_topo_t *topo;
    hccn_sim_engine_t *eng;
    hccn_sim_arena_t *arenas;     /* per rank */
    hccn_ctx_t *ctxs;             /* per rank */
    int nranks;
    int bind_threads;
    double timeout_s;
    uint64_t drive_bytes;         /* driven collectives: at most this many
                                     bytes moved by each rank; 0: never */
    _Atomic uint64_t ndriven;     /* collectives driven so far */
    int jitter_us;                /* host-load stress: the longest sleep a
                                     wait inserts (diag.c); 0: none */
    rt_comm_t *world;
    hccn_hier_cache_t *select_cache; /* selection's answers, this cluster's */
    hccn_sim_fault_t *faults;     /* the file's, then hccn_cluster_add_fault's */
    int nfaults, nfile_faults;
    int capfaults;                /* room in faults (cluster_faults.c) */
    hccn_sim_link_index_t *links; /* link names, made on the first
                                     hccn_cluster_add_fault of a link */
    rt_comm_t *subcomms;          /* made during the current run */
    pthread_mutex_t state_lock;   /* waiting of every rank */
    _Atomic uint64_t epoch;       /* bumped whenever any rank progresses */
    int nlive, nwaiting;          /* under state_lock */
    int deadlock_seen;            /* under state_lock: a rank has taken
                                     the deadlock's snapshot this run */
    _Atomic int deadlock;         /* every live rank is stuck */
    char deadlock_report[RT_ERR_MAX]; /* the ranks' states at that moment */
    pthread_mutex_t comms_lock;
    _Atomic int running;
    _Atomic uint64_t next_comm_uid;
    hccn_rank_fn fn;
    void *arg;
    hccn_status_t *status;
    double ft_detect_s, ft_init_s; /* recovery costs (runtime/recover.c) */
    int ft_set;                   /* 0: the defaults */
    hccn_sim_topo_t *sel_topo;    /* what selection sees under this run's */
    hccn_hier_cache_t *sel_cache; /*   faults, or NULL (fault_select.c) */
    struct rt_proc *proc;         /* several processes (proc.h), or NULL */
};

/* ------------------------------------------------------------ communicator */

typedef struct {
    int coll;                     /* hccn_coll_t */
    uint64_t count;               /* allgatherv: the rank's sendcount */
    int dtype, op, root;
    /* v-collectives: the rank's count arrays (comm size entries; NULL where
     * the call has none), owned by its operation, which outlives the
     * rendezvous check; vhash hashes vrecv (allgatherv, reduce_scatterv). */
    const uint64_t *vsend, *vrecv;
    uint64_t vhash;
    /* Per-rank settings that shape the schedule: they must agree too. */
    int compress;                 /* HCCN_COMPRESS_* of the call */
    const char *algo;             /* the schedule's algorithm name */
} rt_fp_t;

/* The order in which a driver moved the bytes of a schedule's steps
 * (exec.c): the next driver of that schedule on the communicator runs them
 * in that order, straight through, instead of trying every step until it
 * can run. Only steps that move bytes are listed. */
typedef struct {
    int rank;                     /* comm rank */
    uint32_t step;
    uint32_t fused;               /* the REDUCE done in the same pass as
                                     this receive, or UINT32_MAX */
} rt_plan_step_t;

typedef struct rt_plan {
    int compress;                 /* the calls' HCCN_COMPRESS_* */
    int failed;                   /* no memory while recording */
    uint32_t n, cap;
    rt_plan_step_t *steps;
    struct rt_plan *next;
} rt_plan_t;

/* A plan's steps with their buffers' addresses worked out, for calls with
 * the same buffers on every rank (exec.c): a repeated small call moves its
 * bytes without looking a step up. Element counts follow the schedule's
 * element size; the type and operator are each call's own. */
enum { RT_MOVE_COPY, RT_MOVE_REDUCE, RT_MOVE_REDUCE3, RT_MOVE_WIRE,
       RT_MOVE_WIRE_REDUCE, RT_MOVE_ROUND, RT_MOVE_AVG };
typedef struct {
    int kind;                     /* RT_MOVE_* */
    char *dst;
    const char *a, *b;            /* COPY: dst <- a; REDUCE: dst op= a;
                                     REDUCE3: dst <- a op b; WIRE: dst <-
                                     b through the wire type aux, reduced
                                     with a unless a is NULL; WIRE_REDUCE:
                                     REDUCE rounded to aux; ROUND: dst
                                     rounded to aux; AVG: dst /= aux */
    size_t n;                     /* bytes (COPY) or elements */
    int aux;                      /* wire dtype, or AVG's rank count */
} rt_move_t;

typedef struct {
    const rt_plan_t *plan;        /* NULL: none worked out */
    char **bufs;                  /* 3 per comm rank, as at the slot */
    uint32_t n;
    rt_move_t *moves;
} rt_moves_t;

/* Rendezvous of one collective (sequence number seq) on a communicator.
 * Guarded by the communicator's lock, except xstate (atomics) and the
 * buffers, which are read-only once ready is set. */
typedef struct {
    int in_use;
    uint64_t seq;
    int arrived;
    _Atomic int finished;         /* left; only the last leaver locks */
    _Atomic int ready;            /* 1: all arrived and checked */
    hccn_status_t status;         /* HCCN_ERR_MISMATCH when they disagree */
    char msg[RT_ERR_MAX];
    rt_fp_t *fp;                  /* per comm rank */
    char *here;                   /* per comm rank: 1 once arrived */
    char **bufs;                  /* per comm rank: SEND, RECV, SCRATCH */
    const hccn_sched_t **scheds;  /* per comm rank: the schedule it runs
                                     (where its own steps' offsets are) */
    uint32_t nxfers;
    _Atomic int *xstate;          /* per xfer: 0, 1 published, 2 consumed */
    /* A small collective is driven: the last rank to arrive moves every
     * rank's bytes on its own thread while the others sleep (exec.c). */
    rt_op_t **ops;                /* per comm rank: its operation */
    int ndrivable;                /* arrived operations that allow it */
    int refused;                  /* a rank found it busy (a newer seq) */
    _Atomic int drive;            /* RT_DRIVE_* */
    rt_plan_t *rec;               /* the driver's recording, or NULL */
} rt_slot_t;

enum { RT_DRIVE_OFF, RT_DRIVE_ON, RT_DRIVE_DONE };

/* One entry of a point-to-point mailbox (src -> dst), by sequence number. */
typedef struct {
    _Atomic int state;            /* 0 free, 1 posted, 2 consumed */
    uint64_t seq;
    const void *buf;
    size_t bytes;
    hccn_status_t status;         /* set by the receiver on a size mismatch */
} rt_box_ent_t;

/* One entry of a communicator's plan cache (plan_cache.c): one kind of
 * call worked out once. Its key is everything the schedule's builder
 * read: the arguments (view aside: it is the communicator's; v-arrays
 * copied into v) and the algorithm selected for them; hash is only a
 * first filter. It holds the schedule and the orders in which drivers
 * moved its bytes (exec_drive.c), one per compression. Everything but
 * plans is fixed once the entry is published; plans only grows, under
 * the communicator's lock. Entries live until hccn_rt_plans_clear. */
typedef struct {
    uint64_t hash;
    hccn_coll_args_t args;
    const hccn_algo_t *algo;
    uint64_t *v;
    hccn_sched_t *sched;
    rt_plan_t *plans;
} rt_entry_t;

#define RT_SPLITS 4

/* Rendezvous of one hccn_comm_split on a communicator (under its lock). */
typedef struct {
    int in_use;
    uint64_t seq;
    int arrived, picked;
    int *color, *key;             /* per comm rank */
    rt_comm_t **result;           /* per comm rank: its new comm or NULL */
    int built;
    hccn_status_t status;
    char msg[256];                /* why it failed, as found by the builder */
} rt_split_t;

struct rt_comm {
    hccn_cluster_t *cl;
    uint64_t uid;
    int size;
    int *world;                   /* comm rank -> world rank */
    int *node, *local, *pod;      /* hccn_hier_view_t arrays */
    hccn_hier_view_t view;
    pthread_mutex_t lock;
    rt_slot_t slots[RT_SLOTS];
    int nplans;                   /* plans kept in entries (under lock) */
    rt_moves_t moves;             /* the last driver's; drivers of a
                                     communicator run one at a time */
    rt_entry_t **entries;         /* the plan cache (under lock) */
    int nentries, capentries;
    rt_pair_t *pairs;             /* point-to-point pairs used (pairs.c;
                                     under lock) */
    size_t npairs, cappairs;
    _Atomic int broken;           /* 0, or the status of the error that
                                     poisoned it (mismatch, timeout, a rank
                                     that left, abort) */
    char broken_msg[RT_ERR_MAX];  /* its message (first one, under lock) */
    _Atomic int aborted;          /* hccn_comm_abort (RT_ABORT_USER) or
                                     hccn_comm_revoke (1) was called */
    _Atomic int revoked;          /* hccn_comm_revoke was called (aborted
                                     is set too; runtime/recover.c) */
    struct rt_ft *ft;             /* recovery rendezvous, or NULL (under
                                     lock; runtime/recover.c) */
    hccn_comm_t **handles;        /* per comm rank */
    int live_handles;             /* members not destroyed (under lock) */
    rt_split_t splits[RT_SPLITS]; /* comm_split rendezvous, by split seq */
    rt_comm_t *next_sub;          /* cluster's list of sub-communicators */
};

#define RT_PICKS 8         /* selections a rank remembers per communicator */
#define RT_PICK_SPEC 64

/* A rank's engine tasks for a remembered selection's schedule, with the
 * buffers they were made for, kept for the next call with the same ones
 * (exec.c): a repeated call re-keys them instead of making them again, and
 * brings the engine's last answer for them (hint). */
typedef struct {
    hccn_sim_task_t *tasks;       /* NULL: none kept */
    uint32_t ntasks;
    uintptr_t bufs[3];
    int compress;
    hccn_sim_replay_hint_t hint;
} rt_part_t;

/* One remembered selection of a rank: the algorithm chosen for these
 * arguments under this spec, and its schedule once known. Selection is a
 * pure function of them (the same on every rank, every time), so a rank
 * may reuse it instead of selecting again; the handle is the rank's own,
 * so no lock is taken. */
typedef struct {
    int used;
    int coll, root, has_spec;
    uint64_t count;
    size_t esize;
    int in_switch;                /* hccn_coll_args_t.in_switch */
    char spec[RT_PICK_SPEC];      /* the spec it was chosen under */
    const hccn_algo_t *algo;
    const rt_entry_t *entry;      /* its plan-cache entry, or NULL */
    uint64_t moves;               /* bytes this rank's steps move */
    rt_part_t part;               /* this rank's tasks for sched */
} rt_pick_t;

/* The selection of a rank's last collective on a communicator, kept so
 * that hccn_comm_last_choice can say what ran and why (sim_predict.c). */
typedef struct {
    hccn_coll_args_t args;        /* its arguments (no count arrays) */
    const hccn_algo_t *algo;      /* NULL before the first */
    char sched[48];               /* the schedule's name */
    char spec[RT_PICK_SPEC];      /* the override it was chosen under */
} rt_last_choice_t;

struct hccn_comm {
    rt_comm_t *sh;
    void *token;                      /* what the API hands out */
    hccn_ctx_t *ctx;
    int rank;
    int destroyed;
    int pending;                      /* futures not yet waited */
    char *algo_spec;                  /* hccn_comm_set_algo, or NULL */
    int compress;                     /* HCCN_COMPRESS_* */
    uint64_t split_seq;
    uint64_t coll_seq;
    uint64_t data_seq;                /* collectives whose bytes have all
                                         moved on this rank (in order) */
    hccn_sim_batch_t *stream_tail;    /* last posted batch (retained) */
    rt_pick_t picks[RT_PICKS];        /* recent selections */
    int next_pick;                    /* the one to replace next */
    char *scratch;                    /* a spare SCRATCH buffer for the */
    size_t scratch_bytes;             /*   next collective, or NULL */
    rt_last_choice_t last;            /* its last collective's choice */
};

rt_comm_t *hccn_rt_comm_new(hccn_cluster_t *cl, int size, const int *world);
void hccn_rt_comm_free(rt_comm_t *c);
/* Forgets every collective and message in flight (between runs). */
void hccn_rt_comm_reset(rt_comm_t *c);

/* ------------------------------------------- plan cache (plan_cache.c) */

/* The plan-cache entry of c for args and algorithm, made (schedule built
 * and checked) on a miss. When the cache is full (128 entries) it returns
 * NULL with *owned a schedule built for this call alone, which the caller
 * frees; NULL with *owned NULL and the last error set when the schedule
 * cannot be built. */
const rt_entry_t *hccn_rt_plan_entry(rt_comm_t *c, const hccn_coll_args_t *a,
                                     const hccn_algo_t *algo,
                                     hccn_sched_t **owned);

/* The driver's order kept in e for compress, or NULL; *room: whether
 * another could be kept. */
const rt_plan_t *hccn_rt_plan_find(rt_comm_t *c, const rt_entry_t *e,
                                   int compress, int *room);

/* Keeps a complete recording p in e (frees it when there is no room). */
void hccn_rt_plan_keep(rt_comm_t *c, const rt_entry_t *e, rt_plan_t *p);

/* The one invalidation: forgets every entry of c with its plans, every
 * member's remembered selections and the driver's worked-out moves. Called
 * when what they were made from changes (the cluster's fault plan) and
 * when c is freed; never with a call of c in flight. */
void hccn_rt_plans_clear(rt_comm_t *c);

/* The rank's remembered selection for args under spec (NULL: none), or
 * NULL when it has none. */
rt_pick_t *hccn_rt_pick_find(hccn_comm_t *comm, const hccn_coll_args_t *a,
                             const char *spec);

/* Remembers that algo was selected for args under spec; returns the entry,
 * or NULL when spec is too long to remember. */
/* Forgets every remembered selection of the handle. */
void hccn_rt_picks_clear(hccn_comm_t *comm);
rt_pick_t *hccn_rt_pick_store(hccn_comm_t *comm, const hccn_coll_args_t *a,
                              const char *spec, const hccn_algo_t *algo);

/* Poisons c with status and the message that explains it (the first
 * error wins); later calls on c fail with both. */
void hccn_rt_comm_break(rt_comm_t *c, hccn_status_t status, const char *msg);
/* As hccn_rt_comm_break, with c->lock held. */
void hccn_rt_comm_break_locked(rt_comm_t *c, hccn_status_t status,
                               const char *msg);

/* Resolves the token *comm (a public communicator handle) to the calling
 * rank's own handle, in place; on error *comm is NULL and the error names
 * fn, the calling rank and what the token was. */
hccn_status_t hccn_rt_comm_resolve(const char *fn, hccn_comm_t **comm);

/* The error of a call on a broken or aborted communicator (HCCN_OK when it
 * is neither). */
hccn_status_t hccn_rt_comm_check(const char *fn, hccn_comm_t *comm);

/* Empties a rendezvous slot for its next collective (lock held, or no
 * rank inside). */
void hccn_rt_slot_clear(rt_comm_t *c, rt_slot_t *s);

/* The next message from src to dst (comm ranks) for the sender (is_send)
 * or the receiver: sets *seq to its order in the pair and returns its
 * mailbox entry, which stays put until the communicator is reset or
 * freed; NULL on no memory. Takes the communicator's lock. */
rt_box_ent_t *hccn_rt_pair_next(rt_comm_t *c, int src, int dst, int is_send,
                                uint64_t *seq);
/* Forgets every pair and frees their mailboxes (no message in flight). */
void hccn_rt_pairs_clear(rt_comm_t *c);

/* ------------------------------------------------------------- operations */

enum { RT_OP_COLL, RT_OP_SEND, RT_OP_RECV };
enum { RT_STAGE_ARRIVE, RT_STAGE_READY, RT_STAGE_RUN, RT_STAGE_DONE };
/* The bit of rt_comm_t.aborted that hccn_comm_abort sets (a revoke sets
 * only 1). */
enum { RT_ABORT_USER = 2 };

struct hccn_future {
    int kind;
    void *token;                  /* handed out as a future, or NULL */
    rt_op_t *fprev, *fnext;       /* ctx->futures, while token is set */
    int stage;
    int mark;                     /* HCCN_MARK_* it was posted under */
    int summed;                   /* counted in the rank's summary */
    hccn_ctx_t *ctx;
    hccn_comm_t *comm;
    hccn_sim_batch_t *batch;
    hccn_status_t status;
    double t_call;
    int waited;
    rt_op_t *next;                /* outstanding list */
    int listed;

    /* collectives */
    rt_fp_t fp;
    uint64_t count;               /* the call's count (for traces) */
    uint64_t seq;
    rt_slot_t *slot;
    const hccn_sched_t *sched;
    const rt_entry_t *entry;      /* sched's plan-cache entry, or NULL */
    int sched_owned;              /* sched is this op's own (no entry) */
    char *bufs[3];
    char *scratch;
    size_t scratch_len;           /* its allocated size */
    uint8_t *step_state;
    uint32_t *fuse;               /* hccn_rt_fuse_plan of its rank, or NULL */
    int fuse_made;                /* fuse is made (at the first receive) */
    uint32_t cursor, nsteps;
    uint64_t moves;               /* bytes its rank's steps move */
    int driver;                   /* it drives its slot (exec.c) */
    int driven;                   /* its steps run on the driver's thread
                                     (set and read by the driver only) */
    int in_wait;                  /* its own thread waits for it in
                                     hccn_rt_op_wait (may be driven) */
    int time_begun;               /* the driver declared its engine wait */
    int own_begun;                /* its thread did (hccn_rt_op_idle) */
    hccn_dtype_t dtype;
    hccn_redop_t op;
    int compress;                 /* HCCN_COMPRESS_*: wire precision */
    uint64_t *vmem;               /* v-collectives: the count arrays the
                                     fingerprint points to (owned) */
    uint64_t avg_elems;           /* elements of RECV to divide for AVG */
    uint64_t out_elems;           /* elements of RECV that are the result */

    /* point-to-point */
    int peer;
    uint64_t pseq;
    void *buf;
    size_t bytes;
    rt_box_ent_t *ent;
};

typedef struct {
    const void *sendbuf;
    void *recvbuf;
    hccn_dtype_t dtype;
    hccn_redop_t op;
    int compress;                 /* HCCN_COMPRESS_* */
    int fp_kind;                  /* fingerprint kind: hccn_coll_t or
                                     RT_FP_SPLIT */
    uint64_t fp_extra;            /* folded into the fingerprint (the
                                     fingerprint's count for a
                                     v-collective) */
    uint64_t avg_elems, out_elems;
    uint64_t *vmem;               /* v-collectives: malloc'ed block that
                                     holds the arrays below; the operation
                                     takes it over (freed on failure too) */
    const uint64_t *vsend, *vrecv;
    uint64_t vhash;
    rt_pick_t *pick;              /* the selection's entry, or NULL */
    int blocking;                 /* the caller waits for it at once
                                     (unless inside a group) */
} rt_coll_call_t;

#define RT_FP_SPLIT 100

/* Picks the algorithm for a on comm: the call's spec (may be NULL), else
 * the communicator's, else HCCN_ALGO, else the cost model. On rank 0 with
 * HCCN_DEBUG=INFO the choice is logged. Returns HCCN_OK, or the error
 * (name: the API function) when no algorithm can run a. */
/* The engine tasks of one rank's steps, as the runtime posts them (exec.c;
 * predict.c posts the same): copies onto themselves cost nothing (bufs:
 * the rank's three buffers as integers), compressed transfers carry half
 * the bytes, transfers are keyed {uid, seq, step's xfer}. */
void hccn_rt_rank_tasks(const hccn_sched_rank_t *rk, const hccn_sim_npu_t *npu,
                        const int *world, const uintptr_t bufs[3],
                        int compress, uint64_t uid, uint64_t seq,
                        hccn_sim_task_t *tasks);

hccn_status_t hccn_rt_coll_pick(hccn_comm_t *comm, const hccn_coll_args_t *a,
                                const char *call_spec, const char *name,
                                const hccn_algo_t **algo);

/* Posts a collective for comm's rank; *out is the new operation. */
hccn_status_t hccn_rt_coll_post(hccn_comm_t *comm, const hccn_coll_args_t *a,
                                const hccn_algo_t *algo,
                                const rt_coll_call_t *call, rt_op_t **out);

/* For each step of rk, the REDUCE that may be fused with it (the step is
 * then a RECV into SCRATCH that only that REDUCE reads), else UINT32_MAX;
 * NULL when no step may be fused (or on no memory). The caller frees it. */
uint32_t *hccn_rt_fuse_plan(const hccn_sched_rank_t *rk);

/* Name of a fingerprint kind ("allreduce", "comm_split"). */
const char *hccn_rt_fp_name(int kind);

/* Compares the fingerprints of slot s once every rank has arrived (lock
 * held): 0 if the ranks agree, else -1 with s->msg saying who called what
 * (runtime/fingerprint.c). */
int hccn_rt_fp_check(rt_comm_t *c, rt_slot_t *s);

/* Selection under the fault plan (runtime/fault_select.c): made at the
 * start of a run (HCCN_ERR_NOMEM on no memory) and freed with the
 * cluster; the topology and cache that selection uses in this run. */
hccn_status_t hccn_rt_sel_prepare(hccn_cluster_t *cl);
void hccn_rt_sel_free(hccn_cluster_t *cl);
const hccn_sim_topo_t *hccn_rt_sel_topo(const hccn_cluster_t *cl);
hccn_hier_cache_t *hccn_rt_sel_cache(const hccn_cluster_t *cl);

/* Frees every sub-communicator (end of a run, cluster destroy). */
void hccn_rt_free_subcomms(hccn_cluster_t *cl);

/* ---- shared by the executor's files (exec.c, exec_slot.c, exec_data.c,
 * exec_drive.c, exec_wait.c) ------------------------------------------- */

/* A step's state on its rank (rt_op_t.step_state). */
enum { ST_IDLE, ST_PUBLISHED, ST_DONE };

/* Keeps op's SCRATCH as the handle's spare (the larger of the two). */
void hccn_rt_scratch_give_back(rt_op_t *op);
/* What op is, for messages: "send", "recv" or its collective's name. */
const char *hccn_rt_op_name(const rt_op_t *op);

/* Takes op off ctx's list of operations in progress. */
void hccn_rt_list_remove(hccn_ctx_t *ctx, rt_op_t *op);
/* op is done with its slot; the last rank to leave clears it. */
void hccn_rt_slot_leave(rt_op_t *op);
/* Rings the bell of every member of c (their operations moved). */
void hccn_rt_ring_members(rt_comm_t *c);
/* Registers op at its slot; 0 if the slot is still busy with an older
 * collective (this rank is RT_SLOTS collectives ahead). */
int hccn_rt_slot_arrive(rt_op_t *op);
/* Ends a collective whose steps are all done: results rounded (wire
 * compression) or divided (AVG), the slot left. */
void hccn_rt_coll_finish(rt_op_t *op);
/* Runs every step of op that can run now; 1 if any did. */
int hccn_rt_run_steps(rt_op_t *op);
/* Moves m's bytes (elements of type dt, combined with op) wherever
 * they live (move.c): in place when this process holds every operand,
 * else by the destination's owner process. */
void hccn_rt_move_run(hccn_cluster_t *cl, const rt_move_t *m,
                      hccn_dtype_t dt, hccn_redop_t op);
/* Runs m on operands this process holds (the kernels of every kind). */
void hccn_rt_move_apply(const rt_move_t *m, hccn_dtype_t dt,
                        hccn_redop_t op);
/* Bytes of one of m's n elements. */
size_t hccn_rt_move_esize(const rt_move_t *m, hccn_dtype_t dt);
/* n bytes from host memory src to device memory dev (put), or from dev
 * to host memory dst (get), whichever process holds dev. */
hccn_status_t hccn_rt_data_put(hccn_cluster_t *cl, void *dev,
                               const void *src, size_t n);
hccn_status_t hccn_rt_data_get(hccn_cluster_t *cl, void *dst,
                               const void *dev, size_t n);
/* A scratch buffer of rank's (with several processes, in the window of
 * the process that owns rank); NULL on no memory. */
void *hccn_rt_scratch_alloc(hccn_cluster_t *cl, int rank, size_t bytes);
void hccn_rt_scratch_free(hccn_cluster_t *cl, int rank, void *ptr);
/* The bytes of receive i and of REDUCE j, its fuse partner, in one pass
 * from the sender's buffer. */
void hccn_rt_fused_data(rt_op_t *op, uint32_t i, uint32_t j);
/* The bytes step i moves: a receive's copy or reduction, a COPY, a
 * REDUCE (nothing for a SEND or a zero-byte step). Nothing is checked:
 * the caller knows the step may run. */
void hccn_rt_step_data(rt_op_t *op, uint32_t i);
/* The bytes step i of op's rank moves, uncompressed, as one move: with
 * fused a REDUCE, the one that alone reads receive i's bytes, done in the
 * same pass from the sender's buffer (UINT32_MAX: none). 0 if it moves
 * nothing: a SEND, a zero-byte step, a copy onto itself. */
int hccn_rt_step_move(const rt_op_t *op, uint32_t i, uint32_t fused,
                      rt_move_t *m);
/* 1 when every dependency of step st of rank rk is done. */
int hccn_rt_deps_done(const rt_op_t *op, const hccn_sched_rank_t *rk,
                      const hccn_step_t *st);

/* Logging, traces of operations, diagnosis of hangs (rt_diag.h). */
#include "runtime/rt_diag.h"

#endif /* HCCN_RUNTIME_RT_H */
