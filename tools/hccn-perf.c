/*
 * hccn-perf: nccl-tests style benchmark of one collective on a simulated
 * cluster. Times are simulated (what the described cluster would take);
 * the wall column says how long the simulation itself took.
 *
 *   hccn-perf allreduce -b 8 -e 256M -f 2 -t configs/default.json
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "hccn/hccn.h"
#include "runtime/kernels.h"

typedef enum { C_ALLREDUCE, C_REDUCE_SCATTER, C_ALLGATHER, C_BROADCAST,
               C_REDUCE, C_ALLTOALL, C_COUNT } coll_t;

static const char *coll_names[C_COUNT] = {"allreduce", "reduce_scatter",
                                          "allgather", "broadcast", "reduce",
                                          "alltoall"};

typedef struct {
    coll_t coll;
    size_t min_bytes, max_bytes;
    double factor;
    size_t step;
    int iters, warmup, check, root, inplace;
    hccn_dtype_t dtype;
    hccn_redop_t op;
    const char *topo;
} opts_t;

/* Shared between the rank threads of one run. */
typedef struct {
    const opts_t *o;
    int nranks;
    double *start, *end;    /* per rank: clock before and after the loop */
    long *wrong;            /* per rank */
    double wall;            /* rank 0's wall seconds for the loop */
    size_t bytes;           /* current size */
    hccn_status_t *status;
} run_t;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    double v = strtod(s, &end);
    double mul = 1;
    switch (*end) {
    case 'K': case 'k': mul = 1024.0; end++; break;
    case 'M': case 'm': mul = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mul = 1024.0 * 1024 * 1024; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0' || !(v >= 0))
        return -1;
    *out = (size_t)(v * mul);
    return 0;
}

static int parse_dtype(const char *s, hccn_dtype_t *out)
{
    static const struct { const char *name; hccn_dtype_t dt; } alias[] = {
        {"half", HCCN_FP16}, {"float", HCCN_FP32}, {"double", HCCN_FP64},
        {"bfloat16", HCCN_BF16}, {"int", HCCN_INT32}, {"char", HCCN_INT8},
    };
    for (int d = 0; d < HCCN_DTYPE_COUNT; d++)
        if (strcasecmp(s, hccn_dtype_name((hccn_dtype_t)d)) == 0) {
            *out = (hccn_dtype_t)d;
            return 0;
        }
    for (size_t i = 0; i < sizeof(alias) / sizeof(alias[0]); i++)
        if (strcasecmp(s, alias[i].name) == 0) {
            *out = alias[i].dt;
            return 0;
        }
    return -1;
}

static int parse_op(const char *s, hccn_redop_t *out)
{
    for (int o = 0; o < HCCN_REDOP_COUNT; o++)
        if (strcasecmp(s, hccn_redop_name((hccn_redop_t)o)) == 0) {
            *out = (hccn_redop_t)o;
            return 0;
        }
    return -1;
}

/* nccl-tests' bus bandwidth factors. */
static double bus_factor(coll_t c, int n)
{
    switch (c) {
    case C_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case C_REDUCE_SCATTER:
    case C_ALLGATHER:
    case C_ALLTOALL:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

/* Elements per rank passed to the call for a total size of bytes. */
static size_t call_count(coll_t c, size_t bytes, size_t es, int n)
{
    size_t count = bytes / es;
    if (c == C_REDUCE_SCATTER || c == C_ALLGATHER || c == C_ALLTOALL)
        count /= (size_t)n;
    return count;
}

/* Integer-valued test data: every sum of up to 64 ranks is exact in every
 * dtype, so the check needs no tolerance. */
static double value(size_t i, int r)
{
    return (double)((i * 7 + (size_t)r * 3) % 5) - 2.0;
}

static void put(void *buf, hccn_dtype_t dt, size_t i, double v)
{
    switch (dt) {
    case HCCN_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case HCCN_UINT8: ((uint8_t *)buf)[i] = (uint8_t)(int8_t)v; break;
    case HCCN_INT16: ((int16_t *)buf)[i] = (int16_t)v; break;
    case HCCN_UINT16: ((uint16_t *)buf)[i] = (uint16_t)(int16_t)v; break;
    case HCCN_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case HCCN_UINT32: ((uint32_t *)buf)[i] = (uint32_t)(int32_t)v; break;
    case HCCN_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case HCCN_UINT64: ((uint64_t *)buf)[i] = (uint64_t)(int64_t)v; break;
    case HCCN_FP16: ((uint16_t *)buf)[i] = hccn_rt_fp32_to_fp16((float)v); break;
    case HCCN_BF16: ((uint16_t *)buf)[i] = hccn_rt_fp32_to_bf16((float)v); break;
    case HCCN_FP32: ((float *)buf)[i] = (float)v; break;
    case HCCN_FP64: ((double *)buf)[i] = v; break;
    default: break;
    }
}

/* Reads element i as the value the test data meant (unsigned types hold
 * negative test values wrapped, so they are read back as signed). */
static double get(const void *buf, hccn_dtype_t dt, size_t i)
{
    switch (dt) {
    case HCCN_INT8: return ((const int8_t *)buf)[i];
    case HCCN_UINT8: return (int8_t)((const uint8_t *)buf)[i];
    case HCCN_INT16: return ((const int16_t *)buf)[i];
    case HCCN_UINT16: return (int16_t)((const uint16_t *)buf)[i];
    case HCCN_INT32: return ((const int32_t *)buf)[i];
    case HCCN_UINT32: return (int32_t)((const uint32_t *)buf)[i];
    case HCCN_INT64: return (double)((const int64_t *)buf)[i];
    case HCCN_UINT64: return (double)(int64_t)((const uint64_t *)buf)[i];
    case HCCN_FP16: return hccn_rt_fp16_to_fp32(((const uint16_t *)buf)[i]);
    case HCCN_BF16: return hccn_rt_bf16_to_fp32(((const uint16_t *)buf)[i]);
    case HCCN_FP32: return ((const float *)buf)[i];
    case HCCN_FP64: return ((const double *)buf)[i];
    default: return NAN;
    }
}

static void fill(void *buf, hccn_dtype_t dt, size_t n, int r)
{
    for (size_t i = 0; i < n; i++)
        put(buf, dt, i, value(i, r));
}

/* Combines every rank's value of element i with op (SUM, MAX or MIN). */
static double combine(hccn_redop_t op, int n, size_t i)
{
    double v = value(i, 0);
    for (int r = 1; r < n; r++) {
        double x = value(i, r);
        v = op == HCCN_MAX ? fmax(v, x) : op == HCCN_MIN ? fmin(v, x) : v + x;
    }
    return v;
}

/* Whether the check can judge this call: PROD and AVG are left to the test
 * suite (their results wrap or round in a dtype-specific way). */
static int checkable(const opts_t *o)
{
    int reduces = o->coll == C_ALLREDUCE || o->coll == C_REDUCE ||
                  o->coll == C_REDUCE_SCATTER;
    return !reduces || o->op == HCCN_SUM || o->op == HCCN_MAX ||
           o->op == HCCN_MIN;
}

static double expected(const opts_t *o, int n, size_t i, int rank, size_t cnt)
{
    switch (o->coll) {
    case C_ALLREDUCE:
    case C_REDUCE:
        return combine(o->op, n, i);
    case C_REDUCE_SCATTER:
        return combine(o->op, n, (size_t)rank * cnt + i);
    case C_ALLGATHER:
        return value(i % cnt, (int)(i / cnt));
    case C_BROADCAST:
        return value(i, o->root);
    case C_ALLTOALL:
        /* Block j of rank r's RECV is block r of rank j's SEND. */
        return value((size_t)rank * cnt + i % cnt, (int)(i / cnt));
    default:
        return 0;
    }
}

static hccn_status_t call(const opts_t *o, hccn_comm_t *w, void *sb, void *rb,
                          size_t cnt)
{
    switch (o->coll) {
    case C_ALLREDUCE:
        return hccn_allreduce(w, sb, rb, cnt, o->dtype, o->op);
    case C_REDUCE_SCATTER:
        return hccn_reduce_scatter(w, sb, rb, cnt, o->dtype, o->op);
    case C_ALLGATHER:
        return hccn_allgather(w, sb, rb, cnt, o->dtype);
    case C_BROADCAST:
        return hccn_broadcast(w, sb, rb, cnt, o->dtype, o->root);
    case C_REDUCE:
        return hccn_reduce(w, sb, rb, cnt, o->dtype, o->op, o->root);
    case C_ALLTOALL:
        return hccn_alltoall(w, sb, rb, cnt, o->dtype);
    default:
        return HCCN_ERR_INVALID;
    }
}

static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    run_t *run = arg;
    const opts_t *o = run->o;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t es = hccn_dtype_size(o->dtype);
    size_t cnt = call_count(o->coll, run->bytes, es, n);
    size_t sn = cnt, rn = cnt;
    if (o->coll == C_REDUCE_SCATTER || o->coll == C_ALLTOALL)
        sn = cnt * (size_t)n;
    if (o->coll == C_ALLGATHER || o->coll == C_ALLTOALL)
        rn = cnt * (size_t)n;
    char *sb = NULL, *rb = NULL;
    hccn_status_t rc;
    if ((rc = hccn_malloc(ctx, rn * es, (void **)&rb)) != HCCN_OK)
        return rc;
    sb = rb;
    if (o->inplace) {
        if (o->coll == C_REDUCE_SCATTER) {
            if ((rc = hccn_malloc(ctx, sn * es, (void **)&sb)) != HCCN_OK)
                return rc;
            rb = sb + (size_t)r * cnt * es;
        } else if (o->coll == C_ALLGATHER) {
            sb = rb + (size_t)r * cnt * es;
        }
    } else if ((rc = hccn_malloc(ctx, sn * es, (void **)&sb)) != HCCN_OK) {
        return rc;
    }
    fill(sb, o->dtype, o->coll == C_ALLGATHER ? cnt : sn, r);

    for (int i = 0; i < o->warmup; i++)
        if ((rc = call(o, w, sb, rb, cnt)) != HCCN_OK)
            return rc;
    if ((rc = hccn_barrier(w)) != HCCN_OK)
        return rc;
    double w0 = wall_now();
    run->start[r] = hccn_time(ctx);
    for (int i = 0; i < o->iters; i++) {
        if (o->check && o->inplace && i > 0)
            fill(sb, o->dtype, o->coll == C_ALLGATHER ? cnt : sn, r);
        if ((rc = call(o, w, sb, rb, cnt)) != HCCN_OK)
            return rc;
    }
    run->end[r] = hccn_time(ctx);
    if (r == 0)
        run->wall = wall_now() - w0;
    long wrong = 0;
    int has_result = !((o->coll == C_REDUCE) && r != o->root);
    if (o->check && has_result && checkable(o))
        for (size_t i = 0; i < rn; i++)
            wrong += get(rb, o->dtype, i) != expected(o, n, i, r, cnt);
    run->wrong[r] = wrong;
    if (o->inplace && o->coll == C_REDUCE_SCATTER)
        hccn_free(ctx, sb);
    else if (!o->inplace)
        hccn_free(ctx, sb);
    if (!(o->inplace && o->coll == C_REDUCE_SCATTER))
        hccn_free(ctx, rb);
    return HCCN_OK;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: hccn-perf COLLECTIVE [options]\n"
            "  COLLECTIVE: allreduce reduce_scatter allgather broadcast "
            "reduce alltoall\n"
            "  -t, --topo FILE      topology (default configs/default.json)\n"
            "  -b, --minbytes N     smallest size (default 8; K/M/G suffixes)\n"
            "  -e, --maxbytes N     largest size (default 32M)\n"
            "  -f, --stepfactor F   multiply the size by F (default 2)\n"
            "  -i, --stepbytes N    or add N bytes each step\n"
            "  -n, --iters N        timed iterations per size (default 5)\n"
            "  -w, --warmup_iters N warm-up iterations (default 1)\n"
            "  -c, --check 0|1      check results (default 1)\n"
            "  -d, --datatype T     %s... (default float)\n"
            "  -o, --op OP          sum prod max min avg (default sum)\n"
            "  -r, --root N         root of broadcast/reduce (default 0)\n"
            "  -a, --algo NAME      force an algorithm (sets HCCN_ALGO)\n"
            "      --inplace        in-place calls\n",
            "int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 ");
}

int main(int argc, char **argv)
{
    opts_t o = {.min_bytes = 8, .max_bytes = 32u << 20, .factor = 2.0,
                .iters = 5, .warmup = 1, .check = 1, .dtype = HCCN_FP32,
                .op = HCCN_SUM, .topo = "configs/default.json"};
    if (argc < 2 || argv[1][0] == '-') {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    int found = 0;
    for (int c = 0; c < C_COUNT; c++)
        if (strcmp(argv[1], coll_names[c]) == 0) {
            o.coll = (coll_t)c;
            found = 1;
        }
    if (!found) {
        fprintf(stderr, "hccn-perf: unknown collective '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    static const struct option lo[] = {
        {"topo", 1, 0, 't'}, {"minbytes", 1, 0, 'b'}, {"maxbytes", 1, 0, 'e'},
        {"stepfactor", 1, 0, 'f'}, {"stepbytes", 1, 0, 'i'},
        {"iters", 1, 0, 'n'}, {"warmup_iters", 1, 0, 'w'},
        {"check", 1, 0, 'c'}, {"datatype", 1, 0, 'd'}, {"op", 1, 0, 'o'},
        {"root", 1, 0, 'r'}, {"algo", 1, 0, 'a'}, {"inplace", 0, 0, 'I'},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    int ch;
    optind = 2;
    while ((ch = getopt_long(argc, argv, "t:b:e:f:i:n:w:c:d:o:r:a:h", lo,
                             NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 't': o.topo = optarg; break;
        case 'b': bad = parse_size(optarg, &o.min_bytes); break;
        case 'e': bad = parse_size(optarg, &o.max_bytes); break;
        case 'f': o.factor = atof(optarg); bad = !(o.factor > 1.0); break;
        case 'i': bad = parse_size(optarg, &o.step) || o.step == 0; break;
        case 'n': o.iters = atoi(optarg); bad = o.iters < 1; break;
        case 'w': o.warmup = atoi(optarg); bad = o.warmup < 0; break;
        case 'c': o.check = atoi(optarg); break;
        case 'd': bad = parse_dtype(optarg, &o.dtype); break;
        case 'o': bad = parse_op(optarg, &o.op); break;
        case 'r': o.root = atoi(optarg); break;
        case 'a': setenv("HCCN_ALGO", optarg, 1); break;
        case 'I': o.inplace = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "hccn-perf: bad value '%s' for -%c\n", optarg, ch);
            return 2;
        }
    }
    hccn_cluster_t *cl;
    if (hccn_cluster_create(o.topo, NULL, &cl) != HCCN_OK) {
        fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
        return 2;
    }
    int n = hccn_cluster_size(cl);
    if (o.root < 0 || o.root >= n) {
        fprintf(stderr, "hccn-perf: root %d out of range [0, %d)\n", o.root, n);
        hccn_cluster_destroy(cl);
        return 2;
    }
    size_t es = hccn_dtype_size(o.dtype);
    run_t run = {.o = &o, .nranks = n};
    run.start = calloc((size_t)n, sizeof(double));
    run.end = calloc((size_t)n, sizeof(double));
    run.wrong = calloc((size_t)n, sizeof(long));
    printf("# hccn-perf %s on %s: %d ranks, %d nodes; times are simulated, "
           "wall is the simulation's own\n",
           coll_names[o.coll], o.topo, n, hccn_cluster_nodes(cl));
    printf("# %12s %12s %8s %6s %5s %12s %10s %10s %8s %12s\n", "size", "count",
           "type", "redop", "root", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
           "#wrong", "wall(us)");
    int rc = 0;
    long total_wrong = 0;
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;) {
        size_t cnt = call_count(o.coll, bytes, es, n);
        size_t size = cnt * es;
        if (o.coll == C_REDUCE_SCATTER || o.coll == C_ALLGATHER ||
            o.coll == C_ALLTOALL)
            size *= (size_t)n;
        run.bytes = bytes;
        if (hccn_cluster_run(cl, rank_fn, &run, NULL) != HCCN_OK) {
            fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
            rc = 1;
            break;
        }
        double t0 = run.start[0], t1 = run.end[0];
        long wrong = 0;
        for (int r = 0; r < n; r++) {
            t0 = fmin(t0, run.start[r]);
            t1 = fmax(t1, run.end[r]);
            wrong += run.wrong[r];
        }
        total_wrong += wrong;
        double t = (t1 - t0) / o.iters;
        double algbw = t > 0 ? (double)size / t / 1e9 : 0.0;
        int rooted = o.coll == C_BROADCAST || o.coll == C_REDUCE;
        printf("  %12zu %12zu %8s %6s %5d %12.2f %10.2f %10.2f %8s %12.1f\n",
               size, size / es, hccn_dtype_name(o.dtype),
               (o.coll == C_ALLREDUCE || o.coll == C_REDUCE ||
                o.coll == C_REDUCE_SCATTER) ? hccn_redop_name(o.op) : "none",
               rooted ? o.root : -1, t * 1e6, algbw,
               algbw * bus_factor(o.coll, n),
               o.check && checkable(&o) ? (wrong ? "WRONG" : "0") : "N/A",
               run.wall / o.iters * 1e6);
        if (wrong)
            printf("# %ld wrong elements\n", wrong);
        if (o.step > 0)
            bytes += o.step;
        else {
            size_t next = (size_t)((double)bytes * o.factor);
            bytes = next > bytes ? next : bytes + 1;
        }
    }
    printf("# Out of bounds values : %ld %s\n", total_wrong,
           total_wrong ? "FAILED" : "OK");
    free(run.start);
    free(run.end);
    free(run.wrong);
    hccn_cluster_destroy(cl);
    return rc != 0 ? rc : (total_wrong ? 1 : 0);
}
