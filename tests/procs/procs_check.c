/*
 * One program for the multi-process tests (tests/cli/test_procs.sh): run
 * as one process, under hccn-launch or under mpirun, it prints one line
 * per operation of each rank this process runs — its status, its
 * simulated duration and end (%a, exact) and a 64-bit FNV-1a digest of the
 * rank's buffers — and process 0 prints each run's result. Sorted, the
 * lines of all processes must equal the one-process run's.
 *
 *   procs_check TOPOLOGY all    every collective and dtype group, async
 *                               ops, a group, splits, a deliberate
 *                               mismatch; then a run under a fault plan
 *                               (a link down and a straggler)
 *   procs_check TOPOLOGY kill   the last process kills itself (SIGKILL)
 *                               while its ranks are in a collective
 *   procs_check TOPOLOGY killhost
 *                               process 0, the host, kills itself while
 *                               the other processes' ranks are in one
 *   procs_check TOPOLOGY killdata
 *                               the last process kills itself while every
 *                               rank is in a 64 MiB allreduce whose bytes
 *                               other processes are fetching from it
 *
 *   procs_check TOPOLOGY mem    every rank allreduces 32 MiB of fp32 in
 *                               place and checks the sums; each process
 *                               then prints its peak resident set
 *                               (VmHWM): with the data partitioned, about
 *                               its ranks' share of the data
 *
 * With a third argument OUT, process p writes its lines to OUT.p instead
 * of stdout (mpirun forwards the processes' output in pieces, not lines).
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <hccn/hccn.h>
#include <hccn/hccn_sim.h>

#define CNT 96                 /* elements per rank block */

typedef struct {
    int n, rank, op;
    char *send, *recv;
    size_t bytes;              /* of each buffer */
} rk_t;

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int proc_rank, proc_world;
static int kill_host;           /* killhost: the victim is process 0 */
static int kill_data;           /* killdata: it dies with bytes in flight */
#define BIG_ELEMS ((size_t)16 << 20)  /* killdata: 64 MiB of fp32 a rank */
#define BIG_REPEAT 1000                /* killdata: allreduces of them, most */
static FILE *out;

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ c[i]) * 0x100000001b3ull;
    return h;
}

/* One line: what, status, duration, clock, digest of both buffers. */
static void report(rk_t *k, hccn_ctx_t *ctx, const char *what,
                   hccn_status_t st)
{
    uint64_t h = fnv(k->send, k->bytes, 0xcbf29ce484222325ull);
    h = fnv(k->recv, k->bytes, h);
    /* A failed operation's time and partial bytes are not defined (the
     * clock may be read before or after the peers gave up): its status
     * and message are compared. */
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s", hccn_last_error());
    double d = st == HCCN_OK ? hccn_last_duration(ctx) : 0.0;
    double t = st == HCCN_OK ? hccn_time(ctx) : 0.0;
    pthread_mutex_lock(&out_lock);
    fprintf(out, "r%02d %03d %-28s %-20s", k->rank, k->op++, what,
           hccn_status_name(st));
    if (st == HCCN_OK)
        fprintf(out, " d=%a t=%a h=%016llx", d, t, (unsigned long long)h);
    else
        fprintf(out, " msg=%s", msg);
    fprintf(out, "\n");
    fflush(out);
    pthread_mutex_unlock(&out_lock);
}

/* Small integers in dtype dt, different per rank and element. */
static void fill(rk_t *k, hccn_dtype_t dt, int salt)
{
    static const uint16_t half[11] = {0xC500, 0xC400, 0xC200, 0xC000, 0xBC00, 0,
                                      0x3C00, 0x4000, 0x4200, 0x4400, 0x4500};
    size_t es = hccn_dtype_size(dt), n = k->bytes / es;
    for (size_t i = 0; i < n; i++) {
        int v = (int)((k->rank * 7 + (int)i * 3 + salt) % 11);   /* 0..10 */
        char *p = k->send + i * es;
        if (dt == HCCN_FP16) {
            memcpy(p, &half[v], 2);
        } else if (dt == HCCN_BF16) {
            float f = (float)(v - 5);
            uint32_t b;
            memcpy(&b, &f, 4);
            uint16_t h = (uint16_t)(b >> 16);
            memcpy(p, &h, 2);
        } else if (dt == HCCN_FP32) {
            float f = (float)(v - 5) * 0.5f;
            memcpy(p, &f, 4);
        } else if (dt == HCCN_FP64) {
            double d = (double)(v - 5) * 0.25;
            memcpy(p, &d, 8);
        } else {
            int64_t x = v - 5;
            memcpy(p, &x, es);   /* little-endian: the low bytes */
        }
    }
    memset(k->recv, 0, k->bytes);
}

static void colls(rk_t *k, hccn_ctx_t *ctx, hccn_comm_t *w, hccn_dtype_t dt)
{
    char what[64];
    const char *dn = hccn_dtype_name(dt);
    int n = k->n;
    hccn_status_t st;
#define RUN(name, call)                                                       \
    do {                                                                      \
        fill(k, dt, k->op);                                                   \
        st = call;                                                            \
        snprintf(what, sizeof(what), "%s.%s", name, dn);                      \
        report(k, ctx, what, st);                                             \
    } while (0)
    RUN("allreduce", hccn_allreduce(w, k->send, k->recv, CNT, dt, HCCN_SUM));
    RUN("reduce_scatter",
        hccn_reduce_scatter(w, k->send, k->recv, CNT, dt, HCCN_MAX));
    RUN("allgather", hccn_allgather(w, k->send, k->recv, CNT, dt));
    RUN("broadcast", hccn_broadcast(w, k->send, k->recv, CNT, dt, 3 % n));
    RUN("reduce", hccn_reduce(w, k->send, k->recv, CNT, dt, HCCN_MIN, 5 % n));
    RUN("alltoall", hccn_alltoall(w, k->send, k->recv, CNT / n + 1, dt));
    RUN("scatter", hccn_scatter(w, k->send, k->recv, CNT / n + 1, dt, 1 % n));
    RUN("gather", hccn_gather(w, k->send, k->recv, CNT / n + 1, dt, 2 % n));
#undef RUN
}

static void vcolls(rk_t *k, hccn_ctx_t *ctx, hccn_comm_t *w)
{
    int n = k->n, r = k->rank;
    size_t *sc = calloc((size_t)n * 4, sizeof(size_t));
    size_t *sd = sc + n, *rc = sc + 2 * n, *rd = sc + 3 * n, so = 0, ro = 0;
    for (int j = 0; j < n; j++) {
        sc[j] = (size_t)((r + j) % 3 + 1);
        rc[j] = (size_t)((j + r) % 3 + 1);
        sd[j] = so;
        rd[j] = ro;
        so += sc[j];
        ro += rc[j];
    }
    fill(k, HCCN_FP32, 1);
    report(k, ctx, "alltoallv",
           hccn_alltoallv(w, k->send, sc, sd, k->recv, rc, rd, HCCN_FP32));
    for (int j = 0; j < n; j++) {
        rc[j] = (size_t)(j % 3 + 1);
        rd[j] = j == 0 ? 0 : rd[j - 1] + rc[j - 1];
    }
    fill(k, HCCN_INT32, 2);
    report(k, ctx, "allgatherv",
           hccn_allgatherv(w, k->send, rc[r], k->recv, rc, rd, HCCN_INT32));
    fill(k, HCCN_FP64, 3);
    report(k, ctx, "reduce_scatterv",
           hccn_reduce_scatterv(w, k->send, k->recv, rc, HCCN_FP64, HCCN_SUM));
    free(sc);
}

static void async_ops(rk_t *k, hccn_ctx_t *ctx, hccn_comm_t *w)
{
    int n = k->n, r = k->rank;
    hccn_future_t *f[3] = {NULL, NULL, NULL};
    fill(k, HCCN_FP32, 4);
    hccn_status_t st = hccn_iallreduce(w, k->send, k->recv, CNT, HCCN_FP32,
                                       HCCN_AVG, &f[0]);
    if (st == HCCN_OK)
        st = hccn_isend(w, k->send + 512, 32, HCCN_FP32, (r + 1) % n, &f[1]);
    if (st == HCCN_OK)
        st = hccn_irecv(w, k->recv + 1024, 32, HCCN_FP32, (r + n - 1) % n,
                        &f[2]);
    hccn_compute(ctx, 3e-6);
    for (int i = 0; i < 3 && st == HCCN_OK; i++) {
        int done = 0;
        hccn_test(f[i], &done);
        st = hccn_wait(f[i]);
        double t0 = 0, t1 = 0;
        hccn_future_times(f[i], &t0, &t1);
        char what[64];
        snprintf(what, sizeof(what), "async%d %a %a", i, t0, t1);
        report(k, ctx, what, st);
    }
    for (int i = 0; i < 3; i++)
        hccn_future_free(f[i]);
    if (st != HCCN_OK)
        report(k, ctx, "async", st);
}

static void groups_and_splits(rk_t *k, hccn_ctx_t *ctx, hccn_comm_t *w)
{
    int n = k->n, r = k->rank;
    fill(k, HCCN_INT32, 5);
    hccn_group_start(ctx);
    hccn_allreduce(w, k->send, k->recv, 16, HCCN_INT32, HCCN_SUM);
    hccn_allgather(w, k->send, k->recv + 256, 4, HCCN_INT32);
    report(k, ctx, "group", hccn_group_end(ctx));
    hccn_comm_t *sub = NULL;
    hccn_status_t st = hccn_comm_split(w, r % 2, -r, &sub);
    report(k, ctx, "split", st);
    if (sub != NULL) {
        fill(k, HCCN_INT32, 6);
        st = hccn_allreduce(sub, k->send, k->recv, CNT, HCCN_INT32, HCCN_SUM);
        hccn_choice_t ch = {.struct_size = sizeof(ch)};
        hccn_comm_last_choice(sub, &ch);
        char what[96];
        snprintf(what, sizeof(what), "sub%d/%d.allreduce %s",
                 hccn_comm_rank(sub), hccn_comm_size(sub), ch.schedule);
        report(k, ctx, what, st);
        report(k, ctx, "sub.destroy", hccn_comm_destroy(sub));
    }
    int half[64], m = n / 2;
    for (int i = 0; i < m; i++)
        half[i] = m - 1 - i;
    hccn_comm_t *hc = NULL;
    st = hccn_comm_create(w, half, m, &hc);
    if (st == HCCN_OK && hc != NULL) {
        fill(k, HCCN_BF16, 7);
        st = hccn_broadcast(hc, k->send, k->recv, CNT, HCCN_BF16, 0);
        hccn_comm_destroy(hc);
    }
    report(k, ctx, "create.broadcast", st);
}

/* Ranks in fours; the first of each four calls another count. */
static void mismatch(rk_t *k, hccn_ctx_t *ctx, hccn_comm_t *w)
{
    hccn_comm_t *sub = NULL;
    hccn_status_t st = hccn_comm_split(w, k->rank / 4, 0, &sub);
    if (st == HCCN_OK) {
        size_t cnt = hccn_comm_rank(sub) == 0 ? 8 : 16;
        fill(k, HCCN_FP32, 8);
        st = hccn_allreduce(sub, k->send, k->recv, cnt, HCCN_FP32, HCCN_SUM);
        hccn_comm_destroy(sub);
    }
    report(k, ctx, "mismatch", st);
}

static hccn_status_t setup(rk_t *k, hccn_ctx_t *ctx)
{
    memset(k, 0, sizeof(*k));
    k->n = hccn_nranks(ctx);
    k->rank = hccn_rank(ctx);
    k->bytes = (size_t)CNT * 8 * (size_t)k->n;
    hccn_status_t st = hccn_malloc(ctx, k->bytes, (void **)&k->send);
    if (st == HCCN_OK)
        st = hccn_malloc(ctx, k->bytes, (void **)&k->recv);
    return st;
}

static hccn_status_t all_rank(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    rk_t k;
    hccn_status_t st = setup(&k, ctx);
    if (st != HCCN_OK)
        return st;
    hccn_comm_t *w = hccn_comm_world(ctx);
    static const hccn_dtype_t dts[] = {HCCN_INT8, HCCN_INT32, HCCN_FP16,
                                       HCCN_BF16, HCCN_FP32, HCCN_FP64};
    for (size_t i = 0; i < sizeof(dts) / sizeof(dts[0]); i++)
        colls(&k, ctx, w, dts[i]);
    report(&k, ctx, "barrier", hccn_barrier(w));
    vcolls(&k, ctx, w);
    async_ops(&k, ctx, w);
    groups_and_splits(&k, ctx, w);
    mismatch(&k, ctx, w);
    hccn_mem_info_t mi;
    hccn_mem_info(ctx, &mi);
    hccn_free(ctx, k.send);
    hccn_free(ctx, k.recv);
    return HCCN_OK;
}

/* Under the fault plan: collectives that cross the downed link and wait
 * for the straggler. */
static hccn_status_t fault_rank(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    rk_t k;
    hccn_status_t st = setup(&k, ctx);
    if (st != HCCN_OK)
        return st;
    hccn_comm_t *w = hccn_comm_world(ctx);
    for (int i = 0; i < 3; i++) {
        fill(&k, HCCN_FP32, 9 + i);
        st = hccn_allreduce(w, k.send, k.recv, CNT * (size_t)k.n, HCCN_FP32,
                            HCCN_SUM);
        report(&k, ctx, "fault.allreduce", st);
    }
    return st;
}

static void *killer(void *arg)
{
    (void)arg;
    struct timespec ts = {0, (kill_data ? 150 : 500) * 1000 * 1000};
    nanosleep(&ts, NULL);
    raise(SIGKILL);
    return NULL;
}

static hccn_status_t kill_rank(hccn_ctx_t *ctx, void *arg)
{
    hccn_cluster_t *cl = arg;
    rk_t k;
    hccn_status_t st = setup(&k, ctx);
    if (st != HCCN_OK)
        return st;
    hccn_comm_t *w = hccn_comm_world(ctx);
    fill(&k, HCCN_FP32, 1);
    report(&k, ctx, "allreduce", hccn_allreduce(w, k.send, k.recv, CNT,
                                                HCCN_FP32, HCCN_SUM));
    int victim = proc_world > 1 &&
                 proc_rank == (kill_host ? 0 : proc_world - 1);
    int first = k.rank == 0 || !hccn_cluster_rank_local(cl, k.rank - 1);
    float *big = NULL;
    if (kill_data && (st = hccn_malloc(ctx, BIG_ELEMS * sizeof(float),
                                       (void **)&big)) != HCCN_OK)
        return st;
    for (size_t i = 0; big != NULL && i < BIG_ELEMS; i++)
        big[i] = (float)(i % 251);
    pthread_t t;
    if (victim && first)
        pthread_create(&t, NULL, killer, NULL);
    /* The ranks that wait in the call when the victim dies are the
     * victim's (kill) or the others' (killhost): the rest come late.
     * killdata: all are in it, its bytes on the move. */
    if (victim == kill_host && !kill_data) {
        struct timespec ts = {2, 0};
        nanosleep(&ts, NULL);
    }
    /* killdata: the big allreduce again and again until the victim's
     * death fails one, so that the kill lands while bytes move however
     * fast the host runs one (it ends after BIG_REPEAT at most). */
    st = HCCN_OK;
    for (int i = 0; st == HCCN_OK && i < (big != NULL ? BIG_REPEAT : 1); i++)
        st = big != NULL ? hccn_allreduce(w, big, big, BIG_ELEMS, HCCN_FP32,
                                          HCCN_SUM)
                         : hccn_allreduce(w, k.send, k.recv, CNT, HCCN_FP32,
                                          HCCN_SUM);
    /* killdata: the killer comes before the victim's return, and the
     * others end well after it (hccn-launch, which polls, then reports
     * the victim's signal as the first failure). */
    if (kill_data) {
        struct timespec ts = {victim ? 10 : 0, victim ? 0 : 500 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    report(&k, ctx, "allreduce", st);
    return st;
}

#define MEM_ELEMS ((size_t)8 << 20)   /* mem: 32 MiB of fp32 a rank */

/* mem: element i of rank r is i % 251 + r; the sum over n ranks is
 * n * (i % 251) + n (n - 1) / 2, exact in fp32 at these sizes. */
static hccn_status_t mem_rank(hccn_ctx_t *ctx, void *arg)
{
    (void)arg;
    int r = hccn_rank(ctx), n = hccn_nranks(ctx);
    float *buf;
    hccn_status_t st = hccn_malloc(ctx, MEM_ELEMS * sizeof(float),
                                   (void **)&buf);
    if (st != HCCN_OK)
        return st;
    for (size_t i = 0; i < MEM_ELEMS; i++)
        buf[i] = (float)(i % 251 + (size_t)r);
    st = hccn_allreduce(hccn_comm_world(ctx), buf, buf, MEM_ELEMS,
                        HCCN_FP32, HCCN_SUM);
    size_t bad = 0;
    for (size_t i = 0; st == HCCN_OK && i < MEM_ELEMS; i++)
        bad += buf[i] != (float)((size_t)n * (i % 251) +
                                 (size_t)(n * (n - 1) / 2));
    pthread_mutex_lock(&out_lock);
    fprintf(out, "r%02d mem %s %zu wrong\n", r, hccn_status_name(st), bad);
    pthread_mutex_unlock(&out_lock);
    return st;
}

/* This process's peak resident set in KiB (VmHWM), or -1. */
static long peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return kib;
}

static int run(hccn_cluster_t *cl, const char *name, hccn_rank_fn fn,
               void *arg)
{
    hccn_status_t rc = hccn_cluster_run(cl, fn, arg, NULL);
    if (proc_rank == 0 || kill_host) {
        fprintf(out, "run %s: %s%s%s\n", name, hccn_status_name(rc),
                rc != HCCN_OK ? " " : "",
                rc != HCCN_OK ? hccn_last_error() : "");
        fflush(out);
    }
    return rc == HCCN_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: procs_check TOPOLOGY "
                "all|kill|killhost|killdata|mem [OUT]\n");
        return 2;
    }
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create(argv[1], NULL, &cl) != HCCN_OK) {
        fprintf(stderr, "procs_check: %s\n", hccn_last_error());
        return 1;
    }
    proc_rank = hccn_cluster_proc_rank(cl);
    proc_world = hccn_cluster_proc_world(cl);
    out = stdout;
    if (argc == 4) {
        char path[4096];
        snprintf(path, sizeof(path), "%s.%d", argv[3], proc_rank);
        if ((out = fopen(path, "w")) == NULL) {
            perror(path);
            return 1;
        }
    }
    int bad = 0;
    kill_host = strcmp(argv[2], "killhost") == 0;
    kill_data = strcmp(argv[2], "killdata") == 0;
    if (strcmp(argv[2], "kill") == 0 || kill_host || kill_data) {
        bad = run(cl, "kill", kill_rank, cl);
    } else if (strcmp(argv[2], "mem") == 0) {
        bad = run(cl, "mem", mem_rank, NULL);
        fprintf(out, "proc %d peak_rss_kib %ld\n", proc_rank, peak_rss_kib());
    } else {
        bad |= run(cl, "all", all_rank, NULL);
        /* A downed link of a mesh is routed round (a relay NPU: its
         * times show it); the failed NPU gives a failure to report. */
        hccn_fault_t link = {.struct_size = sizeof(link),
                             .kind = HCCN_FAULT_LINK_DOWN,
                             .link = "node0.npu0->node0.npu1", .npu = -1,
                             .at_s = 2e-6};
        hccn_fault_t down = {.struct_size = sizeof(down),
                             .kind = HCCN_FAULT_NPU_FAIL, .npu = 9,
                             .at_s = 5e-6};
        hccn_fault_t slow = {.struct_size = sizeof(slow),
                             .kind = HCCN_FAULT_NPU_SLOW, .npu = 3,
                             .at_s = 0.0, .factor = 4.0};
        if (hccn_cluster_add_fault(cl, &link) != HCCN_OK ||
            hccn_cluster_add_fault(cl, &down) != HCCN_OK ||
            hccn_cluster_add_fault(cl, &slow) != HCCN_OK) {
            fprintf(stderr, "procs_check: %s\n", hccn_last_error());
            bad = 1;
        }
        run(cl, "faults", fault_rank, NULL);
    }
    hccn_cluster_destroy(cl);
    if (out != stdout)
        fclose(out);
    return bad;
}
