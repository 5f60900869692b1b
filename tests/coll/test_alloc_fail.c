/*
 * Allocation failure anywhere: an allocator (hccn_set_allocator) that
 * fails its Nth request (heap blocks, arena mappings and NPU threads all
 * count), for N = 1, 2, 3, ... until a scenario runs without reaching the
 * Nth request. Every run must end with HCCN_ERR_NOMEM (and a message that
 * says so) or with success and results equal to a serial reference; after
 * a failed run the same cluster must run the scenario again correctly; no
 * block may stay allocated once the cluster is destroyed (the allocator
 * counts them; LeakSanitizer checks the same in the sanitizer builds); a
 * short timeout bounds any hang.
 *
 * Scenarios: cluster creation; one run of each collective (allreduce,
 * reduce_scatter, allgather, broadcast, reduce, alltoall, send/recv,
 * barrier); a split with an allreduce on the part; a future and a group;
 * destroy. N is every value (no stride): each scenario ends below a few
 * hundred requests on the 2 x 2 topology below.
 *
 * The requests of a run come from 4 NPU threads, so which one is the Nth
 * changes from run to run; the sweep checks whatever one it hits.
 * HCCN_SWEEP_TRACE=1 prints the stack of each refused request, each run's
 * rank statuses, and the stacks of blocks left behind.
 * cmocka asserts are not thread-safe: rank functions only record.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>

#include "hccn/hccn.h"

#define NR 4
#define CNT 96
#define MAX_N 5000     /* a scenario that needs more is a failure */

static const char *topo_json =
    "{\"version\":1,\"name\":\"sweep-2x2\",\"node_types\":[{\"count\":2,"
    "\"npu\":{\"count\":2,\"arena_MiB\":4,\"reduce_bw_GBps\":100},"
    "\"fabric\":{\"type\":\"switch\",\"bw_GBps\":50,\"lat_us\":1},"
    "\"nics\":{\"count\":2,\"bw_GBps\":25,\"lat_us\":2}}],"
    "\"network\":{\"type\":\"switch\",\"lat_us\":1}}";

/* ------------------------------------------------------------ allocator */

static atomic_long calls;      /* requests so far */
static atomic_long live;       /* heap blocks handed out, not freed */
static atomic_int fired;       /* the Nth request came and was refused */
static long fail_at;           /* 0: refuse nothing */

static int refuse(void)
{
    long k = atomic_fetch_add(&calls, 1) + 1;
    if (fail_at > 0 && k == fail_at) {
        atomic_store(&fired, 1);
        if (getenv("HCCN_SWEEP_TRACE") != NULL) {   /* which request it was */
            void *pc[16];
            backtrace_symbols_fd(pc, backtrace(pc, 16), 2);
        }
        return 1;
    }
    return 0;
}

/* HCCN_SWEEP_TRACE=1 also keeps the stack of every live block, and a
 * leak check that fails prints the stacks of the blocks left. */
#define TRACK_MAX 65536
static struct {
    void *p;
    void *pc[12];
    int npc;
} track[TRACK_MAX];
static pthread_mutex_t track_lock = PTHREAD_MUTEX_INITIALIZER;

static void track_add(void *p)
{
    if (p == NULL || getenv("HCCN_SWEEP_TRACE") == NULL)
        return;
    pthread_mutex_lock(&track_lock);
    for (int i = 0; i < TRACK_MAX; i++)
        if (track[i].p == NULL) {
            track[i].p = p;
            track[i].npc = backtrace(track[i].pc, 12);
            break;
        }
    pthread_mutex_unlock(&track_lock);
}

/* from is an address only (the block may be gone): never read. */
static void track_move(uintptr_t from, void *to)
{
    if (from == 0 || getenv("HCCN_SWEEP_TRACE") == NULL)
        return;
    pthread_mutex_lock(&track_lock);
    for (int i = 0; i < TRACK_MAX; i++)
        if ((uintptr_t)track[i].p == from) {
            track[i].p = to;
            break;
        }
    pthread_mutex_unlock(&track_lock);
}

static void track_print(void)
{
    for (int i = 0; i < TRACK_MAX; i++)
        if (track[i].p != NULL) {
            fprintf(stderr, "live block %p:\n", track[i].p);
            backtrace_symbols_fd(track[i].pc, track[i].npc, 2);
        }
}

static void *t_malloc(size_t n, void *u)
{
    (void)u;
    void *p = refuse() ? NULL : malloc(n);
    if (p != NULL)
        atomic_fetch_add(&live, 1);
    track_add(p);
    return p;
}

static void *t_calloc(size_t n, size_t s, void *u)
{
    (void)u;
    void *p = refuse() ? NULL : calloc(n, s);
    if (p != NULL)
        atomic_fetch_add(&live, 1);
    track_add(p);
    return p;
}

static void *t_realloc(void *p, size_t n, void *u)
{
    (void)u;
    /* By hand, so that the block's tracking moves before it is freed. */
    void *q = refuse() ? NULL : malloc(n);
    if (q == NULL)
        return NULL;
    size_t had = malloc_usable_size(p);
    memcpy(q, p, had < n ? had : n);
    track_move((uintptr_t)p, q);
    free(p);
    return q;
}

static void t_free(void *p, void *u)
{
    (void)u;
    if (p != NULL)
        atomic_fetch_sub(&live, 1);
    track_move((uintptr_t)p, NULL);
    free(p);
}

static int t_reserve(hccn_resource_t kind, size_t bytes, void *u)
{
    (void)kind, (void)bytes, (void)u;
    return refuse();
}

static const hccn_allocator_t test_alloc = {
    sizeof(hccn_allocator_t), t_malloc, t_calloc, t_realloc, t_free,
    t_reserve, NULL};

/* Counts from here on; the nth request fails. */
static void arm(long n)
{
    atomic_store(&calls, 0);
    atomic_store(&fired, 0);
    fail_at = n;
}

/* Refuses nothing from here on; fired stays as it was. */
static void disarm(void)
{
    fail_at = 0;
}

/* ---------------------------------------------------- rank-side scenarios */

typedef enum {
    S_ALLREDUCE, S_REDUCE_SCATTER, S_ALLGATHER, S_BROADCAST, S_REDUCE,
    S_ALLTOALL, S_SENDRECV, S_BARRIER, S_SPLIT, S_ASYNC, S_COUNT
} scen_t;

static const char *const scen_name[S_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
    "alltoall", "send/recv", "barrier", "split", "future+group"};

typedef struct {
    scen_t s;
    int bad[NR];               /* elements that differ from the reference */
} job_t;

static int32_t val(int r, int i)
{
    return (int32_t)(r * 7919 + i * 13 + 1);
}

/* The serial reference of element i of rank r's output. */
static int32_t expect(scen_t s, int r, int i)
{
    int32_t sum = 0;
    switch (s) {
    case S_ALLREDUCE:
    case S_REDUCE:
        for (int q = 0; q < NR; q++)
            sum += val(q, i);
        return sum;
    case S_REDUCE_SCATTER:
        for (int q = 0; q < NR; q++)
            sum += val(q, r * CNT + i);
        return sum;
    case S_ALLGATHER:
        return val(i / CNT, i % CNT);
    case S_BROADCAST:
        return val(1, i);
    case S_ALLTOALL:
        return val(i / CNT, r * CNT + i % CNT);
    case S_SENDRECV:
        return val((r + NR - 1) % NR, i);
    case S_SPLIT:
        return val(r % 2, i) + val(r % 2 + 2, i);
    default:
        return 0;
    }
}

/* Elements of rank r's output to check (0: none). */
static int out_count(scen_t s, int r)
{
    switch (s) {
    case S_ALLGATHER:
    case S_ALLTOALL:
        return NR * CNT;
    case S_REDUCE:
        return r == 2 ? CNT : 0;
    case S_BARRIER:
    case S_ASYNC:
        return 0;
    default:
        return CNT;
    }
}

static hccn_status_t run_split(hccn_comm_t *w, int r, int32_t *sb,
                               int32_t *rb)
{
    hccn_comm_t *part = NULL;
    hccn_status_t rc = hccn_comm_split(w, r % 2, r, &part);
    if (rc != HCCN_OK)
        return rc;
    rc = hccn_allreduce(part, sb, rb, CNT, HCCN_INT32, HCCN_SUM);
    hccn_status_t rc2 = hccn_comm_destroy(part);
    return rc != HCCN_OK ? rc : rc2;
}

/* A future (allreduce) and a group (allgather + broadcast); checks both
 * into *bad. */
static hccn_status_t run_async(hccn_comm_t *w, int r, int32_t *sb,
                               int32_t *rb, int *bad)
{
    hccn_future_t *f = NULL;
    hccn_status_t rc = hccn_iallreduce(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM,
                                       &f);
    if (rc == HCCN_OK)
        rc = hccn_wait(f);
    if (f != NULL && rc == HCCN_OK)
        rc = hccn_future_free(f);
    if (rc != HCCN_OK)
        return rc;
    for (int i = 0; i < CNT; i++)
        *bad += rb[i] != expect(S_ALLREDUCE, r, i);
    return HCCN_OK;
}

static hccn_status_t run_group(hccn_ctx_t *ctx, hccn_comm_t *w, int r,
                               int32_t *sb, int32_t *rb, int *bad)
{
    hccn_status_t rc = hccn_group_start(ctx);
    if (rc != HCCN_OK)
        return rc;
    /* After a failed call the next call would replace its message (valid
     * until the next hccn call): the group is closed at once. Its end's
     * error, when there is one, comes last and is the one returned. */
    hccn_status_t rc1 = hccn_allgather(w, sb, rb, CNT, HCCN_INT32);
    hccn_status_t rc2 =
        rc1 != HCCN_OK ? rc1
                       : hccn_broadcast(w, sb, rb + NR * CNT, CNT, HCCN_INT32,
                                        1);
    hccn_status_t rc3 = hccn_group_end(ctx);
    rc = rc3 != HCCN_OK ? rc3 : rc1 != HCCN_OK ? rc1 : rc2;
    if (rc != HCCN_OK)
        return rc;
    for (int i = 0; i < NR * CNT; i++)
        *bad += rb[i] != expect(S_ALLGATHER, r, i);
    for (int i = 0; i < CNT; i++)
        *bad += rb[NR * CNT + i] != expect(S_BROADCAST, r, i);
    return HCCN_OK;
}

static hccn_status_t call(hccn_ctx_t *ctx, scen_t s, hccn_comm_t *w, int r,
                          int32_t *sb, int32_t *rb, int *bad)
{
    switch (s) {
    case S_ALLREDUCE:
        return hccn_allreduce(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM);
    case S_REDUCE_SCATTER:
        return hccn_reduce_scatter(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM);
    case S_ALLGATHER:
        return hccn_allgather(w, sb, rb, CNT, HCCN_INT32);
    case S_BROADCAST:
        return hccn_broadcast(w, sb, rb, CNT, HCCN_INT32, 1);
    case S_REDUCE:
        return hccn_reduce(w, sb, rb, CNT, HCCN_INT32, HCCN_SUM, 2);
    case S_ALLTOALL:
        return hccn_alltoall(w, sb, rb, CNT, HCCN_INT32);
    case S_SENDRECV: {
        hccn_future_t *fs = NULL, *fr = NULL;
        hccn_status_t rc = hccn_isend(w, sb, CNT, HCCN_INT32, (r + 1) % NR,
                                      &fs);
        if (rc == HCCN_OK)
            rc = hccn_irecv(w, rb, CNT, HCCN_INT32, (r + NR - 1) % NR, &fr);
        if (rc == HCCN_OK && (rc = hccn_wait(fs)) == HCCN_OK &&
            (rc = hccn_wait(fr)) == HCCN_OK &&
            (rc = hccn_future_free(fs)) == HCCN_OK)
            rc = hccn_future_free(fr);
        return rc;   /* futures left pending end with the run */
    }
    case S_BARRIER:
        return hccn_barrier(w);
    case S_SPLIT:
        return run_split(w, r, sb, rb);
    case S_ASYNC: {
        hccn_status_t rc = run_async(w, r, sb, rb, bad);
        return rc != HCCN_OK ? rc : run_group(ctx, w, r, sb, rb, bad);
    }
    default:
        return HCCN_ERR_INVALID;
    }
}

static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    job_t *job = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    if (w == NULL)
        return HCCN_ERR_NOMEM;   /* hccn_last_error() says why */
    size_t elems = (size_t)(NR + 1) * CNT;
    int32_t *sb = NULL, *rb = NULL;
    hccn_status_t rc = hccn_malloc(ctx, elems * 4, (void **)&sb);
    if (rc == HCCN_OK)
        rc = hccn_malloc(ctx, elems * 4, (void **)&rb);
    if (rc != HCCN_OK)
        goto out;
    for (size_t i = 0; i < elems; i++) {
        sb[i] = val(r, (int)i);
        rb[i] = -1;
    }
    job->bad[r] = 0;
    rc = call(ctx, job->s, w, r, sb, rb, &job->bad[r]);
    for (int i = 0; rc == HCCN_OK && i < out_count(job->s, r); i++)
        job->bad[r] += rb[i] != expect(job->s, r, i);
out:
    /* After a failure the buffers may still be in flight (a send whose
     * receive failed), and hccn_free's refusal would take the place of the
     * failure's message: they stay in the arena, which has room for the
     * sweep's runs. */
    if (rc == HCCN_OK) {
        hccn_free(ctx, rb);
        hccn_free(ctx, sb);
    }
    return rc;
}

/* -------------------------------------------------------------- the sweep */

static hccn_cluster_t *create(hccn_status_t *rc)
{
    hccn_cluster_opts_t opts = {.struct_size = sizeof(opts), .timeout_s = 10};
    hccn_cluster_t *cl = NULL;
    *rc = hccn_cluster_create_json(topo_json, "sweep-2x2", &opts, &cl);
    return cl;
}

/* Asserts that no block of the library is left. */
static void check_no_leak(const char *what)
{
    long n = atomic_load(&live);
    if (n != 0) {
        track_print();
        fail_msg("%s: %ld blocks left after hccn_cluster_destroy", what, n);
    }
}

/* Asserts that rc is a clean out-of-memory end or success. */
static void check_end(const char *what, long n, hccn_status_t rc)
{
    if (rc != HCCN_OK && rc != HCCN_ERR_NOMEM)
        fail_msg("%s, request %ld refused: %s: %s", what, n,
                 hccn_status_name(rc), hccn_last_error());
    /* The message is the one recorded where the request failed: it names
     * the bytes and the function that wanted them, or the mapping or
     * thread that was refused (device_sim/alloc.c). */
    const char *m = hccn_last_error();
    if (rc == HCCN_ERR_NOMEM && strstr(m, "out of memory: ") == NULL &&
        strstr(m, "refused a host thread") == NULL)
        fail_msg("%s, request %ld refused: message \"%s\" does not say "
                 "what ran out", what, n, m);
    if (rc == HCCN_ERR_NOMEM && strstr(m, " bytes for ") == NULL &&
        strstr(m, "refused a") == NULL)
        fail_msg("%s, request %ld refused: message \"%s\" does not name "
                 "what could not be had", what, n, m);
}

static void check_results(const char *what, long n, const job_t *job)
{
    for (int r = 0; r < NR; r++)
        if (job->bad[r] != 0)
            fail_msg("%s, N=%ld: rank %d: %d elements differ from the serial "
                     "reference", what, n, r, job->bad[r]);
}

static void test_create(void **state)
{
    (void)state;
    assert_int_equal(hccn_set_allocator(&test_alloc), HCCN_OK);
    long n = 1;
    for (; n <= MAX_N; n++) {
        arm(n);
        hccn_status_t rc;
        hccn_cluster_t *cl = create(&rc);
        disarm();
        check_end("create", n, rc);
        if (rc != HCCN_OK && strstr(hccn_last_error(), "sweep-2x2") == NULL)
            fail_msg("create, request %ld refused: \"%s\" does not name "
                     "the topology", n, hccn_last_error());
        assert_true((rc == HCCN_OK) == (cl != NULL));
        hccn_cluster_destroy(cl);
        check_no_leak("create");
        if (!atomic_load(&fired))
            break;
    }
    assert_true(n <= MAX_N);
    printf("create: N = 1..%ld\n", n);
    assert_int_equal(hccn_set_allocator(NULL), HCCN_OK);
}

static void sweep_scenario(scen_t s)
{
    hccn_status_t rc;
    hccn_cluster_t *cl = create(&rc);
    assert_int_equal(rc, HCCN_OK);
    long n = 1;
    for (; n <= MAX_N; n++) {
        job_t job = {.s = s};
        arm(n);
        hccn_status_t st[NR];
        rc = hccn_cluster_run(cl, rank_fn, &job, st);
        int hit = atomic_load(&fired);
        if (getenv("HCCN_SWEEP_TRACE") != NULL)
            fprintf(stderr, "%s N=%ld: ranks %d %d %d %d\n", scen_name[s], n,
                    st[0], st[1], st[2], st[3]);
        disarm();
        check_end(scen_name[s], n, rc);
        if (rc == HCCN_OK) {
            check_results(scen_name[s], n, &job);
            if (!hit)
                break;
            continue;
        }
        /* The cluster survives the failure: the same run now succeeds. */
        job_t again = {.s = s};
        rc = hccn_cluster_run(cl, rank_fn, &again, NULL);
        if (rc != HCCN_OK)
            fail_msg("%s, after N=%ld: the next run fails: %s: %s",
                     scen_name[s], n, hccn_status_name(rc), hccn_last_error());
        check_results(scen_name[s], n, &again);
    }
    assert_true(n <= MAX_N);
    printf("%s: N = 1..%ld\n", scen_name[s], n);
    hccn_cluster_destroy(cl);
    check_no_leak(scen_name[s]);
}

static void test_runs(void **state)
{
    (void)state;
    assert_int_equal(hccn_set_allocator(&test_alloc), HCCN_OK);
    for (scen_t s = 0; s < S_COUNT; s++)
        sweep_scenario(s);
    assert_int_equal(hccn_set_allocator(NULL), HCCN_OK);
}

/* destroy after a run: whatever it asks for and is refused, it frees
 * everything. */
static void test_destroy(void **state)
{
    (void)state;
    assert_int_equal(hccn_set_allocator(&test_alloc), HCCN_OK);
    long n = 1;
    for (; n <= MAX_N; n++) {
        hccn_status_t rc;
        hccn_cluster_t *cl = create(&rc);
        assert_int_equal(rc, HCCN_OK);
        job_t job = {.s = S_SPLIT};
        assert_int_equal(hccn_cluster_run(cl, rank_fn, &job, NULL), HCCN_OK);
        arm(n);
        hccn_cluster_destroy(cl);
        int hit = atomic_load(&fired);
        disarm();
        check_no_leak("destroy");
        if (!hit)
            break;
    }
    printf("destroy: N = 1..%ld\n", n);
    assert_int_equal(hccn_set_allocator(NULL), HCCN_OK);
}

static hccn_status_t touch_world(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    return hccn_comm_world(ctx) != NULL ? HCCN_OK : HCCN_ERR_NOMEM;
}

/* The allocator may change only while the library holds nothing. Runs
 * first: its handles make the process's handle table (docs/api.md: kept
 * for the process's lifetime), which the sweep's counts then leave out. */
static void test_set_rules(void **state)
{
    (void)state;
    hccn_status_t rc;
    hccn_cluster_t *cl = create(&rc);
    assert_int_equal(rc, HCCN_OK);
    assert_int_equal(hccn_cluster_run(cl, touch_world, NULL, NULL), HCCN_OK);
    assert_int_equal(hccn_set_allocator(&test_alloc), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "hccn_set_allocator"));
    assert_non_null(strstr(hccn_last_error(), "blocks"));
    hccn_cluster_destroy(cl);
    hccn_allocator_t bad = test_alloc;
    bad.free_fn = NULL;
    assert_int_equal(hccn_set_allocator(&bad), HCCN_ERR_INVALID);
    assert_non_null(strstr(hccn_last_error(), "free_fn"));
    assert_int_equal(hccn_set_allocator(&test_alloc), HCCN_OK);
    assert_int_equal(hccn_set_allocator(NULL), HCCN_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_rules),
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_runs),
        cmocka_unit_test(test_destroy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
