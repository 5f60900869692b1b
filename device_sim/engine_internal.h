/*
 * Internal state of the timing engine, shared by engine.c (events, batches,
 * devices) and flow.c (link sharing). Not installed.
 */
#ifndef HCCN_DEVICE_SIM_ENGINE_INTERNAL_H
#define HCCN_DEVICE_SIM_ENGINE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "device_sim/engine.h"
#include "device_sim/fault_plan.h"
#include "device_sim/pool.h"

typedef struct etask etask_t;
typedef struct hccn_sim_replay_rec hccn_sim_replay_rec_t;

/* Recordings kept for replay (replay.c). */
#define HCCN_SIM_REPLAYS 8

enum { T_WAIT, T_READY, T_FLOW, T_DONE };

/* Event types of the queue (engine.c). */
enum { EV_READY, EV_DONE, EV_DELIVER, EV_FAULT };

/* Buckets of the transfer-matching and the joined-post tables
 * (engine_post.c; emptied by engine_life.c). */
#define MATCH_BUCKETS 4096
#define JOIN_BUCKETS 1024

/* 128 bytes, two cache lines of the pool's 64-byte aligned arrays: the
 * first holds what the event loop reads of each task it handles (its
 * state, dependencies, mate and batch, its work's cost); the second what
 * a transfer's start, matching, replays and traces read, and its end with
 * its first successors, which its completion writes and reads. A
 * timing-only run handles millions of tasks scattered over the ranks'
 * batches, and each line read is a miss. */
struct etask {
    unsigned char kind;         /* hccn_sim_task_kind_t */
    unsigned char state;
    unsigned char via;          /* hccn_sim_via_t */
    unsigned char host_paid;    /* SEND: issued; RECV: taken in (its
                                   host's per-message time paid,
                                   software.h) */
    int dev, peer, idx;
    uint32_t npending;          /* deps not done yet */
    uint32_t succ_off, nsucc;   /* successors in batch->succ */
    double ready;               /* latest completion among deps (and gate) */
    double cost;
    etask_t *mate;              /* the other side of a transfer */
    hccn_sim_batch_t *batch;
    /* second line */
    uint64_t bytes;
    double begin;               /* its transfer or local work began */
    double end;
    hccn_sim_key_t key;
    etask_t *hash_next;         /* unmatched halves, chained by key */
    uint32_t succ_in[2];        /* its first two successors (of
                                   batch->succ), on the line its end is
                                   written to: most tasks have no more */
};
/* etask_t.succ_in's initializer, from a batch's lists succ: the task's n
 * successors from off. */
#define SUCC_IN(succ, off, n)                                               \
    {(n) > 0 ? (succ)[(off)] : 0, (n) > 1 ? (succ)[(off) + 1] : 0}
_Static_assert(offsetof(etask_t, bytes) <= 64 && sizeof(etask_t) == 128,
               "a task is two cache lines, the event loop's in the first");

struct hccn_sim_batch {
    int dev;
    uint64_t seq;               /* per-device post number: canonical order */
    int ntasks, left;
    etask_t *tasks;
    uint32_t *succ;
    double t0, start, end;
    double launch;              /* the call's launch (software.h), added
                                   to its start */
    uint32_t proto_scale;       /* hccn_sim_call_t's, >= 1 */
    int family;                 /* hccn_sim_call_t's */
    uint64_t tree_bytes;        /* hccn_sim_call_t's */
    int proto;                  /* the protocol of all its transfers
                                   (hccn_sim_sw_call_proto), -1: each
                                   its own */
    int gated;                  /* waiting for `after` to complete */
    int done;
    hccn_status_t status;       /* HCCN_ERR_FAULT / _REMOTE when failed */
    char reason[160];
    int refs;                   /* holders; freed at 0 once done */
    hccn_sim_pool_t *pool;      /* its tasks' memory (NULL: malloc) */
    int abandoned;              /* given up by its device (error paths) */
    int resumed;                /* its completion moved its device on to
                                   its end: a device that waited for it,
                                   or any for a sole batch (set before
                                   done) */
    hccn_sim_batch_t *stream_next;
    struct ejoin *join;         /* start together with the join's members */
    int joining;                /* at its join, which is not complete */
    hccn_status_t deferred, deferred_mates;  /* a failure that came before
                                   its join completed (reason in reason):
                                   applied at its start (engine_post.c) */
    int sole;                   /* its device posts nothing until it ends */
    int no_record;              /* posted with recording off */
    hccn_sim_replay_rec_t *rec; /* the recording it is a member of */
    hccn_sim_replay_rec_t *hollow;  /* posted without tasks: they are this
                                       recording's (replay.c) */
    hccn_sim_batch_t *all_prev, *all_next;  /* every live batch */
};

/* One transfer in flight: the bytes of send->bytes drain over the route at
 * `rate` (bytes/s), then arrive `lat` seconds later. What it has left is
 * brought up to date only when its rate changes: `remaining` bytes were
 * left at time `since`, and at `rate` they are gone at `drain`. */
typedef struct hccn_sim_flow {
    /* What a refill reads of every flow of a component comes first: the
     * key, the rates, the mark and the first links share a cache line. */
    int dev, idx;               /* canonical key: the receiving task's */
    uint64_t seq;               /*   device, batch number and index */
    double rate;
    double was;                 /* flow.c: rate before a refill */
    unsigned mark;              /* flow.c: component search */
    int nlinks;
    unsigned res;               /* bit k: links[k] is a resource, not
                                   slack (flow_comp.c) */
    int fixed_by;               /* fill.c: the link whose pick fixed its
                                   rate, -1 if none (infinite) */
    int links[HCCN_SIM_ROUTE_MAX];
    etask_t *send, *recv;
    double lat;
    double sw_lat;              /* its protocol's step cost (software.h):
                                   what it adds to lat */
    double remaining, since;
    double drain;
    int pos;                    /* index in the drain heap (drain.c) */
    /* flow.c: its rate, bytes left and their time before the first
     * re-rating at the instant `undo_at` that changed its rate; a later
     * one at that instant that gives the rate back restores them. */
    double undo_at, undo_rate, undo_rem, undo_since;
    /* flow_swap.c: the other flows in flight into its device */
    struct hccn_sim_flow *in_prev, *in_next;
} flow_t;

/* What a re-rating reads and writes of each link it reaches, together:
 * one cache line a link, where a dozen arrays cost a line each (a
 * component of a few flows reaches links scattered over the fabric). */
typedef struct {
    double bw;                  /* bandwidth now: the topology's times
                                   link_factor (hccn_sim_link_scale) */
    double cap;                 /* fill.c: capacity left (scratch) */
    double room;                /* flow_comp.c, per slack link: at most its
                                   capacity less its flows' rates */
    double next;                /* what room becomes if the check passes */
    struct hccn_sim_flow **flows;   /* the flows on it, any order */
    int active;                 /* how many */
    int cnt;                    /* fill.c: unfixed flows (scratch) */
    int pos;                    /* fill.c: its place in link_order, then
                                   in touched */
    int w;                      /* folded: how many flows each flow on it
                                   stands for (its nodes' count,
                                   fold_div); else 1 */
    unsigned mark;              /* component search: seen this round */
    unsigned char slack;        /* flow_comp.c: the rates leave it room,
                                   so it is neither searched nor filled */
} elink_t;
_Static_assert(sizeof(elink_t) == 64, "a link's state is one cache line");

/* fill.c: a link, and where a canonical pass over the flows meets it
 * first: flow (dev, seq, idx), the canonical key (drain.c), at place k
 * of its route; kept in the entry so that ordering reads no flow. */
typedef struct {
    uint64_t dev, seq;
    uint64_t idx_k;             /* idx << 32 | k */
    int l;
} link_order_t;

typedef struct {
    double t;
    int cls;                    /* 0 completion, 1 start */
    int dev;
    uint64_t bseq;
    int idx;
    int type;
    etask_t *task;
} event_t;

enum { DEV_RUNNING, DEV_WAITING, DEV_TESTING, DEV_DONE };

typedef struct {
    int state;
    double clock;
    hccn_sim_batch_t *waiting_on;
    uint64_t nbatches;
    double local_free;          /* FIFO local work: busy until then */
    double host_free;           /* its host's per-message time (software.h):
                                   busy until then, FIFO */
    int failed;                 /* the NPU has failed (fault plan) */
    int muted;                  /* no wake callback (wait_begin_many) */
    double failed_at;
    pthread_cond_t cv;
} edev_t;

/* Batches of one collective, one per rank, that start together: at the
 * latest of their own gate times, once every member's gate is known, plus
 * the call's launch (the largest of theirs: software.h). */
typedef struct ejoin {
    hccn_sim_key_t key;
    int count, arrived;
    double tmax;
    double lmax;
    hccn_sim_batch_t **members;
    struct ejoin *next;
} ejoin_t;

struct hccn_sim_engine {
    pthread_mutex_t lock;
    void (*wake)(void *arg, int dev);   /* a waiting device may go on */
    void *wake_arg;
    ejoin_t **joins;            /* open joins by key hash */
    const hccn_sim_topo_t *topo;
    double timeout_s;
    int ndev;
    int nlive;                  /* devices that may post: ndev, or those
                                   played (rep[d] == d) when folded */
    edev_t *devs;
    int lean;                   /* free a batch's tasks when it completes
                                   (hccn_sim_engine_set_lean) */
    hccn_sim_pool_t *pool;      /* lean batches' tasks (pool.c) */
    int *hz, *hz_pos, nhz;      /* devices in RUNNING or TESTING, a
                                   min-heap by clock (engine.c) */
    int ntesting;               /* devices in TESTING */

    event_t *heap;
    size_t nheap, capheap;

    etask_t **match;            /* unmatched halves by key hash */
    size_t nmatch_buckets;      /* a power of two; grows */
    size_t nmatch_waiting;      /* halves in the table */

    hccn_sim_batch_t *batches;  /* all live batches */
    long nopen;                 /* of them, not done */

    hccn_sim_replay_rec_t *rec; /* replay.c: the call being recorded */
    hccn_sim_replay_rec_t *replays[HCCN_SIM_REPLAYS];
    uint64_t replay_gen;        /* changes with replays[] (replay.c) */
    int replay_next;            /* the recording to replace next */
    int no_recording;           /* hccn_sim_engine_set_recording(0) */
    long nreplays;              /* calls replayed since creation */

    hccn_sim_fault_t *faults;   /* the fault plan, replayed every run */
    int nfaults;
    hccn_sim_fplan_t fplan;     /* its NPU faults by NPU (fault_plan.c) */

    /* Folding (hccn_sim_engine_set_fold): NULL when off. */
    int *fold_rep;              /* per device: the copy in node 0 */
    int *fold_link;             /* per link: the copy in node 0 */
    double *fold_div;           /* per link: the nodes that share it */

    /* Fluid link sharing (flow.c). */
    double now;
    elink_t *lk;                /* per link: what a re-rating reads, on
                                   cache-line boundaries */
    void *lk_mem;               /* what lk was carved from */
    flow_t **flows;             /* active: the drain heap (drain.c) */
    int nflows, capflows;
    /* flow.c: flows are carved from slabs, on cache-line boundaries, and
     * a flow that ends is the next one to start (its lines still in the
     * cache), not given back to the allocator. */
    flow_t *flow_spare;         /* ended flows, chained by in_next */
    void **slabs;
    int nslabs, capslabs, slab_used;
    int *touched;
    int *pick_tree;             /* fill.c: the tournament over touched */
    double *pick_share;         /*   per place: the link's share */
    int *pick_dirty;            /*   places whose share changed */
    unsigned char *pick_mark;   /*   1 while a place is in pick_dirty */
    int tree_links;             /*   fewer links are scanned instead (a
                                   round of a few dozen links costs less
                                   than keeping the tree); tests lower it */
    link_order_t *link_order;
    uint64_t *link_sort;        /* fill.c: radix sort's scratch, 4 per link */
    double *link_bytes;
    double *link_busy;          /* busy seconds before link_since */
    double *link_since;         /* lk[].active last rose from 0 then */
    double *link_factor;        /* bandwidth factor (faults); 0 = down */
    int *live_slot;             /* folded: per device, its place among
                                   the devices played (a recording's
                                   index, replay.c), -1 for the others;
                                   NULL: the device itself */
    int link_w_on;              /* some link_w above 1 */
    int *link_capflows;
    unsigned epoch;             /* component search: the round's mark */
    int *queue;                 /* its links to visit */
    int nqueue, qdone;          /* queued; searched (flow_comp.c) */
    flow_t **comp;              /* its flows; capflows long */
    int burst;                  /* changes at `now` not re-rated yet: their
                                   links queued, new flows in comp[0..) */
    int no_bursts;              /* hccn_sim_engine_set_reference */
    int nseed;                  /* flows put in comp before the search */
    /* Slack links (flow_comp.c): the rates leave them room, so they are
     * neither searched nor filled until a re-rating's check finds them
     * bound (or nearly). */
    int *slack_list;            /* the slack links the check visits */
    unsigned *link_chk, chk_epoch;  /* slack links checked this re-rating */
    double slack_eps;           /* the check's margin per flow on a link */
    int ntouched;               /* fill.c: the last filling's links */
    long slack_made, slack_undone;  /* links made slack; found bound */
    long radix_sorts;           /* fill.c: components ordered by radix */
    long burst_starts, burst_reaps;     /* starts and drains deferred */
    long rate_restores;         /* flow.c: rates given back in an instant */
    /* flow_swap.c: a burst whose starts only take the place of its
     * drains keeps their rates. */
    flow_t **in_head;           /* per device: the flows in flight into it */
    flow_t **gone;              /* the burst's drained flows, canonical
                                   order, freed when it is re-rated */
    flow_t **fresh;             /* scratch: its started flows */
    int ngone, capgone, capfresh;
    int swap_lost;              /* a drain of the burst was not kept */
    long swaps;                 /* bursts re-rated that way */
    long frees;                 /* bursts of drains that re-rate no one */

    struct hccn_sim_trace *trace;   /* trace.c: NULL when not tracing */
};

/* flow.c: a zeroed flow (NULL on no memory); the end of one. */
flow_t *hccn_sim_flow_new(hccn_sim_engine_t *eng);
void hccn_sim_flow_release(hccn_sim_engine_t *eng, flow_t *f);

/* drain.c */
/* Canonical order of flows: by the receiving task's device, batch number
 * and index. */
int hccn_sim_flow_cmp(const flow_t *x, const flow_t *y);
/* Adds f (f->drain set) to eng->flows; the array has room for it. */
void hccn_sim_drain_push(hccn_sim_engine_t *eng, flow_t *f);
/* Takes f out of eng->flows. */
void hccn_sim_drain_remove(hccn_sim_engine_t *eng, flow_t *f);
/* Puts f back in order after its drain time changed. */
void hccn_sim_drain_update(hccn_sim_engine_t *eng, flow_t *f);

/* fill.c */
/* Max-min fair rates for flows[0..n) (any order), which must be every flow
 * on their links; each flow's previous rate is left in f->was. */
void hccn_sim_fill(hccn_sim_engine_t *eng, flow_t **flows, int n);

/* flow_comp.c: the flows a change re-rates. */
/* Starts a component search: no link seen yet (no burst may be open). */
void hccn_sim_comp_begin(hccn_sim_engine_t *eng);
/* The search starts from f's links too. */
void hccn_sim_comp_seed(hccn_sim_engine_t *eng, const flow_t *f);
/* Puts f itself in the component, and seeds the search with its links. */
void hccn_sim_comp_add(hccn_sim_engine_t *eng, flow_t *f);
/* Re-rates every flow connected to the seeded links. */
void hccn_sim_comp_refill(hccn_sim_engine_t *eng);
/* Defers the re-rating after f's start (at eng->now, f just routed and
 * in the drain heap) to the end of the instant's changes (the burst);
 * returns 1 if so. 0: bursts are off (tracing, the reference solver) or
 * f drains at once; the caller re-rates f's component now (any open burst
 * has been re-rated first). */
int hccn_sim_burst_add(hccn_sim_engine_t *eng, flow_t *f);
/* The same for the drains just seeded (after hccn_sim_comp_begin, with no
 * burst open): opens a burst, or re-rates the flows they reach now. */
void hccn_sim_burst_reaped(hccn_sim_engine_t *eng);
/* Re-rates the open burst's flows, if any. Before anything that reads
 * rates or drain times, or moves the time. */
void hccn_sim_burst_flush(hccn_sim_engine_t *eng);
/* hccn_sim_fill with the check of the slack links flows[0..n) cross: a
 * slack link found bound is made a resource again and the flows are
 * filled again, with widen (flows is eng->comp, the component searched
 * for) the flows it joins; then the links the filling left room on are
 * made slack. Returns the flows filled, n or more. */
int hccn_sim_comp_fill(hccn_sim_engine_t *eng, flow_t **flows, int n,
                       int widen);
/* 1 if the rates of link l's flows (times the flows each stands for,
 * in *sum unless sum is NULL) leave it more room than the slack check's
 * margin: a filling would never pick it. */
int hccn_sim_link_room(const hccn_sim_engine_t *eng, int l, double *sum);
/* Link l's bandwidth factor is now factor (0: down). */
void hccn_sim_link_scale(hccn_sim_engine_t *eng, int l, double factor);
/* Every link a resource again (the reference solver, traces, a link's
 * bandwidth changed). */
void hccn_sim_slack_clear(hccn_sim_engine_t *eng);
/* Sets f->res from its links' slack flags (f newly on its links). */
void hccn_sim_slack_mask(const hccn_sim_engine_t *eng, flow_t *f);
/* Slack link l lost a flow of that rate: as much more room. */
void hccn_sim_slack_give(hccn_sim_engine_t *eng, int l, double rate);
/* The check of the slack links that flows[0..n) cross whose rate changed
 * or is infinite: a link their rates leave no room on is made a resource
 * again and queued for the search; returns how many. */
int hccn_sim_slack_check(hccn_sim_engine_t *eng, flow_t **flows, int n);

/* flow_swap.c: swaps, the starts of a burst that take the place of its
 * drains, and bursts of drains that free no flow. */
/* Lists f among the flows in flight into its device, or takes it out. */
void hccn_sim_in_add(hccn_sim_engine_t *eng, flow_t *f);
void hccn_sim_in_remove(hccn_sim_engine_t *eng, flow_t *f);
/* Keeps drained flow f (off its links and the heap) until the open
 * burst is re-rated; 0 if it cannot (the caller frees it). */
int hccn_sim_swap_keep(hccn_sim_engine_t *eng, flow_t *f);
/* At the re-rating of a burst: if its starts take the places of its
 * drains, gives each the rate of the flow it replaces and returns 1 (the
 * rates of the rest are those a refill would give); if it only drains
 * and no flow left was fixed by a link a drain crossed, returns 1 too
 * (every rate is what a refill would give); else 0. Frees the kept flows
 * either way. */
int hccn_sim_swap_rerate(hccn_sim_engine_t *eng);
/* Frees the kept flows (the engine reset or freed). */
void hccn_sim_swap_drop(hccn_sim_engine_t *eng);

/* flow.c */
/* flows[0..n) in canonical order. */
void hccn_sim_flow_sort(flow_t **flows, int n);
/* hccn_sim_comp_fill, then each flow whose rate changed brought up to
 * date at eng->now (bytes left, drain time, place in the drain heap). */
void hccn_sim_flow_fill(hccn_sim_engine_t *eng, flow_t **flows, int n,
                        int widen);
/* f's rate changed from was in a re-rating at eng->now: its bytes left,
 * drain time and place in the drain heap follow. */
void hccn_sim_flow_rerated(hccn_sim_engine_t *eng, flow_t *f, double was);
int hccn_sim_flow_init(hccn_sim_engine_t *eng);
void hccn_sim_flow_free(hccn_sim_engine_t *eng);
void hccn_sim_flow_reset(hccn_sim_engine_t *eng);
/* Starts the transfer send->recv at eng->now on route[0..n) (the live
 * route from send's device to its peer, hccn_sim_flow_route, latency lat;
 * nominal: it is the topology's own, neither folded nor taken round a
 * downed link); returns -1 on no memory. */
int hccn_sim_flow_start(hccn_sim_engine_t *eng, etask_t *send, etask_t *recv,
                        const int *route, int n, double lat, int nominal);
/* Time at which the next flow drains (INFINITY if none). */
double hccn_sim_flow_next(hccn_sim_engine_t *eng);
/* Moves fluid time to t (>= now). */
void hccn_sim_flow_advance(hccn_sim_engine_t *eng, double t);
/* Removes the flow carrying task t, if any (no callback); rates are
 * recomputed. */
void hccn_sim_flow_drop(hccn_sim_engine_t *eng, const etask_t *t);
/* Recomputes the rates (after a link's bandwidth changed). */
void hccn_sim_flow_rerate(hccn_sim_engine_t *eng);
/* The route a transfer from src to its peer dst takes now: the structural
 * route, or where one of its links is down the alternative route if that
 * is whole (hccn_sim_topo_route_alt), else a relay NPU's
 * (hccn_sim_flow_relay); folded, each link is its copy in node 0. Returns the number of links, or -1 with
 * *down = the downed link of the structural route when neither is whole. */
int hccn_sim_flow_route(const hccn_sim_engine_t *eng, int src, int dst,
                        int *links, double *lat, int *down);
/* The part of a route (links[0..n) from NPU src, latency *lat) that a
 * transfer posted with via crosses, with the switch's reduction unit where
 * it is reduced (flow_via.c): rewrites links and *lat in place and returns
 * the new number of links (links has HCCN_SIM_ROUTE_MAX places). */
int hccn_sim_flow_via(const hccn_sim_engine_t *eng, int via, int src,
                      int *links, int n, double *lat);
/* A route from src to dst through a relay NPU whose links are all up
 * (flow_relay.c): its number of links, or -1 where there is none. */
int hccn_sim_flow_relay(const hccn_sim_engine_t *eng, int src, int dst,
                        int *links, double *lat);
/* Re-routes every flow crossing link l (just gone down) round it, or, with
 * no route left, removes it and calls failed(eng, flow). */
void hccn_sim_flow_cut(hccn_sim_engine_t *eng, int l,
                       void (*failed)(hccn_sim_engine_t *, flow_t *));
/* Removes every flow drained by now; calls done(eng, flow) for each in
 * canonical order, then recomputes the rates. */
void hccn_sim_flow_reap(hccn_sim_engine_t *eng,
                        void (*done)(hccn_sim_engine_t *, flow_t *));

/* engine.c: marks b complete (its end set), wakes its device, opens what
 * waits for it. */
void hccn_sim_batch_complete(hccn_sim_engine_t *eng, hccn_sim_batch_t *b);
/* engine.c: n bytes for b's tasks (the engine's pool or malloc). */
void *hccn_sim_batch_mem(const hccn_sim_batch_t *b, size_t n);
/* engine.c: the successor lists of posted tasks (deps point backwards):
 * task i's successors are succ[succ_off[i] .. + nsucc[i]), in the order
 * of the successors' indices. -1 if a dependency points forwards. */
int hccn_sim_succ_lists(const hccn_sim_task_t *tasks, int n,
                        const uint32_t *deps, uint32_t *nsucc,
                        uint32_t *succ_off, uint32_t *succ);
/* engine.c: pairs t with its waiting other half, or leaves it waiting. */
void hccn_sim_match_half(hccn_sim_engine_t *eng, etask_t *t);

/* replay.c */
/* A recording whose part for dev is exactly these tasks (the input of
 * hccn_sim_post, keyed by join), with a reference taken for the batch
 * that is posted hollow; NULL if none. Lock held. */
hccn_sim_replay_rec_t *hccn_sim_replay_find(hccn_sim_engine_t *eng, int dev,
                                            const hccn_sim_task_t *tasks,
                                            int n, const uint32_t *deps,
                                            hccn_sim_key_t join);
/* hccn_sim_replay_find, answered from hint when the recordings are as they
 * were when it was filled (see hccn_sim_post_hinted); fills it. Lock
 * held. */
hccn_sim_replay_rec_t *hccn_sim_replay_lookup(hccn_sim_engine_t *eng,
                                              int dev,
                                              const hccn_sim_task_t *tasks,
                                              int n, const uint32_t *deps,
                                              hccn_sim_key_t join,
                                              hccn_sim_replay_hint_t *hint);
/* 1 if hint is taken as it is by hccn_sim_replay_lookup, with a
 * recording. Lock held. */
int hccn_sim_replay_hint_ok(const hccn_sim_engine_t *eng,
                            const hccn_sim_replay_hint_t *hint);
/* What can be found has changed (a recording kept or dropped, lean mode
 * set): hints filled before no longer stand. */
void hccn_sim_replay_changed(hccn_sim_engine_t *eng);
/* Drops b's reference to the recording it was posted hollow with. */
void hccn_sim_replay_unhollow(hccn_sim_engine_t *eng, hccn_sim_batch_t *b);
/* Task i's begin (end: 1) for a batch posted hollow and replayed, from its
 * recording; NAN when that is not known (lean recordings, no recording). */
double hccn_sim_replay_task_time(const hccn_sim_batch_t *b, int i, int end);
/* The join (key) of members m[0..count) is complete at t: if the call may
 * be replayed and a recording matches, ends every member as recorded and
 * returns 1; else builds the tasks of hollow members, returns 0 (and may
 * start recording the call), and the caller starts the members. Returns
 * -1 when a hollow member's tasks cannot be built (no memory): the
 * members are failed. */
int hccn_sim_replay_join(hccn_sim_engine_t *eng, hccn_sim_batch_t *const *m,
                         int count, double t, hccn_sim_key_t key);
/* A member of the call being recorded has completed. */
void hccn_sim_replay_member_done(hccn_sim_engine_t *eng, hccn_sim_batch_t *b);
/* While recording (eng->rec set): the flow of send starts (drained 0) or
 * has drained (1). */
void hccn_sim_replay_flow(hccn_sim_engine_t *eng, const etask_t *send,
                          int drained);
/* Drops every recording, and the one under way (the engine is being reset
 * or destroyed): each run records its own calls, so that a run's times
 * never depend on the runs before it. */
void hccn_sim_replay_reset(hccn_sim_engine_t *eng);


/* ---- shared by the engine's files (engine.c, engine_post.c,
 * engine_wait.c, engine_life.c); every one with eng->lock held ---------- */

/* Queues event type for task at time t (engine.c); the fault event of
 * plan entry i at its time. 0, or -1 on no memory. */
int hccn_sim_heap_push(hccn_sim_engine_t *eng, double t, int type,
                       etask_t *task);
int hccn_sim_heap_push_fault(hccn_sim_engine_t *eng, int i);

/* The earliest pending event (a flow draining, or the queue's top): its
 * time and class; 0 when there is none. */
int hccn_sim_next_event(hccn_sim_engine_t *eng, double *t, int *cls);

/* Settles every event the horizon allows, in canonical order. */
void hccn_sim_settle_locked(hccn_sim_engine_t *eng);

/* The horizon: the earliest time any running device could still post. */
double hccn_sim_horizon(const hccn_sim_engine_t *eng);

/* 1 if the horizon is below t (at or below it when at_too is set): a
 * running device may still post work that comes before an event at t. */
int hccn_sim_held_back(const hccn_sim_engine_t *eng, double t, int at_too);

/* A device's clock and state, keeping the horizon's heap in order. */
void hccn_sim_set_clock(hccn_sim_engine_t *eng, edev_t *d, double clock);
void hccn_sim_set_state(hccn_sim_engine_t *eng, edev_t *d, int state);

/* Wakes the host thread waiting on dev, if any. */
void hccn_sim_wake(hccn_sim_engine_t *eng, int dev);

/* The factor by which the fault plan slows dev's local work at time t. */
double hccn_sim_slowdown(const hccn_sim_engine_t *eng, int dev, double t);

/* 1 once b has failed. */
int hccn_sim_batch_failed(const hccn_sim_batch_t *b);

/* Opens b's gate at t: its roots become ready (engine_post.c). */
void hccn_sim_gate_open(hccn_sim_engine_t *eng, hccn_sim_batch_t *b,
                        double t);

/* Fails b with status and reason; its transfers' other sides fail with
 * mates. */
void hccn_sim_batch_fail(hccn_sim_engine_t *eng, hccn_sim_batch_t *b,
                         hccn_status_t status, hccn_status_t mates,
                         const char *reason);

/* Applies fault plan entry i (its time has come). */
void hccn_sim_apply_fault(hccn_sim_engine_t *eng, int i);

/* Frees b and its tasks (no reference may be left). */
void hccn_sim_batch_free(hccn_sim_engine_t *eng, hccn_sim_batch_t *b);

#endif
