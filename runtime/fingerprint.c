/*
 * Fingerprints: what every rank's call of one collective must agree on,
 * compared at the rendezvous once all ranks have arrived (runtime/exec.c)
 * before any byte moves. The v-collectives' counts are compared in full,
 * rank against rank, so the message can say which counts differ.
 */
#include <stdarg.h>
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
    if (n > 1) {
        size_t used = strlen(s->msg);
        snprintf(s->msg + used, sizeof(s->msg) - used,
                 " (%d ranks disagree with rank 0)", n);
    }
    if (n == 0 && hccn_coll_is_v((hccn_coll_t)s->fp[0].coll) &&
        v_check(c, s))
        n = 1;
    return n > 0 ? -1 : 0;
}
