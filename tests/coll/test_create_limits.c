/* Cluster creation at and beyond its limits (docs/topology.md, "Limits"):
 * a cluster with data too large, arenas adding up to more than may be
 * mapped, a timing-only run too large, an arena that cannot be mapped
 * (an address-space limit) and threads that cannot be started. Each case
 * asserts the status and that the message names the file, the number and
 * the limit; none may crash, read freed memory or hang. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <cmocka.h>

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "runtime/predict.h"
#include "test_util.h"

/* Under AddressSanitizer an allocation the address-space limit refuses
 * returns NULL instead of ending the program: the library must cope. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1";
}

/* NODES nodes of NPN NPUs with arena_MiB each, on a switch network. */
static char *cluster_json(long nodes, int npn, long arena_mib)
{
    char *s = malloc(1024);
    assert_non_null(s);
    snprintf(s, 1024,
             "{\"version\": 1, \"node_types\": [{\"count\": %ld, "
             "\"npu\": {\"count\": %d, \"arena_MiB\": %ld, "
             "\"reduce_bw_GBps\": 100}%s, "
             "\"nics\": {\"count\": 1, \"bw_GBps\": 25, \"lat_us\": 1}}], "
             "\"network\": {\"type\": \"switch\", \"lat_us\": 1}}",
             nodes, npn, arena_mib,
             npn > 1 ? ", \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 50, "
                       "\"lat_us\": 1}" : "");
    return s;
}

static void expect_msg(const char *needle)
{
    const char *m = hccn_last_error();
    if (strstr(m, needle) == NULL)
        print_error("message [%s] lacks [%s]\n", m, needle);
    assert_non_null(strstr(m, needle));
}

static void test_too_many_npus(void **state)
{
    (void)state;
    hccn_cluster_t *cl = (hccn_cluster_t *)&cl;
    char *json = cluster_json(2049, 8, 1);      /* 16392 NPUs */
    assert_int_equal(hccn_cluster_create_json(json, "big.json", NULL, &cl),
                     HCCN_ERR_UNSUPPORTED);
    assert_null(cl);
    expect_msg("big.json: 16392 NPUs: a cluster with data holds at most 16384");
    free(json);
#if !defined(__SANITIZE_THREAD__)
    /* The limit itself is allowed (1 MiB arenas: 16 GiB reserved, not
     * committed). ThreadSanitizer maps shadow for each mapping and runs
     * out of mappings first: not there. */
    json = cluster_json(2048, 8, 1);
    assert_int_equal(hccn_cluster_create_json(json, "max.json", NULL, &cl),
                     HCCN_OK);
    assert_int_equal(hccn_cluster_size(cl), 16384);
    hccn_cluster_destroy(cl);
    free(json);
#endif
}

static void test_arenas_too_large(void **state)
{
    (void)state;
    hccn_cluster_t *cl = (hccn_cluster_t *)&cl;
    /* 65 NPUs of 1 TiB: 68157440 MiB, over the 64 TiB (67108864 MiB). */
    char *json = cluster_json(65, 1, 1048576);
    assert_int_equal(hccn_cluster_create_json(json, "huge.json", NULL, &cl),
                     HCCN_ERR_UNSUPPORTED);
    assert_null(cl);
    expect_msg("huge.json: the arenas of the 65 NPUs add up to 68157440 MiB, "
               "more than the 67108864 MiB");
    free(json);
}

static void test_timing_only_too_large(void **state)
{
    (void)state;
    char err[1024];
    hccn_sim_topo_t *t = NULL;
    char *json = cluster_json(16385, 8, 1);     /* 131080 NPUs */
    assert_int_equal(hccn_sim_topo_load_string(json, "wide.json", &t, err,
                                               sizeof(err)), HCCN_OK);
    hccn_rt_pcall_t call = {.coll = HCCN_COLL_ALLREDUCE, .count = 1,
                            .dtype = HCCN_FP32};
    double end = -1.0;
    assert_int_equal(hccn_rt_predict(t, &call, 1, &end), HCCN_ERR_UNSUPPORTED);
    expect_msg("wide.json: 131080 NPUs: timing-only runs take at most 131072");
    assert_true(end == -1.0);
    hccn_sim_topo_free(t);
    free(json);
}

/* The process's current address-space size, in bytes. */
static uint64_t vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    uint64_t kb = 0;
    assert_non_null(f);
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmSize: %lu kB", &kb) == 1)
            break;
    fclose(f);
    assert_true(kb > 0);
    return kb << 10;
}

/* Lowers the soft address-space limit to what is mapped now plus extra;
 * returns the old limits for limit_restore. */
static struct rlimit limit_as(uint64_t extra)
{
    struct rlimit old, now;
    assert_int_equal(getrlimit(RLIMIT_AS, &old), 0);
    now = old;
    now.rlim_cur = (rlim_t)(vm_size() + extra);
    assert_int_equal(setrlimit(RLIMIT_AS, &now), 0);
    return old;
}

static void limit_restore(const struct rlimit *old)
{
    assert_int_equal(setrlimit(RLIMIT_AS, old), 0);
}

static void test_arena_map_fails(void **state)
{
    (void)state;
#if defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer's allocator stops the program when the limit
     * refuses it memory (AddressSanitizer's returns NULL, above). */
    skip();
#endif
    /* 16 NPUs of 1 GiB with room for about 2.5 GiB: an arena cannot be
     * mapped. The error is written before anything is freed and names the
     * arena; the arenas mapped before it are unmapped (ASan: no read of
     * freed memory, LSan: no leak). */
    char *json = cluster_json(2, 8, 1024);
    hccn_cluster_t *cl = (hccn_cluster_t *)&cl;
    struct rlimit old = limit_as((uint64_t)5 << 29);
    hccn_status_t rc = hccn_cluster_create_json(json, "tight.json", NULL, &cl);
    limit_restore(&old);
    assert_int_equal(rc, HCCN_ERR_NOMEM);
    assert_null(cl);
    expect_msg("tight.json: cannot map the 1073741824-byte arena of NPU ");
    expect_msg(" of 16 (");
    expect_msg("ulimit -v");
    /* Nothing was left behind: the same file maps once the limit is gone. */
    assert_int_equal(hccn_cluster_create_json(json, "tight.json", NULL, &cl),
                     HCCN_OK);
    hccn_cluster_destroy(cl);
    free(json);
}

static atomic_int ran;

static hccn_status_t barrier_rank(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    atomic_fetch_add(&ran, 1);
    return hccn_barrier(hccn_comm_world(ctx));
}

static void test_threads_fail_to_start(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    /* A sanitizer's thread start maps its own memory and stops the
     * program when the limit refuses it: nothing of hccn to test there. */
    skip();
#endif
    /* 256 NPUs, each thread's stack 1 MiB, with 64 MiB of room: some
     * threads start, then one cannot. No rank may run (those started
     * would wait for ever at the barrier for the others). */
    char *json = cluster_json(32, 8, 1);
    hccn_cluster_t *cl = NULL;
    assert_int_equal(hccn_cluster_create_json(json, "threads.json", NULL, &cl),
                     HCCN_OK);
    hccn_status_t st[256];
    atomic_store(&ran, 0);
    struct rlimit old = limit_as((uint64_t)64 << 20);
    hccn_status_t rc = hccn_cluster_run(cl, barrier_rank, NULL, st);
    limit_restore(&old);
    assert_int_equal(rc, HCCN_ERR_NOMEM);
    expect_msg("threads.json: cannot start the 256 NPU threads (thread ");
    expect_msg(" of 256: ");
    expect_msg("no rank ran");
    assert_int_equal(atomic_load(&ran), 0);
    for (int r = 0; r < 256; r++)
        assert_int_equal(st[r], HCCN_ERR_NOMEM);
    /* The cluster is whole: with the limit gone it runs. */
    assert_int_equal(hccn_cluster_run(cl, barrier_rank, NULL, NULL), HCCN_OK);
    assert_int_equal(atomic_load(&ran), 256);
    hccn_cluster_destroy(cl);
    free(json);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_too_many_npus),
        cmocka_unit_test(test_arenas_too_large),
        cmocka_unit_test(test_timing_only_too_large),
        cmocka_unit_test(test_arena_map_fails),
        cmocka_unit_test(test_threads_fail_to_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
