/*
 * alltoallv, allgatherv and reduce_scatterv on simulated clusters, bit for
 * bit against a serial reference computed here.
 *
 * - Ranks {1, 2, 3, 5, 8, 16} on one switch (16 left out under
 *   HCCN_TEST_QUICK). Each cluster run makes many calls, so that thread
 *   start-up is paid once per algorithm.
 * - Algorithms: the default selection, every table row that claims the
 *   collective forced through the communicator's option
 *   (hccn_comm_set_algo), and a per-collective HCCN_ALGO spec.
 * - Counts are uneven, with zeros (whole ranks that send nothing, an
 *   all-zero call, equal counts); displacements leave gaps, put the
 *   blocks in reverse order and differ from rank to rank.
 * - In place for allgatherv and reduce_scatterv; blocking and i-forms.
 * - reduce_scatterv over int8/uint16/int32/int64/fp16/bf16/fp32/fp64 and
 *   every operator; float data are chosen so that every partial result is
 *   exact (sums of halves, whole numbers for bf16; products of +-1, 2 and
 *   1/2), so the reference may add in any order. fp16/bf16 results are
 *   rounded to nearest even from fp32 as the runtime documents, AVG
 *   divides the exact sum (integers: the wrapped sum, truncated).
 * - Bytes outside the result blocks (gaps, guard zones) and SEND (out of
 *   place) must be unchanged.
 *
 * Rank threads only record failures; the main thread asserts.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "hccn/hccn.h"
#include "test_half.h"
#include "test_util.h"

#define MAXP 16
#define PAD 64           /* patterned elements before and after buffers */
#define PATTERN 0xA5

/* ------------------------------------------------------------ values */

static int is_float(hccn_dtype_t dt)
{
    return dt == HCCN_FP16 || dt == HCCN_BF16 || dt == HCCN_FP32 ||
           dt == HCCN_FP64;
}

/* A float input of rank for op: exact in every float dtype, and so is
 * every partial result of the reduction over up to 16 ranks. */
static double gen_float(hccn_dtype_t dt, hccn_redop_t op, int rank,
                        uint64_t h)
{
    double sign = (h >> 40) & 1 ? -1.0 : 1.0;
    switch (op) {
    case HCCN_SUM:
    case HCCN_AVG:
        if (dt == HCCN_BF16)
            return (double)((int)(h % 9) - 4);
        return 0.5 * (double)((int)(h % 17) - 8);
    case HCCN_PROD:
        if ((h >> 12) % 4 == 0)
            return sign * (rank % 2 == 0 ? 2.0 : 0.5);
        return sign;
    default:
        return 0.25 * (double)((int)(h % 65) - 32);
    }
}

/* Stores value v (floats: d; integers: the low bits of u) as dt at p. */
static void put(hccn_dtype_t dt, void *p, uint64_t u, double d)
{
    switch (dt) {
    case HCCN_FP16: {
        uint16_t h = test_f32_to_f16((float)d);
        memcpy(p, &h, 2);
        break;
    }
    case HCCN_BF16: {
        uint16_t h = test_f32_to_bf16((float)d);
        memcpy(p, &h, 2);
        break;
    }
    case HCCN_FP32: {
        float f = (float)d;
        memcpy(p, &f, 4);
        break;
    }
    case HCCN_FP64:
        memcpy(p, &d, 8);
        break;
    default:
        memcpy(p, &u, hccn_dtype_size(dt));   /* little endian */
        break;
    }
}

static double get_float(hccn_dtype_t dt, const void *p)
{
    uint16_t h;
    float f;
    double d;
    switch (dt) {
    case HCCN_FP16:
        memcpy(&h, p, 2);
        return test_f16_to_f32(h);
    case HCCN_BF16:
        memcpy(&h, p, 2);
        return test_bf16_to_f32(h);
    case HCCN_FP32:
        memcpy(&f, p, 4);
        return f;
    default:
        memcpy(&d, p, 8);
        return d;
    }
}

/* Input element idx of rank (global element index within its SEND). */
static void gen(hccn_dtype_t dt, hccn_redop_t op, uint64_t seed, int rank,
                uint64_t idx, void *p)
{
    uint64_t h = test_rand_at(seed, rank, idx);
    if (op == HCCN_PROD && !is_float(dt))
        h |= 1;   /* odd factors: products do not collapse to 0 */
    put(dt, p, h, is_float(dt) ? gen_float(dt, op, rank, h) : 0.0);
}

static int is_signed(hccn_dtype_t dt)
{
    return dt == HCCN_INT8 || dt == HCCN_INT16 || dt == HCCN_INT32 ||
           dt == HCCN_INT64;
}

static int64_t sext(hccn_dtype_t dt, uint64_t u)
{
    int bits = 8 * (int)hccn_dtype_size(dt);
    if (bits == 64)
        return (int64_t)u;
    u &= (1ULL << bits) - 1;
    if (is_signed(dt) && (u >> (bits - 1)))
        return (int64_t)(u | ~((1ULL << bits) - 1));
    return (int64_t)u;
}

/* The reduction over p ranks of element idx (SEND index) into out. */
static void ref_reduce(hccn_dtype_t dt, hccn_redop_t op, uint64_t seed,
                       int p, uint64_t idx, void *out)
{
    unsigned char buf[8] = {0};
    size_t es = hccn_dtype_size(dt);
    if (is_float(dt)) {
        double acc = 0.0;
        for (int r = 0; r < p; r++) {
            gen(dt, op, seed, r, idx, buf);
            double v = get_float(dt, buf);
            if (r == 0)
                acc = v;
            else if (op == HCCN_SUM || op == HCCN_AVG)
                acc += v;
            else if (op == HCCN_PROD)
                acc *= v;
            else if (op == HCCN_MAX)
                acc = v > acc ? v : acc;
            else
                acc = v < acc ? v : acc;
        }
        if (op == HCCN_AVG && dt == HCCN_FP64)
            acc /= p;
        else if (op == HCCN_AVG)
            acc = (double)((float)acc / (float)p);
        put(dt, out, 0, acc);
        return;
    }
    uint64_t acc = 0;
    for (int r = 0; r < p; r++) {
        uint64_t u = 0;
        gen(dt, op, seed, r, idx, buf);
        memcpy(&u, buf, es);
        int64_t v = sext(dt, u), a = sext(dt, acc);
        if (r == 0)
            acc = u;
        else if (op == HCCN_SUM || op == HCCN_AVG)
            acc += u;
        else if (op == HCCN_PROD)
            acc *= u;
        else if (op == HCCN_MAX)
            acc = is_signed(dt) ? (v > a ? u : acc)
                                : ((uint64_t)sext(dt, u) > (uint64_t)a ? u : acc);
        else
            acc = is_signed(dt) ? (v < a ? u : acc)
                                : ((uint64_t)sext(dt, u) < (uint64_t)a ? u : acc);
    }
    if (op == HCCN_AVG) {
        if (is_signed(dt))
            acc = (uint64_t)(sext(dt, acc) / p);
        else
            acc = (uint64_t)sext(dt, acc) / (uint64_t)p;
    }
    memcpy(out, &acc, es);
}

/* -------------------------------------------------------------- cases */

typedef enum { K_A2AV, K_AGV, K_RSV } kind_t;

typedef struct {
    kind_t kind;
    hccn_dtype_t dtype;
    hccn_redop_t op;
    int inplace;
    int async;
    int shape;      /* 0 uneven with zeros, 1 all zero, 2 equal counts */
    uint64_t seed;
} case_t;

/* Elements rank i sends to rank j in an alltoallv (the same table on every
 * rank, so each knows its recvcounts). */
static size_t a2a_count(const case_t *c, int i, int j)
{
    if (c->shape == 1)
        return 0;
    if (c->shape == 2)
        return 5;
    uint64_t h = test_rand_at(c->seed, i, (uint64_t)j + 1000);
    return h % 5 == 0 ? 0 : (size_t)(h % 23);
}

/* Block count i of allgatherv / reduce_scatterv (common to all ranks). */
static size_t v_count(const case_t *c, int i)
{
    if (c->shape == 1)
        return 0;
    if (c->shape == 2)
        return 9;
    if (i == 1)
        return 0;   /* always one empty block */
    uint64_t h = test_rand_at(c->seed, i, 77);
    return h % 4 == 0 ? 0 : (size_t)(h % 41);
}

/* Displacements of n blocks of counts cnt on rank r: reverse order, with
 * a gap after each block that depends on r. Returns the extent. */
static size_t make_displs(const size_t *cnt, int n, int r, size_t *displs)
{
    size_t off = 0;
    for (int i = n - 1; i >= 0; i--) {
        displs[i] = off;
        off += cnt[i] + (size_t)((r + i) % 3);
    }
    return off;
}

/* One rank's record of failures. */
typedef struct {
    int fails;
    char first[320];
} rec_t;

static void note(rec_t *rec, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void note(rec_t *rec, const char *fmt, ...)
{
    if (rec->fails++ > 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rec->first, sizeof(rec->first), fmt, ap);
    va_end(ap);
}

static const char *kind_name(kind_t k)
{
    return k == K_A2AV ? "alltoallv" : k == K_AGV ? "allgatherv"
                                                  : "reduce_scatterv";
}

/* ------------------------------------------------------- one call --- */

typedef struct {
    hccn_ctx_t *ctx;
    hccn_comm_t *comm;
    int r, p;
    const case_t *c;
    const char *algo;
    rec_t *rec;
    size_t es;
    unsigned char *mem;   /* device: [PAD | send | PAD | recv | PAD] */
    unsigned char *host;  /* expected image of mem */
    size_t sel, rel;      /* send and recv elements */
} call_t;

/* Allocates the device buffer, fills send, patterns the rest. */
static int setup(call_t *k, size_t sel, size_t rel)
{
    size_t total = (3 * PAD + sel + rel) * k->es;
    k->sel = sel;
    k->rel = rel;
    if (hccn_malloc(k->ctx, total, (void **)&k->mem) != HCCN_OK)
        return -1;
    k->host = malloc(total);
    if (k->host == NULL)
        return -1;
    memset(k->mem, PATTERN, total);
    return 0;
}

static unsigned char *sendp(call_t *k)
{
    return k->mem + PAD * k->es;
}

static unsigned char *recvp(call_t *k)
{
    return k->mem + (2 * PAD + k->sel) * k->es;
}

/* Compares the device buffer with the expected image, then frees both. */
static void finish(call_t *k, hccn_status_t rc)
{
    size_t total = (3 * PAD + k->sel + k->rel) * k->es;
    if (rc != HCCN_OK)
        note(k->rec, "%s %s p=%d algo=%s rank %d: %s: %s",
             kind_name(k->c->kind), hccn_dtype_name(k->c->dtype), k->p,
             k->algo, k->r, hccn_status_name(rc), hccn_last_error());
    for (size_t b = 0; rc == HCCN_OK && b < total; b++)
        if (k->mem[b] != k->host[b]) {
            note(k->rec,
                 "%s %s/%s p=%d algo=%s shape=%d inplace=%d rank %d: byte "
                 "%zu (element %zu of the buffer image) is %02x, expected "
                 "%02x",
                 kind_name(k->c->kind), hccn_dtype_name(k->c->dtype),
                 hccn_redop_name(k->c->op), k->p, k->algo, k->c->shape,
                 k->c->inplace, k->r, b, b / k->es, k->mem[b], k->host[b]);
            break;
        }
    hccn_free(k->ctx, k->mem);
    free(k->host);
}

/* Waits for and frees *f when the posting call (rc) succeeded. */
static hccn_status_t wait_or(hccn_status_t rc, hccn_future_t **f)
{
    if (rc != HCCN_OK)
        return rc;
    rc = hccn_wait(*f);
    hccn_future_free(*f);
    return rc;
}

static void run_a2av(call_t *k)
{
    const case_t *c = k->c;
    int p = k->p, r = k->r;
    size_t sc[MAXP], rc_[MAXP], sd[MAXP], rd[MAXP];
    for (int j = 0; j < p; j++) {
        sc[j] = a2a_count(c, r, j);
        rc_[j] = a2a_count(c, j, r);
    }
    size_t sel = make_displs(sc, p, r, sd);
    size_t rel = make_displs(rc_, p, r + 1, rd);
    if (setup(k, sel, rel) != 0) {
        note(k->rec, "rank %d: no memory", r);
        return;
    }
    for (int j = 0; j < p; j++)
        for (size_t e = 0; e < sc[j]; e++)   /* element e for rank j */
            gen(c->dtype, HCCN_SUM, c->seed, r,
                (uint64_t)j * 1000 + e, sendp(k) + (sd[j] + e) * k->es);
    memcpy(k->host, k->mem, (3 * PAD + sel + rel) * k->es);
    unsigned char *want = k->host + (2 * PAD + sel) * k->es;
    for (int i = 0; i < p; i++)
        for (size_t e = 0; e < rc_[i]; e++)
            gen(c->dtype, HCCN_SUM, c->seed, i, (uint64_t)r * 1000 + e,
                want + (rd[i] + e) * k->es);
    hccn_status_t rc;
    if (c->async) {
        hccn_future_t *f = NULL;
        rc = hccn_ialltoallv(k->comm, sendp(k), sc, sd, recvp(k), rc_, rd,
                             c->dtype, &f);
        rc = wait_or(rc, &f);
    } else {
        rc = hccn_alltoallv(k->comm, sendp(k), sc, sd, recvp(k), rc_, rd,
                            c->dtype);
    }
    finish(k, rc);
}

static void run_agv(call_t *k)
{
    const case_t *c = k->c;
    int p = k->p, r = k->r;
    size_t cnt[MAXP], dsp[MAXP];
    for (int i = 0; i < p; i++)
        cnt[i] = v_count(c, i);
    size_t rel = make_displs(cnt, p, r, dsp);
    if (setup(k, c->inplace ? 0 : cnt[r], rel) != 0) {
        note(k->rec, "rank %d: no memory", r);
        return;
    }
    unsigned char *src = c->inplace ? recvp(k) + dsp[r] * k->es : sendp(k);
    for (size_t e = 0; e < cnt[r]; e++)
        gen(c->dtype, HCCN_SUM, c->seed, r, e, src + e * k->es);
    memcpy(k->host, k->mem, (3 * PAD + k->sel + rel) * k->es);
    unsigned char *want = k->host + (2 * PAD + k->sel) * k->es;
    for (int i = 0; i < p; i++)
        for (size_t e = 0; e < cnt[i]; e++)
            gen(c->dtype, HCCN_SUM, c->seed, i, e,
                want + (dsp[i] + e) * k->es);
    hccn_status_t rc;
    if (c->async) {
        hccn_future_t *f = NULL;
        rc = hccn_iallgatherv(k->comm, src, cnt[r], recvp(k), cnt, dsp,
                              c->dtype, &f);
        rc = wait_or(rc, &f);
    } else {
        rc = hccn_allgatherv(k->comm, src, cnt[r], recvp(k), cnt, dsp,
                             c->dtype);
    }
    finish(k, rc);
}

static void run_rsv(call_t *k)
{
    const case_t *c = k->c;
    int p = k->p, r = k->r;
    size_t cnt[MAXP], total = 0, mine = 0;
    for (int i = 0; i < p; i++) {
        cnt[i] = v_count(c, i);
        if (i < r)
            mine += cnt[i];
        total += cnt[i];
    }
    if (setup(k, total, c->inplace ? 0 : cnt[r]) != 0) {
        note(k->rec, "rank %d: no memory", r);
        return;
    }
    for (size_t e = 0; e < total; e++)
        gen(c->dtype, c->op, c->seed, r, e, sendp(k) + e * k->es);
    memcpy(k->host, k->mem, (3 * PAD + total + k->rel) * k->es);
    unsigned char *dst = c->inplace ? sendp(k) + mine * k->es : recvp(k);
    unsigned char *want = k->host + (size_t)(dst - k->mem);
    for (size_t e = 0; e < cnt[r]; e++)
        ref_reduce(c->dtype, c->op, c->seed, p, mine + e,
                   want + e * k->es);
    hccn_status_t rc;
    if (c->async) {
        hccn_future_t *f = NULL;
        rc = hccn_ireduce_scatterv(k->comm, sendp(k), dst, cnt, c->dtype,
                                   c->op, &f);
        rc = wait_or(rc, &f);
    } else {
        rc = hccn_reduce_scatterv(k->comm, sendp(k), dst, cnt, c->dtype,
                                  c->op);
    }
    finish(k, rc);
}

/* ------------------------------------------------------ the sweep --- */

#define MAXCASES 64

typedef struct {
    case_t cases[MAXCASES];
    int ncases;
    const char *algo;      /* forced through hccn_comm_set_algo, or NULL */
    rec_t rec[MAXP];
} run_t;

static const char *kind_coll_spec(kind_t k)
{
    return k == K_A2AV ? "alltoallv" : k == K_AGV ? "allgatherv"
                                                  : "reducescatterv";
}

static hccn_status_t rank_main(hccn_ctx_t *ctx, void *arg)
{
    run_t *run = arg;
    int r = hccn_rank(ctx);
    hccn_comm_t *w = hccn_comm_world(ctx);
    rec_t *rec = &run->rec[r];
    char spec[64];
    for (int i = 0; i < run->ncases; i++) {
        const case_t *c = &run->cases[i];
        call_t k = {ctx, w, r, hccn_nranks(ctx), c,
                    run->algo ? run->algo : "auto", rec,
                    hccn_dtype_size(c->dtype), NULL, NULL, 0, 0};
        if (run->algo != NULL) {
            /* Only this collective is forced; the others stay automatic. */
            snprintf(spec, sizeof(spec), "%s=%s", kind_coll_spec(c->kind),
                     run->algo);
            if (hccn_comm_set_algo(w, spec) != HCCN_OK) {
                note(rec, "set_algo %s: %s", spec, hccn_last_error());
                continue;
            }
        }
        if (c->kind == K_A2AV)
            run_a2av(&k);
        else if (c->kind == K_AGV)
            run_agv(&k);
        else
            run_rsv(&k);
    }
    return HCCN_OK;
}

static hccn_cluster_t *make_cluster(int p)
{
    char json[512];
    snprintf(json, sizeof(json),
             "{\"version\":1,\"node_types\":[{\"count\":1,"
             "\"npu\":{\"count\":%d,\"arena_MiB\":4,"
             "\"reduce_bw_GBps\":100},"
             "\"fabric\":{\"type\":\"switch\",\"bw_GBps\":50,"
             "\"lat_us\":1}}]}",
             p);
    hccn_cluster_t *cl = NULL;
    if (hccn_cluster_create_json(json, "test_collv", NULL, &cl) != HCCN_OK)
        fail_msg("cluster of %d: %s", p, hccn_last_error());
    return cl;
}

static int quick(void)
{
    const char *q = getenv("HCCN_TEST_QUICK");
    return q != NULL && *q != '\0' && strcmp(q, "0") != 0;
}

static void add(run_t *run, case_t c)
{
    if (run->ncases < MAXCASES)
        run->cases[run->ncases++] = c;
}

/* The cases of kind k that algo runs (every kind when algo is NULL). */
static void make_cases(run_t *run, int only, kind_t k, int p)
{
    static const hccn_dtype_t moves[] = {HCCN_UINT8, HCCN_FP16, HCCN_INT32,
                                         HCCN_FP64};
    static const struct {
        hccn_dtype_t dt;
        hccn_redop_t op;
    } reds[] = {
        {HCCN_INT32, HCCN_SUM}, {HCCN_FP32, HCCN_SUM},  {HCCN_FP16, HCCN_SUM},
        {HCCN_BF16, HCCN_SUM},  {HCCN_INT8, HCCN_PROD}, {HCCN_FP64, HCCN_PROD},
        {HCCN_BF16, HCCN_MAX},  {HCCN_INT64, HCCN_MIN}, {HCCN_FP16, HCCN_AVG},
        {HCCN_UINT16, HCCN_AVG}, {HCCN_INT32, HCCN_AVG}, {HCCN_FP32, HCCN_MAX},
    };
    for (int kind = 0; kind < 3; kind++) {
        if (only && kind != (int)k)
            continue;
        int n = kind == K_RSV ? (int)(sizeof(reds) / sizeof(reds[0])) : 4;
        if (only && n > 4)
            n = 4 + p % 3;   /* forced algorithms: a rotating subset */
        for (int i = 0; i < n; i++) {
            int j = only ? (i + p) % (kind == K_RSV ? 12 : 4) : i;
            case_t c = {(kind_t)kind,
                        kind == K_RSV ? reds[j].dt : moves[j],
                        kind == K_RSV ? reds[j].op : HCCN_SUM,
                        kind != K_A2AV && i % 2 == 1, i % 3 == 2,
                        i == 3 ? 1 : i == 2 ? 2 : 0,
                        (uint64_t)(p * 100 + i * 7 + kind)};
            add(run, c);
        }
    }
}

static void check_run(run_t *run, int p)
{
    int bad = 0;
    for (int r = 0; r < p; r++)
        if (run->rec[r].fails) {
            print_error("rank %d: %d failures, first: %s\n", r,
                        run->rec[r].fails, run->rec[r].first);
            bad = 1;
        }
    if (bad)
        fail_msg("p=%d algo=%s failed", p, run->algo ? run->algo : "auto");
}

static void sweep(int p)
{
    hccn_cluster_t *cl = make_cluster(p);
    static const struct {
        const char *name;
        kind_t kind;
    } forced[] = {{"ring", K_AGV},      {"ring", K_RSV},   {"mesh", K_AGV},
                  {"mesh", K_RSV},      {"mesh", K_A2AV},  {"linear", K_A2AV},
                  {"pairwise", K_A2AV}};
    run_t *run = calloc(1, sizeof(*run));
    assert_non_null(run);
    make_cases(run, 0, K_A2AV, p);
    assert_int_equal(hccn_cluster_run(cl, rank_main, run, NULL), HCCN_OK);
    check_run(run, p);
    for (size_t f = 0; f < sizeof(forced) / sizeof(forced[0]); f++) {
        memset(run, 0, sizeof(*run));
        run->algo = forced[f].name;
        make_cases(run, 1, forced[f].kind, p);
        assert_int_equal(hccn_cluster_run(cl, rank_main, run, NULL), HCCN_OK);
        check_run(run, p);
    }
    free(run);
    hccn_cluster_destroy(cl);
}

static void test_ranks_1_2_3(void **state)
{
    (void)state;
    sweep(1);
    sweep(2);
    sweep(3);
}

static void test_ranks_5_8(void **state)
{
    (void)state;
    sweep(5);
    sweep(8);
}

static void test_ranks_16(void **state)
{
    (void)state;
    if (!quick())
        sweep(16);
}

/* HCCN_ALGO's per-collective grammar forces each v-collective too. */
static void test_env_spec(void **state)
{
    (void)state;
    hccn_cluster_t *cl = make_cluster(5);
    run_t *run = calloc(1, sizeof(*run));
    assert_non_null(run);
    make_cases(run, 0, K_A2AV, 5);
    setenv("HCCN_ALGO",
           "alltoallv=pairwise/allgatherv=mesh/reducescatterv=mesh", 1);
    hccn_status_t rc = hccn_cluster_run(cl, rank_main, run, NULL);
    unsetenv("HCCN_ALGO");
    assert_int_equal(rc, HCCN_OK);
    check_run(run, 5);
    free(run);
    hccn_cluster_destroy(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_1_2_3),
        cmocka_unit_test(test_ranks_5_8),
        cmocka_unit_test(test_ranks_16),
        cmocka_unit_test(test_env_spec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
