/*
 * Soak: N random operations (drawn from a seeded generator every rank runs
 * alike) on the ranks of a topology, in 10 runs of one cluster: blocking
 * collectives, pairs of non-blocking ones in flight at once on two
 * communicators, and re-splits of the sub-communicators; kind, size, dtype,
 * op, algorithm and communicator are drawn too. A slow link and a slow NPU
 * are planned in every run (times change, results must not). Every result
 * is checked against a closed-form reference. Then one more run in which
 * an NPU fails part-way: operations may fail, those that succeed must
 * still be exact. Prints the wrong-element count and the resident memory
 * at the start, at two checkpoints and at the end.
 *
 *   bench_soak [CONFIG] [N] [SEED]     (default configs/default.json 10000 1)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "runtime/kernels.h"

#define RUNS 10

typedef struct {
    int n;
    unsigned long long seed;
    int first, per_run;     /* this run's ops */
    int faulty;             /* the run with a failing NPU */
    long wrong[1024];
    long checked[1024];
    hccn_status_t failed[1024];
    char why1[1024];        /* rank 1's error in the fault run */
    long skipped;           /* draws no algorithm could run */
    long async, splits;
    double rss_start, rss_first, rss_mid, rss_last;
    double rss_run[RUNS];   /* at the end of each run */
    double heap_run[RUNS];
} soak_t;

static unsigned long long mix(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Bytes of the host heap in live allocations (glibc), in MiB; -1 where
 * unknown. Unlike the resident size, it does not count freed memory the
 * allocator keeps, so it shows whether anything accumulates. */
static double heap_mib(void)
{
#ifdef __GLIBC__
    struct mallinfo2 mi = mallinfo2();
    return (double)mi.uordblks / (1 << 20);
#else
    return -1.0;
#endif
}

static double rss_mib(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f != NULL) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1 << 20);
}

/* Small integers: every sum of up to 16 ranks is exact in every dtype. */
static double value(size_t i, int r, int it)
{
    return (double)((i * 7 + (size_t)r * 3 + (size_t)it) % 5) - 2.0;
}

static void put(void *b, hccn_dtype_t dt, size_t i, double v)
{
    switch (dt) {
    case HCCN_INT8: ((int8_t *)b)[i] = (int8_t)v; break;
    case HCCN_INT32: ((int32_t *)b)[i] = (int32_t)v; break;
    case HCCN_FP16: ((uint16_t *)b)[i] = hccn_rt_fp32_to_fp16((float)v); break;
    case HCCN_BF16: ((uint16_t *)b)[i] = hccn_rt_fp32_to_bf16((float)v); break;
    case HCCN_FP32: ((float *)b)[i] = (float)v; break;
    default: ((double *)b)[i] = v; break;
    }
}

static double get(const void *b, hccn_dtype_t dt, size_t i)
{
    switch (dt) {
    case HCCN_INT8: return ((const int8_t *)b)[i];
    case HCCN_INT32: return ((const int32_t *)b)[i];
    case HCCN_FP16: return hccn_rt_fp16_to_fp32(((const uint16_t *)b)[i]);
    case HCCN_BF16: return hccn_rt_bf16_to_fp32(((const uint16_t *)b)[i]);
    case HCCN_FP32: return ((const float *)b)[i];
    default: return ((const double *)b)[i];
    }
}

static double combine(hccn_redop_t op, int n, size_t i, int it)
{
    double v = value(i, 0, it);
    for (int r = 1; r < n; r++) {
        double x = value(i, r, it);
        v = op == HCCN_MAX ? fmax(v, x) : op == HCCN_MIN ? fmin(v, x) : v + x;
    }
    return v;
}

static const hccn_coll_t kinds[] = {HCCN_COLL_ALLREDUCE, HCCN_COLL_REDUCE_SCATTER,
                                    HCCN_COLL_ALLGATHER, HCCN_COLL_BROADCAST,
                                    HCCN_COLL_REDUCE, HCCN_COLL_ALLTOALL};
static const hccn_dtype_t dtypes[] = {HCCN_INT8, HCCN_INT32, HCCN_FP16,
                                      HCCN_BF16, HCCN_FP32, HCCN_FP64};
static const hccn_redop_t ops[] = {HCCN_SUM, HCCN_MAX, HCCN_MIN};

/* An algorithm name for kind, drawn from the table (NULL: auto). */
static const char *draw_algo(hccn_coll_t kind, unsigned long long x)
{
    const hccn_algo_t *t = hccn_hier_algos();
    int n = 0;
    for (int i = 0; t[i].name != NULL; i++)
        n += (t[i].colls >> kind) & 1;
    int pick = (int)(x % (unsigned long long)(n + 1));
    for (int i = 0; t[i].name != NULL; i++)
        if (((t[i].colls >> kind) & 1) && --pick < 0)
            return t[i].name;
    return NULL;
}

/* Posts one collective, forcing algo (NULL: the selector's choice): a
 * blocking call when fut is NULL, else the i-form (every kind has one). */
static hccn_status_t call(hccn_comm_t *c, hccn_coll_t k, void *sb, void *rb,
                          size_t cnt, hccn_dtype_t dt, hccn_redop_t op,
                          int root, const char *algo, hccn_future_t **fut)
{
    hccn_status_t rc = hccn_comm_set_algo(c, algo);
    if (rc != HCCN_OK)
        return rc;
    switch (k) {
    case HCCN_COLL_ALLREDUCE:
        rc = fut ? hccn_iallreduce(c, sb, rb, cnt, dt, op, fut)
                 : hccn_allreduce(c, sb, rb, cnt, dt, op);
        break;
    case HCCN_COLL_REDUCE_SCATTER:
        rc = fut ? hccn_ireduce_scatter(c, sb, rb, cnt, dt, op, fut)
                 : hccn_reduce_scatter(c, sb, rb, cnt, dt, op);
        break;
    case HCCN_COLL_ALLGATHER:
        rc = fut ? hccn_iallgather(c, sb, rb, cnt, dt, fut)
                 : hccn_allgather(c, sb, rb, cnt, dt);
        break;
    case HCCN_COLL_BROADCAST:
        rc = fut ? hccn_ibroadcast(c, sb, rb, cnt, dt, root, fut)
                 : hccn_broadcast(c, sb, rb, cnt, dt, root);
        break;
    case HCCN_COLL_REDUCE:
        rc = fut ? hccn_ireduce(c, sb, rb, cnt, dt, op, root, fut)
                 : hccn_reduce(c, sb, rb, cnt, dt, op, root);
        break;
    default:
        rc = fut ? hccn_ialltoall(c, sb, rb, cnt, dt, fut)
                 : hccn_alltoall(c, sb, rb, cnt, dt);
        break;
    }
    hccn_comm_set_algo(c, NULL);
    return rc;
}

/* One drawn collective: what it is and where its buffers are. */
typedef struct {
    hccn_comm_t *c;
    hccn_coll_t k;
    hccn_dtype_t dt;
    hccn_redop_t op;
    const char *algo;
    int root, it;
    size_t cnt;
    char *sb, *rb;
} draw_t;

static void draw(draw_t *d, hccn_comm_t *const comms[3], unsigned long long x,
                 int it, char *sb, char *rb)
{
    d->c = comms[x % 3];
    d->k = kinds[(x >> 8) % 6];
    d->dt = dtypes[(x >> 16) % 6];
    d->op = ops[(x >> 24) % 3];
    d->algo = draw_algo(d->k, x >> 32);
    d->root = (int)((x >> 40) % (unsigned long long)hccn_comm_size(d->c));
    d->cnt = (size_t)((x >> 44) % 3000) + 1;
    d->it = it;
    d->sb = sb;
    d->rb = rb;
}

/* Fills d's send buffer and poisons its receive buffer. */
static void prepare(const draw_t *d)
{
    int n = hccn_comm_size(d->c), r = hccn_comm_rank(d->c);
    size_t es = hccn_dtype_size(d->dt);
    size_t sn = (d->k == HCCN_COLL_REDUCE_SCATTER || d->k == HCCN_COLL_ALLTOALL)
                    ? d->cnt * (size_t)n : d->cnt;
    size_t rn = (d->k == HCCN_COLL_ALLGATHER || d->k == HCCN_COLL_ALLTOALL)
                    ? d->cnt * (size_t)n : d->cnt;
    for (size_t i = 0; i < sn; i++)
        put(d->sb, d->dt, i, value(i, r, d->it));
    memset(d->rb, 0x7f, rn * es);
}

/* Counts the wrong elements of d's result against the closed form. */
static long check(const draw_t *d)
{
    int n = hccn_comm_size(d->c), r = hccn_comm_rank(d->c);
    if (d->k == HCCN_COLL_REDUCE && r != d->root)
        return 0;
    size_t rn = (d->k == HCCN_COLL_ALLGATHER || d->k == HCCN_COLL_ALLTOALL)
                    ? d->cnt * (size_t)n : d->cnt;
    long wrong = 0;
    for (size_t i = 0; i < rn; i++) {
        double e;
        size_t cnt = d->cnt;
        switch (d->k) {
        case HCCN_COLL_ALLREDUCE:
        case HCCN_COLL_REDUCE:
            e = combine(d->op, n, i, d->it);
            break;
        case HCCN_COLL_REDUCE_SCATTER:
            e = combine(d->op, n, (size_t)r * cnt + i, d->it);
            break;
        case HCCN_COLL_ALLGATHER:
            e = value(i % cnt, (int)(i / cnt), d->it);
            break;
        case HCCN_COLL_BROADCAST:
            e = value(i, d->root, d->it);
            break;
        default:
            e = value((size_t)r * cnt + i % cnt, (int)(i / cnt), d->it);
            break;
        }
        wrong += get(d->rb, d->dt, i) != e;
    }
    return wrong;
}

/* Replaces comms[1] and comms[2] by new splits whose colors depend on it
 * (by node, by parity, in threes, ...), destroying the old ones. */
static hccn_status_t resplit(hccn_ctx_t *ctx, hccn_comm_t *comms[3], int it)
{
    int wr = hccn_rank(ctx);
    hccn_status_t rc;
    if ((rc = hccn_comm_destroy(comms[1])) || (rc = hccn_comm_destroy(comms[2])))
        return rc;
    int m = 2 + it % 3;
    if ((rc = hccn_comm_split(comms[0], hccn_node(ctx), wr * (it % 2 ? -1 : 1),
                              &comms[1])) ||
        (rc = hccn_comm_split(comms[0], wr % m, -wr, &comms[2])))
        return rc;
    return HCCN_OK;
}

/* The ops of one run: blocking collectives, pairs of i-forms in flight at
 * once (on two communicators, waited in a drawn order) and re-splits. In
 * the fault run an operation may fail (an NPU fails): the rank stops and
 * counts it; any operation that succeeds must still be exact. */
static hccn_status_t soak_rank(hccn_ctx_t *ctx, void *arg)
{
    soak_t *s = arg;
    int wr = hccn_rank(ctx);
    hccn_comm_t *comms[3] = {hccn_comm_world(ctx), NULL, NULL};
    hccn_status_t rc;
    if ((rc = hccn_comm_split(comms[0], hccn_node(ctx), wr, &comms[1])) ||
        (rc = hccn_comm_split(comms[0], wr % 2, -wr, &comms[2])))
        return rc;
    const size_t cap = 1 << 20;
    char *buf[4];
    for (int b = 0; b < 4; b++)
        if ((rc = hccn_malloc(ctx, cap, (void **)&buf[b])))
            return rc;
    int end = s->first + s->per_run;
    for (int it = s->first; it < end && rc == HCCN_OK; it++) {
        unsigned long long x = mix(s->seed * 1000003ULL + (unsigned long long)it);
        int what = (int)((x >> 56) % 16);
        if (what == 0) {
            if ((rc = resplit(ctx, comms, it)) == HCCN_OK && wr == 0)
                s->splits++;
            continue;
        }
        draw_t d[2];
        hccn_future_t *f[2] = {NULL, NULL};
        hccn_status_t st[2] = {HCCN_OK, HCCN_OK};
        int nd = what <= 5 ? 2 : 1;   /* async pairs: about a third */
        draw(&d[0], comms, x, it, buf[0], buf[1]);
        if (nd == 2)
            draw(&d[1], comms, mix(x), it + 7919, buf[2], buf[3]);
        /* Each draw stands alone: one refused as unsupported (a verdict
         * on its communicator, whose size differs between the siblings
         * of a split) must not keep this rank from posting the other,
         * which its peers on another communicator will post. */
        for (int j = 0; j < nd; j++) {
            prepare(&d[j]);
            st[j] = call(d[j].c, d[j].k, d[j].sb, d[j].rb, d[j].cnt,
                         d[j].dt, d[j].op, d[j].root, d[j].algo,
                         nd == 2 ? &f[j] : NULL);
        }
        for (int j = 0; j < nd && nd == 2; j++) {
            int w = (int)((x >> 4) & 1) ^ j;
            if (f[w] != NULL) {
                st[w] = hccn_wait(f[w]);
                hccn_future_free(f[w]);
            }
        }
        for (int j = 0; j < nd; j++) {
            if (st[j] == HCCN_ERR_UNSUPPORTED) {
                if (wr == 0)
                    s->skipped++;
            } else if (st[j] != HCCN_OK) {
                rc = st[j];
            } else if (rc == HCCN_OK) {
                s->wrong[wr] += check(&d[j]);
                s->checked[wr]++;
            }
        }
        if (rc != HCCN_OK)
            break;
        if (wr == 0)
            s->async += nd == 2 ? 2 : 0;
        if (wr == 0 && it == s->n / 10)
            s->rss_first = rss_mib();
        if (wr == 0 && it == s->n / 2)
            s->rss_mid = rss_mib();
    }
    if (rc != HCCN_OK && s->faulty) {
        s->failed[wr] = rc;   /* the fault run: expected, counted */
        if (wr == 1)
            snprintf(s->why1, sizeof(s->why1), "%s", hccn_last_error());
        rc = HCCN_OK;
    }
    for (int b = 0; b < 4; b++)
        hccn_free(ctx, buf[b]);
    hccn_comm_destroy(comms[1]);
    hccn_comm_destroy(comms[2]);
    return rc;
}

/* The fault plan of every run: a slower uplink and a slower NPU, which
 * change times only. */
static int add_faults(hccn_cluster_t *cl)
{
    hccn_fault_t link = {.struct_size = sizeof(link),
                         .kind = HCCN_FAULT_LINK_SLOW,
                         .link = "node0.nic0->net", .factor = 0.5};
    hccn_fault_t npu = {.struct_size = sizeof(npu), .kind = HCCN_FAULT_NPU_SLOW,
                        .npu = hccn_cluster_size(cl) > 5 ? 5 : 0,
                        .factor = 2.0};
    if (hccn_cluster_add_fault(cl, &link) != HCCN_OK)
        link.link = NULL;   /* another topology: no such link */
    return hccn_cluster_add_fault(cl, &npu) == HCCN_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
    const char *cfg = argc > 1 ? argv[1] : "configs/default.json";
    static soak_t s;
    s.n = argc > 2 ? atoi(argv[2]) : 10000;
    s.seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    hccn_cluster_t *cl;
    if (hccn_cluster_create(cfg, NULL, &cl) != HCCN_OK || add_faults(cl) != 0) {
        fprintf(stderr, "bench_soak: %s\n", hccn_last_error());
        return 1;
    }
    s.rss_start = rss_mib();
    /* RUNS runs of the cluster, each with its own communicators. */
    s.per_run = (s.n + RUNS - 1) / RUNS;
    int nrun = 0;
    for (s.first = 0; s.first < s.n; s.first += s.per_run) {
        if (s.first + s.per_run > s.n)
            s.per_run = s.n - s.first;
        if (hccn_cluster_run(cl, soak_rank, &s, NULL) != HCCN_OK) {
            fprintf(stderr, "bench_soak: %s\n", hccn_last_error());
            return 1;
        }
        s.heap_run[nrun] = heap_mib();
        s.rss_run[nrun++] = rss_mib();
    }
    s.rss_last = rss_mib();
    /* Then one run in which NPU 1 fails part-way. */
    hccn_fault_t fail = {.struct_size = sizeof(fail),
                         .kind = HCCN_FAULT_NPU_FAIL, .npu = 1, .at_s = 2e-4};
    s.faulty = 1;
    s.first = s.n;
    s.per_run = s.n / RUNS;
    long wrong_before = 0, checked_before = 0;
    for (int r = 0; r < hccn_cluster_size(cl); r++) {
        wrong_before += s.wrong[r];
        checked_before += s.checked[r];
    }
    hccn_status_t frc = hccn_cluster_add_fault(cl, &fail);
    if (frc == HCCN_OK)
        frc = hccn_cluster_run(cl, soak_rank, &s, NULL);
    long wrong = 0, checked = 0, failed = 0;
    for (int r = 0; r < hccn_cluster_size(cl); r++) {
        wrong += s.wrong[r];
        checked += s.checked[r];
        failed += s.failed[r] != HCCN_OK;
    }
    printf("soak: %d ops on %d ranks (%s) in %d runs: %ld rank-results checked "
           "(%ld of them async), %ld re-splits, %ld unsupported draws, %ld "
           "wrong elements\n",
           s.n, hccn_cluster_size(cl), cfg, RUNS, checked_before, s.async,
           s.splits,
           s.skipped, wrong_before);
    printf("soak: resident memory %.1f MiB at the start, %.1f MiB after %d "
           "ops, %.1f MiB after %d, %.1f MiB at the end\n",
           s.rss_start, s.rss_first, s.n / 10, s.rss_mid, s.n / 2, s.rss_last);
    printf("soak: resident memory at the end of each run (MiB):");
    for (int k = 0; k < nrun; k++)
        printf(" %.1f", s.rss_run[k]);
    printf("\n");
    printf("soak: host heap in use at the end of each run (MiB):");
    for (int k = 0; k < nrun; k++)
        printf(" %.1f", s.heap_run[k]);
    printf("\n");
    printf("soak: fault run (NPU 1 fails at 0.2 ms): %s, %ld ranks stopped on "
           "an error (rank 1: %s, rank 0: %s), %ld rank-results checked, %ld "
           "wrong elements in them\n",
           frc == HCCN_OK ? "ran" : hccn_status_name(frc), failed,
           hccn_status_name(s.failed[1]), hccn_status_name(s.failed[0]),
           checked - checked_before, wrong - wrong_before);
    if (s.failed[1] != HCCN_OK)
        printf("soak: rank 1's error: %s\n", s.why1);
    hccn_cluster_destroy(cl);
    return wrong == 0 && frc == HCCN_OK ? 0 : 1;
}
