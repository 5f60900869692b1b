/*
 * Link sharing in the timing engine (device_sim/flow.c), checked against
 * max-min fair rates worked out by hand: transfers that start at different
 * times and share links, rates that rise and fall while a transfer is in
 * flight, transfers that drain at the same instant, a flow whose rate a
 * refill leaves as it was, drains in an order unrelated to the posting
 * order, a transfer shorter than the clock's step, and the per-link bytes
 * and busy time; and the horizon that holds
 * events back while a device could still post before them.
 *
 * One node of 8 NPUs behind a switch: every NPU has an uplink and a
 * downlink of B = 1 GB/s, so a transfer a->b crosses up(a) and down(b).
 * Sizes are multiples of b = 1 MB, times multiples of u = b / B = 1 ms.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "device_sim/engine.h"

#define NB 1000000.0            /* b, bytes */

static const char *const star8 =
    "{\"version\": 1, \"node_types\": [{\"count\": 1,"
    " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"
    " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 1, \"lat_us\": 1}}]}";

typedef struct {
    hccn_sim_topo_t *topo;
    hccn_sim_engine_t *eng;
    double u;                   /* b / B, seconds */
} fixture_t;

static void setup(fixture_t *fx)
{
    char err[512];
    fx->topo = NULL;
    if (hccn_sim_topo_load_string(star8, "star8", &fx->topo, err,
                                  sizeof(err)) != 0)
        fail_msg("%s", err);
    fx->eng = hccn_sim_engine_create(fx->topo, 0.0);
    assert_non_null(fx->eng);
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_int_equal(hccn_sim_topo_route(fx->topo, 0, 1, links, &lat), 2);
    assert_true(fx->topo->links[links[0]].bw == 1e9);
    assert_true(fx->topo->links[links[1]].bw == 1e9);
    fx->u = NB / 1e9;
}

static void teardown(fixture_t *fx)
{
    hccn_sim_engine_destroy(fx->eng);
    hccn_sim_topo_free(fx->topo);
}

/* The route a->b: its uplink, downlink and latency. */
static double route(const fixture_t *fx, int a, int b, int *up, int *down)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    assert_int_equal(hccn_sim_topo_route(fx->topo, a, b, links, &lat), 2);
    if (up != NULL)
        *up = links[0];
    if (down != NULL)
        *down = links[1];
    return lat;
}

static hccn_sim_task_t xfer(hccn_sim_task_kind_t kind, int peer, double nb,
                            uint64_t id, double cost)
{
    return (hccn_sim_task_t){.kind = kind, .peer = peer,
                             .bytes = (uint64_t)(nb * NB), .cost = cost,
                             .key = {1, 0, id}};
}

static hccn_sim_task_t local(double cost)
{
    return (hccn_sim_task_t){.kind = HCCN_SIM_TASK_LOCAL, .cost = cost};
}

static void assert_time(double got, double want, const char *what)
{
    if (!(fabs(got - want) <= 1e-12 * fabs(want)))
        fail_msg("%s: %.17g s, want %.17g s", what, got, want);
}

static void assert_link(const fixture_t *fx, int l, double nb, double busy,
                        const char *what)
{
    double bytes, b;
    hccn_sim_link_stats(fx->eng, l, &bytes, &b);
    if (bytes != nb * NB)
        fail_msg("%s: %.17g bytes, want %.17g", what, bytes, nb * NB);
    assert_time(b, busy, what);
}

/*
 *   A  0->1  4b  from 0      B  0->2  1b  from 0      E  3->2  3b  from 0
 *   D  2->3  5b  from 1u     C  3->1  2b  from 3u
 *
 * [0,2u)  A, B share up(0) and B, E share down(2): all at B/2.
 *         B drains at 2u; A has 3b left, E 2b.
 * [2u,3u) A and E run alone at B (their rates rise).
 * 3u      C starts: up(3) carries E and C, down(1) A and C: all at B/2
 *         (A's and E's rates fall); A has 2b left, E 1b, C 2b.
 * 5u      E drains; A and C still share down(1) at B/2 each, 1b left.
 * 7u      A and C drain at the same instant.
 * D is alone on up(2) and down(3) from 1u: drains at 6u.
 *
 * Both of NPU 1's receives take c of local work after arriving, first come
 * first served: A's (task 0) before C's (task 1).
 */
static void test_staggered_starts(void **state)
{
    (void)state;
    fixture_t fx;
    setup(&fx);
    double u = fx.u, c = 0.1 * u;
    hccn_sim_task_t t0[] = {xfer(HCCN_SIM_TASK_SEND, 1, 4, 'A', 0),
                            xfer(HCCN_SIM_TASK_SEND, 2, 1, 'B', 0)};
    hccn_sim_task_t t1[] = {xfer(HCCN_SIM_TASK_RECV, 0, 4, 'A', c),
                            xfer(HCCN_SIM_TASK_RECV, 3, 2, 'C', c)};
    hccn_sim_task_t t2[] = {xfer(HCCN_SIM_TASK_RECV, 0, 1, 'B', 0),
                            local(u),
                            xfer(HCCN_SIM_TASK_SEND, 3, 5, 'D', 0),
                            xfer(HCCN_SIM_TASK_RECV, 3, 3, 'E', 0)};
    hccn_sim_task_t t3[] = {xfer(HCCN_SIM_TASK_SEND, 2, 3, 'E', 0),
                            local(3 * u),
                            xfer(HCCN_SIM_TASK_SEND, 1, 2, 'C', 0),
                            xfer(HCCN_SIM_TASK_RECV, 2, 5, 'D', 0)};
    uint32_t deps[] = {1};
    t2[2].dep_off = 0;
    t2[2].ndeps = 1;
    t3[2].dep_off = 0;
    t3[2].ndeps = 1;
    hccn_sim_batch_t *b0 = hccn_sim_post(fx.eng, 0, t0, 2, NULL, NULL);
    hccn_sim_batch_t *b1 = hccn_sim_post(fx.eng, 1, t1, 2, NULL, NULL);
    hccn_sim_batch_t *b2 = hccn_sim_post(fx.eng, 2, t2, 4, deps, NULL);
    hccn_sim_batch_t *b3 = hccn_sim_post(fx.eng, 3, t3, 4, deps, NULL);
    assert_true(b0 && b1 && b2 && b3);
    hccn_sim_finish_all(fx.eng);
    assert_true(hccn_sim_batch_done(fx.eng, b0) &&
                hccn_sim_batch_done(fx.eng, b1) &&
                hccn_sim_batch_done(fx.eng, b2) &&
                hccn_sim_batch_done(fx.eng, b3));

    int up0, down1, up2, down2, up3, down3;
    double lat = route(&fx, 0, 1, &up0, &down1);
    route(&fx, 2, 3, &up2, &down3);
    route(&fx, 3, 2, &up3, &down2);
    assert_time(hccn_sim_task_end(b0, 0), 7 * u, "A drained");
    assert_time(hccn_sim_task_end(b0, 1), 2 * u, "B drained");
    assert_time(hccn_sim_task_end(b3, 0), 5 * u, "E drained");
    assert_time(hccn_sim_task_begin(b2, 2), 1 * u, "D began");
    assert_time(hccn_sim_task_end(b2, 2), 6 * u, "D drained");
    assert_time(hccn_sim_task_begin(b3, 2), 3 * u, "C began");
    assert_time(hccn_sim_task_end(b3, 2), 7 * u, "C drained");
    assert_time(hccn_sim_task_end(b2, 0), 2 * u + lat, "B arrived");
    assert_time(hccn_sim_task_end(b2, 3), 5 * u + lat, "E arrived");
    assert_time(hccn_sim_task_end(b3, 3), 6 * u + lat, "D arrived");
    assert_time(hccn_sim_task_end(b1, 0), 7 * u + lat + c, "A reduced");
    assert_time(hccn_sim_task_end(b1, 1), 7 * u + lat + 2 * c, "C reduced");

    assert_link(&fx, up0, 5, 7 * u, "up(0): A, B");
    assert_link(&fx, down1, 6, 7 * u, "down(1): A, C");
    assert_link(&fx, down2, 4, 5 * u, "down(2): B, E");
    assert_link(&fx, up3, 5, 7 * u, "up(3): E, C");
    assert_link(&fx, up2, 5, 5 * u, "up(2): D");
    assert_link(&fx, down3, 5, 5 * u, "down(3): D");
    teardown(&fx);
}

/* Seven NPUs send to NPU 0 at once, sizes 1b..7b in scrambled order. They
 * share down(0): k flows get B/k each, so the flow of size m b drains at
 * u (7 + 6 + ... + (8 - m)): 7, 13, 18, 22, 25, 27, 28 u. Every drain
 * raises the rate of all the others. */
static void test_drain_order(void **state)
{
    (void)state;
    static const int size[8] = {0, 5, 2, 7, 1, 6, 3, 4};
    fixture_t fx;
    setup(&fx);
    double u = fx.u;
    hccn_sim_task_t recv[7];
    hccn_sim_batch_t *b[8];
    for (int d = 1; d <= 7; d++) {
        hccn_sim_task_t t = xfer(HCCN_SIM_TASK_SEND, 0, size[d],
                                 (uint64_t)d, 0);
        recv[d - 1] = xfer(HCCN_SIM_TASK_RECV, d, size[d], (uint64_t)d, 0);
        b[d] = hccn_sim_post(fx.eng, d, &t, 1, NULL, NULL);
        assert_non_null(b[d]);
    }
    b[0] = hccn_sim_post(fx.eng, 0, recv, 7, NULL, NULL);
    assert_non_null(b[0]);
    hccn_sim_finish_all(fx.eng);

    double lat = route(&fx, 1, 0, NULL, NULL);
    for (int d = 1; d <= 7; d++) {
        double want = 0.0;
        for (int j = 1; j <= size[d]; j++)
            want += (8 - j) * u;
        char what[64];
        snprintf(what, sizeof(what), "%db from NPU %d drained", size[d], d);
        assert_time(hccn_sim_task_end(b[d], 0), want, what);
        snprintf(what, sizeof(what), "%db from NPU %d arrived", size[d], d);
        assert_time(hccn_sim_task_end(b[0], d - 1), want + lat, what);
    }
    int down0;
    route(&fx, 1, 0, NULL, &down0);
    assert_link(&fx, down0, 28, 28 * u, "down(0)");
    teardown(&fx);
}

/* A transfer whose bytes take less than the clock's least step at its
 * rate drains one step after it starts, never at the instant it starts
 * (device_sim/flow.c, drain_time): at t0 = 2^24 s a step is 2^-28 s
 * (3.7 ns), and 1 byte at 1 GB/s takes 1 ns, which t0 + 1 ns rounds
 * away. */
static void test_drain_after_start(void **state)
{
    (void)state;
    fixture_t fx;
    setup(&fx);
    const double t0 = 16777216.0;
    assert_true(t0 + 1e-9 == t0);
    hccn_sim_task_t s[] = {local(t0), xfer(HCCN_SIM_TASK_SEND, 1, 0, 'S', 0)};
    hccn_sim_task_t r[] = {local(t0), xfer(HCCN_SIM_TASK_RECV, 0, 0, 'S', 0)};
    s[1].bytes = r[1].bytes = 1;
    uint32_t deps[] = {0};
    s[1].ndeps = r[1].ndeps = 1;
    hccn_sim_batch_t *b0 = hccn_sim_post(fx.eng, 0, s, 2, deps, NULL);
    hccn_sim_batch_t *b1 = hccn_sim_post(fx.eng, 1, r, 2, deps, NULL);
    assert_true(b0 && b1);
    hccn_sim_finish_all(fx.eng);
    assert_true(hccn_sim_batch_done(fx.eng, b0) &&
                hccn_sim_batch_done(fx.eng, b1));
    double lat = route(&fx, 0, 1, NULL, NULL);
    const double step = nextafter(t0, INFINITY);
    if (!(hccn_sim_task_begin(b0, 1) == t0) ||
        !(hccn_sim_task_end(b0, 1) == step) ||
        !(hccn_sim_task_end(b1, 1) == step + lat))
        fail_msg("1 byte from %.17g s: began %.17g, drained %.17g, "
                 "arrived %.17g s; want %.17g, %.17g, %.17g s", t0,
                 hccn_sim_task_begin(b0, 1), hccn_sim_task_end(b0, 1),
                 hccn_sim_task_end(b1, 1), t0, step, step + lat);
    teardown(&fx);
}

/* Runs twice on one engine: a reset forgets the flows, the link totals and
 * the fluid time, and the second run gives the same times. */
static void test_reset_repeats(void **state)
{
    (void)state;
    fixture_t fx;
    setup(&fx);
    double u = fx.u, end[2][2];
    for (int run = 0; run < 2; run++) {
        hccn_sim_engine_reset(fx.eng);
        hccn_sim_task_t s[] = {xfer(HCCN_SIM_TASK_SEND, 1, 1, 1, 0),
                               xfer(HCCN_SIM_TASK_SEND, 2, 3, 2, 0)};
        hccn_sim_task_t r1 = xfer(HCCN_SIM_TASK_RECV, 0, 1, 1, 0);
        hccn_sim_task_t r2 = xfer(HCCN_SIM_TASK_RECV, 0, 3, 2, 0);
        hccn_sim_batch_t *b0 = hccn_sim_post(fx.eng, 0, s, 2, NULL, NULL);
        hccn_sim_batch_t *b1 = hccn_sim_post(fx.eng, 1, &r1, 1, NULL, NULL);
        hccn_sim_batch_t *b2 = hccn_sim_post(fx.eng, 2, &r2, 1, NULL, NULL);
        assert_true(b0 && b1 && b2);
        hccn_sim_finish_all(fx.eng);
        end[run][0] = hccn_sim_task_end(b0, 0);
        end[run][1] = hccn_sim_task_end(b0, 1);
        /* 1b and 3b share up(0) at B/2 until 2u, then 2b alone at B. */
        assert_time(end[run][0], 2 * u, "1b drained");
        assert_time(end[run][1], 4 * u, "3b drained");
        int up0;
        route(&fx, 0, 1, &up0, NULL);
        assert_link(&fx, up0, 4, 4 * u, "up(0)");
    }
    assert_true(end[0][0] == end[1][0] && end[0][1] == end[1][1]);
    teardown(&fx);
}

/* The horizon (the least clock of a running device) as devices move
 * their clocks and finish in an order unrelated to their numbers. NPU 0
 * works until 100u; a device's question "is that done by my clock?" has
 * the answer no only when no running device is behind it (ties included),
 * else it cannot be answered yet, so the horizon the engine keeps must be
 * the least clock this test computes on its own. Even steps finish the
 * device at the horizon, odd steps move it past the others. */
static void test_horizon(void **state)
{
    (void)state;
    static const double start[8] = {3, 5, 2, 7, 1, 6, 2, 4};
    fixture_t fx;
    setup(&fx);
    double u = fx.u, clock[8];
    int done[8] = {0};
    hccn_sim_task_t w = local(100 * u);
    hccn_sim_batch_t *b = hccn_sim_post(fx.eng, 0, &w, 1, NULL, NULL);
    assert_non_null(b);
    for (int d = 0; d < 8; d++) {
        clock[d] = start[d] * u;
        hccn_sim_advance(fx.eng, d, clock[d]);
        assert_true(hccn_sim_clock(fx.eng, d) == clock[d]);
    }
    for (int step = 0;; step++) {
        double h = INFINITY;
        for (int d = 0; d < 8; d++)
            if (!done[d] && clock[d] < h)
                h = clock[d];
        if (isinf(h))
            break;
        int first = -1;
        for (int d = 0; d < 8; d++) {
            if (done[d])
                continue;
            int want = clock[d] <= h ? 0 : -1;
            if (hccn_sim_test_try(fx.eng, d, b) != want)
                fail_msg("step %d: NPU %d at %g u, horizon %g u: answer "
                         "should be %d", step, d, clock[d] / u, h / u, want);
            if (want == 0 && first < 0)
                first = d;
        }
        if (step % 2 == 0 || step > 12) {
            hccn_sim_finish(fx.eng, first);
            done[first] = 1;
        } else {
            hccn_sim_advance(fx.eng, first, 4.5 * u);
            clock[first] += 4.5 * u;
        }
    }
    assert_true(hccn_sim_batch_done(fx.eng, b));
    assert_time(hccn_sim_batch_end(b), 100 * u, "local work");
    teardown(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_staggered_starts),
        cmocka_unit_test(test_drain_order),
        cmocka_unit_test(test_drain_after_start),
        cmocka_unit_test(test_reset_repeats),
        cmocka_unit_test(test_horizon),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
