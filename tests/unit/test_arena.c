/* Device-memory arenas: allocation patterns, exhaustion, freeing, foreign
 * pointers — through the public API on a small cluster. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device_sim/arena.h"
#include "device_sim/launch.h"
#include "hccn/hccn.h"

#define MIB (1024u * 1024u)

static void test_align_and_reuse(void **state)
{
    (void)state;
    hccn_sim_arena_t a;
    assert_int_equal(hccn_sim_arena_init(&a, 1 * MIB), HCCN_OK);
    void *p[10];
    for (int i = 0; i < 10; i++) {
        assert_int_equal(hccn_sim_arena_alloc(&a, (size_t)(i * 100 + 1), &p[i]),
                         HCCN_OK);
        assert_int_equal((uintptr_t)p[i] % 256, 0);
        memset(p[i], i, (size_t)(i * 100 + 1));
    }
    /* Distinct, non-overlapping, in order (first fit on a fresh arena). */
    for (int i = 1; i < 10; i++)
        assert_true((char *)p[i] >= (char *)p[i - 1] + (i - 1) * 100 + 1);
    for (int i = 0; i < 10; i++)
        assert_int_equal(((unsigned char *)p[i])[0], (unsigned char)i);

    hccn_mem_info_t info;
    hccn_sim_arena_info(&a, &info);
    assert_int_equal(info.allocations, 10);
    /* Sizes round up to 256: 1..901 bytes -> 1,1,1,2,2,2,3,3,4,4 blocks. */
    assert_int_equal(info.used, 23 * 256);

    /* Free every other one, then everything: the arena merges back. */
    for (int i = 0; i < 10; i += 2)
        assert_int_equal(hccn_sim_arena_free(&a, p[i]), HCCN_OK);
    assert_int_equal(hccn_sim_arena_free(&a, p[0]), HCCN_ERR_INVALID);
    for (int i = 1; i < 10; i += 2)
        assert_int_equal(hccn_sim_arena_free(&a, p[i]), HCCN_OK);
    hccn_sim_arena_info(&a, &info);
    assert_int_equal(info.used, 0);
    assert_int_equal(info.largest_free, 1 * MIB);
    hccn_sim_arena_fini(&a);
}

static void test_exhaustion(void **state)
{
    (void)state;
    hccn_sim_arena_t a;
    assert_int_equal(hccn_sim_arena_init(&a, 64 * 1024), HCCN_OK);
    void *p[256];
    int n = 0;
    while (hccn_sim_arena_alloc(&a, 1000, &p[n]) == HCCN_OK)
        n++;
    assert_int_equal(n, 64 * 1024 / 1024); /* 1000 -> 1024 bytes each */
    void *q = NULL;
    assert_int_equal(hccn_sim_arena_alloc(&a, 1, &q), HCCN_ERR_NOMEM);
    assert_null(q);
    /* Free one in the middle: exactly that hole is reused. */
    assert_int_equal(hccn_sim_arena_free(&a, p[7]), HCCN_OK);
    assert_int_equal(hccn_sim_arena_alloc(&a, 2000, &q), HCCN_ERR_NOMEM);
    assert_int_equal(hccn_sim_arena_alloc(&a, 1024, &q), HCCN_OK);
    assert_ptr_equal(q, p[7]);
    /* Larger than the arena. */
    assert_int_equal(hccn_sim_arena_alloc(&a, SIZE_MAX, &q), HCCN_ERR_NOMEM);
    hccn_sim_arena_fini(&a);
}

static void test_owns_and_contains(void **state)
{
    (void)state;
    hccn_sim_arena_t a;
    assert_int_equal(hccn_sim_arena_init(&a, 1 * MIB), HCCN_OK);
    void *p;
    assert_int_equal(hccn_sim_arena_alloc(&a, 1000, &p), HCCN_OK);
    assert_true(hccn_sim_arena_owns(&a, p, 1000));
    assert_true(hccn_sim_arena_owns(&a, (char *)p + 10, 990));
    assert_true(hccn_sim_arena_owns(&a, p, 1024)); /* rounded size */
    assert_false(hccn_sim_arena_owns(&a, p, 1025));
    assert_true(hccn_sim_arena_contains(&a, p, 1 * MIB));
    assert_false(hccn_sim_arena_contains(&a, p, 1 * MIB + 1));
    int local = 0;
    assert_false(hccn_sim_arena_contains(&a, &local, 1));
    assert_int_equal(hccn_sim_arena_free(&a, &local), HCCN_ERR_INVALID);
    assert_int_equal(hccn_sim_arena_free(&a, (char *)p + 256), HCCN_ERR_INVALID);
    hccn_sim_arena_fini(&a);
}

/* Through the public API: pointers map to (rank, offset); foreign ones are
 * rejected by hccn_free and by hccn_ptr_info. */
typedef struct {
    void *ptr[4];
    hccn_status_t free_foreign[4];
    hccn_status_t alloc_huge[4];
    hccn_status_t too_small[4];
    char msg[4][512];
} api_result_t;

static api_result_t api_res;

static hccn_status_t api_rank(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    int r = hccn_rank(ctx);
    hccn_status_t rc = hccn_malloc(ctx, 4096, &api_res.ptr[r]);
    if (rc != HCCN_OK)
        return rc;
    memset(api_res.ptr[r], r, 4096);
    hccn_barrier(hccn_comm_world(ctx));
    /* Freeing the next rank's pointer is an error and changes nothing. */
    api_res.free_foreign[r] = hccn_free(ctx, api_res.ptr[(r + 1) % 4]);
    void *huge;
    api_res.alloc_huge[r] = hccn_malloc(ctx, (size_t)1 << 40, &huge);
    /* 4096 bytes hold 1024 floats: 2000 run past the allocation, even
     * though the arena goes on. */
    api_res.too_small[r] = hccn_allreduce(hccn_comm_world(ctx), api_res.ptr[r],
                                          api_res.ptr[r], 2000, HCCN_FP32,
                                          HCCN_SUM);
    snprintf(api_res.msg[r], sizeof(api_res.msg[r]), "%s", hccn_last_error());
    hccn_barrier(hccn_comm_world(ctx));
    return hccn_free(ctx, api_res.ptr[r]);
}

static void test_public_api(void **state)
{
    (void)state;
    const char *json =
        "{\"version\":1,\"node_types\":[{\"count\":1,"
        "\"npu\":{\"count\":4,\"arena_MiB\":4,\"reduce_bw_GBps\":10},"
        "\"fabric\":{\"type\":\"switch\",\"bw_GBps\":10,\"lat_us\":1}}]}";
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create_json(json, "t", NULL, &cl), HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, api_rank, NULL, NULL), HCCN_OK);
    for (int r = 0; r < 4; r++) {
        int owner = -2;
        size_t off = 1;
        assert_int_equal(hccn_ptr_info(cl, api_res.ptr[r], &owner, &off),
                         HCCN_OK);
        assert_int_equal(owner, r);
        assert_int_equal(off, 0);
        assert_int_equal(hccn_ptr_info(cl, (char *)api_res.ptr[r] + 300,
                                       &owner, &off), HCCN_OK);
        assert_int_equal(off, 300);
        assert_int_equal(api_res.free_foreign[r], HCCN_ERR_INVALID);
        assert_int_equal(api_res.alloc_huge[r], HCCN_ERR_NOMEM);
        assert_int_equal(api_res.too_small[r], HCCN_ERR_INVALID);
        assert_non_null(strstr(api_res.msg[r], "needs 8000 bytes"));
        assert_non_null(strstr(api_res.msg[r], "4096 bytes"));
    }
    int stack = 0, owner = 5;
    assert_int_equal(hccn_ptr_info(cl, &stack, &owner, NULL), HCCN_ERR_INVALID);
    assert_int_equal(owner, -1);
    hccn_cluster_destroy(cl);
}

/* The NUMA decision: thread r runs on core r % ncores, its arena goes to
 * that core's node; nothing is chosen with one node or no cores. */
static void test_numa_pick(void **state)
{
    (void)state;
    int one[4] = {0, 0, 0, 0};
    for (int r = 0; r < 16; r++)
        assert_int_equal(hccn_sim_numa_pick(r, 4, one, 1), -1);
    assert_int_equal(hccn_sim_numa_pick(0, 0, one, 2), -1);
    /* Two sockets of two cores each: 0,1 on node 0; 2,3 on node 1. */
    int two[4] = {0, 0, 1, 1};
    int want[8] = {0, 0, 1, 1, 0, 0, 1, 1};
    for (int r = 0; r < 8; r++)
        assert_int_equal(hccn_sim_numa_pick(r, 4, two, 2), want[r]);
    /* Interleaved numbering, and a core that no node claims. */
    int odd[3] = {1, 0, -1};
    assert_int_equal(hccn_sim_numa_pick(0, 3, odd, 2), 1);
    assert_int_equal(hccn_sim_numa_pick(4, 3, odd, 2), 0);
    assert_int_equal(hccn_sim_numa_pick(5, 3, odd, 2), -1);
    assert_int_equal(hccn_sim_numa_pick(-1, 3, odd, 2), -1);
}

/* Placing arenas binds one per rank on a multi-node host, none on a
 * single-node one; either way the arenas keep working. */
static void test_numa_place(void **state)
{
    (void)state;
    hccn_sim_host_t host;
    hccn_sim_host_describe(&host);
    hccn_sim_arena_t a[4];
    for (int r = 0; r < 4; r++)
        assert_int_equal(hccn_sim_arena_init(&a[r], 4 * MIB), HCCN_OK);
    int bound = hccn_sim_arena_place(a, 4);
    if (host.numa_nodes <= 1)
        assert_int_equal(bound, 0);
    else
        assert_in_range(bound, 0, 4);
    for (int r = 0; r < 4; r++) {
        void *p;
        assert_int_equal(hccn_sim_arena_alloc(&a[r], MIB, &p), HCCN_OK);
        memset(p, r, MIB);
        hccn_sim_arena_fini(&a[r]);
    }
}

/* A cluster with bound threads (and, on a multi-node host, bound arenas)
 * allocates, checks and frees as an unbound one does. */
static void test_bound_cluster(void **state)
{
    (void)state;
    const char *json =
        "{\"version\":1,\"node_types\":[{\"count\":1,"
        "\"npu\":{\"count\":4,\"arena_MiB\":4,\"reduce_bw_GBps\":10},"
        "\"fabric\":{\"type\":\"switch\",\"bw_GBps\":10,\"lat_us\":1}}]}";
    hccn_cluster_opts_t opts = {.struct_size = sizeof(opts), .bind_threads = 1};
    hccn_cluster_t *cl;
    assert_int_equal(hccn_cluster_create_json(json, "t", &opts, &cl), HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, api_rank, NULL, NULL), HCCN_OK);
    for (int r = 0; r < 4; r++) {
        assert_int_equal(api_res.free_foreign[r], HCCN_ERR_INVALID);
        assert_int_equal(api_res.too_small[r], HCCN_ERR_INVALID);
    }
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_align_and_reuse),
        cmocka_unit_test(test_exhaustion),
        cmocka_unit_test(test_owns_and_contains),
        cmocka_unit_test(test_public_api),
        cmocka_unit_test(test_numa_pick),
        cmocka_unit_test(test_numa_place),
        cmocka_unit_test(test_bound_cluster),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
