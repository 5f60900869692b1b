/*
 * Replays of repeated collectives (device_sim/replay.c): a joined call on
 * a quiet engine whose every member promised to post nothing else until it
 * ends is recorded (unless recording was switched off), and a later call
 * with the same tasks ends as recorded, shifted to its own start.
 *
 * The references are closed forms on a star (every NPU an uplink and a
 * downlink of B, so a ring shift runs at B on every link) and, where a
 * replay must not happen, the same calls on an engine that was never
 * promised anything (so it simulates every call): equal bit for bit.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device_sim/engine.h"
#include "test_topo_load.h"

#define NB 1000000.0            /* b, bytes */
#define NDEV_MAX 8
#define NCALLS 7

/* 8 NPUs behind a switch, 1 GB/s links, 1 us per hop. */
static const char *const star8 =
    "{\"version\": 1, \"node_types\": [{\"count\": 1,"
    " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"
    " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 1, \"lat_us\": 1}}]}";

/* Two nodes of two NPUs; each node's NPUs share one NIC. */
static const char *const pair2 =
    "{\"version\": 1, \"node_types\": [{\"count\": 2,"
    " \"npu\": {\"count\": 2, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 10, \"lat_us\": 1},"
    " \"nics\": {\"count\": 1, \"bw_GBps\": 1, \"lat_us\": 1}}],"
    " \"network\": {\"type\": \"switch\", \"lat_us\": 1}}";

static hccn_sim_topo_t *load(const char *json)
{
    return test_topo_load(json, "replay");
}

/* The latency of a transfer on the star: two hops, up and down. */
static double star_lat(const hccn_sim_topo_t *topo)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_int_equal(hccn_sim_topo_route(topo, 0, 1, links, &lat), 2);
    return lat;
}

/* Device d's tasks of a call (returns how many). */
typedef int (*call_fn)(int d, int ndev, double nb, hccn_sim_task_t *t);

/* Ring shift: d sends nb to d+1 and receives nb from d-1, then reduces
 * for c = 1 us. */
#define RING_COST 1e-6
static int ring_call(int d, int ndev, double nb, hccn_sim_task_t *t)
{
    int next = (d + 1) % ndev, prev = (d + ndev - 1) % ndev;
    t[0] = (hccn_sim_task_t){.kind = HCCN_SIM_TASK_SEND, .peer = next,
                             .bytes = (uint64_t)(nb * NB),
                             .key = {9, 0, (uint64_t)d}};
    t[1] = (hccn_sim_task_t){.kind = HCCN_SIM_TASK_RECV, .peer = prev,
                             .bytes = (uint64_t)(nb * NB), .cost = RING_COST,
                             .key = {9, 0, (uint64_t)prev}};
    return 2;
}

/* The ring shift, then 1 us of local work after both sides are done. */
static const uint32_t ring_deps[] = {0, 1};
static int ring_dep_call(int d, int ndev, double nb, hccn_sim_task_t *t)
{
    ring_call(d, ndev, nb, t);
    t[2] = (hccn_sim_task_t){.kind = HCCN_SIM_TASK_LOCAL, .cost = 1e-6,
                             .dep_off = 0, .ndeps = 2};
    return 3;
}

/* NPU 0 sends nb to NPU 2 (across the nodes of pair2); the others only
 * compute for 1 us, so they end long before the transfer has drained. */
static int lone_call(int d, int ndev, double nb, hccn_sim_task_t *t)
{
    (void)ndev;
    if (d == 0 || d == 2) {
        t[0] = (hccn_sim_task_t){
            .kind = d == 0 ? HCCN_SIM_TASK_SEND : HCCN_SIM_TASK_RECV,
            .peer = 2 - d, .bytes = (uint64_t)(nb * NB), .key = {9, 0, 0}};
        return 1;
    }
    t[0] = (hccn_sim_task_t){.kind = HCCN_SIM_TASK_LOCAL, .cost = 1e-6};
    return 1;
}

typedef struct {
    hccn_sim_engine_t *eng;
    int ndev, ncalls;
    hccn_sim_batch_t *tail[NDEV_MAX];
    hccn_sim_batch_t *b[NCALLS][NDEV_MAX];
    double start[NCALLS][NDEV_MAX], end[NCALLS][NDEV_MAX];
    hccn_sim_replay_hint_t *hint;   /* per device, or NULL: post unhinted */
} run_t;

static void run_init(run_t *r, const hccn_sim_topo_t *topo)
{
    r->eng = hccn_sim_engine_create(topo, 0.0);
    assert_non_null(r->eng);
    r->ndev = topo->nnpus;
    r->ncalls = 0;
    r->hint = NULL;
    for (int d = 0; d < r->ndev; d++)
        r->tail[d] = NULL;
}

static void run_free(run_t *r)
{
    for (int i = 0; i < r->ncalls; i++)
        for (int d = 0; d < r->ndev; d++)
            hccn_sim_batch_release(r->eng, r->b[i][d]);
    for (int d = 0; d < r->ndev; d++)
        hccn_sim_batch_release(r->eng, r->tail[d]);
    hccn_sim_engine_destroy(r->eng);
}

/* Posts the next call on every device (sole[d]: device d's promise),
 * after each device's tail (its previous call); then every device waits
 * for it, as blocking calls do. */
static void post_call(run_t *r, call_fn fn, double nb, const int *sole)
{
    int devs[NDEV_MAX], i = r->ncalls++;
    for (int d = 0; d < r->ndev; d++) {
        hccn_sim_task_t t[3];
        int n = fn(d, r->ndev, nb, t);
        for (int k = 0; k < n; k++)
            t[k].key.b = (uint64_t)i;
        hccn_sim_key_t join = {9, (uint64_t)i, UINT64_MAX};
        hccn_sim_batch_t *b =
            r->hint == NULL
                ? hccn_sim_post_joined(r->eng, d, t, n, ring_deps, r->tail[d],
                                       join, r->ndev, sole[d])
                : hccn_sim_post_hinted(r->eng, d, t, n, ring_deps, r->tail[d],
                                       join, r->ndev, sole[d], &r->hint[d],
                                       0);
        assert_non_null(b);
        hccn_sim_batch_release(r->eng, r->tail[d]);
        r->tail[d] = b;
        r->b[i][d] = b;
        hccn_sim_batch_retain(r->eng, b);
        devs[d] = d;
    }
    hccn_sim_wait_begin_many(r->eng, devs, r->tail, r->ndev);
}

/* Runs the engine to its end and reads every call's start and end. */
static void read_calls(run_t *r)
{
    hccn_sim_finish_all(r->eng);
    for (int i = 0; i < r->ncalls; i++)
        for (int d = 0; d < r->ndev; d++) {
            assert_true(hccn_sim_batch_done(r->eng, r->b[i][d]));
            r->start[i][d] = hccn_sim_batch_start(r->b[i][d]);
            r->end[i][d] = hccn_sim_batch_end(r->b[i][d]);
        }
}

/* Forgets the calls and resets the engine, for a second run. */
static void run_again(run_t *r)
{
    for (int i = 0; i < r->ncalls; i++)
        for (int d = 0; d < r->ndev; d++)
            hccn_sim_batch_release(r->eng, r->b[i][d]);
    for (int d = 0; d < r->ndev; d++) {
        hccn_sim_batch_release(r->eng, r->tail[d]);
        r->tail[d] = NULL;
    }
    r->ncalls = 0;
    hccn_sim_engine_reset(r->eng);
}

static void assert_near(double got, double want, const char *what, int i,
                        int d)
{
    if (!(fabs(got - want) <= 1e-12 * fabs(want)))
        fail_msg("call %d, NPU %d: %s %.17g s, want %.17g s", i, d, what,
                 got, want);
}

/* Five ring shifts, every rank promising; after call i NPU 3 returns from
 * the call (its clock moves to the end), then computes for (i + 1) us:
 * the next call starts then. */
static void ring_run(run_t *r)
{
    int sole[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 5; i++) {
        post_call(r, ring_call, 1, sole);
        hccn_sim_wait_finish(r->eng, 3, r->tail[3]);
        hccn_sim_advance(r->eng, 3, (i + 1) * 1e-6);
    }
    read_calls(r);
}

/* Five ring shifts on the star, NPU 3 computing between calls so that
 * each call starts later than the last ended: the first is simulated and
 * recorded, the other four replayed, and every one ends u + 2 hops + c
 * after its start, where the start is when NPU 3 got there. A second run
 * on the same engine (after a reset) records anew: the same bits. */
static void test_ring_replayed(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    double lat = star_lat(topo);
    const double u = NB / 1e9, span = u + lat + RING_COST;
    for (int lean = 0; lean < 2; lean++) {
        run_t r;
        run_init(&r, topo);
        hccn_sim_engine_set_lean(r.eng, lean);
        ring_run(&r);
        double t = 0.0;
        for (int i = 0; i < 5; i++) {
            for (int d = 0; d < r.ndev; d++) {
                assert_near(r.start[i][d], t, "start", i, d);
                assert_near(r.end[i][d], t + span, "end", i, d);
                if (!lean)
                    assert_near(hccn_sim_task_end(r.b[i][d], 1), t + span,
                                "receive's end", i, d);
            }
            t += span + (i + 1) * 1e-6;
        }
        assert_int_equal(hccn_sim_engine_replays(r.eng), 4);
        /* Every uplink carried 5 b and was busy 5 u. */
        for (int d = 0; d < r.ndev; d++) {
            double bytes, busy;
            int l[HCCN_SIM_ROUTE_MAX];
            double hops;
            hccn_sim_topo_route(topo, d, (d + 1) % r.ndev, l, &hops);
            hccn_sim_link_stats(r.eng, l[0], &bytes, &busy);
            if (bytes != 5 * NB)
                fail_msg("NPU %d's uplink: %.17g bytes", d, bytes);
            assert_near(busy, 5 * u, "uplink busy", -1, d);
        }
        double first[5][NDEV_MAX];
        memcpy(first, r.end, sizeof(first));
        run_again(&r);
        ring_run(&r);
        assert_int_equal(hccn_sim_engine_replays(r.eng), 8);
        for (int i = 0; i < 5; i++)
            for (int d = 0; d < r.ndev; d++)
                if (r.end[i][d] != first[i][d])
                    fail_msg("second run, call %d, NPU %d: %.17g s, first "
                             "run %.17g s", i, d, r.end[i][d], first[i][d]);
        run_free(&r);
    }
    hccn_sim_topo_free(topo);
}

/* Runs the calls on two engines and reads both: r[0] with the devices'
 * promises sole[i] for call i (and recording switched to record[i] before
 * it, unless record is NULL), r[1] promised nothing, so that it simulates
 * every call. calls[i] is call i's size in b. */
static void run_pair(run_t r[2], const hccn_sim_topo_t *topo, call_fn fn,
                     const double *calls, int ncalls, const int *const *sole,
                     const int *record)
{
    int none[NDEV_MAX] = {0};
    for (int k = 0; k < 2; k++) {
        run_init(&r[k], topo);
        for (int i = 0; i < ncalls; i++) {
            if (k == 0 && record != NULL)
                hccn_sim_engine_set_recording(r[k].eng, record[i]);
            post_call(&r[k], fn, calls[i], k == 0 ? sole[i] : none);
        }
        read_calls(&r[k]);
    }
}

/* The ends of the pair's calls agree: bit for bit for calls before
 * `exact` (simulated on both), up to the rounding of the shift after. */
static void ends_agree(run_t r[2], int ncalls, int exact)
{
    for (int i = 0; i < ncalls; i++)
        for (int d = 0; d < r[0].ndev; d++)
            if (i >= exact)
                assert_near(r[0].end[i][d], r[1].end[i][d], "end", i, d);
            else if (r[0].end[i][d] != r[1].end[i][d])
                fail_msg("call %d, NPU %d: %.17g s, simulated %.17g s", i, d,
                         r[0].end[i][d], r[1].end[i][d]);
}

/* Runs the calls twice, promised (sole, on every call) and not, and
 * requires `want` replays and the same times: bit for bit when nothing is
 * replayed, else up to the rounding of the shift. */
static void same_as_simulated(const hccn_sim_topo_t *topo, call_fn fn,
                              const double *calls, int ncalls,
                              const int *sole, long want)
{
    run_t r[2];
    const int *promises[NCALLS];
    for (int i = 0; i < ncalls; i++)
        promises[i] = sole;
    run_pair(r, topo, fn, calls, ncalls, promises, NULL);
    ends_agree(r, ncalls, want > 0 ? 0 : ncalls);
    assert_int_equal(hccn_sim_engine_replays(r[0].eng), want);
    assert_int_equal(hccn_sim_engine_replays(r[1].eng), 0);
    run_free(&r[0]);
    run_free(&r[1]);
}

/* A call changes (its bytes): it is recorded anew, not replayed; the
 * next of the same kind is replayed from that recording. */
static void test_changed_call(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    const double calls[] = {1, 1, 2, 2, 2};
    int sole[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    run_t r;
    run_init(&r, topo);
    long want[] = {0, 1, 1, 2, 3};
    for (int i = 0; i < 5; i++) {
        post_call(&r, ring_call, calls[i], sole);
        assert_int_equal(hccn_sim_engine_replays(r.eng), want[i]);
    }
    read_calls(&r);
    run_free(&r);
    hccn_sim_topo_free(topo);
}

/* No replay: one device made no promise; or the call's transfer outlives
 * the first member's end (another device could then post work that
 * shares its links, so the call is not recorded). The times are the
 * simulation's. */
static void test_not_replayed(void **state)
{
    (void)state;
    hccn_sim_topo_t *star = load(star8), *pair = load(pair2);
    const double calls[] = {1, 1, 1, 1};
    int one_short[NDEV_MAX] = {1, 1, 1, 1, 1, 0, 1, 1};
    same_as_simulated(star, ring_call, calls, 4, one_short, 0);
    int all[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    same_as_simulated(pair, lone_call, calls, 4, all, 0);
    /* The same promises on the ring: replayed. */
    same_as_simulated(star, ring_call, calls, 4, all, 3);
    hccn_sim_topo_free(star);
    hccn_sim_topo_free(pair);
}

/* Members posted without their tasks (hollow: their part matches a
 * recording) whose call cannot be replayed after all, because one rank
 * made no promise this time: their tasks (with their dependencies) are
 * built from the recording when the join completes and the call is
 * simulated, with the times of an engine that was promised nothing.
 * Calls 1, 2 and 4 are replayed. */
static void test_hollow_built(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    int all[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    int one_short[NDEV_MAX] = {1, 1, 1, 1, 1, 0, 1, 1};
    const int *sole[] = {all, all, all, one_short, all};
    const double calls[] = {1, 1, 1, 1, 1};
    run_t r[2];
    run_pair(r, topo, ring_dep_call, calls, 5, sole, NULL);
    assert_int_equal(hccn_sim_engine_replays(r[0].eng), 3);
    for (int i = 0; i < 5; i++)
        for (int d = 0; d < r[0].ndev; d++) {
            assert_near(r[0].end[i][d], r[1].end[i][d], "end", i, d);
            assert_near(hccn_sim_task_end(r[0].b[i][d], 1),
                        hccn_sim_task_end(r[1].b[i][d], 1), "receive's end",
                        i, d);
            assert_near(hccn_sim_task_begin(r[0].b[i][d], 2),
                        hccn_sim_task_end(r[1].b[i][d], 1),
                        "local work's begin", i, d);
        }
    run_free(&r[0]);
    run_free(&r[1]);
    hccn_sim_topo_free(topo);
}

/* The engine must be quiet when the call starts: a send posted earlier
 * and not yet received keeps every call from being recorded or replayed
 * until it is gone; a fault plan keeps them from it for the whole run. */
static void test_engine_not_quiet(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    int sole[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    run_t r;
    run_init(&r, topo);
    hccn_sim_task_t s = {.kind = HCCN_SIM_TASK_SEND, .peer = 1,
                         .bytes = (uint64_t)NB, .key = {77, 0, 0}};
    hccn_sim_batch_t *open = hccn_sim_post(r.eng, 0, &s, 1, NULL, NULL);
    assert_non_null(open);
    for (int i = 0; i < 3; i++)
        post_call(&r, ring_call, 1, sole);
    assert_int_equal(hccn_sim_engine_replays(r.eng), 0);
    /* The receive, after NPU 1's last call; NPUs 0 and 1 start the next
     * call once the pair is done. */
    hccn_sim_task_t rv = {.kind = HCCN_SIM_TASK_RECV, .peer = 0,
                          .bytes = (uint64_t)NB, .key = {77, 0, 0}};
    hccn_sim_batch_t *recv = hccn_sim_post(r.eng, 1, &rv, 1, NULL,
                                           r.tail[1]);
    assert_non_null(recv);
    hccn_sim_batch_retain(r.eng, recv);     /* for the check below */
    hccn_sim_batch_release(r.eng, r.tail[0]);
    hccn_sim_batch_release(r.eng, r.tail[1]);
    r.tail[0] = open;
    r.tail[1] = recv;
    for (int i = 3; i < 6; i++)
        post_call(&r, ring_call, 1, sole);
    /* Call 3 is recorded, 4 and 5 replayed. */
    assert_int_equal(hccn_sim_engine_replays(r.eng), 2);
    read_calls(&r);
    assert_true(r.start[3][0] >= hccn_sim_batch_end(recv));
    hccn_sim_batch_release(r.eng, recv);
    run_free(&r);

    run_init(&r, topo);
    hccn_sim_fault_t f = {.kind = HCCN_SIM_FAULT_NPU_SLOW, .npu = 7,
                          .at = 1e3, .factor = 2.0};
    assert_int_equal(hccn_sim_engine_set_faults(r.eng, &f, 1), 0);
    hccn_sim_engine_reset(r.eng);
    for (int i = 0; i < 3; i++)
        post_call(&r, ring_call, 1, sole);
    read_calls(&r);
    assert_int_equal(hccn_sim_engine_replays(r.eng), 0);
    run_free(&r);
    hccn_sim_topo_free(topo);
}

/* A standing hint lets a part be posted without its tasks (the timing-only
 * runs): call 0 is recorded, call 1 fills the hints (replayed), and calls
 * 2 and 3 are posted with tasks NULL, replayed, ending as the closed form
 * says. After a reset no hint stands, and a post without tasks then fails
 * (NULL) instead of reading them. */
static void test_hint_without_tasks(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    const double span = NB / 1e9 + star_lat(topo) + RING_COST;
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    assert_non_null(eng);
    hccn_sim_replay_hint_t hint[NDEV_MAX];
    memset(hint, 0, sizeof(hint));
    hccn_sim_batch_t *tail[NDEV_MAX] = {NULL};
    int devs[NDEV_MAX];
    for (int i = 0; i < 4; i++) {
        for (int d = 0; d < 8; d++) {
            hccn_sim_task_t t[2];
            ring_call(d, 8, 1, t);
            t[0].key.b = t[1].key.b = (uint64_t)i;
            int stands = hccn_sim_hint_stands(eng, &hint[d]);
            assert_int_equal(stands, i >= 2);
            hccn_sim_key_t join = {9, (uint64_t)i, UINT64_MAX};
            hccn_sim_batch_t *b = hccn_sim_post_hinted(
                eng, d, stands ? NULL : t, 2, ring_deps, tail[d], join, 8, 1,
                &hint[d], 0);
            assert_non_null(b);
            hccn_sim_batch_release(eng, tail[d]);
            tail[d] = b;
            devs[d] = d;
        }
        hccn_sim_wait_begin_many(eng, devs, tail, 8);
        for (int d = 0; d < 8; d++) {
            assert_true(hccn_sim_batch_done(eng, tail[d]));
            assert_near(hccn_sim_batch_end(tail[d]), (i + 1) * span, "end", i,
                        d);
            hccn_sim_wait_finish(eng, d, tail[d]);
        }
        assert_int_equal(hccn_sim_engine_replays(eng), i);
    }
    for (int d = 0; d < 8; d++) {
        hccn_sim_batch_release(eng, tail[d]);
        tail[d] = NULL;
    }
    hccn_sim_engine_reset(eng);
    assert_false(hccn_sim_hint_stands(eng, &hint[0]));
    hccn_sim_key_t join = {9, 0, UINT64_MAX};
    assert_null(hccn_sim_post_hinted(eng, 0, NULL, 2, ring_deps, NULL, join,
                                     8, 1, &hint[0], 0));
    hccn_sim_engine_destroy(eng);
    hccn_sim_topo_free(topo);
}

/* Recording switched off (as for the last call of a timing-only run):
 * calls posted then are not recorded, but may be replayed from a recording
 * made before. Off for calls 0 and 1 (nothing to replay), on for 2 (now
 * recorded) and 3 (replayed), off for 4 and 5 (replayed from call 2's
 * recording). The times are those of an engine that was promised nothing:
 * bit for bit where nothing was replayed. */
static void test_recording_off(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    int all[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    const int *sole[] = {all, all, all, all, all, all};
    const int on[] = {0, 0, 1, 1, 0, 0};
    const double calls[] = {1, 1, 1, 1, 1, 1};
    run_t r[2];
    run_pair(r, topo, ring_call, calls, 6, sole, on);
    /* Calls 0-2 simulated (bit for bit), 3-5 replayed. */
    ends_agree(r, 6, 3);
    assert_int_equal(hccn_sim_engine_replays(r[0].eng), 3);
    for (int k = 0; k < 2; k++)
        run_free(&r[k]);
    hccn_sim_topo_free(topo);
}

/* Posts with hints, as the runtime does: a hint per call size and device,
 * kept across calls. Sizes 1 1 2 2 1 1: calls 1, 3, 4 and 5 are replayed;
 * call 4's hint predates the recording of size 2 (it is looked up again),
 * call 5's stands. The times are those of the same calls posted without
 * hints, bit for bit. A reset drops the recordings: the hints kept from the
 * first run must not stand in the second, which records anew and gives the
 * same bits. A hint that stands is taken without comparing the tasks: a
 * caller that breaks its promise (size 2's tasks with size 1's hint) gets
 * the recording of size 1. */
static void test_hinted(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    double lat = star_lat(topo);
    const double calls[] = {1, 1, 2, 2, 1, 1};
    int sole[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    hccn_sim_replay_hint_t hints[3][NDEV_MAX];
    memset(hints, 0, sizeof(hints));
    run_t r[2];
    for (int k = 0; k < 2; k++)
        run_init(&r[k], topo);
    for (int again = 0; again < 2; again++) {
        for (int k = 0; k < 2; k++) {
            if (again)
                run_again(&r[k]);
            for (int i = 0; i < 6; i++) {
                r[k].hint = k == 0 ? hints[(int)calls[i]] : NULL;
                post_call(&r[k], ring_call, calls[i], sole);
            }
            read_calls(&r[k]);
            assert_int_equal(hccn_sim_engine_replays(r[k].eng),
                             4 * (again + 1));
        }
        for (int i = 0; i < 6; i++)
            for (int d = 0; d < r[0].ndev; d++)
                if (r[0].end[i][d] != r[1].end[i][d])
                    fail_msg("run %d, call %d, NPU %d: %.17g s hinted, "
                             "%.17g s not", again, i, d, r[0].end[i][d],
                             r[1].end[i][d]);
    }
    /* The broken promise: size 1's hints (standing) with size 2's tasks. */
    run_t *x = &r[0];
    double t = x->end[5][0];
    x->hint = hints[1];
    post_call(x, ring_call, 2, sole);
    hccn_sim_finish_all(x->eng);
    assert_int_equal(hccn_sim_engine_replays(x->eng), 9);
    assert_near(hccn_sim_batch_end(x->b[6][0]), t + NB / 1e9 + lat + RING_COST,
                "end (size 1's)", 6, 0);
    for (int k = 0; k < 2; k++)
        run_free(&r[k]);
    hccn_sim_topo_free(topo);
}

/* A large call is recorded and replayed like a small one: K = 4100 rounds
 * of the ring shift (8 x 2K = 65 600 tasks), each round's send after the
 * previous round's receive, so each round takes 1 kB / B + 2 hops + c
 * alone on its links. */
#define BIG_K 4100
static void test_large_call(void **state)
{
    (void)state;
    hccn_sim_topo_t *topo = load(star8);
    double lat = star_lat(topo);
    const double nb = 1e3, span = BIG_K * (nb / 1e9 + lat + RING_COST);
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    assert_non_null(eng);
    hccn_sim_engine_set_lean(eng, 1);
    hccn_sim_task_t *t = malloc(2 * BIG_K * sizeof(*t));
    uint32_t *deps = malloc(BIG_K * sizeof(*deps));
    assert_true(t != NULL && deps != NULL);
    for (int k = 1; k < BIG_K; k++)
        deps[k] = (uint32_t)(2 * k - 1);    /* the previous receive */
    hccn_sim_batch_t *tail[NDEV_MAX] = {NULL};
    int devs[NDEV_MAX];
    const long want[] = {0, 1, 2, 3};
    double start = 0.0;
    for (int i = 0; i < 4; i++) {
        for (int d = 0; d < 8; d++) {
            int next = (d + 1) % 8, prev = (d + 7) % 8;
            for (int k = 0; k < BIG_K; k++) {
                t[2 * k] = (hccn_sim_task_t){
                    .kind = HCCN_SIM_TASK_SEND, .peer = next,
                    .bytes = (uint64_t)nb,
                    .key = {9, (uint64_t)i, (uint64_t)(d * BIG_K + k)},
                    .dep_off = (uint32_t)k, .ndeps = k > 0};
                t[2 * k + 1] = (hccn_sim_task_t){
                    .kind = HCCN_SIM_TASK_RECV, .peer = prev,
                    .bytes = (uint64_t)nb, .cost = RING_COST,
                    .key = {9, (uint64_t)i, (uint64_t)(prev * BIG_K + k)}};
            }
            hccn_sim_key_t join = {9, (uint64_t)i, UINT64_MAX};
            hccn_sim_batch_t *b = hccn_sim_post_joined(
                eng, d, t, 2 * BIG_K, deps, tail[d], join, 8, 1);
            assert_non_null(b);
            hccn_sim_batch_release(eng, tail[d]);
            tail[d] = b;
            devs[d] = d;
        }
        hccn_sim_wait_begin_many(eng, devs, tail, 8);
        for (int d = 0; d < 8; d++) {
            assert_true(hccn_sim_batch_done(eng, tail[d]));
            assert_near(hccn_sim_batch_start(tail[d]), start, "start", i, d);
            assert_near(hccn_sim_batch_end(tail[d]), start + span, "end", i,
                        d);
            hccn_sim_wait_finish(eng, d, tail[d]);
        }
        start += span;
        assert_int_equal(hccn_sim_engine_replays(eng), want[i]);
    }
    for (int d = 0; d < 8; d++)
        hccn_sim_batch_release(eng, tail[d]);
    free(t);
    free(deps);
    hccn_sim_engine_destroy(eng);
    hccn_sim_topo_free(topo);
}

/* The hosts' time per message (software.h, LogGP's o): a replayed ring
 * shift ends as the simulated one, o_s + u + 2 hops + o_r + c after its
 * start, and leaves each host where the simulation does (the next call's
 * sends are issued no sooner): five calls, four replayed. */
static void test_host_messages(void **state)
{
    (void)state;
    static const char *const star8_o =
        "{\"version\": 1, \"node_types\": [{\"count\": 1,"
        " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"
        " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 1, \"lat_us\": 1}}],"
        " \"software\": {\"send_overhead_us\": 0.25,"
        " \"recv_overhead_us\": 0.75}}";
    hccn_sim_topo_t *topo = load(star8_o);
    const double span = 0.25e-6 + NB / 1e9 + star_lat(topo) + 0.75e-6 +
                        RING_COST;
    const double calls[] = {1, 1, 1, 1, 1};
    int sole[NDEV_MAX] = {1, 1, 1, 1, 1, 1, 1, 1};
    run_t r[2];
    const int *promises[NCALLS];
    for (int i = 0; i < 5; i++)
        promises[i] = sole;
    run_pair(r, topo, ring_call, calls, 5, promises, NULL);
    ends_agree(r, 5, 0);
    for (int i = 0; i < 5; i++)
        for (int d = 0; d < r[0].ndev; d++)
            assert_near(r[1].end[i][d], (i + 1) * span, "end", i, d);
    assert_int_equal(hccn_sim_engine_replays(r[0].eng), 4);
    run_free(&r[0]);
    run_free(&r[1]);
    hccn_sim_topo_free(topo);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_replayed),
        cmocka_unit_test(test_changed_call),
        cmocka_unit_test(test_not_replayed),
        cmocka_unit_test(test_hollow_built),
        cmocka_unit_test(test_engine_not_quiet),
        cmocka_unit_test(test_large_call),
        cmocka_unit_test(test_hinted),
        cmocka_unit_test(test_recording_off),
        cmocka_unit_test(test_hint_without_tasks),
        cmocka_unit_test(test_host_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
