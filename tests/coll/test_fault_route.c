/* Routing around a downed link through a relay NPU: in a mesh (0 -> 1
 * down goes 0 -> 2 -> 1, or 0 -> 3 -> 1 when 0 -> 2 is down too) and
 * between nodes through another NPU's NIC (another rail). Times against
 * the closed form from the topology's own routes: the two legs'
 * latencies plus the relay's, plus the bytes at the slowest link's
 * bandwidth; bytes exact, and the relay's links carry them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"
#include "test_util.h"

#define NBYTES (1 << 20)

static const char *quad =
    "{\"version\":1,\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":4,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":10,\"lat_us\":2}}]}";

/* Two nodes of two NPUs, a NIC per NPU (a rail each). */
static const char *rails =
    "{\"version\":1,\"node_types\":[{\"count\":2,"
    "\"npu\":{\"count\":2,\"arena_MiB\":16,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":40,\"lat_us\":1.5},"
    "\"nics\":{\"count\":2,\"bw_GBps\":25,\"lat_us\":2,"
    "\"attach_bw_GBps\":32}}],"
    "\"network\":{\"type\":\"switch\",\"lat_us\":1}}";

typedef struct {
    int src, dst;
    double t;                 /* the receiver's clock after the receive */
    hccn_status_t rc[2];
    int exact;
} xfer_t;

static hccn_status_t xfer_rank(hccn_ctx_t *ctx, void *arg)
{
    xfer_t *x = arg;
    int me = hccn_rank(ctx);
    if (me != x->src && me != x->dst)
        return HCCN_OK;
    unsigned char *b;
    assert_int_equal(hccn_malloc(ctx, NBYTES, (void **)&b), HCCN_OK);
    hccn_comm_t *w = hccn_comm_world(ctx);
    if (me == x->src) {
        for (int i = 0; i < NBYTES; i++)
            b[i] = (unsigned char)(i * 7 + 3);
        x->rc[0] = hccn_send(w, b, NBYTES, HCCN_UINT8, x->dst);
    } else {
        memset(b, 0, NBYTES);
        x->rc[1] = hccn_recv(w, b, NBYTES, HCCN_UINT8, x->src);
        x->t = hccn_time(ctx);
        x->exact = 1;
        for (int i = 0; i < NBYTES; i++)
            x->exact &= b[i] == (unsigned char)(i * 7 + 3);
    }
    hccn_free(ctx, b);
    return HCCN_OK;
}

/* The index of the link named name. */
static int link_of(const hccn_topo_t *t, const char *name)
{
    for (int l = 0; l < hccn_topo_links(t); l++) {
        hccn_link_info_t li = {.struct_size = sizeof(li)};
        hccn_topo_link(t, l, &li);
        if (strcmp(li.name, name) == 0)
            return l;
    }
    fail_msg("no link %s", name);
    return -1;
}

/* Latency of the route a -> b, and the slowest bandwidth on it into *bw. */
static double leg(const hccn_topo_t *t, int a, int b, double *bw)
{
    int links[HCCN_ROUTE_MAX], n;
    double lat;
    assert_int_equal(hccn_topo_route(t, a, b, links, &n, &lat), HCCN_OK);
    for (int k = 0; k < n; k++) {
        hccn_link_info_t li = {.struct_size = sizeof(li)};
        hccn_topo_link(t, links[k], &li);
        *bw = fmin(*bw, li.bw_Bps);
    }
    return lat;
}

/* The closed form of a transfer from src to dst relayed by k. */
static double relayed(const hccn_topo_t *t, int src, int k, int dst)
{
    double bw = INFINITY;
    hccn_device_info_t di = {.struct_size = sizeof(di)};
    assert_int_equal(hccn_topo_device(t, k, &di), HCCN_OK);
    double lat = leg(t, src, k, &bw) + di.lat_s + leg(t, k, dst, &bw);
    return lat + NBYTES / bw;
}

static void down(hccn_cluster_t *cl, const char *link)
{
    hccn_fault_t f = {sizeof(f), HCCN_FAULT_LINK_DOWN, link, 0, 0.0, 1.0};
    assert_int_equal(hccn_cluster_add_fault(cl, &f), HCCN_OK);
}

static void run_xfer(hccn_cluster_t *cl, xfer_t *x, double want)
{
    assert_int_equal(hccn_cluster_run(cl, xfer_rank, x, NULL), HCCN_OK);
    assert_int_equal(x->rc[0], HCCN_OK);
    assert_int_equal(x->rc[1], HCCN_OK);
    assert_true(x->exact);
    if (!(test_rel_diff(x->t, want) < 1e-12))
        fail_msg("%.9f us, expected %.9f us", x->t * 1e6, want * 1e6);
}

static double carried(hccn_cluster_t *cl, const char *name)
{
    hccn_link_stats_t st = {.struct_size = sizeof(st)};
    int l = link_of(hccn_cluster_topo(cl), name);
    assert_int_equal(hccn_cluster_link_stats(cl, l, &st), HCCN_OK);
    return st.bytes;
}

static void test_mesh_relay(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(quad, "quad", NULL, &cl), HCCN_OK);
    const hccn_topo_t *t = hccn_cluster_topo(cl);
    down(cl, "node0.npu0->node0.npu1");
    xfer_t x = {.src = 0, .dst = 1};
    /* 2 lat + n / B: 4 us + 104.8576 us. */
    run_xfer(cl, &x, relayed(t, 0, 2, 1));
    assert_true(fabs(x.t - (4e-6 + NBYTES / 10e9)) < 1e-15);
    assert_true(carried(cl, "node0.npu0->node0.npu2") == NBYTES);
    assert_true(carried(cl, "node0.npu2->node0.npu1") == NBYTES);

    /* The next relay by index when the first cannot be reached. */
    down(cl, "node0.npu0->node0.npu2");
    xfer_t y = {.src = 0, .dst = 1};
    run_xfer(cl, &y, relayed(t, 0, 3, 1));
    assert_true(carried(cl, "node0.npu0->node0.npu3") == NBYTES);
    assert_true(carried(cl, "node0.npu0->node0.npu2") == 0);
    hccn_cluster_destroy(cl);
}

static void test_rail_relay(void **state)
{
    (void)state;
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(rails, "rails", NULL, &cl),
                     HCCN_OK);
    const hccn_topo_t *t = hccn_cluster_topo(cl);
    double bw = INFINITY;
    double direct = leg(t, 0, 2, &bw) + NBYTES / bw;
    xfer_t x = {.src = 0, .dst = 2};
    run_xfer(cl, &x, direct);
    /* NPU 0's NIC attachment is down: the bytes cross the mesh to NPU 1,
     * leave through its NIC (rail 1) and take the network to NPU 2. */
    down(cl, "node0.npu0->node0.nic0");
    xfer_t y = {.src = 0, .dst = 2};
    run_xfer(cl, &y, relayed(t, 0, 1, 2));
    assert_true(y.t > direct);
    assert_true(carried(cl, "node0.npu0->node0.npu1") == NBYTES);
    assert_true(carried(cl, "node0.nic1->net") == NBYTES);
    assert_true(carried(cl, "node0.nic0->net") == 0);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mesh_relay),
        cmocka_unit_test(test_rail_relay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
