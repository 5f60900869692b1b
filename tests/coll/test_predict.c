/*
 * Timing-only runs (runtime/predict.h) against real-data runs: for every
 * algorithm of the table and every collective it implements, and for the
 * cost model's choice, the same sequence of calls (out of place, then in
 * place where the collective has that form, on a root other than 0) runs
 * on a cluster of threads moving bytes and through hccn_rt_predict; each
 * call's latest end over the ranks must be the same double, bit for bit.
 * Clusters: default.json (2 nodes of 8; with 4 and 8 nodes, 32 and 64
 * ranks, the cost model's choice only), ring-8.json, and a one-node full mesh whose copies cost
 * time (so an in-place call's free self-copy shows). Counts do not divide
 * by the ranks. HCCN_TEST_QUICK keeps default.json and the compressed
 * case.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device_sim/topo.h"
#include "hccn/hccn.h"
#include "hierarchy/coll.h"
#include "runtime/predict.h"
#include "runtime/rt.h"
#include "test_util.h"

#define MAXCALLS 4
#define MAXRANKS 64

static const char *mesh8_json =
    "{\"version\":1,\"name\":\"mesh-8\",\"node_types\":[{\"count\":1,"
    "\"npu\":{\"count\":8,\"arena_MiB\":64,\"reduce_bw_GBps\":80,"
    "\"mem_bw_GBps\":20},"
    "\"fabric\":{\"type\":\"mesh\",\"bw_GBps\":50,\"lat_us\":2}}]}";

typedef struct {
    hccn_rt_pcall_t calls[MAXCALLS];
    int ncalls;
    double ends[MAXCALLS][MAXRANKS];   /* each rank's clock after call i */
} seq_t;

static int quick(void)
{
    const char *q = getenv("HCCN_TEST_QUICK");
    return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

static int has_inplace(hccn_coll_t c)
{
    return c == HCCN_COLL_ALLREDUCE || c == HCCN_COLL_REDUCE_SCATTER ||
           c == HCCN_COLL_ALLGATHER || c == HCCN_COLL_BROADCAST ||
           c == HCCN_COLL_REDUCE;
}

static hccn_status_t one_call(hccn_comm_t *w, const hccn_rt_pcall_t *c,
                              char *sb, char *rb)
{
    size_t n = c->count;
    switch (c->coll) {
    case HCCN_COLL_ALLREDUCE:
        return hccn_allreduce(w, sb, rb, n, c->dtype, HCCN_SUM);
    case HCCN_COLL_REDUCE_SCATTER:
        return hccn_reduce_scatter(w, sb, rb, n, c->dtype, HCCN_SUM);
    case HCCN_COLL_ALLGATHER:
        return hccn_allgather(w, sb, rb, n, c->dtype);
    case HCCN_COLL_BROADCAST:
        return hccn_broadcast(w, sb, rb, n, c->dtype, c->root);
    case HCCN_COLL_REDUCE:
        return hccn_reduce(w, sb, rb, n, c->dtype, HCCN_SUM, c->root);
    case HCCN_COLL_ALLTOALL:
        return hccn_alltoall(w, sb, rb, n, c->dtype);
    case HCCN_COLL_SCATTER:
        return hccn_scatter(w, sb, rb, n, c->dtype, c->root);
    case HCCN_COLL_GATHER:
        return hccn_gather(w, sb, rb, n, c->dtype, c->root);
    default:
        return hccn_barrier(w);
    }
}

/* Every rank makes the calls of the sequence (all with the first call's
 * spec and compression), recording its clock after each. */
static hccn_status_t rank_fn(hccn_ctx_t *ctx, void *arg)
{
    seq_t *q = arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    const hccn_rt_pcall_t *c0 = &q->calls[0];
    size_t es = hccn_dtype_size(c0->dtype);
    size_t bytes = (c0->count ? c0->count : 1) * es * (size_t)n;
    char *sb, *rb;
    hccn_status_t rc;
    if ((rc = hccn_comm_set_algo(w, c0->spec)) != HCCN_OK ||
        (rc = hccn_comm_set_compression(w, c0->compress)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, bytes, (void **)&sb)) != HCCN_OK ||
        (rc = hccn_malloc(ctx, bytes, (void **)&rb)) != HCCN_OK)
        return rc;
    memset(sb, 0, bytes);
    for (int i = 0; i < q->ncalls && rc == HCCN_OK; i++) {
        const hccn_rt_pcall_t *c = &q->calls[i];
        size_t blk = (size_t)r * c->count * es;
        char *s = sb, *d = rb;
        if (c->inplace && c->coll == HCCN_COLL_REDUCE_SCATTER)
            d = sb + blk;
        else if (c->inplace && c->coll == HCCN_COLL_ALLGATHER)
            s = rb + blk;
        else if (c->inplace)
            s = d = rb;
        rc = one_call(w, c, s, d);
        q->ends[i][r] = hccn_time(ctx);
    }
    return rc;
}

/* Calls the real runs replayed (device_sim/replay.c): the second of two
 * equal calls, where the call qualifies. */
static long replayed;

/* Timing-only runs that were folded onto node 0 (predict.h), and
 * schedules built for node 0 alone. */
static long folded, built_folded;

/* The timing-only run of q, folded where it may (or never); fails unless
 * its status is want's and its ends are those given (if any). What the
 * run says of folding goes to *out (if not NULL). */
static void check_pred(const hccn_sim_topo_t *topo, const char *what,
                       const seq_t *q, int no_fold, hccn_status_t want,
                       const double *want_ends, double *ends,
                       hccn_rt_popts_t *out)
{
    hccn_rt_popts_t o = {.no_fold = no_fold};
    hccn_status_t pred = hccn_rt_predict_opts(topo, q->calls, q->ncalls,
                                              ends, &o);
    if (out != NULL)
        *out = o;
    if ((want == HCCN_OK) != (pred == HCCN_OK))
        fail_msg("%s: %s spec %s: real run %s, timing-only%s %s", what,
                 hccn_coll_name(q->calls[0].coll),
                 q->calls[0].spec ? q->calls[0].spec : "(auto)",
                 hccn_status_name(want), o.folded ? " (folded)" : "",
                 hccn_status_name(pred));
    if (no_fold && o.folded)
        fail_msg("%s: folded although asked not to", what);
    folded += o.folded;
    built_folded += o.built_folded;
    for (int i = 0; want == HCCN_OK && want_ends != NULL && i < q->ncalls;
         i++)
        if (want_ends[i] != ends[i])
            fail_msg("%s: %s spec %s count %llu call %d: real %.17g s, "
                     "timing-only%s %.17g s", what,
                     hccn_coll_name(q->calls[i].coll),
                     q->calls[i].spec ? q->calls[i].spec : "(auto)",
                     (unsigned long long)q->calls[i].count, i, want_ends[i],
                     o.folded ? " (folded)" : "", ends[i]);
}

/* Runs q both ways on the cluster of json; returns the real run's status
 * after checking that the timing-only run agrees (status and times). */
static hccn_status_t check_seq(const char *json, const char *what, seq_t *q)
{
    hccn_cluster_t *cl;
    hccn_sim_topo_t *topo;
    char err[512];
    assert_int_equal(hccn_cluster_create_json(json, what, NULL, &cl), HCCN_OK);
    assert_int_equal(hccn_sim_topo_load_string(json, what, &topo, err,
                                               sizeof(err)), HCCN_OK);
    int n = topo->nnpus;
    assert_true(n <= MAXRANKS);
    hccn_status_t real = hccn_cluster_run(cl, rank_fn, q, NULL);
    double t[MAXCALLS], ends[MAXCALLS];
    for (int i = 0; real == HCCN_OK && i < q->ncalls; i++) {
        t[i] = 0.0;
        for (int r = 0; r < n; r++)
            if (q->ends[i][r] > t[i])
                t[i] = q->ends[i][r];
    }
    /* Both ways: every node simulated, and folded where it may be. */
    check_pred(topo, what, q, 1, real, t, ends, NULL);
    check_pred(topo, what, q, 0, real, t, ends, NULL);
    replayed += hccn_sim_engine_replays(cl->eng);
    hccn_sim_topo_free(topo);
    hccn_cluster_destroy(cl);
    return real;
}

/* The sequence for coll: out of place twice (the second in stream order
 * after the first), then in place where the collective has that form. */
static void make_seq(seq_t *q, hccn_coll_t coll, uint64_t count,
                     const char *spec, int n)
{
    memset(q, 0, sizeof(*q));
    hccn_rt_pcall_t c = {.coll = coll, .count = count, .dtype = HCCN_FP32,
                         .root = n > 1 ? 1 : 0, .spec = spec};
    if (coll == HCCN_COLL_BARRIER)
        c.count = 0;
    q->calls[q->ncalls++] = c;
    q->calls[q->ncalls++] = c;
    if (has_inplace(coll)) {
        c.inplace = 1;
        q->calls[q->ncalls++] = c;
    }
}

/* Calls fn(c, spec, arg) for every collective c but the v-collectives,
 * with every algorithm that implements it and with the cost model's
 * choice (spec NULL). */
static void each_algo(void (*fn)(hccn_coll_t c, const char *spec, void *arg),
                      void *arg)
{
    const hccn_algo_t *algos = hccn_hier_algos();
    for (int c = 0; c < HCCN_COLL_COUNT; c++)
        for (int a = -1; a < 0 || algos[a].name != NULL; a++)
            if ((a < 0 || (algos[a].colls & 1u << c)) &&
                !hccn_coll_is_v((hccn_coll_t)c))
                fn((hccn_coll_t)c, a >= 0 ? algos[a].name : NULL, arg);
}

typedef struct {
    const char *json, *what;
    int n, ran;
} sweep_t;

static void sweep_one(hccn_coll_t c, const char *spec, void *arg)
{
    sweep_t *w = arg;
    seq_t q;
    make_seq(&q, c, 1031, spec, w->n);
    w->ran += check_seq(w->json, w->what, &q) == HCCN_OK;
}

/* Every algorithm (and the cost model's choice) on every collective it
 * implements. */
static void sweep(const char *json, const char *what, int n)
{
    long replayed0 = replayed, folded0 = folded;
    sweep_t w = {json, what, n, 0};
    each_algo(sweep_one, &w);
    printf("%s: %d sequences, times equal; %ld calls replayed; %ld "
           "timing-only runs folded\n", what, w.ran, replayed - replayed0,
           folded - folded0);
    assert_true(w.ran > 0);
    /* Repeated calls on the whole cluster are replayed where they may be
     * (the equal times above then show the timing-only run replays the
     * same calls). */
    assert_true(replayed > replayed0);
}

/* default.json with `nodes` servers. */
static char *default_with(int nodes)
{
    char *text = test_read_file(test_path("configs/default.json"));
    assert_non_null(text);
    char *at = strstr(text, "\"count\": 2,");
    assert_non_null(at);
    at[9] = (char)('0' + nodes);
    return text;
}

static void test_default(void **state)
{
    (void)state;
    char *text = default_with(2);
    sweep(text, "default.json", 16);
    free(text);
}

/* default.json running NCCL's preset, with the thresholds of the low
 * latency protocol given, so that both ways of choosing a protocol
 * (docs/timing.md, Software) run, and with the host's issue of a call
 * binding: timing-only still gives the bits. */
static void test_software(void **state)
{
    (void)state;
    char *text = default_with(2);
    const char *extra = "{\"stack\": \"nccl-2.2x\", \"software\": "
                        "{\"launch_us\": 4}, ";
    char *json = malloc(strlen(text) + strlen(extra) + 1);
    assert_non_null(json);
    strcpy(json, extra);
    strcat(json, strchr(text, '{') + 1);
    sweep(json, "default.json + nccl-2.2x", 16);
    const char *ll = "{\"stack\": \"nccl-2.2x\", \"software\": "
                     "{\"ll\": {\"max_bytes\": 4096}, "
                     "\"ll128\": {\"max_bytes\": 65536}}, ";
    char *json2 = malloc(strlen(text) + strlen(ll) + 1);
    assert_non_null(json2);
    strcpy(json2, ll);
    strcat(json2, strchr(text, '{') + 1);
    sweep(json2, "default.json + thresholds", 16);
    /* One host thread driving 8 NPUs: small calls end at its issue. */
    const char *host = "{\"stack\": \"nccl-2.2x\", \"software\": "
                       "{\"ranks_per_thread\": 8}, ";
    char *json3 = malloc(strlen(text) + strlen(host) + 1);
    assert_non_null(json3);
    strcpy(json3, host);
    strcat(json3, strchr(text, '{') + 1);
    sweep(json3, "default.json + host floor", 16);
    /* MPI's preset: every message costs its hosts their time per message
     * (send and receive, one after another on each rank). */
    const char *mpi = "{\"stack\": \"mpi\", ";
    char *json4 = malloc(strlen(text) + strlen(mpi) + 1);
    assert_non_null(json4);
    strcpy(json4, mpi);
    strcat(json4, strchr(text, '{') + 1);
    sweep(json4, "default.json + mpi", 16);
    free(json4);
    /* Switches that reduce, one node and two: the in-switch rows' calls
     * take the stack's NVLS launch (software.h) both ways. */
    static const char *nvswitch =
        "{\"version\": 1, \"stack\": \"nccl-2.2x\", \"node_types\": "
        "[{\"count\": 2, \"npu\": {\"count\": 4, \"arena_MiB\": 64, "
        "\"reduce_bw_GBps\": 50, \"mem_bw_GBps\": 200}, \"fabric\": "
        "{\"type\": \"switch\", \"bw_GBps\": 100, \"lat_us\": 2, "
        "\"reduce\": {\"bw_GBps\": 1000}}, \"nics\": {\"count\": 4, "
        "\"bw_GBps\": 25, \"lat_us\": 1}}], \"network\": {\"type\": "
        "\"switch\", \"lat_us\": 1}}";
    sweep(nvswitch, "two reducing switches + nccl-2.2x", 8);
    free(json3);
    free(json2);
    free(json);
    free(text);
}

static void test_default_4_8(void **state)
{
    (void)state;
    if (quick())
        skip();
    /* 32 and 64 ranks: the cost model's choice (allreduce only on 64). */
    for (int nodes = 4; nodes <= 8; nodes *= 2) {
        char *text = default_with(nodes);
        for (int c = 0; c < (nodes == 4 ? HCCN_COLL_COUNT : 1); c++) {
            if (hccn_coll_is_v((hccn_coll_t)c))
                continue;
            seq_t q;
            make_seq(&q, (hccn_coll_t)c, nodes == 4 ? 1031 : 65539, NULL,
                     8 * nodes);
            assert_int_equal(check_seq(text, "default.json x4/x8", &q),
                             HCCN_OK);
        }
        free(text);
    }
}

static void test_ring_mesh(void **state)
{
    (void)state;
    if (quick())
        skip();
    char *text = test_read_file(test_path("configs/ring-8.json"));
    assert_non_null(text);
    sweep(text, "ring-8.json", 8);
    free(text);
    sweep(mesh8_json, "mesh-8", 8);
}

/* Leaf/spine with pods (8 nodes of 2 NPUs, 2 nodes per leaf, uplinks 2:1),
 * where the three-level rows apply: every algorithm on the collectives
 * the levels matter to. */
static void test_pods(void **state)
{
    (void)state;
    const char *json =
        "{\"version\": 1, \"node_types\": [{\"count\": 8,"
        " \"npu\": {\"count\": 2, \"arena_MiB\": 8,"
        " \"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"mesh\","
        " \"bw_GBps\": 50, \"lat_us\": 1.5}, \"nics\": {\"count\": 2,"
        " \"bw_GBps\": 20, \"lat_us\": 2}}], \"network\": {\"type\":"
        " \"leaf_spine\", \"lat_us\": 1, \"nodes_per_leaf\": 2,"
        " \"oversubscription\": 2}}";
    const hccn_coll_t colls[] = {HCCN_COLL_ALLREDUCE, HCCN_COLL_REDUCE_SCATTER,
                                 HCCN_COLL_ALLGATHER};
    const char *specs[] = {NULL, "hier3", "hier3_hd", "hier"};
    for (size_t c = 0; c < sizeof(colls) / sizeof(colls[0]); c++)
        for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
            seq_t q;
            make_seq(&q, colls[c], 16411, specs[k], 16);
            assert_int_equal(check_seq(json, "pods", &q), HCCN_OK);
        }
}

/* Compressed allreduce: half the bytes on the wire in both modes. */
static void test_compressed(void **state)
{
    (void)state;
    char *text = default_with(2);
    seq_t q;
    make_seq(&q, HCCN_COLL_ALLREDUCE, 65539, NULL, 16);
    for (int i = 0; i < q.ncalls; i++)
        q.calls[i].compress = HCCN_COMPRESS_FP16;
    assert_int_equal(check_seq(text, "default.json fp16", &q), HCCN_OK);
    free(text);
}

/* The topology's fault plan: slow links and NPUs give the same times in
 * both modes; a failing NPU fails the call in both. */
static void test_faults(void **state)
{
    (void)state;
    char *text = default_with(2);
    char *end = strrchr(text, '}');
    assert_non_null(end);
    static const char *plans[] = {
        "[{\"kind\": \"link_slow\", \"link\": \"node0.nic0->net\","
        " \"at_us\": 3, \"factor\": 0.25}, {\"kind\": \"npu_slow\","
        " \"npu\": 3, \"factor\": 2}]",
        "[{\"kind\": \"npu_fail\", \"npu\": 5, \"at_us\": 20}]"};
    for (int k = 0; k < 2; k++) {
        size_t len = strlen(text) + strlen(plans[k]) + 32;
        char *json = malloc(len);
        assert_non_null(json);
        snprintf(json, len, "%.*s, \"faults\": %s}", (int)(end - text), text,
                 plans[k]);
        seq_t q;
        make_seq(&q, HCCN_COLL_ALLREDUCE, 65539, NULL, 16);
        hccn_status_t rc = check_seq(json, "default.json with faults", &q);
        assert_int_equal(rc, k == 0 ? HCCN_OK : HCCN_ERR_FAULT);
        free(json);
    }
    free(text);
}

/* Folding (predict.h): on clusters of copies of node 0, every algorithm
 * on every collective, counts that divide evenly (most fold) and that do
 * not (some do not): the folded run's times are the unfolded run's, bit
 * for bit. The allreduce the hierarchical algorithms exist for folds. */
typedef struct {
    const hccn_sim_topo_t *topo;
    const char *what;
    uint64_t count;
    int nodes;
    int nfold, nbuilt, nruns;
} fold_sweep_t;

static void fold_one(hccn_coll_t c, const char *spec, void *arg)
{
    fold_sweep_t *w = arg;
    seq_t q;
    make_seq(&q, c, w->count, spec, w->topo->nnpus);
    double whole[MAXCALLS], ends[MAXCALLS];
    hccn_rt_popts_t no = {.no_fold = 1}, yes;
    hccn_status_t rc = hccn_rt_predict_opts(w->topo, q.calls, q.ncalls,
                                            whole, &no);
    if (rc != HCCN_OK)
        return;                 /* the algorithm does not apply here */
    check_pred(w->topo, w->what, &q, 0, rc, whole, ends, &yes);
    if (c == HCCN_COLL_ALLREDUCE && spec != NULL && w->nodes > 1 &&
        strncmp(spec, "hier", 4) == 0 && (!yes.folded || yes.built_folded == 0))
        fail_msg("%s: %s count %llu did not fold (or was built whole): %s",
                 w->what, spec, (unsigned long long)w->count, yes.why);
    w->nbuilt += yes.built_folded > 0;
    w->nfold += yes.folded;
    w->nruns++;
}

static void fold_sweep(const char *json, const char *what, uint64_t count,
                       int nodes, int *nfold, int *nbuilt, int *nruns)
{
    hccn_sim_topo_t *topo;
    char err[512];
    assert_int_equal(hccn_sim_topo_load_string(json, what, &topo, err,
                                               sizeof(err)), HCCN_OK);
    fold_sweep_t w = {topo, what, count, nodes, 0, 0, 0};
    each_algo(fold_one, &w);
    *nfold += w.nfold;
    *nbuilt += w.nbuilt;
    *nruns += w.nruns;
    hccn_sim_topo_free(topo);
}

/* Fat trees whose switches each hold as many nodes (device_sim/
 * topo_fold.c): 8 nodes of 2 NPUs, 2 per leaf (uplinks 2:1), 2 leaves per
 * tier-1 switch, under the core: node 0's copy of a leaf's uplink has half
 * of it, of a tier-1 switch's a quarter. And 6 nodes, 3 per leaf, under
 * the core: a third, a share that is not a power of two. */
#define TREE_JSON(nodes, levels)                                            \
    "{\"version\": 1, \"node_types\": [{\"count\": " #nodes ","            \
    " \"npu\": {\"count\": 2, \"arena_MiB\": 8,"                           \
    " \"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"mesh\","           \
    " \"bw_GBps\": 50, \"lat_us\": 1.5}, \"nics\": {\"count\": 2,"          \
    " \"bw_GBps\": 20, \"lat_us\": 2}}], \"network\": {\"type\":"           \
    " \"fat_tree\", \"lat_us\": 1, \"levels\": " levels "}}"
static const char *const tree8 = TREE_JSON(8,
    "[{\"children\": 2, \"oversubscription\": 2}, {\"children\": 2}]");
static const char *const tree6 = TREE_JSON(6,
    "[{\"children\": 3, \"oversubscription\": 2, \"lat_us\": 0.5}]");
/* 6 nodes, 2 per leaf, 2 leaves per tier-1 switch: the tier-1 switches
 * hold 4 nodes and 2, so nothing folds onto node 0; every leaf holds 2,
 * so runs fold onto the first node of every leaf (device_sim/
 * topo_fold.c), every link above the nodes carrying each played flow as
 * 2. */
static const char *const uneven6 = TREE_JSON(6,
    "[{\"children\": 2, \"oversubscription\": 2}, {\"children\": 2}]");
/* 4 nodes on a switch that reduces (network.reduce): node 0 has a quarter
 * of its unit; sharp and hier_sharp fold. */
static const char *const sharp4 =
    "{\"version\": 1, \"node_types\": [{\"count\": 4,"
    " \"npu\": {\"count\": 2, \"arena_MiB\": 8,"
    " \"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"mesh\","
    " \"bw_GBps\": 50, \"lat_us\": 1.5}, \"nics\": {\"count\": 2,"
    " \"bw_GBps\": 20, \"lat_us\": 2}}], \"network\": {\"type\":"
    " \"switch\", \"lat_us\": 1, \"reduce\": {\"bw_GBps\": 30,"
    " \"lat_us\": 0.5}}}";

static void test_fold(void **state)
{
    (void)state;
    int nfold = 0, nbuilt = 0, nruns = 0;
    for (int nodes = 2; nodes <= (quick() ? 2 : 8); nodes *= 2) {
        char *text = default_with(nodes);
        fold_sweep(text, "default.json", 65536, nodes, &nfold, &nbuilt,
                   &nruns);
        fold_sweep(text, "default.json", 1031, 0, &nfold, &nbuilt, &nruns);
        free(text);
    }
    printf("fold: %d of %d timing-only runs folded (%d built for node 0 "
           "alone), times equal\n", nfold, nruns, nbuilt);
    assert_true(nfold > nruns / 3);
    /* The flat ring folds where its ranks do not divide the count: its
     * blocks are equal and its tail goes to every rank alike
     * (hierarchy/algo_ring.c); it is built for node 0 alone, and its times
     * are the unfolded run's. */
    for (int nodes = 2; nodes <= 4; nodes *= 2) {
        char *text = default_with(nodes);
        hccn_sim_topo_t *topo;
        char err[512];
        assert_int_equal(hccn_sim_topo_load_string(text, "default.json",
                                                   &topo, err, sizeof(err)),
                         HCCN_OK);
        for (uint64_t count = 1; count <= 100003; count = count * 37 + 3) {
            seq_t q;
            double whole[MAXCALLS], ends[MAXCALLS];
            hccn_rt_popts_t no = {.no_fold = 1}, yes = {0};
            make_seq(&q, HCCN_COLL_ALLREDUCE, count, "ring", topo->nnpus);
            hccn_status_t rc = hccn_rt_predict_opts(topo, q.calls, q.ncalls,
                                                    whole, &no);
            assert_int_equal(rc, HCCN_OK);
            check_pred(topo, "default.json", &q, 0, rc, whole, ends, &yes);
            if (!yes.folded || yes.built_folded == 0)
                fail_msg("ring allreduce of %llu on %d nodes did not fold "
                         "(or was built whole): %s",
                         (unsigned long long)count, nodes, yes.why);
        }
        hccn_sim_topo_free(topo);
        free(text);
    }
    /* Fat trees: nothing is built for node 0 alone (its part does not
     * show how far its peers are); runs of algorithms whose every node's
     * peers are as far as node 0's fold. */
    const char *trees[] = {tree8, tree6, sharp4, uneven6};
    const char *names[] = {"fat tree of 8 nodes", "fat tree of 6 nodes",
                           "reducing switch", "uneven fat tree"};
    for (int k = 0; k < 4; k++) {
        int tf = 0, tb = 0, tr = 0;
        fold_sweep(trees[k], names[k], 1536, 0, &tf, &tb, &tr);
        fold_sweep(trees[k], names[k], 1031, 0, &tf, &tb, &tr);
        printf("%s: %d of %d timing-only runs folded, times equal\n",
               names[k], tf, tr);
        assert_int_equal(tb, 0);
        assert_true(tf > 0);
    }
    /* The in-network allreduces fold there. */
    hccn_sim_topo_t *topo;
    char err[512];
    assert_int_equal(hccn_sim_topo_load_string(sharp4, "sharp4", &topo, err,
                                               sizeof(err)), HCCN_OK);
    const char *in_net[] = {"hier_sharp", "hier_nvls_sharp"};
    for (int k = 0; k < 2; k++) {
        seq_t q;
        double ends[MAXCALLS];
        hccn_rt_popts_t yes = {0};
        make_seq(&q, HCCN_COLL_ALLREDUCE, 1536, in_net[k], topo->nnpus);
        assert_int_equal(hccn_rt_predict_opts(topo, q.calls, q.ncalls, ends,
                                              &yes), HCCN_OK);
        if (!yes.folded)
            fail_msg("%s on a reducing switch did not fold: %s", in_net[k],
                     yes.why);
    }
    hccn_sim_topo_free(topo);
}

/* The hierarchical allreduces built for node 0 alone, against runs with
 * data: 2 and 4 nodes. */
static void test_fold_data(void **state)
{
    (void)state;
    const char *specs[] = {"hier", "hier_rr", "hier_mh"};
    long built0 = built_folded;
    for (int nodes = 2; nodes <= 4; nodes *= 2) {
        char *text = default_with(nodes);
        for (size_t k = 0; k < sizeof(specs) / sizeof(specs[0]); k++) {
            seq_t q;
            make_seq(&q, HCCN_COLL_ALLREDUCE, 65536, specs[k], 8 * nodes);
            assert_int_equal(check_seq(text, "default.json fold", &q),
                             HCCN_OK);
        }
        free(text);
    }
    /* Each of the six sequences builds one schedule, for node 0 alone. */
    assert_int_equal(built_folded - built0, 6);
}

/* The timing-only run of calls[0..n) folded where it may and not at all:
 * the same ends, bit for bit; returns how many calls ran folded. */
static int blocks_equal(const hccn_sim_topo_t *topo, const hccn_rt_pcall_t *c,
                        int n)
{
    double whole[MAXCALLS], ends[MAXCALLS];
    hccn_rt_popts_t no = {.no_fold = 1}, yes = {0};
    assert_int_equal(hccn_rt_predict_opts(topo, c, n, whole, &no), HCCN_OK);
    assert_int_equal(hccn_rt_predict_opts(topo, c, n, ends, &yes), HCCN_OK);
    for (int i = 0; i < n; i++)
        if (ends[i] != whole[i])
            fail_msg("call %d of %d: %.17g s in blocks, %.17g s whole", i, n,
                     ends[i], whole[i]);
    assert_int_equal(no.folded_calls, 0);
    if (yes.folded_calls > 0 && yes.folded_calls < n)
        assert_non_null(strstr(yes.why, "calls folded"));
    return yes.folded_calls;
}

/* A run folds block by block (runtime/predict.c): a one-element
 * broadcast (from rank 0: the root's node is not like the others, and it
 * does not fold) and a 256 KiB allreduce (which does), in either order,
 * against the run with data and the run that never folds; where a size
 * comes back after the other, one block. */
static void test_fold_blocks(void **state)
{
    (void)state;
    for (int nodes = 2; nodes <= 4; nodes *= 2) {
        char *text = default_with(nodes);
        hccn_sim_topo_t *topo;
        char err[512];
        assert_int_equal(hccn_sim_topo_load_string(text, "blocks", &topo,
                                                   err, sizeof(err)), HCCN_OK);
        hccn_rt_pcall_t big = {.coll = HCCN_COLL_ALLREDUCE, .count = 65536,
                               .dtype = HCCN_FP32};
        hccn_rt_pcall_t big_in = big, one = big;
        big_in.inplace = 1;
        one.coll = HCCN_COLL_BROADCAST;
        one.count = 1;
        one.dtype = HCCN_INT32;
        one.inplace = 1;
        /* The sizes of the calls before a cut never come back after it. */
        seq_t q = {.calls = {big, big_in, one, one}, .ncalls = 4};
        assert_int_equal(check_seq(text, "default.json blocks", &q), HCCN_OK);
        assert_int_equal(blocks_equal(topo, q.calls, 4), 2);
        hccn_rt_pcall_t agree_first[] = {one, one, big, big_in};
        assert_int_equal(blocks_equal(topo, agree_first, 4), 2);
        hccn_rt_pcall_t alone[] = {big};
        assert_int_equal(blocks_equal(topo, alone, 1), 1);
        /* Each size comes back: one block, which does not fold. */
        hccn_rt_pcall_t mixed[] = {one, big, one, big_in};
        assert_int_equal(blocks_equal(topo, mixed, 4), 0);
        hccn_sim_topo_free(topo);
        free(text);
    }
}

/* Where the nodes are not copies of node 0, nothing folds, and the
 * reason says why: a fault plan, leaves that hold unlike numbers of
 * nodes, a node of another type, one node. */
static void test_no_fold(void **state)
{
    (void)state;
    char *two = default_with(2);
    char *end = strrchr(two, '}');
    char faulty[8192];
    snprintf(faulty, sizeof(faulty), "%.*s, \"faults\": [{\"kind\": "
             "\"npu_slow\", \"npu\": 3, \"factor\": 2}]}",
             (int)(end - two), two);
    const char *pods =
        "{\"version\": 1, \"node_types\": [{\"count\": 3,"
        " \"npu\": {\"count\": 2, \"arena_MiB\": 8,"
        " \"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"mesh\","
        " \"bw_GBps\": 50, \"lat_us\": 1.5}, \"nics\": {\"count\": 2,"
        " \"bw_GBps\": 20, \"lat_us\": 2}}], \"network\": {\"type\":"
        " \"leaf_spine\", \"lat_us\": 1, \"nodes_per_leaf\": 2}}";
    const char *mixed =
        "{\"version\": 1, \"node_types\": [{\"count\": 1,"
        " \"npu\": {\"count\": 2, \"arena_MiB\": 8,"
        " \"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"mesh\","
        " \"bw_GBps\": 50, \"lat_us\": 1.5}, \"nics\": {\"count\": 2,"
        " \"bw_GBps\": 20, \"lat_us\": 2}}, {\"count\": 1,"
        " \"npu\": {\"count\": 2, \"arena_MiB\": 8,"
        " \"reduce_bw_GBps\": 100}, \"fabric\": {\"type\": \"mesh\","
        " \"bw_GBps\": 40, \"lat_us\": 1.5}, \"nics\": {\"count\": 2,"
        " \"bw_GBps\": 20, \"lat_us\": 2}}], \"network\": {\"type\":"
        " \"switch\", \"lat_us\": 1}}";
    const struct {
        const char *json, *why;
    } cases[] = {{faulty, "fault plan"},
                 {pods, "leaf1: 1 node below, leaf0: 2"},
                 {mixed, "not like node 0"}, {mesh8_json, "one node"}};
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        hccn_sim_topo_t *topo;
        char err[512];
        if (hccn_sim_topo_load_string(cases[k].json, "no-fold", &topo, err,
                                      sizeof(err)) != HCCN_OK)
            fail_msg("case %zu: %s", k, err);
        seq_t q;
        make_seq(&q, HCCN_COLL_ALLREDUCE, 65536, NULL, topo->nnpus);
        double ends[MAXCALLS];
        hccn_rt_popts_t o = {0};
        assert_int_equal(hccn_rt_predict_opts(topo, q.calls, q.ncalls, ends,
                                              &o), HCCN_OK);
        assert_int_equal(o.folded, 0);
        if (strstr(o.why, cases[k].why) == NULL)
            fail_msg("case %zu: '%s' does not say '%s'", k, o.why,
                     cases[k].why);
        hccn_sim_topo_free(topo);
    }
    free(two);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default),
        cmocka_unit_test(test_compressed),
        cmocka_unit_test(test_software),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_pods),
        cmocka_unit_test(test_ring_mesh),
        cmocka_unit_test(test_default_4_8),
        cmocka_unit_test(test_fold),
        cmocka_unit_test(test_fold_data),
        cmocka_unit_test(test_no_fold),
        cmocka_unit_test(test_fold_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
