/*
 * Soak: N random collectives (kind, size, dtype, op, algorithm and
 * communicator drawn from a seeded generator every rank runs alike) on the
 * ranks of a topology, every result checked against a closed-form
 * reference; prints the wrong-element count and the resident memory at the
 * first checkpoint and at the end.
 *
 *   bench_soak [CONFIG] [N] [SEED]     (default configs/default.json 10000 1)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "runtime/kernels.h"

typedef struct {
    int n;
    unsigned long long seed;
    long wrong[1024];
    long checked[1024];
    long skipped;           /* draws no algorithm could run */
    double rss_first, rss_mid, rss_last;
} soak_t;

static unsigned long long mix(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
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

/* Runs one collective, forcing algo (NULL: the selector's choice). */
static hccn_status_t call(hccn_comm_t *c, hccn_coll_t k, void *sb, void *rb,
                          size_t cnt, hccn_dtype_t dt, hccn_redop_t op,
                          int root, const char *algo)
{
    hccn_status_t rc = hccn_comm_set_algo(c, algo);
    if (rc != HCCN_OK)
        return rc;
    switch (k) {
    case HCCN_COLL_ALLREDUCE:
        rc = hccn_allreduce(c, sb, rb, cnt, dt, op);
        break;
    case HCCN_COLL_REDUCE_SCATTER:
        rc = hccn_reduce_scatter(c, sb, rb, cnt, dt, op);
        break;
    case HCCN_COLL_ALLGATHER:
        rc = hccn_allgather(c, sb, rb, cnt, dt);
        break;
    case HCCN_COLL_BROADCAST:
        rc = hccn_broadcast(c, sb, rb, cnt, dt, root);
        break;
    case HCCN_COLL_REDUCE:
        rc = hccn_reduce(c, sb, rb, cnt, dt, op, root);
        break;
    default:
        rc = hccn_alltoall(c, sb, rb, cnt, dt);
        break;
    }
    hccn_comm_set_algo(c, NULL);
    return rc;
}

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
    char *sb, *rb;
    if ((rc = hccn_malloc(ctx, cap, (void **)&sb)) ||
        (rc = hccn_malloc(ctx, cap, (void **)&rb)))
        return rc;
    for (int it = 0; it < s->n; it++) {
        unsigned long long x = mix(s->seed * 1000003ULL + (unsigned long long)it);
        hccn_comm_t *c = comms[x % 3];
        hccn_coll_t k = kinds[(x >> 8) % 6];
        hccn_dtype_t dt = dtypes[(x >> 16) % 6];
        hccn_redop_t op = ops[(x >> 24) % 3];
        const char *algo = draw_algo(k, x >> 32);
        int n = hccn_comm_size(c), r = hccn_comm_rank(c);
        int root = (int)((x >> 40) % (unsigned long long)n);
        size_t es = hccn_dtype_size(dt);
        size_t cnt = (size_t)((x >> 44) % 3000) + 1;
        size_t sn = (k == HCCN_COLL_REDUCE_SCATTER || k == HCCN_COLL_ALLTOALL) ? cnt * n : cnt;
        size_t rn = (k == HCCN_COLL_ALLGATHER || k == HCCN_COLL_ALLTOALL) ? cnt * n : cnt;
        for (size_t i = 0; i < sn; i++)
            put(sb, dt, i, value(i, r, it));
        memset(rb, 0x7f, rn * es);
        rc = call(c, k, sb, rb, cnt, dt, op, root, algo);
        if (rc == HCCN_ERR_UNSUPPORTED) {
            if (wr == 0)
                s->skipped++;
            continue;
        }
        if (rc != HCCN_OK)
            return rc;
        if (k == HCCN_COLL_REDUCE && r != root)
            continue;
        for (size_t i = 0; i < rn; i++) {
            double e;
            switch (k) {
            case HCCN_COLL_ALLREDUCE:
            case HCCN_COLL_REDUCE:
                e = combine(op, n, i, it);
                break;
            case HCCN_COLL_REDUCE_SCATTER:
                e = combine(op, n, (size_t)r * cnt + i, it);
                break;
            case HCCN_COLL_ALLGATHER:
                e = value(i % cnt, (int)(i / cnt), it);
                break;
            case HCCN_COLL_BROADCAST:
                e = value(i, root, it);
                break;
            default:
                e = value((size_t)r * cnt + i % cnt, (int)(i / cnt), it);
                break;
            }
            s->wrong[wr] += get(rb, dt, i) != e;
        }
        s->checked[wr]++;
        if (wr == 0 && it == s->n / 10)
            s->rss_first = rss_mib();
        if (wr == 0 && it == s->n / 2)
            s->rss_mid = rss_mib();
    }
    if (wr == 0)
        s->rss_last = rss_mib();
    hccn_free(ctx, sb);
    hccn_free(ctx, rb);
    hccn_comm_destroy(comms[1]);
    hccn_comm_destroy(comms[2]);
    return HCCN_OK;
}

int main(int argc, char **argv)
{
    const char *cfg = argc > 1 ? argv[1] : "configs/default.json";
    static soak_t s;
    s.n = argc > 2 ? atoi(argv[2]) : 10000;
    s.seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    hccn_cluster_t *cl;
    if (hccn_cluster_create(cfg, NULL, &cl) != HCCN_OK ||
        hccn_cluster_run(cl, soak_rank, &s, NULL) != HCCN_OK) {
        fprintf(stderr, "bench_soak: %s\n", hccn_last_error());
        return 1;
    }
    long wrong = 0, checked = 0;
    for (int r = 0; r < hccn_cluster_size(cl); r++) {
        wrong += s.wrong[r];
        checked += s.checked[r];
    }
    printf("soak: %d collectives on %d ranks (%s), %ld rank-results checked, "
           "%ld unsupported draws, %ld wrong elements\n",
           s.n, hccn_cluster_size(cl), cfg, checked, s.skipped, wrong);
    printf("soak: resident memory %.1f MiB after %d collectives, %.1f MiB "
           "after %d, %.1f MiB at the end\n",
           s.rss_first, s.n / 10, s.rss_mid, s.n / 2, s.rss_last);
    hccn_cluster_destroy(cl);
    return wrong == 0 ? 0 : 1;
}
