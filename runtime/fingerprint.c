/*
 * Fingerprints: what every rank's call of one collective must agree on,
 * compared at the rendezvous once all ranks have arrived (runtime/exec.c)
 * before any byte moves. The v-collectives' counts are compared in full,
 * rank against rank, so the message can say which counts differ. So are
 * the per-rank settings that shape the schedule (wire compression, the
 * algorithm an override or the selection gave): ranks that disagree would
 * run different schedules, and deadlock or compute a wrong result.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "runtime/rt.h"

/* Equal calls, the v-collectives' counts aside (v_check looks at them). */
static int fp_equal(const rt_fp_t *a, const rt_fp_t *b)
{
    return a->coll == b->coll &&
           (a->count == b->count || hccn_coll_is_v((hccn_coll_t)a->coll)) &&
           a->dtype == b->dtype && a->op == b->op && a->root == b->root;
}

const char *hccn_rt_fp_name(int kind)
{
    return kind == RT_FP_SPLIT ? "comm_split" : hccn_coll_name((hccn_coll_t)kind);
}

static int fp_format(char *buf, size_t len, const rt_fp_t *f)
{
    return snprintf(buf, len, "%s(count=%llu, %s, %s, root=%d)",
                    hccn_rt_fp_name(f->coll),
                    (unsigned long long)f->count,
                    hccn_dtype_name((hccn_dtype_t)f->dtype),
                    hccn_redop_name((hccn_redop_t)f->op), f->root);
}

/* Appends one disagreement to s->msg (after the slot's header when it
 * is the first); *n counts them, only the first few are written. */
static void v_note(rt_comm_t *c, rt_slot_t *s, int *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void v_note(rt_comm_t *c, rt_slot_t *s, int *n, const char *fmt, ...)
{
    size_t used = strlen(s->msg);
    if (*n == 0)
        used += (size_t)snprintf(s->msg, sizeof(s->msg),
                                 "collective #%llu on communicator %llu: %s: ",
                                 (unsigned long long)s->seq,
                                 (unsigned long long)c->uid,
                                 hccn_rt_fp_name(s->fp[0].coll));
    if (*n < 4 && used < sizeof(s->msg)) {
        va_list ap;
        va_start(ap, fmt);
        used += (size_t)snprintf(s->msg + used, sizeof(s->msg) - used, "%s",
                                 *n ? "; " : "");
        if (used < sizeof(s->msg))
            vsnprintf(s->msg + used, sizeof(s->msg) - used, fmt, ap);
        va_end(ap);
    }
    (*n)++;
}

/* Every rank's recvcounts against rank 0's: the first differing entry of
 * each rank that differs. */
static void v_check_common(rt_comm_t *c, rt_slot_t *s, int *n)
{
    const rt_fp_t *f = s->fp;
    for (int r = 1; r < c->size; r++) {
        if (f[r].vhash == f[0].vhash &&
            memcmp(f[r].vrecv, f[0].vrecv,
                   (size_t)c->size * sizeof(uint64_t)) == 0)
            continue;
        int e = 0;
        while (e < c->size - 1 && f[r].vrecv[e] == f[0].vrecv[e])
            e++;
        v_note(c, s, n,
               "rank 0 passed recvcounts[%d] = %llu but rank %d passed "
               "recvcounts[%d] = %llu",
               e, (unsigned long long)f[0].vrecv[e], r, e,
               (unsigned long long)f[r].vrecv[e]);
    }
}

/* The v-collectives' count rules (hccn_coll.h); 1 if one is broken, with
 * s->msg naming the ranks and the counts. */
static int v_check(rt_comm_t *c, rt_slot_t *s)
{
    const rt_fp_t *f = s->fp;
    int n = 0;
    if (f[0].coll == HCCN_COLL_ALLTOALLV) {
        for (int i = 0; i < c->size; i++)
            for (int j = 0; j < c->size; j++)
                if (f[i].vsend[j] != f[j].vrecv[i])
                    v_note(c, s, &n,
                           "rank %d sends %llu elements to rank %d "
                           "(sendcounts[%d]) but rank %d expects %llu from "
                           "rank %d (recvcounts[%d])",
                           i, (unsigned long long)f[i].vsend[j], j, j, j,
                           (unsigned long long)f[j].vrecv[i], i, i);
    } else {
        v_check_common(c, s, &n);
        for (int r = 0; n == 0 && f[0].coll == HCCN_COLL_ALLGATHERV &&
                        r < c->size; r++)
            if (f[r].count != f[0].vrecv[r])
                v_note(c, s, &n,
                       "rank %d passed sendcount = %llu but every rank "
                       "passed recvcounts[%d] = %llu",
                       r, (unsigned long long)f[r].count, r,
                       (unsigned long long)f[0].vrecv[r]);
    }
    if (n > 4) {
        size_t used = strlen(s->msg);
        snprintf(s->msg + used, sizeof(s->msg) - used,
                 " (%d disagreements in all)", n);
    }
    return n > 0;
}

/* ------------------------------------------------------------ settings */

/* A per-rank setting that changes the schedule, so every rank's call must
 * agree on it: its name, where a program sets it, its value on a rank as a
 * key (equal keys: equal values) and as text. */
typedef struct {
    const char *name;
    const char *where;
    uint64_t (*key)(const rt_fp_t *f);
    const char *(*text)(const rt_fp_t *f);
} setting_t;

static uint64_t compress_key(const rt_fp_t *f)
{
    return (uint64_t)f->compress;
}

static const char *compress_text(const rt_fp_t *f)
{
    return f->compress == HCCN_COMPRESS_FP16   ? "fp16"
           : f->compress == HCCN_COMPRESS_BF16 ? "bf16"
                                               : "none";
}

static uint64_t algo_key(const rt_fp_t *f)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = f->algo != NULL ? f->algo : ""; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

static const char *algo_text(const rt_fp_t *f)
{
    return f->algo != NULL ? f->algo : "?";
}

static const setting_t settings[] = {
    {"wire compression",
     "hccn_comm_set_compression or hccn_coll_opts_t.compress", compress_key,
     compress_text},
    {"algorithm", "hccn_comm_set_algo, hccn_coll_opts_t.algo or HCCN_ALGO",
     algo_key, algo_text},
};

#define GROUPS_SHOWN 8

/* Writes to buf the comm ranks whose key is k, as ranges ("0-3, 6");
 * returns how many there are. */
static int ranks_with(const rt_comm_t *c, const rt_slot_t *s,
                      const setting_t *st, uint64_t k, char *buf, size_t len)
{
    int first = 1, n = 0;
    size_t u = 0;
    size_t *used = &u;
    buf[0] = '\0';
    for (int r = 0; r < c->size && *used < len; r++) {
        if (st->key(&s->fp[r]) != k)
            continue;
        int e = r;
        while (e + 1 < c->size && st->key(&s->fp[e + 1]) == k)
            e++;
        *used += (size_t)(e > r ? snprintf(buf + *used, len - *used,
                                           "%s%d-%d", first ? "" : ", ", r, e)
                                : snprintf(buf + *used, len - *used, "%s%d",
                                           first ? "" : ", ", r));
        first = 0;
        n += e - r + 1;
        r = e;
    }
    return n;
}

/* 1 if the ranks disagree on st, with s->msg naming the setting, where it
 * is set, and each value with the ranks that use it. */
static int setting_check(rt_comm_t *c, rt_slot_t *s, const setting_t *st)
{
    uint64_t keys[GROUPS_SHOWN];
    int heads[GROUPS_SHOWN], ng = 0, more = 0;
    for (int r = 0; r < c->size; r++) {
        uint64_t k = st->key(&s->fp[r]);
        int g = 0;
        while (g < ng && keys[g] != k)
            g++;
        if (g < ng)
            continue;
        if (ng == GROUPS_SHOWN) {
            more = 1;
            continue;
        }
        keys[ng] = k;
        heads[ng++] = r;
    }
    if (ng == 1)
        return 0;
    size_t len = sizeof(s->msg), used = (size_t)snprintf(
        s->msg, len,
        "collective #%llu on communicator %llu: %s: the ranks disagree on "
        "the setting '%s' (set by %s):",
        (unsigned long long)s->seq, (unsigned long long)c->uid,
        hccn_rt_fp_name(s->fp[0].coll), st->name, st->where);
    char list[256];
    for (int g = 0; g < ng && used < len; g++) {
        int m = ranks_with(c, s, st, keys[g], list, sizeof(list));
        used += (size_t)snprintf(s->msg + used, len - used, "%s %s %s %s %s",
                                 g ? ";" : "", m > 1 ? "ranks" : "rank", list,
                                 m > 1 ? "use" : "uses",
                                 st->text(&s->fp[heads[g]]));
    }
    if (more && used < len)
        snprintf(s->msg + used, len - used, "; and other values");
    return 1;
}

/* Appends to s->msg the n comm ranks whose call differs from rank 0's,
 * as ranges, so a divergence shows which ranks went which way. */
static void disagreeing(const rt_comm_t *c, rt_slot_t *s, int n)
{
    size_t len = sizeof(s->msg), used = strlen(s->msg);
    used += (size_t)snprintf(s->msg + used, len - used,
                             " (%d ranks disagree with rank 0:", n);
    for (int r = 1, first = 1; r < c->size && used < len; r++) {
        if (fp_equal(&s->fp[0], &s->fp[r]))
            continue;
        int e = r;
        while (e + 1 < c->size && !fp_equal(&s->fp[0], &s->fp[e + 1]))
            e++;
        used += (size_t)(e > r ? snprintf(s->msg + used, len - used,
                                          "%s %d-%d", first ? "" : ",", r, e)
                               : snprintf(s->msg + used, len - used, "%s %d",
                                          first ? "" : ",", r));
        first = 0;
        r = e;
    }
    if (used < len)
        snprintf(s->msg + used, len - used, ")");
}

int hccn_rt_fp_check(rt_comm_t *c, rt_slot_t *s)
{
    char a[160], b[160];
    int n = 0;
    for (int r = 1; r < c->size; r++) {
        if (fp_equal(&s->fp[0], &s->fp[r]))
            continue;
        if (n == 0) {
            fp_format(a, sizeof(a), &s->fp[0]);
            fp_format(b, sizeof(b), &s->fp[r]);
            snprintf(s->msg, sizeof(s->msg),
                     "collective #%llu on communicator %llu: rank 0 called "
                     "%s but rank %d called %s",
                     (unsigned long long)s->seq, (unsigned long long)c->uid,
                     a, r, b);
        }
        n++;
    }
    if (n > 1)
        disagreeing(c, s, n);
    for (size_t k = 0; n == 0 && k < sizeof(settings) / sizeof(settings[0]);
         k++)
        n = setting_check(c, s, &settings[k]);
    if (n == 0 && hccn_coll_is_v((hccn_coll_t)s->fp[0].coll) &&
        v_check(c, s))
        n = 1;
    return n > 0 ? -1 : 0;
}
