/*
 * hccn-perf: nccl-tests style benchmark of the collectives on a simulated
 * cluster (docs/perf.md). Times are simulated (what the described cluster
 * would take); the wall column says how long the simulation itself took.
 *
 *   hccn-perf allreduce -b 8 -e 256M -f 2 -t configs/default.json
 *   hccn-perf all -e 1M --set node_types[0].nics.bw_GBps=50
 *   hccn-perf allreduce --sweep network.lat_us=1,2,4 --json out.json
 *   hccn-perf allreduce -b 1M -e 1M -n 1 --trace run.json
 *   hccn-perf allreduce -e 64M --sweep-faults nic:slow=0.5
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
#include "hccn/hccn_sim.h"
#include "tools/tool_text.h"
#include "tools/perf_data.h"
#include "tools/perf_links.h"
#include "tools/perf_report.h"
#include "tools/perf_topo.h"
#include "tools/perf_faults.h"
#include "tools/tool_size.h"
#include "tools/perf_calls.h"
#include "tools/perf_args.h"

/* A one-element MIN allreduce of *flag on the world communicator with the
 * default algorithm (an empty spec), whatever --algo forces for the measured
 * calls: it lines the ranks' clocks up like a barrier and tells every rank
 * whether all flags were set. */
static hccn_status_t agree(hccn_ctx_t *ctx, int32_t *flag)
{
    hccn_coll_opts_t opts = {.struct_size = sizeof(opts), .compress = -1,
                             .algo = ""};
    /* The tool's own: left out of traces and summaries. */
    hccn_mark(ctx, HCCN_MARK_SYNC);
    hccn_status_t rc = hccn_allreduce_opts(hccn_comm_world(ctx), flag, flag,
                                           1, HCCN_INT32, HCCN_MIN, &opts,
                                           NULL);
    hccn_mark(ctx, HCCN_MARK_USER);
    return rc;
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

/* A cluster across processes (docs/processes.md): the ranks of other
 * processes wrote their start, end and check into those processes' run:
 * an allgather (the tool's own, like agree's) brings them to every rank.
 * In one process it is not needed and not made. */
static hccn_status_t gather_results(hccn_ctx_t *ctx, run_t *run)
{
    if (hccn_cluster_proc_world(hccn_ctx_cluster(ctx)) <= 1)
        return HCCN_OK;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    double *v;
    hccn_status_t rc = hccn_malloc(ctx, (size_t)n * 3 * sizeof(double),
                                   (void **)&v);
    if (rc != HCCN_OK)
        return rc;
    double *mine = v + 3 * r;
    mine[0] = run->start[r];
    mine[1] = run->end[r];
    mine[2] = (double)run->wrong[r];
    hccn_mark(ctx, HCCN_MARK_SYNC);
    rc = hccn_allgather(hccn_comm_world(ctx), mine, v, 3, HCCN_FP64);
    hccn_mark(ctx, HCCN_MARK_USER);
    for (int i = 0; i < n && rc == HCCN_OK && r == 0; i++) {
        run->start[i] = v[3 * i];
        run->end[i] = v[3 * i + 1];
        run->wrong[i] = (long)v[3 * i + 2];
    }
    hccn_free(ctx, v);
    return rc;
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
    hccn_mark(ctx, HCCN_MARK_WARMUP);       /* traced as "NAME (warm-up)" */
    for (int i = 0; i < o->warmup && rc == HCCN_OK; i++)
        rc = call(run, w, b.sb, b.rb, cnt);
    hccn_mark(ctx, HCCN_MARK_USER);
    if (rc != HCCN_OK || (rc = agree(ctx, flag)) != HCCN_OK)
        goto free_bufs;
    double w0 = wall_now();
    /* -m: o->agg calls per iteration, in one group (nccl-tests' agg
     * iterations); the point-to-point tests wait inside, so not grouped. */
    int group = o->agg > 1 && lib_coll[run->coll] >= 0;
    int refill = run->inplace && o->check;
    int async = o->nonblocking && o->agg == 1 && run->coll < C_ALL;
    run->start[r] = hccn_time(ctx);
    if (async)
        rc = timed_async(run, w, b.sb, b.rb, cnt);
    for (int i = 0; i < o->iters && rc == HCCN_OK && !async; i++) {
        if (refill && o->agg == 1 && i == o->iters - 1 &&
            (o->warmup > 0 || i > 0))
            fill_send(run, &b, r);
        if (group)
            rc = hccn_group_start(ctx);
        for (int k = 0; k < o->agg && rc == HCCN_OK; k++)
            rc = call(run, w, b.sb, b.rb, cnt);
        if (group) {
            hccn_status_t ge = hccn_group_end(ctx);
            rc = rc != HCCN_OK ? rc : ge;
        }
    }
    run->end[r] = hccn_time(ctx);
    if (r == 0)
        run->wall = wall_now() - w0;
    /* In place, aggregated or unwaited calls chain: check one more call,
     * untimed. */
    if (refill && (o->agg > 1 || async) && rc == HCCN_OK) {
        fill_send(run, &b, r);
        rc = call(run, w, b.sb, b.rb, cnt);
    }
    if (r == 0 && rc == HCCN_OK && lib_coll[run->coll] >= 0) {
        run->choice.struct_size = sizeof(run->choice);
        rc = hccn_comm_last_choice(w, &run->choice);
    }
    int has_result = !((run->coll == C_REDUCE || run->coll == C_GATHER) &&
                       r != o->root);
    run->wrong[r] = -1;
    if (rc == HCCN_OK && o->check && checkable(run->coll, o->op))
        run->wrong[r] = has_result ? count_wrong(run->coll, o->op, o->dtype,
                                                 b.rb, b.rn, n, r, o->root,
                                                 cnt)
                                   : 0;
    if (rc == HCCN_OK)
        rc = gather_results(ctx, run);
free_bufs:
    bufs_free(ctx, &b);
    hccn_free(ctx, flag);
    return rc;
}

/* Fills rec for one variant of one size that took t simulated seconds per
 * call (wall: host seconds of the timed loop). */
static void fill_record(record_t *rec, const opts_t *o, coll_t c, int n,
                        int nodes, int inplace, size_t bytes, double t,
                        double wall)
{
    size_t es = hccn_dtype_size(o->dtype);
    size_t size = call_count(c, bytes, es, n) * es;
    if (c == C_REDUCE_SCATTER || c == C_ALLGATHER || c == C_ALLTOALL ||
        c == C_SCATTER || c == C_GATHER || c == C_HYPERCUBE)
        size *= (size_t)n;
    rec->coll = c;
    rec->nranks = n;
    rec->nodes = nodes;
    rec->size = size;
    rec->count = size / es;
    rec->inplace = inplace;
    rec->time_us = t * 1e6;
    rec->dtype = o->dtype;
    rec->op = o->op;
    /* nccl-tests' hypercube counts the bytes each rank receives. */
    double moved = c == C_HYPERCUBE ? (double)size * (n - 1) / n
                                    : (double)size;
    rec->algbw = t > 0 ? moved / t / 1e9 : 0.0;
    rec->factor = bus_factor(c, n);
    rec->busbw = rec->algbw * rec->factor;
    rec->wrong = -1;
    rec->wall_us = wall / (o->iters * o->agg) * 1e6;
    rec->folded = -1;
}

/* nccl-tests' -a: the ranks' own loop times (end - start) taken from
 * rank 0 (0), or combined by mean (1), min (2) or max (3). */
static double average(int mode, const double *start, const double *end,
                      int n)
{
    double acc = end[0] - start[0];
    for (int r = 1; r < n && mode != 0; r++) {
        double t = end[r] - start[r];
        acc = mode == 2 ? fmin(acc, t) : mode == 3 ? fmax(acc, t) : acc + t;
    }
    return mode == 1 ? acc / n : acc;
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
        double t = o->cputime ? run.wall
                   : o->average >= 0 ? average(o->average, run.start,
                                               run.end, n)
                                     : t1 - t0;
        fill_record(rec, o, c, n, hccn_cluster_nodes(cl), inplace, bytes,
                    t / (o->iters * o->agg), run.wall);
        rec->wrong = run.wrong[0] < 0 ? -1 : wrong;
        snprintf(rec->algo, sizeof(rec->algo), "%s",
                 lib_coll[c] >= 0 ? run.choice.schedule : "p2p");
    }
    free(run.start);
    free(run.end);
    free(run.wrong);
    return rc;
}


/* As measure, timing only: the calls rank_fn makes (the agreement before
 * the warm-up, the warm-up, the agreement, the timed loop) are timed by
 * the engine without data; the times are the ones measure would give. If
 * the run is not folded, why not goes to nofold (256 bytes). */
static hccn_status_t measure_nodata(const hccn_topo_t *topo,
                                    const opts_t *o, coll_t c, int inplace,
                                    size_t bytes, record_t *rec,
                                    char *nofold)
{
    int n = hccn_topo_npus(topo), ncalls = 2 + o->warmup + o->iters * o->agg;
    hccn_call_t agree = {.struct_size = sizeof(agree),
                         .coll = HCCN_COLL_ALLREDUCE, .count = 1,
                         .dtype = HCCN_INT32, .inplace = 1, .algo = ""};
    hccn_call_t meas = {
        .struct_size = sizeof(meas), .coll = (hccn_coll_t)lib_coll[c],
        .dtype = o->dtype,
        .root = o->root, .inplace = inplace, .algo = getenv("HCCN_ALGO"),
        .count = call_count(c, bytes, hccn_dtype_size(o->dtype), n)};
    hccn_call_t *calls = malloc((size_t)ncalls * sizeof(*calls));
    double *ends = malloc((size_t)ncalls * sizeof(*ends));
    hccn_status_t rc = HCCN_ERR_NOMEM;
    if (calls != NULL && ends != NULL) {
        for (int i = 0; i < ncalls; i++)
            calls[i] = i == 0 || i == 1 + o->warmup ? agree : meas;
        double w0 = wall_now();
        hccn_predict_opts_t po = {.struct_size = sizeof(po),
                                  .no_fold = o->nofold};
        rc = hccn_predict(topo, calls, ncalls, ends, &po);
        if (rc == HCCN_OK) {
            fill_record(rec, o, c, n, hccn_topo_nodes(topo), inplace, bytes,
                        (ends[ncalls - 1] - ends[1 + o->warmup]) /
                            (o->iters * o->agg),
                        wall_now() - w0);
            rec->folded = po.folded;
            if (!po.folded)
                snprintf(nofold, 256, "%s", po.why);
            /* The measured call is the last: what it ran, without
             * choosing again. */
            snprintf(rec->algo, sizeof(rec->algo), "%s", po.schedule);
        }
    }
    free(calls);
    free(ends);
    return rc;
}

/* What one block runs on: a cluster, or its topology alone (--no-data). */
typedef struct {
    hccn_cluster_t *cl;
    hccn_topo_t *topo;
    int n, nodes;
} target_t;

static int make_target(const cli_t *cli, int v, target_t *t)
{
    memset(t, 0, sizeof(*t));
    if (cli->o.nodata) {
        int rc = make_topo(&cli->topo, v, &t->topo);
        if (rc == 0) {
            t->n = hccn_topo_npus(t->topo);
            t->nodes = hccn_topo_nodes(t->topo);
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
    hccn_topo_free(t->topo);
}

#include "tools/perf_fsweep.h"

/* Collectives measured out of place only (as nccl-tests' alltoall). */
static int oop_only(coll_t c)
{
    return c == C_ALLTOALL || c == C_SENDRECV || c == C_SCATTER ||
           c == C_GATHER;
}

/* nccl-tests' -g and -t must make the ranks of each of its processes
 * (one thread per NPU here: the ranks, divided by -t x -g, are mpirun's
 * process count), and point-to-point tests need data. Returns 0, or 2
 * with the error printed. */
static int check_target(const cli_t *cli, const target_t *tg)
{
    const opts_t *o = &cli->o;
    int g = o->gpus ? o->gpus : 1, t = o->threads ? o->threads : 1;
    if ((o->gpus || o->threads) && tg->n % (g * t) != 0) {
        fprintf(stderr, "hccn-perf: options -g %d x -t %d make %d ranks per "
                "process, which do not divide the %d NPUs of %s (one thread "
                "per NPU here)\n", g, t, g * t, tg->n, cli->topo.path);
        return 2;
    }
    for (int i = 0; i < o->ncolls; i++)
        if (o->colls[i] == C_HYPERCUBE && (tg->n & (tg->n - 1)) != 0) {
            fprintf(stderr, "hccn-perf: hypercube needs a power-of-two "
                    "number of ranks; %s has %d\n", cli->topo.path, tg->n);
            return 2;
        }
    for (int i = 0; i < o->ncolls; i++)
        if (o->nodata && lib_coll[o->colls[i]] < 0) {
            fprintf(stderr, "hccn-perf: %s: --no-data times collectives "
                    "only; drop --no-data\n", coll_names[o->colls[i]]);
            return 2;
        }
    return 0;
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
    long nfolded;               /* timing-only runs folded (predict.h) */
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
        hccn_trace_attach(tg.cl, cli->trace) != HCCN_OK) {
        fprintf(stderr, "hccn-perf: --trace: %s\n", hccn_last_error());
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
    int run_variants = oop_only(c) ? o->variants & V_OOP : o->variants;
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
    if (oop_only(c) && o->variants == V_IP) {
        printf("# %s has no in-place form: skipped\n", coll_names[c]);
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
            printf("# Folded               : %ld of %ld runs%s%s\n",
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
              .op = HCCN_SUM, .average = -1, .agg = 1},
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
    /* Failure what-ifs (--fault, --sweep-faults): tools/perf_faults.h. */
    if ((rc = faults_prepare(&cli.topo)) != 0)
        goto free_spec;
    if (perf_faults.sweep != NULL) {
        rc = sweep_faults(&cli);
        goto free_spec;
    }
    if (cli.o.trace != NULL && hccn_trace_create(&cli.trace) != HCCN_OK) {
        fprintf(stderr, "hccn-perf: --trace: out of memory\n");
        rc = 1;
        goto free_spec;
    }
    if ((rc = spec_gpus(&cli.topo, cli.o.gpus)) != 0)   /* -g: host thread */
        goto free_spec;
    /* Check the topology, every edit and every sweep value before running. */
    int nv = cli.topo.sweep_path ? cli.topo.nsweep : 1;
    for (int v = 0; v < nv; v++) {
        target_t tg;
        if ((rc = make_target(&cli, cli.topo.sweep_path ? v : -1, &tg)) != 0)
            goto free_spec;
        rc = check_target(&cli, &tg);
        free_target(&tg);
        if (rc != 0)
            goto free_spec;
    }
    report_t *rep = &cli.rep;
    rep->config = cli.topo.path;
    rep->sets = cli.topo.sets;
    rep->nsets = cli.topo.nsets;
    rep->sweep_path = cli.topo.sweep_path;
    rep->sweep_values = cli.topo.sweep_values;
    rep->root = cli.o.root;
    rep->iters = cli.o.iters;
    rep->warmup = cli.o.warmup;
    long wrong = 0;
    /* nccl-tests' order: per collective, every dtype, every operator (the
     * operators only for collectives that reduce). */
    hccn_dtype_t dt0 = cli.o.dtype;
    hccn_redop_t op0 = cli.o.op;
    int nd = cli.o.all_dtypes ? HCCN_DTYPE_COUNT : 1;
    for (int i = 0; i < cli.o.ncolls && rc <= 0; i++) {
        coll_t c = (coll_t)cli.o.colls[i];
        int no = cli.o.all_ops && reduces(c) ? HCCN_REDOP_COUNT : 1;
        for (int d = 0; d < nd && rc <= 0; d++)
            for (int k = 0; k < no && rc <= 0; k++) {
                cli.o.dtype = cli.o.all_dtypes ? (hccn_dtype_t)d : dt0;
                cli.o.op = cli.o.all_ops ? (hccn_redop_t)k : op0;
                rc = run_coll(&cli, c, &wrong);
            }
    }
    if (perf_client)   /* the host writes them */
        cli.o.json = cli.o.csv = cli.o.trace = NULL;
    if (rc <= 0 && cli.o.json && write_json(rep, cli.o.json) != 0) {
        fprintf(stderr, "hccn-perf: cannot write %s\n", cli.o.json);
        rc = 1;
    }
    if (rc <= 0 && cli.o.csv && write_csv(rep, cli.o.csv) != 0) {
        fprintf(stderr, "hccn-perf: cannot write %s\n", cli.o.csv);
        rc = 1;
    }
    if (rc <= 0 && cli.trace && cli.o.trace &&
        hccn_trace_write(cli.trace, cli.o.trace) != HCCN_OK) {
        fprintf(stderr, "hccn-perf: cannot write %s\n", cli.o.trace);
        rc = 1;
    }
    if (rc <= 0)
        rc = wrong ? 1 : 0;
    free(rep->recs);
    json_object_put(rep->links);
    links_clear(&cli.links);
free_spec:
    faults_free();
    hccn_trace_destroy(cli.trace);
    free_spec(&cli.topo);
    return rc;
}
