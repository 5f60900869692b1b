/*
 * The timing engine: a conservative discrete-event simulation of tasks on
 * the topology, deterministic whatever the host does.
 *
 * Devices post *batches* of tasks with dependencies. A task is one side of a
 * transfer (SEND or RECV, paired with the other side by a match key) or a
 * LOCAL piece of work on the device (a reduction, a copy, a delay). Transfers
 * share link bandwidth max-min fairly (docs/timing.md); local work of one
 * device runs first-come first-served on that device.
 *
 * Determinism: every device is either RUNNING at a virtual clock (it may post
 * new work at that time or later), WAITING for a batch (it posts nothing
 * until the batch completes), or DONE. The engine only settles events that
 * no future post can change: completions at times <= the horizon (the least
 * clock of a RUNNING device) and starts at times < the horizon. Ties are
 * broken by (time, completions before starts, device, batch number, task
 * index), never by host order, so the simulated times depend only on what was
 * posted and when in virtual time.
 *
 * Thread safety: all functions lock the engine; a device's functions are
 * called only by that device's thread (or by one thread in timing-only use).
 */
#ifndef HCCN_DEVICE_SIM_ENGINE_H
#define HCCN_DEVICE_SIM_ENGINE_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "device_sim/topo.h"

typedef struct hccn_sim_engine hccn_sim_engine_t;
typedef struct hccn_sim_batch hccn_sim_batch_t;

typedef enum {
    HCCN_SIM_TASK_SEND,   /* bytes leave this device towards peer */
    HCCN_SIM_TASK_RECV,   /* bytes from peer arrive here, then `cost` s of work */
    HCCN_SIM_TASK_LOCAL,  /* `cost` seconds of local work */
} hccn_sim_task_kind_t;

/* Which part of its route a transfer crosses (docs/timing.md, In-switch
 * reduction). Only where the route passes the reducing switch of the
 * sender's node (hccn_sim_topo_reduce_split); elsewhere the whole route.
 * Both halves of a transfer must post the same value. */
typedef enum {
    HCCN_SIM_VIA_ROUTE = 0,   /* the whole route */
    HCCN_SIM_VIA_UP,          /* up to the switch, then its reduction unit:
                                 a contribution the switch reduces */
    HCCN_SIM_VIA_UP_DOWN,     /* the whole route and the reduction unit: the
                                 contribution that carries the result down */
    HCCN_SIM_VIA_DOWN,        /* from the switch down only: a copy the
                                 switch multicasts */
} hccn_sim_via_t;

/* Pairs a SEND with its RECV: both sides post the same key. */
typedef struct {
    uint64_t a, b, c;
} hccn_sim_key_t;

typedef struct {
    hccn_sim_task_kind_t kind;
    int peer;              /* SEND/RECV: the other device */
    uint64_t bytes;        /* SEND/RECV: bytes on the wire (equal on both) */
    double cost;           /* RECV: seconds of work after arrival; LOCAL */
    hccn_sim_key_t key;    /* SEND/RECV */
    uint32_t dep_off;      /* deps[dep_off .. dep_off+ndeps) are earlier */
    uint32_t ndeps;        /*   task indices of the same batch */
    int via;               /* SEND/RECV: hccn_sim_via_t (0: whole route) */
} hccn_sim_task_t;

/* Creates an engine for topo's NPUs (device index == NPU rank). All devices
 * start RUNNING at clock 0. timeout_s bounds every wall-clock wait. */
hccn_sim_engine_t *hccn_sim_engine_create(const hccn_sim_topo_t *topo,
                                          double timeout_s);
void hccn_sim_engine_destroy(hccn_sim_engine_t *eng);

/* Forgets all work and sets every device RUNNING at clock 0. Only between
 * runs, with no thread inside the engine. */
void hccn_sim_engine_reset(hccn_sim_engine_t *eng);

/* Posts tasks for device dev; they start no earlier than its clock and, if
 * after is not NULL, no earlier than after's completion (stream order).
 * The engine copies tasks and deps. Returns NULL on allocation failure. */
hccn_sim_batch_t *hccn_sim_post(hccn_sim_engine_t *eng, int dev,
                                const hccn_sim_task_t *tasks, int ntasks,
                                const uint32_t *deps, hccn_sim_batch_t *after);

/* As hccn_sim_post, for one of `count` batches (one per device) that must
 * start together, at the latest of their own start times: all post with
 * the same join key. A collective's ranks join, so its time never depends
 * on how far each rank's thread got.
 *
 * sole: dev promises to post nothing else until this batch completes (a
 * blocking call with nothing else in flight). When every device of the
 * engine (folded: of node 0) joins with that promise on a quiet engine
 * (no fault plan, no trace, nothing else open or in flight), the engine
 * records the call,
 * and a later call of the same run (until the next reset) whose tasks are
 * the same is *replayed*: it ends as the recorded one did, shifted to its
 * own start (device_sim/replay.c), with none of the simulation's work. */
hccn_sim_batch_t *hccn_sim_post_joined(hccn_sim_engine_t *eng, int dev,
                                       const hccn_sim_task_t *tasks,
                                       int ntasks, const uint32_t *deps,
                                       hccn_sim_batch_t *after,
                                       hccn_sim_key_t join, int count,
                                       int sole);

/* What a sole member's post found among the engine's recordings, kept by
 * the poster for its next post of the same tasks. Zero: nothing known. */
typedef struct {
    uint64_t gen;               /* the recordings' state it was found in */
    void *rec;                  /* what was found (NULL: no recording) */
    double launch;              /* the call's launch that post found
                                   from its tasks (software.h) */
} hccn_sim_replay_hint_t;

/* What the software model (software.h) needs to know of a posted call
 * beyond its tasks. */
typedef struct {
    int nvswitch;           /* the call reduces in a node's switch: the
                               stack's launch of such calls applies
                               (hccn_sim_sw_launch) */
    uint32_t proto_scale;   /* > 1: a transfer's protocol is picked for
                               its bytes x this (the block a sliced
                               transfer belongs to, software.h); 0 or 1:
                               for its own bytes */
    int family;             /* the library algorithm whose step costs
                               its transfers take (HCCN_SIM_FAM_*,
                               software.h): its ring across nodes, its
                               tree; 0: the protocols' own */
    uint64_t tree_bytes;    /* > 0: the call is the library tree's
                               allreduce of this many bytes, and its
                               transfers reach the stack's tree_bw share
                               of their bandwidth (software.h) */
} hccn_sim_call_t;

/* As hccn_sim_post_joined, with hint (may be NULL): what an earlier post by
 * dev of the same tasks (their keys aside, which follow the join) found
 * among the recordings. While the recordings have not changed since, that
 * answer stands and the tasks are not compared again (a repeated call
 * costs no work in proportion to its tasks); in any case *hint is left
 * holding this post's answer. The caller vouches that the tasks are those
 * of the post that filled the hint, and zeroes it when they change. The
 * result is the one hccn_sim_post_joined gives: the same recording, the
 * same times. tasks may be NULL only where hccn_sim_hint_stands allows it;
 * should the hint not stand after all, NULL is returned, as for no
 * memory. call (may be NULL: an ordinary call) says what the software
 * model needs to know of the call (hccn_sim_call_t): a call that reduces
 * in a node's switch starts after the stack's launch of such calls;
 * other calls after the largest launch of the protocols their tasks run
 * (hccn_sim_sw_post_launch). */
hccn_sim_batch_t *hccn_sim_post_hinted(hccn_sim_engine_t *eng, int dev,
                                       const hccn_sim_task_t *tasks,
                                       int ntasks, const uint32_t *deps,
                                       hccn_sim_batch_t *after,
                                       hccn_sim_key_t join, int count,
                                       int sole, hccn_sim_replay_hint_t *hint,
                                       const hccn_sim_call_t *call);

/* 1 if hint names a recording and stands: the next hccn_sim_post_hinted
 * of dev's part with it posts that part hollow, from the recording,
 * without reading its tasks. A caller that makes no other engine call in
 * between (nothing else can change the recordings: the timing-only runs)
 * may then pass tasks NULL and skip making them. */
int hccn_sim_hint_stands(hccn_sim_engine_t *eng,
                         const hccn_sim_replay_hint_t *hint);

/* Recordings hold at most this many tasks in all (about 50 bytes a task
 * with its dependencies); a larger call is not recorded, and a new one
 * lets the oldest go while they would hold more. A call that no later
 * call can replay (the last of a timing-only run) is not recorded either:
 * hccn_sim_engine_set_recording. */
#define HCCN_SIM_REPLAY_MAX (1L << 24)

/* on = 0: calls posted from now on are not recorded (the caller knows
 * that no later call can replay them, as for the last call of a
 * timing-only run: a recording costs memory in proportion to the call);
 * 1 (the default): they are. Recording only observes, so this changes no
 * time; replays of calls recorded before go on. */
void hccn_sim_engine_set_recording(hccn_sim_engine_t *eng, int on);

/* Calls replayed since the engine was created (see hccn_sim_post_joined). */
long hccn_sim_engine_replays(hccn_sim_engine_t *eng);

/* Initialises a lock that ranks on other host cores take for a moment:
 * a waiter spins briefly before it sleeps, since the holder is running. */
void hccn_sim_lock_init(pthread_mutex_t *m);

/* Calls wake(arg, dev) (with the engine locked: it must not call back)
 * whenever a device's awaited batch completes or a tester's question can
 * be answered. */
void hccn_sim_engine_set_wake(hccn_sim_engine_t *eng,
                              void (*wake)(void *arg, int dev), void *arg);

/* Declares that dev will post nothing until b completes (lets the horizon
 * move on while the thread does other work, e.g. moving the data). */
void hccn_sim_wait_begin(hccn_sim_engine_t *eng, int dev,
                         hccn_sim_batch_t *b);

/* hccn_sim_wait_begin for n devices at once (devs[i] waits for bs[i]),
 * with one settling at the end: one thread may declare the waits of
 * threads that are blocked in the same collective. The wake callback is
 * not called for these devices during that settling: the caller wakes
 * them itself, once, when it has also done what else they wait for. */
void hccn_sim_wait_begin_many(hccn_sim_engine_t *eng, const int *devs,
                              hccn_sim_batch_t *const *bs, int n);

/* Blocks until b completes, then sets dev RUNNING at max(clock, b's end).
 * Returns HCCN_OK, or HCCN_ERR_TIMEOUT after the engine's wall timeout.
 * (Threads that must keep working while they wait poll
 * hccn_sim_batch_done and call hccn_sim_wait_finish instead.) */
hccn_status_t hccn_sim_wait_end(hccn_sim_engine_t *eng, int dev,
                                hccn_sim_batch_t *b);

/* After b has completed: dev's clock becomes max(clock, b's end). */
void hccn_sim_wait_finish(hccn_sim_engine_t *eng, int dev,
                          hccn_sim_batch_t *b);

/* 1 if b completes at or before dev's clock, 0 if not, -1 if that is not
 * known yet (events up to the clock are not all settled; dev then counts
 * as testing at its clock, and is woken when the answer may be known).
 * Never moves the clock. */
int hccn_sim_test_try(hccn_sim_engine_t *eng, int dev, hccn_sim_batch_t *b);

/* Advances dev's clock by dt >= 0 seconds (compute). */
void hccn_sim_advance(hccn_sim_engine_t *eng, int dev, double dt);

/* dev has finished its function and will post nothing more. */
void hccn_sim_finish(hccn_sim_engine_t *eng, int dev);

/* Every device has finished (timing-only use: one call instead of ndev,
 * then the simulation runs to its end). */
void hccn_sim_finish_all(hccn_sim_engine_t *eng);

double hccn_sim_clock(hccn_sim_engine_t *eng, int dev);

/* Settles everything that can be settled (timing-only use: with every device
 * DONE or WAITING this runs the simulation to its end). */
void hccn_sim_settle(hccn_sim_engine_t *eng);

/* A completed batch's start (the first moment its tasks could run) and end
 * times, and whether it has completed. */
int hccn_sim_batch_done(hccn_sim_engine_t *eng, const hccn_sim_batch_t *b);
double hccn_sim_batch_start(const hccn_sim_batch_t *b);
/* The poster's clock when it posted b (for the poster's own thread). */
double hccn_sim_batch_posted(const hccn_sim_batch_t *b);
double hccn_sim_batch_end(const hccn_sim_batch_t *b);

/* Completion time of task i of a completed batch. */
double hccn_sim_task_end(const hccn_sim_batch_t *b, int i);

/* When task i of a completed batch began: its transfer started draining
 * (SEND, RECV) or its local work started (LOCAL). */
double hccn_sim_task_begin(const hccn_sim_batch_t *b, int i);

/* A batch starts with one reference (the poster's). It is freed once it has
 * no references and is complete, or when the engine is reset/destroyed. */
void hccn_sim_batch_retain(hccn_sim_engine_t *eng, hccn_sim_batch_t *b);
void hccn_sim_batch_release(hccn_sim_engine_t *eng, hccn_sim_batch_t *b);

/* Gives up on b after an error (its peers will never post their halves):
 * dev stops waiting for it and it stays in memory, inert for dev, until the
 * next reset. */
void hccn_sim_batch_abandon(hccn_sim_engine_t *eng, int dev,
                            hccn_sim_batch_t *b);

/* Per-link totals since the last reset: bytes carried and busy seconds. */
void hccn_sim_link_stats(hccn_sim_engine_t *eng, int link, double *bytes,
                         double *busy);

/* Sets the fault plan (copied), replayed from the next reset on. Returns
 * -1 on no memory. */
/* Lean mode, for runs that read only batches' start and end times
 * (timing-only runs): a batch that completes normally frees its tasks at
 * once, so a long sequence holds the tasks of the batches in flight only;
 * hccn_sim_task_begin/end then give NAN for it. Not with a trace. */
void hccn_sim_engine_set_lean(hccn_sim_engine_t *eng, int lean);

/* The rate solver as a reference for tests, with the same times as the
 * default (on = 0): re-rated after each start instead of once per burst
 * of starts at one instant (device_sim/flow_comp.c). */
void hccn_sim_engine_set_reference(hccn_sim_engine_t *eng, int on);

/* Folding, for timing-only runs on a cluster whose nodes are copies of
 * node 0 running copies of node 0's part, or whose nodes are copies of
 * the first node of their leaf (runtime/predict.c checks both): only the
 * devices that are their own copy (rep[d] == d; every other d stands for
 * rep[d], itself one of them) post: node 0's, or those of every leaf's
 * first node.
 * A transfer's tasks name the real peer; a SEND and a RECV pair if their
 * keys are equal and each one's device is the copy (rep) of the other's
 * peer; the transfer takes the real route with every link replaced by its
 * copy (link_map, one entry per link); on a link that link_div[l] nodes
 * cross (a network link; NULL: all 1) each flow counts as link_div[l]
 * flows and takes its rate off as many times, as theirs do unfolded.
 * The copies of every node behave alike, so the devices played give the
 * times of all. A call is recorded and replayed when the k devices played
 * join (hccn_sim_post_joined). rep and link_map NULL: no folding (the
 * default). The arrays are copied. Only between runs, before anything is
 * posted; -1 on no memory or a rep not of that form. */
int hccn_sim_engine_set_fold(hccn_sim_engine_t *eng, const int *rep,
                             const int *link_map, const double *link_div);

int hccn_sim_engine_set_faults(hccn_sim_engine_t *eng,
                               const hccn_sim_fault_t *faults, int n);

/* The simulated time at which NPU dev fails by the fault plan (its first
 * npu_fail), or INFINITY. Read without the lock: the plan changes only
 * between runs. */
double hccn_sim_fail_at(const hccn_sim_engine_t *eng, int dev);

/* HCCN_OK, or why a completed batch failed (HCCN_ERR_FAULT: its own NPU or
 * a link of its route; HCCN_ERR_REMOTE: the other side's), with the reason
 * copied to reason. */
hccn_status_t hccn_sim_batch_status(hccn_sim_engine_t *eng,
                                    const hccn_sim_batch_t *b, char *reason,
                                    size_t len);

/* Writes the engine's state (devices, unfinished batches and tasks) to out,
 * for diagnosing a wait that never ends. */
void hccn_sim_engine_dump(hccn_sim_engine_t *eng, FILE *out);

#endif /* HCCN_DEVICE_SIM_ENGINE_H */
