/*
 * hccn-perf: nccl-tests style benchmark of the collectives on a simulated
 * cluster (docs/perf.md). Times are simulated (what the described cluster
 * would take); the wall column says how long the simulation itself took.
 *
 *   hccn-perf allreduce -b 8 -e 256M -f 2 -t configs/default.json
 *   hccn-perf all -e 1M --set node_types[0].nics.bw_GBps=50
 *   hccn-perf allreduce --sweep network.lat_us=1,2,4 --json out.json
 *   hccn-perf allreduce -b 1M -e 1M -n 1 --trace run.json
 *
 * Exit status: 0 when every checked result is right, 1 when a result is
 * wrong or a run fails, 2 for bad arguments or an invalid topology.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "hccn/hccn.h"
#include "tools/tool_size.h"
#include "tools/tool_text.h"
#include "hccn/hccn_coll.h"
#include "device_sim/trace.h"
#include "tools/perf_data.h"
#include "tools/perf_links.h"
#include "tools/perf_report.h"
#include "tools/perf_topo.h"
#include "runtime/predict.h"

enum { V_OOP = 1, V_IP = 2 };

typedef struct {
    int colls[C_COUNT], ncolls;
    size_t min_bytes, max_bytes, step;
    double factor;
    int iters, warmup, check, root, variants;
    int nodata;             /* --no-data: timing only */
    int nofold;             /* --no-fold: timing only, never folded */
    hccn_dtype_t dtype;
    hccn_redop_t op;
    const char *json, *csv, *trace;
} opts_t;

/* One variant of one size, shared between the rank threads. */
typedef struct {
    const opts_t *o;
    coll_t coll;
    int inplace;
    size_t bytes;
    double *start, *end;    /* per rank: clock before and after the loop */
    long *wrong;            /* per rank; -1 when not checked */
    double wall;            /* rank 0's wall seconds for the loop */
} run_t;

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Elements per rank passed to the call for a total size of bytes. */
static size_t call_count(coll_t c, size_t bytes, size_t es, int n)
{
    size_t count = bytes / es;
    if (c == C_REDUCE_SCATTER || c == C_ALLGATHER || c == C_ALLTOALL)
        count /= (size_t)n;
    return count;
}

static hccn_status_t call(const run_t *run, hccn_comm_t *w, void *sb,
                          void *rb, size_t cnt)
{
    const opts_t *o = run->o;
    switch (run->coll) {
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

typedef struct {
    char *sb, *rb;          /* SEND and RECV as passed to the call */
    char *own[2];           /* allocations to free */
    size_t sn, rn;          /* elements of SEND and RECV */
} bufs_t;

/* Allocates the buffers of rank r: separate SEND and RECV out of place;
 * one buffer laid out as NCCL's in-place rules say in place. */
static hccn_status_t bufs_alloc(hccn_ctx_t *ctx, const run_t *run, size_t cnt,
                                bufs_t *b)
{
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    size_t es = hccn_dtype_size(run->o->dtype);
    coll_t c = run->coll;
    memset(b, 0, sizeof(*b));
    b->sn = b->rn = cnt;
    if (c == C_REDUCE_SCATTER || c == C_ALLTOALL)
        b->sn = cnt * (size_t)n;
    if (c == C_ALLGATHER || c == C_ALLTOALL)
        b->rn = cnt * (size_t)n;
    hccn_status_t rc;
    if (!run->inplace) {
        if ((rc = hccn_malloc(ctx, (b->sn ? b->sn : 1) * es,
                              (void **)&b->own[0])) != HCCN_OK ||
            (rc = hccn_malloc(ctx, (b->rn ? b->rn : 1) * es,
                              (void **)&b->own[1])) != HCCN_OK)
            return rc;
        b->sb = b->own[0];
        b->rb = b->own[1];
        return HCCN_OK;
    }
    size_t total = b->sn > b->rn ? b->sn : b->rn;
    if ((rc = hccn_malloc(ctx, (total ? total : 1) * es,
                          (void **)&b->own[0])) != HCCN_OK)
        return rc;
    b->sb = b->rb = b->own[0];
    if (c == C_REDUCE_SCATTER)
        b->rb = b->sb + (size_t)r * cnt * es;
    else if (c == C_ALLGATHER)
        b->sb = b->rb + (size_t)r * cnt * es;
    return HCCN_OK;
}

static void bufs_free(hccn_ctx_t *ctx, bufs_t *b)
{
    for (int i = 0; i < 2; i++)
        if (b->own[i] != NULL)
            hccn_free(ctx, b->own[i]);
}

static void fill_send(const run_t *run, const bufs_t *b, int r)
{
    fill(b->sb, run->o->dtype, b->sn, r);
}

/* A one-element MIN allreduce of *flag on the world communicator with the
 * default algorithm (an empty spec), whatever -a forces for the measured
 * calls: it lines the ranks' clocks up like a barrier and tells every rank
 * whether all flags were set. */
static hccn_status_t agree(hccn_ctx_t *ctx, int32_t *flag)
{
    hccn_coll_opts_t opts = {.struct_size = sizeof(opts), .compress = -1,
                             .algo = ""};
    return hccn_allreduce_opts(hccn_comm_world(ctx), flag, flag, 1,
                               HCCN_INT32, HCCN_MIN, &opts, NULL);
}

/* Allocates the buffers and agrees with the other ranks that every rank
 * has them, so that a size too big for one arena fails on every rank
 * instead of leaving the others waiting in the collective. */
static hccn_status_t bufs_agree(hccn_ctx_t *ctx, const run_t *run,
                                size_t cnt, bufs_t *b, int32_t *flag)
{
    hccn_status_t mine = bufs_alloc(ctx, run, cnt, b);
    *flag = mine == HCCN_OK;
    hccn_status_t rc = agree(ctx, flag);
    if (rc != HCCN_OK)
        return rc;
    if (mine != HCCN_OK)
        return mine;
    return *flag ? HCCN_OK : HCCN_ERR_REMOTE;
}

/* Warm-up, then the timed loop; in place the SEND data is refilled before
 * the last iteration so that the check sees one call's result. */
static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    run_t *run = arg;
    const opts_t *o = run->o;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    size_t cnt = call_count(run->coll, run->bytes, hccn_dtype_size(o->dtype),
                            n);
    bufs_t b = {0};
    int32_t *flag;
    hccn_status_t rc = hccn_malloc(ctx, sizeof(*flag), (void **)&flag);
    if (rc != HCCN_OK)
        return rc;
    if ((rc = bufs_agree(ctx, run, cnt, &b, flag)) != HCCN_OK)
        goto free_bufs;
    fill_send(run, &b, r);
    for (int i = 0; i < o->warmup && rc == HCCN_OK; i++)
        rc = call(run, w, b.sb, b.rb, cnt);
    if (rc != HCCN_OK || (rc = agree(ctx, flag)) != HCCN_OK)
        goto free_bufs;
    double w0 = wall_now();
    run->start[r] = hccn_time(ctx);
    for (int i = 0; i < o->iters && rc == HCCN_OK; i++) {
        if (run->inplace && o->check && i == o->iters - 1 &&
            (o->warmup > 0 || i > 0))
            fill_send(run, &b, r);
        rc = call(run, w, b.sb, b.rb, cnt);
    }
    run->end[r] = hccn_time(ctx);
    if (r == 0)
        run->wall = wall_now() - w0;
    int has_result = !(run->coll == C_REDUCE && r != o->root);
    run->wrong[r] = -1;
    if (rc == HCCN_OK && o->check && checkable(run->coll, o->op))
        run->wrong[r] = has_result ? count_wrong(run->coll, o->op, o->dtype,
                                                 b.rb, b.rn, n, r, o->root,
                                                 cnt)
                                   : 0;
free_bufs:
    bufs_free(ctx, &b);
    hccn_free(ctx, flag);
    return rc;
}

static int parse_size(const char *s, size_t *out)
{
    uint64_t v;
    if (tool_parse_size(s, &v) != 0)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_int(const char *s, int min, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < min || v > 1000000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_dtype(const char *s, hccn_dtype_t *out)
{
    static const struct { const char *name; hccn_dtype_t dt; } alias[] = {
        {"half", HCCN_FP16}, {"float", HCCN_FP32}, {"double", HCCN_FP64},
        {"bfloat16", HCCN_BF16}, {"int", HCCN_INT32}, {"char", HCCN_INT8},
        {"uint", HCCN_UINT32},
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

/* The collectives named by argv[1]: one, or every one for "all". */
static int parse_colls(const char *s, opts_t *o)
{
    for (int c = 0; c < C_COUNT; c++)
        if (strcmp(s, "all") == 0 || strcmp(s, coll_names[c]) == 0)
            o->colls[o->ncolls++] = c;
    return o->ncolls > 0 ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(f,
        "usage: hccn-perf COLLECTIVE [options]\n"
        "  COLLECTIVE: allreduce reduce_scatter allgather broadcast reduce\n"
        "              alltoall, or all (each in turn)\n"
        "  -t, --topo FILE        topology (default configs/default.json)\n"
        "  -b, --minbytes N       smallest size (default 8; K/M/G suffixes)\n"
        "  -e, --maxbytes N       largest size (default 32M)\n"
        "  -f, --stepfactor F     multiply the size by F (default 2)\n"
        "  -i, --stepbytes N      or add N bytes each step\n"
        "  -n, --iters N          timed iterations per size (default 5)\n"
        "  -w, --warmup_iters N   warm-up iterations (default 1)\n"
        "  -c, --check 0|1        check results (default 1)\n"
        "  -d, --datatype T       int8 uint8 int16 uint16 int32 uint32 int64\n"
        "                         uint64 half bfloat16 float double "
        "(default float)\n"
        "  -o, --op OP            sum prod max min avg (default sum)\n"
        "  -r, --root N           root of broadcast and reduce (default 0)\n"
        "  -a, --algo NAME        force an algorithm (sets HCCN_ALGO)\n"
        "      --inplace          in-place calls only (default: out-of-place "
        "and in-place)\n"
        "      --set PATH=VALUE   change a topology field before loading it\n"
        "                         (repeatable; e.g. network.lat_us=2)\n"
        "      --sweep PATH=V1,V2,...  measure once per value of PATH\n"
        "      --format nccl|hccl table columns (default nccl)\n"
        "      --json FILE        write every record as JSON\n"
        "      --csv FILE         write every record as CSV\n"
        "      --trace FILE       write a timeline of every run (Chrome "
        "trace JSON:\n"
        "                         ui.perfetto.dev, chrome://tracing)\n"
        "      --no-data          timing only: no bytes moved, no threads; "
        "same times\n"
        "      --no-fold          timing only: simulate every node even where "
        "all\n"
        "                         run alike (slower; same times)\n"
        "Times are simulated microseconds; wall is the simulation's own "
        "time. See docs/perf.md.\n");
}

typedef struct {
    opts_t o;
    topo_spec_t topo;
    report_t rep;
    link_sum_t links;           /* the current collective's runs */
    hccn_sim_trace_t *trace;    /* --trace, or NULL */
} cli_t;

/* Parses the options after the collective. Returns -1 to go on, or the
 * exit status. */
static int parse_args(int argc, char **argv, cli_t *cli)
{
    enum { O_INPLACE = 256, O_SET, O_SWEEP, O_FORMAT, O_JSON, O_CSV,
           O_NODATA, O_NOFOLD, O_TRACE };
    static const struct option lo[] = {
        {"topo", 1, 0, 't'}, {"minbytes", 1, 0, 'b'}, {"maxbytes", 1, 0, 'e'},
        {"stepfactor", 1, 0, 'f'}, {"stepbytes", 1, 0, 'i'},
        {"iters", 1, 0, 'n'}, {"warmup_iters", 1, 0, 'w'},
        {"check", 1, 0, 'c'}, {"datatype", 1, 0, 'd'}, {"op", 1, 0, 'o'},
        {"root", 1, 0, 'r'}, {"algo", 1, 0, 'a'},
        {"inplace", 0, 0, O_INPLACE}, {"set", 1, 0, O_SET},
        {"sweep", 1, 0, O_SWEEP}, {"format", 1, 0, O_FORMAT},
        {"json", 1, 0, O_JSON}, {"csv", 1, 0, O_CSV},
        {"trace", 1, 0, O_TRACE},
        {"no-data", 0, 0, O_NODATA}, {"no-fold", 0, 0, O_NOFOLD},
        {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
    opts_t *o = &cli->o;
    int ch;
    optind = 2;
    while ((ch = getopt_long(argc, argv, "t:b:e:f:i:n:w:c:d:o:r:a:h", lo,
                             NULL)) != -1) {
        int bad = 0;
        switch (ch) {
        case 't': cli->topo.path = optarg; break;
        case 'b': bad = parse_size(optarg, &o->min_bytes); break;
        case 'e': bad = parse_size(optarg, &o->max_bytes); break;
        case 'f': o->factor = atof(optarg); bad = !(o->factor > 1.0); break;
        case 'i': bad = parse_size(optarg, &o->step) || o->step == 0; break;
        case 'n': bad = parse_int(optarg, 1, &o->iters); break;
        case 'w': bad = parse_int(optarg, 0, &o->warmup); break;
        case 'c': bad = parse_int(optarg, 0, &o->check); break;
        case 'd': bad = parse_dtype(optarg, &o->dtype); break;
        case 'o': bad = parse_op(optarg, &o->op); break;
        case 'r': bad = parse_int(optarg, 0, &o->root); break;
        case 'a': setenv("HCCN_ALGO", optarg, 1); cli->rep.algo = optarg; break;
        case O_INPLACE: o->variants = V_IP; break;
        case O_SET:
            bad = cli->topo.nsets == PERF_SETS_MAX;
            if (!bad)
                cli->topo.sets[cli->topo.nsets++] = optarg;
            break;
        case O_SWEEP:
            if (cli->topo.sweep_path != NULL) {
                fprintf(stderr, "hccn-perf: only one --sweep is allowed\n");
                return 2;
            }
            if (parse_sweep(&cli->topo, optarg) != 0)
                return 2;
            break;
        case O_FORMAT:
            bad = strcmp(optarg, "nccl") != 0 && strcmp(optarg, "hccl") != 0;
            cli->rep.format = strcmp(optarg, "hccl") == 0 ? FMT_HCCL
                                                          : FMT_NCCL;
            break;
        case O_JSON: o->json = optarg; break;
        case O_CSV: o->csv = optarg; break;
        case O_TRACE: o->trace = optarg; break;
        case O_NODATA: o->nodata = 1; break;
        case O_NOFOLD: o->nofold = 1; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
        if (bad) {
            fprintf(stderr, "hccn-perf: bad value '%s' for %s\n", optarg,
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "hccn-perf: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (o->min_bytes > o->max_bytes) {
        fprintf(stderr, "hccn-perf: -b is larger than -e\n");
        return 2;
    }
    if (o->nofold && !o->nodata) {
        fprintf(stderr, "hccn-perf: --no-fold applies to timing-only runs; "
                        "add --no-data\n");
        return 2;
    }
    if (o->trace != NULL && o->nodata) {
        fprintf(stderr, "hccn-perf: --trace needs the run with data; drop "
                        "--no-data\n");
        return 2;
    }
    if (o->variants == 0)
        o->variants = cli->rep.format == FMT_HCCL ? V_OOP : V_OOP | V_IP;
    return -1;
}

/* Fills rec for one variant of one size that took t simulated seconds per
 * call (wall: host seconds of the timed loop). */
static void fill_record(record_t *rec, const opts_t *o, coll_t c, int n,
                        int nodes, int inplace, size_t bytes, double t,
                        double wall)
{
    size_t es = hccn_dtype_size(o->dtype);
    size_t size = call_count(c, bytes, es, n) * es;
    if (c == C_REDUCE_SCATTER || c == C_ALLGATHER || c == C_ALLTOALL)
        size *= (size_t)n;
    rec->coll = c;
    rec->nranks = n;
    rec->nodes = nodes;
    rec->size = size;
    rec->count = size / es;
    rec->inplace = inplace;
    rec->time_us = t * 1e6;
    rec->algbw = t > 0 ? (double)size / t / 1e9 : 0.0;
    rec->factor = bus_factor(c, n);
    rec->busbw = rec->algbw * rec->factor;
    rec->wrong = -1;
    rec->wall_us = wall / o->iters * 1e6;
    rec->folded = -1;
}

/* Runs one variant of one size on cl, fills rec and adds the run's link
 * totals to links. Returns the run's status (hccn_last_error() says why
 * on failure). */
static hccn_status_t measure(hccn_cluster_t *cl, const opts_t *o, coll_t c,
                             int inplace, size_t bytes, record_t *rec,
                             link_sum_t *links)
{
    int n = hccn_cluster_size(cl);
    run_t run = {.o = o, .coll = c, .inplace = inplace, .bytes = bytes};
    run.start = calloc((size_t)n, sizeof(double));
    run.end = calloc((size_t)n, sizeof(double));
    run.wrong = calloc((size_t)n, sizeof(long));
    hccn_status_t rc = hccn_cluster_run(cl, rank_fn, &run, NULL);
    if (rc == HCCN_OK) {
        links_add_run(links, cl);
        double t0 = run.start[0], t1 = run.end[0];
        long wrong = 0;
        for (int r = 0; r < n; r++) {
            t0 = fmax(t0, run.start[r]);
            t1 = fmax(t1, run.end[r]);
            wrong += run.wrong[r] > 0 ? run.wrong[r] : 0;
        }
        fill_record(rec, o, c, n, hccn_cluster_nodes(cl), inplace, bytes,
                    (t1 - t0) / o->iters, run.wall);
        rec->wrong = run.wrong[0] < 0 ? -1 : wrong;
    }
    free(run.start);
    free(run.end);
    free(run.wrong);
    return rc;
}

static int write_trace(hccn_sim_trace_t *tr, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    int rc = hccn_sim_trace_write(tr, f);
    return fclose(f) == 0 && rc == 0 ? 0 : -1;
}

static const hccn_coll_t lib_coll[C_COUNT] = {
    HCCN_COLL_ALLREDUCE, HCCN_COLL_REDUCE_SCATTER, HCCN_COLL_ALLGATHER,
    HCCN_COLL_BROADCAST, HCCN_COLL_REDUCE, HCCN_COLL_ALLTOALL};

/* As measure, timing only: the calls rank_fn makes (the agreement before
 * the warm-up, the warm-up, the agreement, the timed loop) are timed by
 * the engine without data; the times are the ones measure would give. If
 * the run is not folded, why not goes to nofold (256 bytes). */
static hccn_status_t measure_nodata(const hccn_sim_topo_t *topo,
                                    const opts_t *o, coll_t c, int inplace,
                                    size_t bytes, record_t *rec,
                                    char *nofold)
{
    int n = topo->nnpus, ncalls = 2 + o->warmup + o->iters;
    hccn_rt_pcall_t agree = {.coll = HCCN_COLL_ALLREDUCE, .count = 1,
                             .dtype = HCCN_INT32, .inplace = 1, .spec = ""};
    hccn_rt_pcall_t meas = {
        .coll = lib_coll[c], .dtype = o->dtype, .root = o->root,
        .inplace = inplace, .spec = getenv("HCCN_ALGO"),
        .count = call_count(c, bytes, hccn_dtype_size(o->dtype), n)};
    hccn_rt_pcall_t *calls = malloc((size_t)ncalls * sizeof(*calls));
    double *ends = malloc((size_t)ncalls * sizeof(*ends));
    hccn_status_t rc = HCCN_ERR_NOMEM;
    if (calls != NULL && ends != NULL) {
        for (int i = 0; i < ncalls; i++)
            calls[i] = i == 0 || i == 1 + o->warmup ? agree : meas;
        double w0 = wall_now();
        hccn_rt_popts_t po = {.no_fold = o->nofold};
        rc = hccn_rt_predict_opts(topo, calls, ncalls, ends, &po);
        if (rc == HCCN_OK) {
            fill_record(rec, o, c, n, topo->nnodes, inplace, bytes,
                        (ends[ncalls - 1] - ends[1 + o->warmup]) / o->iters,
                        wall_now() - w0);
            rec->folded = po.folded;
            if (!po.folded)
                snprintf(nofold, 256, "%s", po.why);
        }
    }
    free(calls);
    free(ends);
    return rc;
}

/* What one block runs on: a cluster, or its topology alone (--no-data). */
typedef struct {
    hccn_cluster_t *cl;
    hccn_sim_topo_t *topo;
    int n, nodes;
} target_t;

static int make_target(const cli_t *cli, int v, target_t *t)
{
    memset(t, 0, sizeof(*t));
    if (cli->o.nodata) {
        int rc = make_topo(&cli->topo, v, &t->topo);
        if (rc == 0) {
            t->n = t->topo->nnpus;
            t->nodes = t->topo->nnodes;
        }
        return rc;
    }
    int rc = make_cluster(&cli->topo, v, &t->cl);
    if (rc == 0) {
        t->n = hccn_cluster_size(t->cl);
        t->nodes = hccn_cluster_nodes(t->cl);
    }
    return rc;
}

static void free_target(target_t *t)
{
    hccn_cluster_destroy(t->cl);
    hccn_sim_topo_free(t->topo);
}

static size_t next_size(const opts_t *o, size_t bytes)
{
    if (o->step > 0)
        return bytes + o->step;
    size_t next = (size_t)((double)bytes * o->factor);
    return next > bytes ? next : bytes + 1;
}

/* Totals over one collective, for the footer. */
typedef struct {
    double busbw_sum;
    long nbusbw, wrong;
    long nfolded;               /* timing-only runs folded onto node 0 */
    char nofold[256];           /* why the last run that was not, wasn't */
} totals_t;

/* Measures every size of collective c for sweep value v (-1: none) and
 * prints its rows. Returns 0, 1 (a run failed) or 2 (bad arguments or
 * topology); *skip is set when a forced algorithm cannot run c. */
static int run_block(cli_t *cli, coll_t c, int v, totals_t *tot, int *skip)
{
    const opts_t *o = &cli->o;
    target_t tg;
    int rc = make_target(cli, v, &tg);
    if (rc != 0)
        return rc;
    if (cli->trace != NULL && tg.cl != NULL &&
        hccn_sim_engine_set_trace(tg.cl->eng, cli->trace) != 0) {
        fprintf(stderr, "hccn-perf: --trace: out of memory\n");
        free_target(&tg);
        return 1;
    }
    int n = tg.n;
    if (o->root >= n) {
        fprintf(stderr, "hccn-perf: root %d out of range [0, %d)\n", o->root,
                n);
        free_target(&tg);
        return 2;
    }
    int run_variants = c == C_ALLTOALL ? o->variants & V_OOP : o->variants;
    if (v >= 0)
        printf("# sweep %s=%s: ", cli->topo.sweep_path,
               cli->topo.sweep_values[v]);
    else
        printf("# ");
    printf("%d ranks on %d node%s%s\n", n, tg.nodes, tg.nodes == 1 ? "" : "s",
           o->nodata ? ", timing only (no data)" : "");
    for (size_t bytes = o->min_bytes; bytes <= o->max_bytes && rc == 0;
         bytes = next_size(o, bytes)) {
        record_t recs[2];
        int have[2] = {0, 0};
        double w0 = wall_now();
        if (call_count(c, bytes, hccn_dtype_size(o->dtype), n) == 0) {
            /* Nothing to move; nccl-tests prints a row of zeros. */
            printf("# %zu B: 0 elements per rank, skipped\n", bytes);
            continue;
        }
        for (int k = 0; k < 2 && rc == 0; k++) {
            if (!(run_variants & (1 << k)))
                continue;
            hccn_status_t st =
                o->nodata ? measure_nodata(tg.topo, o, c, k, bytes, &recs[k],
                                             tot->nofold)
                          : measure(tg.cl, o, c, k, bytes, &recs[k],
                                    &cli->links);
            if (st != HCCN_OK) {
                int bad_arg = st == HCCN_ERR_INVALID ||
                              st == HCCN_ERR_UNSUPPORTED;
                if (bad_arg && cli->o.ncolls > 1 && tot->nbusbw == 0) {
                    printf("# %s skipped: %s\n", coll_names[c],
                           hccn_last_error());
                    *skip = 1;
                } else {
                    fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
                }
                rc = *skip ? 0 : bad_arg ? 2 : 1;
                break;
            }
            recs[k].sweep = v;
            have[k] = 1;
            add_record(&cli->rep, &recs[k]);
            tot->busbw_sum += recs[k].busbw;
            tot->nbusbw++;
            tot->wrong += recs[k].wrong > 0 ? recs[k].wrong : 0;
            tot->nfolded += recs[k].folded > 0;
        }
        if (rc != 0 || *skip)
            break;
        print_row(&cli->rep, o->variants, have[0] ? &recs[0] : NULL,
                  have[1] ? &recs[1] : NULL, (wall_now() - w0) * 1e3);
        fflush(stdout);
    }
    free_target(&tg);
    return rc;
}

/* Every sweep value of collective c, then the footer. */
static int run_coll(cli_t *cli, coll_t c, long *wrong)
{
    const opts_t *o = &cli->o;
    if (c == C_ALLTOALL && o->variants == V_IP) {
        printf("# alltoall has no in-place form: skipped\n");
        return o->ncolls > 1 ? 0 : 2;
    }
    char path[1024];
    printf("#\n# hccn-perf %s on %s, algorithm %s, %d iteration%s after %d "
           "warm-up; time is simulated, wall is the host's\n",
           coll_names[c], tool_safe(cli->topo.path, path, sizeof(path)),
           cli->rep.algo, o->iters,
           o->iters == 1 ? "" : "s", o->warmup);
    print_header(&cli->rep, o->variants);
    totals_t tot = {0};
    links_clear(&cli->links);
    int nv = cli->topo.sweep_path ? cli->topo.nsweep : 1, skip = 0, rc = 0;
    for (int v = 0; v < nv && rc == 0 && !skip; v++)
        rc = run_block(cli, c, cli->topo.sweep_path ? v : -1, &tot, &skip);
    if (rc == 0 && !skip) {
        printf("# Out of bounds values : %ld %s\n", tot.wrong,
               tot.wrong ? "FAILED" : "OK");
        printf("# Avg bus bandwidth    : %g\n",
               tot.nbusbw ? tot.busbw_sum / (double)tot.nbusbw : 0.0);
        if (o->nodata) {
            printf("# Folded onto node 0   : %ld of %ld runs%s%s\n",
                   tot.nfolded, tot.nbusbw, tot.nofold[0] ? "; not: " : "",
                   tot.nofold);
            printf("# Link utilisation     : not recorded in timing-only "
                   "runs\n");
        }
        else
            links_print(&cli->links);
        if (cli->rep.links == NULL)
            cli->rep.links = json_object_new_array();
        json_object_array_add(cli->rep.links,
                              links_json(&cli->links, coll_names[c]));
    }
    *wrong += tot.wrong;
    return rc;
}

int main(int argc, char **argv)
{
    cli_t cli = {
        .o = {.min_bytes = 8, .max_bytes = 32u << 20, .factor = 2.0,
              .iters = 5, .warmup = 1, .check = 1, .dtype = HCCN_FP32,
              .op = HCCN_SUM},
        .topo = {.path = "configs/default.json"},
        .rep = {.format = FMT_NCCL, .algo = "auto"}};
    if (argc < 2 || argv[1][0] == '-') {
        int help = argc >= 2 && (!strcmp(argv[1], "-h") ||
                                 !strcmp(argv[1], "--help"));
        usage(help ? stdout : stderr);
        return help ? 0 : 2;
    }
    if (parse_colls(argv[1], &cli.o) != 0) {
        fprintf(stderr, "hccn-perf: unknown collective '%s'\n", argv[1]);
        usage(stderr);
        return 2;
    }
    int rc = parse_args(argc, argv, &cli);
    if (rc >= 0)
        goto free_spec;
    if (cli.o.trace != NULL && (cli.trace = hccn_sim_trace_create()) == NULL) {
        fprintf(stderr, "hccn-perf: --trace: out of memory\n");
        rc = 1;
        goto free_spec;
    }
    /* Check the topology, every edit and every sweep value before running. */
    int nv = cli.topo.sweep_path ? cli.topo.nsweep : 1;
    for (int v = 0; v < nv; v++) {
        target_t tg;
        if ((rc = make_target(&cli, cli.topo.sweep_path ? v : -1, &tg)) != 0)
            goto free_spec;
        free_target(&tg);
    }
    report_t *rep = &cli.rep;
    rep->config = cli.topo.path;
    rep->sets = cli.topo.sets;
    rep->nsets = cli.topo.nsets;
    rep->sweep_path = cli.topo.sweep_path;
    rep->sweep_values = cli.topo.sweep_values;
    rep->dtype = cli.o.dtype;
    rep->op = cli.o.op;
    rep->root = cli.o.root;
    rep->iters = cli.o.iters;
    rep->warmup = cli.o.warmup;
    long wrong = 0;
    for (int i = 0; i < cli.o.ncolls && rc <= 0; i++)
        rc = run_coll(&cli, (coll_t)cli.o.colls[i], &wrong);
    if (rc <= 0 && cli.o.json && write_json(rep, cli.o.json) != 0) {
        fprintf(stderr, "hccn-perf: cannot write %s\n", cli.o.json);
        rc = 1;
    }
    if (rc <= 0 && cli.o.csv && write_csv(rep, cli.o.csv) != 0) {
        fprintf(stderr, "hccn-perf: cannot write %s\n", cli.o.csv);
        rc = 1;
    }
    if (rc <= 0 && cli.trace && write_trace(cli.trace, cli.o.trace) != 0) {
        fprintf(stderr, "hccn-perf: cannot write %s\n", cli.o.trace);
        rc = 1;
    }
    if (rc <= 0)
        rc = wrong ? 1 : 0;
    free(rep->recs);
    json_object_put(rep->links);
    links_clear(&cli.links);
free_spec:
    hccn_sim_trace_destroy(cli.trace);
    free_spec(&cli.topo);
    return rc;
}
