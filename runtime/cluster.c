/*
 * Clusters: creation from a topology, SPMD runs, rank contexts and
 * simulated time (device memory: memory.c).
 */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/trace.h"
#include "runtime/predict.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

#define DEFAULT_TIMEOUT_S 300.0
#define DEFAULT_DRIVE_BYTES 65536
#define MAX_TIMEOUT_S 1e9

/* A field of caller's options, if the caller's struct is large enough to
 * hold it (older callers pass a smaller struct_size). */
#define OPT_HAS(opts, field)                                                  \
    ((opts) != NULL &&                                                        \
     (opts)->struct_size >= offsetof(hccn_cluster_opts_t, field) +            \
                                sizeof((opts)->field))

static double env_timeout(void)
{
    const char *s = getenv("HCCN_TIMEOUT");
    if (s == NULL || *s == '\0')
        return DEFAULT_TIMEOUT_S;
    char *end;
    double v = strtod(s, &end);
    /* Up to 1e9 s: an infinite wait ("inf", 1e999) is not a timeout. */
    return (*end == '\0' && v > 0.0 && v <= MAX_TIMEOUT_S) ? v
                                                           : DEFAULT_TIMEOUT_S;
}

/* An integer option: opt when the caller set it (non-zero), else the
 * environment variable env when it holds an integer, else dflt. */
static long long int_option(long long opt, const char *env, long long dflt)
{
    if (opt != 0)
        return opt;
    const char *s = getenv(env);
    if (s == NULL || *s == '\0')
        return dflt;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end == '\0' ? v : dflt;
}

/* Driven collectives: a byte count; 0 or negative: never. */
static uint64_t drive_bytes(long long opt)
{
    long long v = int_option(opt, "HCCN_DRIVE_BYTES", DEFAULT_DRIVE_BYTES);
    return v > 0 ? (uint64_t)v : 0;
}

/* Host-load stress: microseconds, at most one second; 0 or negative:
 * none. */
static int jitter_us(long long opt)
{
    long long v = int_option(opt, "HCCN_JITTER_US", 0);
    return v <= 0 ? 0 : v > 1000000 ? 1000000 : (int)v;
}

/* The engine's word that a rank's awaited time is settled: count it as
 * progress (it may end a wait) and ring the rank. */
static void engine_wake(void *arg, int dev)
{
    hccn_cluster_t *cl = arg;
    atomic_fetch_add(&cl->epoch, 1);
    /* A rank that waits for its bytes gets nothing from a batch's end (a
     * repeated call's batches end as the last rank posts, while the others
     * sleep until the bytes have moved): no ring, no needless switch. */
    if (atomic_load(&cl->ctxs[dev].time_wait))
        hccn_sim_bell_ring(&cl->ctxs[dev].bell);
}

/* Refuses a topology a cluster with data cannot hold: more NPUs than
 * HCCN_MAX_CLUSTER_NPUS, or arenas adding up to more than
 * HCCN_MAX_ARENA_TOTAL_MIB (docs/topology.md, "Limits"). */
static hccn_status_t cluster_limits(const hccn_sim_topo_t *topo)
{
    if (topo->nnpus > HCCN_MAX_CLUSTER_NPUS)
        return hccn_rt_error(HCCN_ERR_UNSUPPORTED,
                             "%s: %d NPUs: a cluster with data holds at most "
                             "%d (one thread and one arena each); time "
                             "larger clusters without data (hccn-perf "
                             "--no-data, up to %d NPUs)",
                             topo->source, topo->nnpus, HCCN_MAX_CLUSTER_NPUS,
                             HCCN_MAX_TIMING_NPUS);
    uint64_t mib = 0;
    for (int r = 0; r < topo->nnpus; r++)
        mib += (uint64_t)(topo->npus[r].arena_bytes >> 20);
    if (mib > HCCN_MAX_ARENA_TOTAL_MIB)
        return hccn_rt_error(HCCN_ERR_UNSUPPORTED,
                             "%s: the arenas of the %d NPUs add up to %llu "
                             "MiB, more than the %llu MiB (64 TiB) a cluster "
                             "may map",
                             topo->source, topo->nnpus,
                             (unsigned long long)mib,
                             (unsigned long long)HCCN_MAX_ARENA_TOTAL_MIB);
    return HCCN_OK;
}

/* Maps every NPU's arena and readies its context. On failure reports which
 * arena could not be mapped (before anything is freed) and returns the
 * status; what was mapped stays for hccn_cluster_destroy. */
static hccn_status_t cluster_arenas(hccn_cluster_t *cl)
{
    const hccn_sim_topo_t *topo = cl->topo;
    uint64_t mapped = 0;
    char *shared = cl->proc != NULL ? cl->proc->region : NULL;
    for (int r = 0; r < cl->nranks; r++) {
        size_t bytes = topo->npus[r].arena_bytes;
        /* Several processes: the arenas are slices of one reserved range,
         * backed only where this process owns the rank (proc_join.c). */
        hccn_status_t ok =
            shared != NULL
                ? hccn_sim_arena_init_at(&cl->arenas[r], shared + mapped, bytes)
                : hccn_sim_arena_init(&cl->arenas[r], bytes);
        if (shared != NULL)
            bytes = hccn_rt_proc_arena_span(topo, r);
        if (ok != HCCN_OK)
            return hccn_sim_fail_context(
                "%s: cannot map the %zu-byte arena of NPU %d of %d (%llu MiB "
                "mapped before it; the process's address-space limit, ulimit "
                "-v, or vm.max_map_count)",
                topo->source, bytes, r, cl->nranks,
                (unsigned long long)(mapped >> 20));
        mapped += bytes;
        cl->ctxs[r].cl = cl;
        cl->ctxs[r].rank = r;
        cl->ctxs[r].last.kind = -1;
        cl->ctxs[r].jitter_rng = 0x9e3779b97f4a7c15ull * (uint64_t)(r + 1);
        hccn_sim_lock_init(&cl->ctxs[r].cur_lock);
    }
    return HCCN_OK;
}

/* Builds a cluster on topo (which it owns from here on, also on error). */
static hccn_status_t cluster_build(hccn_sim_topo_t *topo,
                                   const hccn_cluster_opts_t *opts,
                                   hccn_cluster_t **out)
{
    hccn_status_t rc = cluster_limits(topo);
    if (rc != HCCN_OK) {
        hccn_sim_topo_free(topo);
        return rc;
    }
    hccn_cluster_t *cl = hccn_sim_calloc(1, sizeof(*cl));
    if (cl == NULL)
        goto fail_nomem;
    cl->topo = topo;
    cl->nranks = topo->nnpus;
    pthread_mutex_init(&cl->comms_lock, NULL);
    hccn_sim_lock_init(&cl->state_lock);
    cl->timeout_s = env_timeout();
    if (OPT_HAS(opts, bind_threads))
        cl->bind_threads = opts->bind_threads;
    if (OPT_HAS(opts, timeout_s) && opts->timeout_s > 0.0)
        cl->timeout_s = opts->timeout_s <= MAX_TIMEOUT_S ? opts->timeout_s
                                                         : MAX_TIMEOUT_S;
    cl->drive_bytes = drive_bytes(OPT_HAS(opts, drive_bytes)
                                      ? opts->drive_bytes : 0);
    cl->jitter_us = jitter_us(OPT_HAS(opts, jitter_us) ? opts->jitter_us : 0);
    rt_proc_cfg_t pcfg;
    char *region;
    if ((rc = hccn_rt_proc_config(opts, &pcfg)) != HCCN_OK ||
        (pcfg.world > 1 &&
         (rc = hccn_rt_proc_open(&pcfg, topo, cl->timeout_s, &cl->proc,
                                 &region)) != HCCN_OK))
        goto fail_early;
    cl->arenas = hccn_sim_calloc((size_t)cl->nranks, sizeof(*cl->arenas));
    cl->ctxs = hccn_sim_calloc((size_t)cl->nranks, sizeof(*cl->ctxs));
    if (cl->arenas == NULL || cl->ctxs == NULL ||
        hccn_rt_cluster_register(cl) != 0)
        goto fail_nomem;
    /* The message is written before the cluster (and topo) is freed. */
    if ((rc = cluster_arenas(cl)) != HCCN_OK) {
        hccn_cluster_destroy(cl);
        return rc;
    }
    /* Bound threads have a home NUMA node: their arenas go there too. */
    if (cl->bind_threads && cl->proc == NULL) {
        int bound = hccn_sim_arena_place(cl->arenas, cl->nranks);
        if (bound > 0)
            hccn_rt_log(HCCN_LOG_INFO, "%d arenas bound to their threads' "
                        "NUMA nodes", bound);
    }
    if (topo->nfaults > 0) {
        cl->faults = hccn_sim_malloc((size_t)topo->nfaults * sizeof(*cl->faults));
        if (cl->faults == NULL)
            goto fail_destroy;
        memcpy(cl->faults, topo->faults, (size_t)topo->nfaults * sizeof(*cl->faults));
        cl->nfaults = cl->nfile_faults = cl->capfaults = topo->nfaults;
    }
    cl->eng = hccn_sim_engine_create(topo, cl->timeout_s);
    cl->select_cache = hccn_hier_cache_new();
    if (cl->eng == NULL || cl->select_cache == NULL)
        goto fail_destroy;
    hccn_sim_engine_set_wake(cl->eng, engine_wake, cl);
    int *ranks = hccn_sim_malloc((size_t)cl->nranks * sizeof(int));
    if (ranks == NULL)
        goto fail_destroy;
    for (int r = 0; r < cl->nranks; r++)
        ranks[r] = r;
    cl->world = hccn_rt_comm_new(cl, cl->nranks, ranks);
    hccn_sim_free(ranks);
    if (cl->world == NULL)
        goto fail_destroy;
    for (int r = 0; r < cl->nranks; r++)
        cl->ctxs[r].world = cl->world->handles[r];
    if (cl->proc != NULL && (rc = hccn_rt_proc_join(cl)) != HCCN_OK) {
        hccn_cluster_destroy(cl);
        return rc;
    }
    /* HCCN_TRACE=FILE; with several processes the host writes it. */
    if (!hccn_rt_proc_is_client(cl->proc))
        hccn_rt_env_trace_attach(cl);
    *out = cl;
    return HCCN_OK;

fail_destroy:
    /* Written first: the cluster owns topo, and destroy frees it. */
    rc = hccn_sim_fail_context("%s: creating a cluster of %d NPUs",
                               topo->source, cl->nranks);
    hccn_cluster_destroy(cl);
    return rc;
fail_nomem:
    rc = hccn_sim_fail_context("%s: creating a cluster of %d NPUs",
                               topo->source, topo->nnpus);
fail_early:
    if (cl != NULL) {
        hccn_rt_proc_close(cl->proc);
        hccn_sim_free(cl->arenas);
        hccn_sim_free(cl->ctxs);
        pthread_mutex_destroy(&cl->comms_lock);
        pthread_mutex_destroy(&cl->state_lock);
        hccn_sim_free(cl);
    }
    hccn_sim_topo_free(topo);
    return rc;
}

hccn_status_t hccn_cluster_create(const char *path,
                                  const hccn_cluster_opts_t *opts,
                                  hccn_cluster_t **out)
{
    char err[RT_ERR_MAX];
    hccn_sim_topo_t *topo = NULL;
    if (out == NULL || path == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_cluster_create: %s is NULL",
                             out == NULL ? "out" : "path");
    *out = NULL;
    hccn_status_t rc = hccn_sim_topo_load_file(path, &topo, err, sizeof(err));
    if (rc != HCCN_OK)
        return hccn_rt_error(rc, "%s", err);
    return cluster_build(topo, opts, out);
}

hccn_status_t hccn_cluster_create_json(const char *json, const char *name,
                                       const hccn_cluster_opts_t *opts,
                                       hccn_cluster_t **out)
{
    char err[RT_ERR_MAX];
    hccn_sim_topo_t *topo = NULL;
    if (out == NULL || json == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_cluster_create_json: %s is NULL",
                             out == NULL ? "out" : "json");
    *out = NULL;
    hccn_status_t rc = hccn_sim_topo_load_string(
        json, name != NULL ? name : "<string>", &topo, err, sizeof(err));
    if (rc != HCCN_OK)
        return hccn_rt_error(rc, "%s", err);
    return cluster_build(topo, opts, out);
}

void hccn_cluster_destroy(hccn_cluster_t *cl)
{
    if (cl == NULL || hccn_rt_cluster_check("hccn_cluster_destroy", cl) != HCCN_OK)
        return;
    /* From a rank's function (or another thread) while it runs: freeing
     * would pull the memory from under every rank. Refused, said once. */
    if (atomic_load(&cl->running)) {
        hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_destroy: the cluster "
                      "is running; nothing was destroyed (destroy it after "
                      "hccn_cluster_run returns)");
        return;
    }
    hccn_rt_cluster_forget(cl);
    hccn_rt_env_trace_detach(cl);    /* HCCN_TRACE: writes the file */
    hccn_rt_free_subcomms(cl);
    if (cl->world != NULL)
        hccn_rt_comm_free(cl->world);
    hccn_sim_engine_destroy(cl->eng);
    hccn_hier_cache_free(cl->select_cache);
    hccn_rt_sel_free(cl);
    if (cl->arenas != NULL)
        for (int r = 0; r < cl->nranks; r++)
            hccn_sim_arena_fini(&cl->arenas[r]);
    /* A context's lock exists once its arena was mapped (create stops at
     * the first arena that fails, and those after it are zeroed). */
    if (cl->ctxs != NULL)
        for (int r = 0; r < cl->nranks; r++)
            if (cl->ctxs[r].cl != NULL)
                pthread_mutex_destroy(&cl->ctxs[r].cur_lock);
    hccn_sim_free(cl->arenas);
    hccn_sim_free(cl->ctxs);
    hccn_sim_free(cl->faults);
    hccn_sim_link_index_free(cl->links);
    hccn_sim_topo_free(cl->topo);
    hccn_rt_proc_close(cl->proc);
    pthread_mutex_destroy(&cl->comms_lock);
    pthread_mutex_destroy(&cl->state_lock);
    hccn_sim_free(cl);
}

int hccn_cluster_size(const hccn_cluster_t *cl)
{
    return hccn_rt_cluster_check("hccn_cluster_size", cl) == HCCN_OK
               ? cl->nranks : 0;
}

int hccn_cluster_nodes(const hccn_cluster_t *cl)
{
    return hccn_rt_cluster_check("hccn_cluster_nodes", cl) == HCCN_OK
               ? cl->topo->nnodes : 0;
}

static void rank_main(int rank, void *arg)
{
    hccn_cluster_t *cl = arg;
    hccn_ctx_t *ctx = &cl->ctxs[rank];
    hccn_rt_error_clear();
    hccn_rt_set_self(ctx);
    /* A rank run by a client process makes the calls it forwards. */
    hccn_status_t st = hccn_rt_proc_local(cl->proc, rank)
                           ? cl->fn(ctx, cl->arg)
                           : hccn_rt_proc_serve(ctx);
    if (st == HCCN_OK && ctx->group_depth > 0)
        st = hccn_rt_error(HCCN_ERR_INVALID,
                           "rank %d returned from its function inside a "
                           "group (hccn_group_start without hccn_group_end):"
                           " %d operation(s) posted in it were never waited "
                           "for",
                           rank, ctx->ngroup);
    if (st != HCCN_OK)
        snprintf(ctx->errmsg, sizeof(ctx->errmsg), "%s", hccn_last_error());
    hccn_rt_drain(ctx);
    /* The engine first: settling what this rank held back may end peers'
     * waits, which must count as progress before the rank counts as gone. */
    hccn_sim_finish(cl->eng, rank);
    hccn_rt_rank_finished(ctx);
    hccn_rt_set_self(NULL);
    cl->status[rank] = st;
}

/* How surely a rank's status is the run's cause: 2 its own failure, 1 a
 * wait that never ended, 0 a peer's failure passed on. */
static int cause_rank(hccn_status_t st)
{
    if (st == HCCN_ERR_REMOTE || st == HCCN_ERR_ABORTED ||
        st == HCCN_ERR_REVOKED)
        return 0;
    return st == HCCN_ERR_TIMEOUT ? 1 : 2;
}

hccn_status_t hccn_cluster_run(hccn_cluster_t *cl, hccn_rank_fn fn, void *arg,
                               hccn_status_t *rank_status)
{
    hccn_status_t rc0 = hccn_rt_cluster_check("hccn_cluster_run", cl);
    if (rc0 != HCCN_OK)
        return rc0;
    if (fn == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_run: fn is NULL");
    if (hccn_rt_proc_is_client(cl->proc))
        return hccn_rt_proc_client_run(cl, fn, arg, rank_status);
    int idle = 0;
    if (!atomic_compare_exchange_strong(&cl->running, &idle, 1))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_cluster_run: the cluster is already running");
    hccn_status_t *st = hccn_sim_calloc((size_t)cl->nranks, sizeof(*st));
    if (st == NULL) {
        atomic_store(&cl->running, 0);
        return hccn_sim_fail_context("hccn_cluster_run");
    }
    if (hccn_sim_engine_set_faults(cl->eng, cl->faults, cl->nfaults) != 0 ||
        hccn_rt_sel_prepare(cl) != HCCN_OK) {
        hccn_sim_free(st);
        atomic_store(&cl->running, 0);
        return hccn_sim_fail_context("hccn_cluster_run");
    }
    hccn_sim_engine_reset(cl->eng);
    hccn_rt_comm_reset(cl->world);
    for (int r = 0; r < cl->nranks; r++) {
        hccn_ctx_t *ctx = &cl->ctxs[r];
        ctx->last_duration = 0.0;
        ctx->inflight = 0;
        ctx->errmsg[0] = '\0';
        atomic_store(&ctx->finished, 0);
        ctx->waiting = 0;
        ctx->cur = NULL;
        ctx->last.kind = -1;
    }
    cl->nlive = cl->nranks;
    cl->nwaiting = 0;
    cl->deadlock_seen = 0;
    atomic_store(&cl->deadlock, 0);
    cl->fn = fn;
    cl->arg = arg;
    cl->status = st;
    char why[160] = "";
    if (cl->proc != NULL)
        hccn_rt_proc_run_begin(cl);
    hccn_status_t rc = hccn_sim_launch(cl->nranks, rank_main, cl,
                                       cl->bind_threads, why, sizeof(why));
    if (rc != HCCN_OK) {
        /* No rank ran: each gets the failure, none a success. */
        for (int r = 0; r < cl->nranks; r++)
            st[r] = rc;
        hccn_rt_error(rc, "hccn_cluster_run: %s: cannot start the %d NPU "
                      "threads (%s); no rank ran", cl->topo->source,
                      cl->nranks, why);
    } else {
        /* Report the root cause: the lowest rank that failed on its own,
         * not one that failed because a peer did (REMOTE, ABORTED,
         * REVOKED), nor one
         * left waiting (TIMEOUT) for a peer that returned on an error. */
        int pick = -1;
        for (int r = 0; r < cl->nranks; r++)
            if (st[r] != HCCN_OK &&
                (pick < 0 || cause_rank(st[r]) > cause_rank(st[pick])))
                pick = r;
        hccn_rt_error_clear();
        if (pick >= 0)
            rc = hccn_rt_error(st[pick], "rank %d returned %s: %s", pick,
                               hccn_status_name(st[pick]),
                               cl->ctxs[pick].errmsg);
    }
    if (cl->proc != NULL)    /* the clients' runs return the same */
        hccn_rt_proc_run_end(cl, rc, st);
    /* What the ranks left (futures not freed, a group not ended) and the
     * communicators made during the run end with it; their handles say so
     * if they are used again. */
    for (int r = 0; r < cl->nranks; r++) {
        hccn_rt_futures_free(&cl->ctxs[r]);
        hccn_rt_group_forget(&cl->ctxs[r]);
        hccn_rt_summary_end(&cl->ctxs[r]);
    }
    hccn_rt_free_subcomms(cl);
    if (rank_status != NULL)
        memcpy(rank_status, st, (size_t)cl->nranks * sizeof(*st));
    hccn_sim_free(st);
    cl->status = NULL;
    atomic_store(&cl->running, 0);
    return rc;
}

/* ------------------------------------------------------------ rank queries */

/* Queries read a context from any thread, as long as its cluster lives;
 * -1 / 0 / NULL (and the last error) otherwise. */
int hccn_rank(const hccn_ctx_t *ctx)
{
    return hccn_rt_ctx_query("hccn_rank", ctx) == HCCN_OK ? ctx->rank : -1;
}

int hccn_nranks(const hccn_ctx_t *ctx)
{
    return hccn_rt_ctx_query("hccn_nranks", ctx) == HCCN_OK ? ctx->cl->nranks
                                                             : 0;
}

int hccn_node(const hccn_ctx_t *ctx)
{
    return hccn_rt_ctx_query("hccn_node", ctx) == HCCN_OK
               ? ctx->cl->topo->npus[ctx->rank].node : -1;
}

int hccn_local_rank(const hccn_ctx_t *ctx)
{
    return hccn_rt_ctx_query("hccn_local_rank", ctx) == HCCN_OK
               ? ctx->cl->topo->npus[ctx->rank].local : -1;
}

hccn_cluster_t *hccn_ctx_cluster(const hccn_ctx_t *ctx)
{
    return hccn_rt_ctx_query("hccn_ctx_cluster", ctx) == HCCN_OK ? ctx->cl
                                                                 : NULL;
}

/* ----------------------------------------------------------- simulated time */

double hccn_time(hccn_ctx_t *ctx)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_clock(RT_FWD_TIME, ctx);
    return hccn_rt_ctx_query("hccn_time", ctx) == HCCN_OK
               ? hccn_sim_clock(ctx->cl->eng, ctx->rank) : 0.0;
}

double hccn_last_duration(hccn_ctx_t *ctx)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_clock(RT_FWD_LAST_DURATION, ctx);
    return hccn_rt_ctx_query("hccn_last_duration", ctx) == HCCN_OK
               ? ctx->last_duration : 0.0;
}

hccn_status_t hccn_compute(hccn_ctx_t *ctx, double seconds)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_ctx(RT_FWD_COMPUTE, ctx, seconds, 0);
    hccn_status_t rc = hccn_rt_ctx_check("hccn_compute", ctx);
    if (rc != HCCN_OK)
        return rc;
    if (!(seconds >= 0.0) || seconds > 1e12)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_compute: rank %d: seconds must be in "
                             "[0, 1e12] (got %g)",
                             ctx->rank, seconds);
    hccn_sim_engine_t *eng = ctx->cl->eng;
    double t0 = hccn_sim_clock(eng, ctx->rank);
    hccn_sim_advance(eng, ctx->rank, seconds);
    double t1 = hccn_sim_clock(eng, ctx->rank);
    if (hccn_sim_engine_trace(eng) != NULL || ctx->sum != NULL)
        hccn_rt_trace_compute(ctx, t0, t1);   /* trace and summary */
    /* Failed before it began, or before it ended: the clock has moved on
     * as far as the work would have taken, so later operations fail too. */
    double fail = hccn_sim_fail_at(eng, ctx->rank);
    if (fail <= t0 || fail < t1)
        return hccn_rt_error(HCCN_ERR_FAULT,
                             "hccn_compute: rank %d: NPU %d failed at %.3f us "
                             "(fault plan), before this compute of %g s from "
                             "%.3f us could end",
                             ctx->rank, ctx->rank, fail * 1e6, seconds,
                             t0 * 1e6);
    return HCCN_OK;
}

/* 1 when the NPU's file gives peak_TFLOPS per dtype (an object). */
static int peaks_by_dtype(const hccn_sim_npu_t *u)
{
    for (int d = 0; d < HCCN_DTYPE_COUNT; d++)
        if (u->peak_flops_of[d] > 0.0)
            return 1;
    return 0;
}

/* FLOPs at rate peak (0: the file gives none; field names it). */
static hccn_status_t flops_at(hccn_ctx_t *ctx, const char *fn, double flops,
                              double peak, const char *field)
{
    const hccn_sim_topo_t *topo = ctx->cl->topo;
    if (peak <= 0.0)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: rank %d: %s: node_types[%d].npu.%s is not "
                             "given (the NPU's peak rate, which turns FLOPs "
                             "into time; docs/topology.md): add it to the "
                             "topology, or use hccn_compute(seconds)",
                             fn, ctx->rank, topo->source,
                             topo->nodes[topo->npus[ctx->rank].node].type,
                             field);
    if (!(flops >= 0.0))
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: flops must be "
                             ">= 0", fn, ctx->rank);
    return hccn_compute(ctx, flops / peak);
}

hccn_status_t hccn_compute_flops(hccn_ctx_t *ctx, double flops)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_ctx(RT_FWD_FLOPS, ctx, flops, 0);
    hccn_status_t rc = hccn_rt_ctx_check("hccn_compute_flops", ctx);
    if (rc != HCCN_OK)
        return rc;
    const hccn_sim_npu_t *u = &ctx->cl->topo->npus[ctx->rank];
    int by_dtype = peaks_by_dtype(u);
    return flops_at(ctx, "hccn_compute_flops", flops, u->peak_flops,
                    by_dtype ? "peak_TFLOPS.fp16 (or .bf16)" : "peak_TFLOPS");
}

hccn_status_t hccn_compute_flops_dtype(hccn_ctx_t *ctx, double flops,
                                       hccn_dtype_t dtype)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_ctx(RT_FWD_FLOPS_DTYPE, ctx, flops, (int)dtype);
    static const char *const names[HCCN_DTYPE_COUNT] = {
        [HCCN_FP64] = "fp64", [HCCN_FP32] = "fp32", [HCCN_FP16] = "fp16",
        [HCCN_BF16] = "bf16", [HCCN_INT8] = "int8"};
    const char *fn = "hccn_compute_flops_dtype";
    hccn_status_t rc = hccn_rt_ctx_check(fn, ctx);
    if (rc != HCCN_OK)
        return rc;
    if ((unsigned)dtype >= HCCN_DTYPE_COUNT || names[dtype] == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: rank %d: dtype %d has no "
                             "peak rate (fp64, fp32, fp16, bf16 or int8)", fn,
                             ctx->rank, (int)dtype);
    const hccn_sim_npu_t *u = &ctx->cl->topo->npus[ctx->rank];
    int by_dtype = peaks_by_dtype(u);
    char field[32];
    snprintf(field, sizeof(field), "peak_TFLOPS.%s", names[dtype]);
    return flops_at(ctx, fn, flops,
                    by_dtype ? u->peak_flops_of[dtype] : u->peak_flops,
                    by_dtype ? field : "peak_TFLOPS");
}
