/*
 * Replays: a collective that the engine has already simulated, posted again
 * on a quiet engine, ends as it ended then, shifted to its new start. The
 * engine's work for it becomes a comparison of its tasks with a recording.
 *
 * Why this holds. A joined call starts on every device at one time T (the
 * join). If at T no flow is in flight, no event is queued, no other batch
 * is open, every device's local work is done, and no fault plan is set,
 * then what the engine computes for the call depends only on its tasks and
 * on T, and on T only by a shift: every time it derives is T plus what it
 * derived for the recorded call (up to the rounding of that addition). The
 * call must also be alone for as long as it runs: every member promised to
 * post nothing else until its batch completes (hccn_sim_post_joined's
 * `sole`), and the recording is kept only if the call's last flow left the
 * links no later than the first member ended, and no other flow started
 * while it was recorded: so no later work could have shared a link with it.
 *
 * What a replay restores: each batch's start and end, its tasks' begin and
 * end (not in lean mode, where nothing reads them), each device's local
 * work queue, and the links' byte and busy totals.
 *
 * Hollow posts. A sole member whose tasks are exactly a recording's part
 * for its device (compared on the posted tasks themselves) is posted
 * without building them: no task memory, no matching. If the whole join
 * turns out replayable from that recording, nothing is ever built; else
 * the hollow members' tasks are built from the recording when the join
 * completes, before anything starts, and the call is simulated. Keys
 * identify transfers (the engine's matching, and so its determinism,
 * already relies on one pair per key), so equal keys mean equal pairing.
 *
 * Determinism: whether a call is replayed depends on the members' promises
 * (the program's), on the engine's state at the join, which with every
 * member sole is the same in every run, and on what was recorded before;
 * so a run with data and a timing-only run of the same calls replay the
 * same calls and give the same bits.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/engine_internal.h"

/* Recordings hold at most HCCN_SIM_REPLAY_MAX tasks in all (engine.h). */
#define REPLAY_MAX HCCN_SIM_REPLAY_MAX

/* What a task is compared on. Its mate's device is its peer, and how many
 * tasks it waits for follows from the successor lists, compared too. */
typedef struct {
    uint64_t bytes;
    double cost;
    uint64_t key_c;             /* the key's third part (the first two are
                                   the join's) */
    int peer, mate_idx;
    uint32_t nsucc;
    int kind, via;
} rtask_t;

struct hccn_sim_replay_rec {
    int refs;                   /* its slot, and batches posted hollow */
    int ndev;
    long ntasks;
    uint32_t *off;              /* device d's tasks: off[d] .. off[d+1] */
    uint32_t *soff;             /* and successors: soff[d] .. soff[d+1] */
    rtask_t *tasks;
    uint32_t *succ;
    double *end;                /* per device: batch end - T */
    double *local_free;         /* per device: local queue free - T, or
                                   NAN when the call queued no work */
    double *host_free;          /* the same for its host's per-message
                                   time (software.h) */
    double *tbegin, *tend;      /* per task - T; NULL if recorded lean */
    int nlinks;                 /* links the call used */
    int *link;
    double *dbytes, *dbusy;
    /* While recording. */
    double t;                   /* the join time */
    int left;                   /* members not done */
    int bad;                    /* a member failed, or a foreign flow */
    double first_end, last_drain;
    double *snap_bytes, *snap_busy;
};

static void rec_free(hccn_sim_replay_rec_t *r)
{
    if (r == NULL)
        return;
    hccn_sim_free(r->off);
    hccn_sim_free(r->soff);
    hccn_sim_free(r->tasks);
    hccn_sim_free(r->succ);
    hccn_sim_free(r->end);
    hccn_sim_free(r->local_free);
    hccn_sim_free(r->host_free);
    hccn_sim_free(r->tbegin);
    hccn_sim_free(r->tend);
    hccn_sim_free(r->link);
    hccn_sim_free(r->dbytes);
    hccn_sim_free(r->dbusy);
    hccn_sim_free(r->snap_bytes);
    hccn_sim_free(r->snap_busy);
    hccn_sim_free(r);
}

static rtask_t rtask_of(const etask_t *t)
{
    return (rtask_t){.kind = (int)t->kind, .peer = t->peer,
                     .mate_idx = t->mate != NULL ? t->mate->idx : -1,
                     .bytes = t->bytes, .cost = t->cost, .key_c = t->key.c,
                     .nsucc = t->nsucc, .via = t->via};
}

static int rtask_eq(const rtask_t *x, const rtask_t *y)
{
    return x->kind == y->kind && x->peer == y->peer &&
           x->mate_idx == y->mate_idx && x->bytes == y->bytes &&
           x->cost == y->cost && x->key_c == y->key_c && x->nsucc == y->nsucc &&
           x->via == y->via;
}

static void rec_unref(hccn_sim_replay_rec_t *r)
{
    if (r != NULL && --r->refs == 0)
        rec_free(r);
}

/* Successors of a batch: the sum of its tasks' nsucc. */
static uint32_t nsucc_of(const hccn_sim_batch_t *b)
{
    uint32_t n = 0;
    for (int i = 0; i < b->ntasks; i++)
        n += b->tasks[i].nsucc;
    return n;
}

/* Device dev's place in a recording: among the devices played. */
static int slot_of(const hccn_sim_engine_t *eng, int dev)
{
    return eng->live_slot != NULL ? eng->live_slot[dev] : dev;
}

/* The join's members by device (by[d]), if the call may be recorded or
 * replayed: one member per device, every member sole, the engine quiet at
 * t. Returns the call's task count, or -1. */
static long eligible(const hccn_sim_engine_t *eng, hccn_sim_batch_t *const *m,
                     int count, double t, hccn_sim_batch_t **by)
{
    if (count != eng->nlive || eng->nfaults > 0 || eng->trace != NULL ||
        eng->rec != NULL || eng->nopen != count || eng->nflows > 0 ||
        eng->nheap > 0 || eng->nmatch_waiting > 0)
        return -1;
    for (int d = 0; d < count; d++)
        by[d] = NULL;
    long n = 0;
    for (int i = 0; i < count; i++) {
        hccn_sim_batch_t *b = m[i];
        int s = slot_of(eng, b->dev);
        if (!b->sole || s < 0 || s >= count || by[s] != NULL ||
            (b->tasks == NULL && b->hollow == NULL) ||
            eng->devs[b->dev].local_free > t ||
            eng->devs[b->dev].host_free > t || eng->devs[b->dev].failed)
            return -1;
        by[s] = b;
        n += b->ntasks;
    }
    return n <= REPLAY_MAX ? n : -1;
}

/* 1 if the members' n tasks are those of r. (A recorded call completed,
 * so every half of it had its other side: a half without one differs.) */
static int rec_matches(const hccn_sim_replay_rec_t *r,
                       hccn_sim_batch_t *const *by, long n, int lean)
{
    if (r->ntasks != n || (r->tbegin == NULL && !lean))
        return 0;               /* or recorded without the tasks' times */
    for (int d = 0; d < r->ndev; d++) {
        const hccn_sim_batch_t *b = by[d];
        if ((uint32_t)b->ntasks != r->off[d + 1] - r->off[d])
            return 0;
        const rtask_t *rt = &r->tasks[r->off[d]];
        for (int k = 0; k < b->ntasks; k++) {
            rtask_t x = rtask_of(&b->tasks[k]);
            if (!rtask_eq(&x, &rt[k]))
                return 0;
        }
        uint32_t ns = r->soff[d + 1] - r->soff[d];
        if (ns > 0 && memcmp(b->succ, &r->succ[r->soff[d]],
                             ns * sizeof(uint32_t)) != 0)
            return 0;
    }
    return 1;
}

/* Ends the members as r ended, shifted to start at t. */
static void rec_apply(hccn_sim_engine_t *eng, const hccn_sim_replay_rec_t *r,
                      hccn_sim_batch_t *const *by, double t)
{
    for (int d = 0; d < r->ndev; d++) {
        hccn_sim_batch_t *b = by[d];
        b->gated = 0;
        b->start = t;
        b->end = t + r->end[d];
        b->left = 0;
        for (int k = 0; b->tasks != NULL && k < b->ntasks; k++) {
            etask_t *x = &b->tasks[k];
            x->state = T_DONE;
            x->ready = t;
            if (r->tbegin != NULL) {
                x->begin = t + r->tbegin[r->off[d] + (uint32_t)k];
                x->end = t + r->tend[r->off[d] + (uint32_t)k];
            }
        }
        if (!isnan(r->local_free[d]))
            eng->devs[b->dev].local_free = t + r->local_free[d];
        if (!isnan(r->host_free[d]))
            eng->devs[b->dev].host_free = t + r->host_free[d];
    }
    for (int k = 0; k < r->nlinks; k++) {
        eng->link_bytes[r->link[k]] += r->dbytes[k];
        eng->link_busy[r->link[k]] += r->dbusy[k];
    }
    for (int d = 0; d < r->ndev; d++) {
        if (eng->lean)          /* no task times to read: let it go */
            hccn_sim_replay_unhollow(eng, by[d]);
        hccn_sim_batch_complete(eng, by[d]);
    }
    eng->nreplays++;
}

/* Starts recording the members (by device) from t. */
static void rec_begin(hccn_sim_engine_t *eng, hccn_sim_batch_t *const *by,
                      int ndev, long ntasks, double t, hccn_sim_key_t key)
{
    hccn_sim_replay_rec_t *r = hccn_sim_calloc(1, sizeof(*r));
    if (r == NULL)
        return;
    int nl = eng->topo->nlinks;
    uint32_t ns = 0;
    for (int d = 0; d < ndev; d++)
        ns += nsucc_of(by[d]);
    r->ndev = ndev;
    r->ntasks = ntasks;
    r->off = hccn_sim_malloc(((size_t)ndev + 1) * sizeof(*r->off));
    r->soff = hccn_sim_malloc(((size_t)ndev + 1) * sizeof(*r->soff));
    r->tasks = hccn_sim_malloc(((size_t)ntasks + 1) * sizeof(*r->tasks));
    r->succ = hccn_sim_malloc(((size_t)ns + 1) * sizeof(*r->succ));
    r->end = hccn_sim_malloc((size_t)ndev * sizeof(*r->end));
    r->local_free = hccn_sim_malloc((size_t)ndev * sizeof(*r->local_free));
    r->host_free = hccn_sim_malloc((size_t)ndev * sizeof(*r->host_free));
    r->snap_bytes = hccn_sim_malloc(((size_t)nl + 1) * sizeof(double));
    r->snap_busy = hccn_sim_malloc(((size_t)nl + 1) * sizeof(double));
    if (!eng->lean) {
        r->tbegin = hccn_sim_malloc(((size_t)ntasks + 1) * sizeof(double));
        r->tend = hccn_sim_malloc(((size_t)ntasks + 1) * sizeof(double));
    }
    if (r->off == NULL || r->soff == NULL || r->tasks == NULL ||
        r->succ == NULL || r->end == NULL || r->local_free == NULL ||
        r->host_free == NULL ||
        r->snap_bytes == NULL || r->snap_busy == NULL ||
        (!eng->lean && (r->tbegin == NULL || r->tend == NULL))) {
        rec_free(r);
        return;
    }
    uint32_t n = 0, s = 0;
    for (int d = 0; d < ndev; d++) {
        const hccn_sim_batch_t *b = by[d];
        r->off[d] = n;
        r->soff[d] = s;
        for (int k = 0; k < b->ntasks; k++) {
            const etask_t *x = &b->tasks[k];
            if (x->kind != HCCN_SIM_TASK_LOCAL &&
                (x->mate == NULL || x->key.a != key.a || x->key.b != key.b)) {
                rec_free(r);    /* a half without its other side (the call
                                   cannot complete as posted), or keyed
                                   outside the join */
                return;
            }
            r->tasks[n++] = rtask_of(x);
        }
        uint32_t bs = nsucc_of(b);
        if (bs > 0)
            memcpy(&r->succ[s], b->succ, bs * sizeof(uint32_t));
        s += bs;
        r->local_free[d] = NAN;
        r->host_free[d] = NAN;
    }
    for (int d = 0; d < ndev; d++)
        by[d]->rec = r;
    r->refs = 1;
    r->off[ndev] = n;
    r->soff[ndev] = s;
    if (nl > 0) {
        memcpy(r->snap_bytes, eng->link_bytes, (size_t)nl * sizeof(double));
        memcpy(r->snap_busy, eng->link_busy, (size_t)nl * sizeof(double));
    }
    r->t = t;
    r->left = ndev;
    r->first_end = INFINITY;
    r->last_drain = -INFINITY;
    eng->rec = r;
}

/* Keeps the finished recording r if the call was alone while it ran. */
static void rec_end(hccn_sim_engine_t *eng, hccn_sim_replay_rec_t *r)
{
    eng->rec = NULL;
    int nl = eng->topo->nlinks, used = 0;
    if (r->bad || r->last_drain > r->first_end) {
        rec_free(r);
        return;
    }
    for (int l = 0; l < nl; l++) {
        if (eng->lk[l].active > 0) {
            rec_free(r);        /* cannot be: every flow has left */
            return;
        }
        used += eng->link_bytes[l] != r->snap_bytes[l] ||
                eng->link_busy[l] != r->snap_busy[l];
    }
    r->link = hccn_sim_malloc(((size_t)used + 1) * sizeof(*r->link));
    r->dbytes = hccn_sim_malloc(((size_t)used + 1) * sizeof(double));
    r->dbusy = hccn_sim_malloc(((size_t)used + 1) * sizeof(double));
    if (r->link == NULL || r->dbytes == NULL || r->dbusy == NULL) {
        rec_free(r);
        return;
    }
    for (int l = 0; l < nl; l++)
        if (eng->link_bytes[l] != r->snap_bytes[l] ||
            eng->link_busy[l] != r->snap_busy[l]) {
            r->link[r->nlinks] = l;
            r->dbytes[r->nlinks] = eng->link_bytes[l] - r->snap_bytes[l];
            r->dbusy[r->nlinks] = eng->link_busy[l] - r->snap_busy[l];
            r->nlinks++;
        }
    hccn_sim_free(r->snap_bytes);
    hccn_sim_free(r->snap_busy);
    r->snap_bytes = r->snap_busy = NULL;
    /* Replaces the oldest, and more while the recordings would hold more
     * than REPLAY_MAX tasks in all. */
    long total = r->ntasks;
    for (int k = 1; k < HCCN_SIM_REPLAYS; k++) {
        hccn_sim_replay_rec_t **x =
            &eng->replays[(eng->replay_next + k) % HCCN_SIM_REPLAYS];
        if (*x != NULL && total + (*x)->ntasks > REPLAY_MAX) {
            rec_unref(*x);
            *x = NULL;
        } else if (*x != NULL) {
            total += (*x)->ntasks;
        }
    }
    int slot = eng->replay_next;
    eng->replay_next = (slot + 1) % HCCN_SIM_REPLAYS;
    rec_unref(eng->replays[slot]);
    eng->replays[slot] = r;
    hccn_sim_replay_changed(eng);
}

/* Builds the tasks of b, posted hollow, from its recording (key: the
 * join's), and pairs their halves; the caller then lets the recording go.
 * Returns -1 on no memory. */
static int unhollow_build(hccn_sim_engine_t *eng, hccn_sim_batch_t *b,
                          hccn_sim_key_t key)
{
    const hccn_sim_replay_rec_t *r = b->hollow;
    int d = slot_of(eng, b->dev);
    uint32_t ns = r->soff[d + 1] - r->soff[d];
    const rtask_t *rt = &r->tasks[r->off[d]];
    const uint32_t *succ = &r->succ[r->soff[d]];
    b->tasks = hccn_sim_batch_mem(b, (size_t)(b->ntasks > 0 ? b->ntasks : 1) *
                                         sizeof(etask_t));
    b->succ = hccn_sim_batch_mem(b, (ns > 0 ? ns : 1) * sizeof(uint32_t));
    if (b->tasks == NULL || b->succ == NULL)
        return -1;
    uint32_t off = 0;
    for (int k = 0; k < b->ntasks; k++) {
        b->tasks[k] = (etask_t){
            .kind = (hccn_sim_task_kind_t)rt[k].kind, .dev = b->dev,
            .peer = rt[k].peer, .idx = k, .bytes = rt[k].bytes,
            .cost = rt[k].cost, .key = {key.a, key.b, rt[k].key_c},
            .via = rt[k].via, .succ_off = off, .nsucc = rt[k].nsucc,
            .succ_in = SUCC_IN(succ, off, rt[k].nsucc), .batch = b};
        off += rt[k].nsucc;
    }
    if (ns > 0)
        memcpy(b->succ, succ, ns * sizeof(uint32_t));
    for (uint32_t k = 0; k < ns; k++)
        b->tasks[succ[k]].npending++;
    for (int k = 0; k < b->ntasks; k++)
        if (b->tasks[k].kind != HCCN_SIM_TASK_LOCAL)
            hccn_sim_match_half(eng, &b->tasks[k]);
    return 0;
}

int hccn_sim_replay_join(hccn_sim_engine_t *eng, hccn_sim_batch_t *const *m,
                         int count, double t, hccn_sim_key_t key)
{
    hccn_sim_batch_t **by = hccn_sim_calloc((size_t)count, sizeof(*by));
    if (by == NULL)
        return 0;
    long n = eligible(eng, m, count, t, by);
    if (n >= 0) {
        /* Every member posted hollow from one recording: replayed as is. */
        hccn_sim_replay_rec_t *r = by[0]->hollow;
        int same = r != NULL && r->ntasks == n &&
                   (r->tbegin != NULL || eng->lean);
        for (int d = 1; d < count && same; d++)
            same = by[d]->hollow == r;
        if (same) {
            rec_apply(eng, r, by, t);
            hccn_sim_free(by);
            return 1;
        }
    }
    /* Else every member needs its tasks; then the call is judged as one
     * posted with them (a member that was not posted hollow, because the
     * recording was made after it posted, may still match). */
    int rc = 0, built = 0;
    for (int i = 0; i < count; i++)
        if (m[i]->hollow != NULL) {
            built = 1;
            if (rc == 0 && unhollow_build(eng, m[i], key) != 0)
                rc = -1;
            hccn_sim_replay_unhollow(eng, m[i]);
        }
    if (rc == 0 && built)
        n = eligible(eng, m, count, t, by);
    if (rc != 0 || n < 0) {
        hccn_sim_free(by);
        return rc;
    }
    for (int i = 0; i < HCCN_SIM_REPLAYS; i++) {
        const hccn_sim_replay_rec_t *r = eng->replays[i];
        if (r != NULL && rec_matches(r, by, n, eng->lean)) {
            rec_apply(eng, r, by, t);
            hccn_sim_free(by);
            return 1;
        }
    }
    /* Recording off when the call was posted: no later call replays it. */
    int record = 1;
    for (int d = 0; d < count; d++)
        record &= !by[d]->no_record;
    if (record)
        rec_begin(eng, by, count, n, t, key);
    hccn_sim_free(by);
    return 0;
}

/* 1 if device dev's part of r is exactly these posted tasks. */
static int part_matches(const hccn_sim_replay_rec_t *r, int dev,
                        const hccn_sim_task_t *tasks, int n,
                        const uint32_t *deps, hccn_sim_key_t join,
                        uint32_t *scratch)
{
    if (r->ndev <= dev || (uint32_t)n != r->off[dev + 1] - r->off[dev])
        return 0;
    const rtask_t *rt = &r->tasks[r->off[dev]];
    uint32_t ndeps = 0;
    for (int k = 0; k < n; k++) {
        const hccn_sim_task_t *x = &tasks[k];
        if ((int)x->kind != rt[k].kind || x->peer != rt[k].peer ||
            x->bytes != rt[k].bytes || x->cost != rt[k].cost ||
            x->key.c != rt[k].key_c || x->via != rt[k].via ||
            (x->kind != HCCN_SIM_TASK_LOCAL &&
             (x->key.a != join.a || x->key.b != join.b)))
            return 0;
        ndeps += x->ndeps;
    }
    uint32_t ns = r->soff[dev + 1] - r->soff[dev];
    if (ndeps != ns)
        return 0;
    uint32_t *nsucc = scratch, *soff = scratch + n, *succ = scratch + 2 * n;
    if (hccn_sim_succ_lists(tasks, n, deps, nsucc, soff, succ) != 0)
        return 0;
    for (int k = 0; k < n; k++)
        if (nsucc[k] != rt[k].nsucc)
            return 0;
    return ns == 0 ||
           memcmp(succ, &r->succ[r->soff[dev]], ns * sizeof(uint32_t)) == 0;
}

hccn_sim_replay_rec_t *hccn_sim_replay_find(hccn_sim_engine_t *eng, int dev,
                                            const hccn_sim_task_t *tasks,
                                            int n, const uint32_t *deps,
                                            hccn_sim_key_t join)
{
    if (eng->nfaults > 0 || eng->trace != NULL)
        return NULL;
    uint32_t ndeps = 0;
    for (int k = 0; k < n; k++)
        ndeps += tasks[k].ndeps;
    uint32_t *scratch = NULL;
    hccn_sim_replay_rec_t *found = NULL;
    for (int i = 0; i < HCCN_SIM_REPLAYS && found == NULL; i++) {
        hccn_sim_replay_rec_t *r = eng->replays[i];
        if (r == NULL || r->ndev != eng->ndev || (r->tbegin == NULL &&
                                                  !eng->lean))
            continue;
        if (scratch == NULL &&
            (scratch = hccn_sim_malloc((2 * (size_t)n + ndeps + 1) *
                              sizeof(uint32_t))) == NULL)
            return NULL;
        if (part_matches(r, dev, tasks, n, deps, join, scratch))
            found = r;
    }
    hccn_sim_free(scratch);
    if (found != NULL)
        found->refs++;
    return found;
}

/* Generations are unique in the process, so that a hint never stands on
 * another engine, or on this one after a reset. */
static _Atomic uint64_t generations;

void hccn_sim_replay_changed(hccn_sim_engine_t *eng)
{
    eng->replay_gen = atomic_fetch_add_explicit(&generations, 1,
                                                memory_order_relaxed) + 1;
}

/* Which recording matches a part depends only on the part, on replays[]
 * and on the checks at the top of hccn_sim_replay_find (a fault plan or a
 * trace: no recording is used), and the generation changes with
 * replays[]: while it has not, the earlier answer for the same part is
 * the answer. */
static int hints_apply(const hccn_sim_engine_t *eng)
{
    return eng->nfaults == 0 && eng->trace == NULL;
}

static int hint_valid(const hccn_sim_engine_t *eng,
                      const hccn_sim_replay_hint_t *hint)
{
    return hint != NULL && hint->gen != 0 && hint->gen == eng->replay_gen &&
           hints_apply(eng);
}

int hccn_sim_replay_hint_ok(const hccn_sim_engine_t *eng,
                            const hccn_sim_replay_hint_t *hint)
{
    return hint_valid(eng, hint) && hint->rec != NULL;
}

hccn_sim_replay_rec_t *hccn_sim_replay_lookup(hccn_sim_engine_t *eng,
                                              int dev,
                                              const hccn_sim_task_t *tasks,
                                              int n, const uint32_t *deps,
                                              hccn_sim_key_t join,
                                              hccn_sim_replay_hint_t *hint)
{
    if (hint_valid(eng, hint)) {
        hccn_sim_replay_rec_t *r = hint->rec;
        if (r != NULL)
            r->refs++;
        return r;
    }
    if (tasks == NULL)
        return NULL;            /* a hint that no longer stands: fails */
    hccn_sim_replay_rec_t *r = hccn_sim_replay_find(eng, dev, tasks, n, deps,
                                                    join);
    if (hint != NULL) {
        hint->gen = hints_apply(eng) ? eng->replay_gen : 0;
        hint->rec = r;
    }
    return r;
}

void hccn_sim_replay_unhollow(hccn_sim_engine_t *eng, hccn_sim_batch_t *b)
{
    (void)eng;
    rec_unref(b->hollow);
    b->hollow = NULL;
}

double hccn_sim_replay_task_time(const hccn_sim_batch_t *b, int i, int end)
{
    const hccn_sim_replay_rec_t *r = b->hollow;
    if (r == NULL || r->tbegin == NULL ||
        !__atomic_load_n(&b->done, __ATOMIC_ACQUIRE) || i < 0 ||
        i >= b->ntasks)
        return NAN;
    uint32_t k = r->off[b->dev] + (uint32_t)i;
    return b->start + (end ? r->tend[k] : r->tbegin[k]);
}

void hccn_sim_replay_member_done(hccn_sim_engine_t *eng, hccn_sim_batch_t *b)
{
    hccn_sim_replay_rec_t *r = b->rec;
    b->rec = NULL;
    if (r != eng->rec)
        return;
    int d = slot_of(eng, b->dev);
    const edev_t *dv = &eng->devs[b->dev];
    if (b->status != HCCN_OK || b->tasks == NULL)
        r->bad = 1;
    if (!r->bad) {
        r->end[d] = b->end - r->t;
        if (dv->local_free > r->t)
            r->local_free[d] = dv->local_free - r->t;
        if (dv->host_free > r->t)
            r->host_free[d] = dv->host_free - r->t;
        if (r->tbegin != NULL)
            for (int k = 0; k < b->ntasks; k++) {
                r->tbegin[r->off[d] + (uint32_t)k] = b->tasks[k].begin - r->t;
                r->tend[r->off[d] + (uint32_t)k] = b->tasks[k].end - r->t;
            }
        if (b->end < r->first_end)
            r->first_end = b->end;
    }
    if (--r->left == 0)
        rec_end(eng, r);
}

void hccn_sim_replay_flow(hccn_sim_engine_t *eng, const etask_t *send,
                          int drained)
{
    hccn_sim_replay_rec_t *r = eng->rec;
    if (send->batch->rec != r)
        r->bad = 1;             /* another call's flow while recording */
    else if (drained && eng->now > r->last_drain)
        r->last_drain = eng->now;
}

void hccn_sim_replay_reset(hccn_sim_engine_t *eng)
{
    rec_free(eng->rec);         /* its members are being dropped */
    eng->rec = NULL;
    for (int i = 0; i < HCCN_SIM_REPLAYS; i++) {
        rec_unref(eng->replays[i]);
        eng->replays[i] = NULL;
    }
    eng->replay_next = 0;
    hccn_sim_replay_changed(eng);
}
