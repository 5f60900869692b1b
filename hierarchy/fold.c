/*
 * Whether a schedule folds onto node 0 (fold.h). Each rank of node 0 sorts
 * its steps by what they do (their signature: the task, and where its peer
 * is); a rank of another node then takes, for each of its steps in order,
 * the next unused step of the same signature on its copy. That map is the
 * only candidate that keeps the order of equal steps; the checks of fold.h
 * then decide. A rank whose steps are its copy's in the same order (most
 * of them) is checked without the sort.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "hierarchy/fold.h"

typedef struct {
    uint64_t h;                 /* 0: empty */
    uint32_t any;               /* a step with this signature */
    uint32_t first, n;          /* its steps: ord[first .. first+n) */
    uint32_t used;              /* of them, taken by rank `stamp` */
    int stamp;
} slot_t;

typedef struct {                /* a rank of node 0 */
    const hccn_sched_rank_t *rk;
    hccn_sim_task_t *t;         /* its tasks */
    slot_t *tab;                /* signatures, open addressing */
    uint32_t mask;
    uint32_t *ord;              /* its steps, by signature */
} rep_t;

typedef struct {
    const hccn_sched_t *s;
    const hccn_sim_npu_t *npus;
    const hccn_sim_topo_t *topo;    /* NULL: nodes only (fold.h) */
    const int *rep;
    rep_t *reps;
    uint32_t **map;             /* per rank: its steps onto its copy's;
                                   NULL: the same index */
    int host_order;             /* transfers keep their order (fold.h) */
    hccn_sim_task_t *t;         /* the tasks of the rank being checked */
    char *why;
    size_t len;
    uint32_t *seen, nseen;      /* map_rank: a copy's step is among the
                                   dependencies of the step checked when
                                   seen[step] == stamp */
    uint32_t stamp;
} fck_t;

static int refuse(fck_t *c, int r, const char *what)
{
    snprintf(c->why, c->len, "rank %d's part is not like rank %d's (%s)", r,
             c->rep[r], what);
    return 1;
}

/* How far rank a's peer b is (fold.h). */
static int apart(const fck_t *c, int a, int b)
{
    if (c->topo != NULL)
        return hccn_sim_topo_apart(c->topo, a, b);
    return c->npus[a].node != c->npus[b].node;
}

/* Whether task x of rank rx and y of ry do the same, their peers copies
 * placed alike. */
static int same(const fck_t *c, const hccn_sim_task_t *x, int rx,
                const hccn_sim_task_t *y, int ry)
{
    if (x->kind != y->kind || x->bytes != y->bytes || x->cost != y->cost)
        return 0;
    if (x->kind == HCCN_SIM_TASK_LOCAL)
        return 1;
    if (x->via != y->via)       /* the part of the route it crosses */
        return 0;
    return c->rep[x->peer] == c->rep[y->peer] &&
           apart(c, rx, x->peer) == apart(c, ry, y->peer);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 29);
}

static uint64_t sig_hash(const fck_t *c, const hccn_sim_task_t *x, int rx)
{
    uint64_t cost;
    memcpy(&cost, &x->cost, sizeof(cost));
    uint64_t h = mix(mix(mix(1, (uint64_t)x->kind), x->bytes), cost);
    if (x->kind != HCCN_SIM_TASK_LOCAL)
        h = mix(mix(mix(h, (uint64_t)c->rep[x->peer]),
                    (uint64_t)apart(c, rx, x->peer)), (uint64_t)x->via);
    return h | 1;
}

/* The slot of x's signature in r0's table (x of rank rx): an empty one if
 * r0 has no step like it. */
static slot_t *find(const fck_t *c, int r0, const hccn_sim_task_t *x, int rx)
{
    const rep_t *p = &c->reps[r0];
    uint64_t h = sig_hash(c, x, rx);
    for (uint32_t i = (uint32_t)h & p->mask;; i = (i + 1) & p->mask) {
        slot_t *sl = &p->tab[i];
        if (sl->h == 0 || (sl->h == h && same(c, x, rx, &p->t[sl->any], r0)))
            return sl;
    }
}

/* Rank r0's tasks and their signatures. */
static int rep_init(fck_t *c, int r0, hccn_sched_tasks_fn *tasks, void *arg)
{
    rep_t *p = &c->reps[r0];
    p->rk = &c->s->ranks[r0];
    uint32_t n = p->rk->nsteps, cap = 2;
    while (cap < 2 * n)
        cap *= 2;
    p->mask = cap - 1;
    p->t = hccn_sim_malloc(((size_t)n + 1) * sizeof(*p->t));
    p->tab = hccn_sim_calloc(cap, sizeof(*p->tab));
    p->ord = hccn_sim_malloc(((size_t)n + 1) * sizeof(*p->ord));
    if (p->t == NULL || p->tab == NULL || p->ord == NULL)
        return -1;
    tasks(arg, r0, p->t);
    for (uint32_t k = 0; k < n; k++) {
        slot_t *sl = find(c, r0, &p->t[k], r0);
        if (sl->h == 0)
            *sl = (slot_t){.h = sig_hash(c, &p->t[k], r0), .any = k,
                           .stamp = -1};
        sl->n++;
    }
    uint32_t first = 0;
    for (uint32_t i = 0; i < cap; i++) {
        p->tab[i].first = first;
        first += p->tab[i].n;
    }
    for (uint32_t k = 0; k < n; k++) {
        slot_t *sl = find(c, r0, &p->t[k], r0);
        p->ord[sl->first + sl->used++] = k;
    }
    for (uint32_t i = 0; i < cap; i++)
        p->tab[i].used = 0;
    return 0;
}

static void rep_free(rep_t *p)
{
    hccn_sim_free(p->t);
    hccn_sim_free(p->tab);
    hccn_sim_free(p->ord);
}

/* Whether rank r's steps are its copy's in the same order. */
static int same_order(const fck_t *c, int r)
{
    int r0 = c->rep[r];
    const rep_t *p = &c->reps[r0];
    const hccn_sched_rank_t *rk = &c->s->ranks[r];
    if (rk->ndeps > 0 &&
        memcmp(rk->deps, p->rk->deps, rk->ndeps * sizeof(*rk->deps)) != 0)
        return 0;
    for (uint32_t k = 0; k < rk->nsteps; k++)
        if (!same(c, &c->t[k], r, &p->t[k], r0) ||
            c->t[k].dep_off != p->t[k].dep_off ||
            c->t[k].ndeps != p->t[k].ndeps)
            return 0;
    return 1;
}

/* Marks list[0..n) in c->seen under a new stamp. */
static void mark(fck_t *c, const uint32_t *list, uint32_t n)
{
    if (++c->stamp == 0) {
        memset(c->seen, 0, (size_t)c->nseen * sizeof(*c->seen));
        c->stamp = 1;
    }
    for (uint32_t i = 0; i < n; i++)
        c->seen[list[i]] = c->stamp;
}

/* Maps rank r's steps onto its copy's (fold.h); 1 if they do not fold. */
static int map_rank(fck_t *c, int r)
{
    int r0 = c->rep[r];
    const rep_t *p = &c->reps[r0];
    const hccn_sched_rank_t *rk = &c->s->ranks[r];
    uint32_t n = rk->nsteps, *m = hccn_sim_malloc(((size_t)n + 1) * sizeof(*m));
    if (m == NULL)
        return -1;
    c->map[r] = m;
    for (uint32_t k = 0; k < n; k++) {
        slot_t *sl = find(c, r0, &c->t[k], r);
        if (sl->h == 0)
            return refuse(c, r, "a step its copy has not");
        if (sl->stamp != r) {
            sl->stamp = r;
            sl->used = 0;
        }
        if (sl->used == sl->n)
            return refuse(c, r, "more steps of one kind");
        m[k] = p->ord[sl->first + sl->used++];
    }
    int64_t last = -1, last_xfer[2] = {-1, -1};
    for (uint32_t k = 0; k < n; k++) {
        const hccn_sim_task_t *x = &c->t[k], *y = &p->t[m[k]];
        if (x->ndeps != y->ndeps)
            return refuse(c, r, "dependencies");
        mark(c, p->rk->deps + y->dep_off, y->ndeps);
        for (uint32_t d = 0; d < x->ndeps; d++)
            if (c->seen[m[rk->deps[x->dep_off + d]]] != c->stamp)
                return refuse(c, r, "dependencies");
        if (x->cost > 0.0) {
            if ((int64_t)m[k] <= last)
                return refuse(c, r, "the order of its work");
            last = m[k];
        }
        /* A host takes a send when it is ready and a receive when it
         * arrives: ties among sends, and among receives, go by index. */
        if (c->host_order && x->kind != HCCN_SIM_TASK_LOCAL) {
            int64_t *l = &last_xfer[x->kind == HCCN_SIM_TASK_RECV];
            if ((int64_t)m[k] <= *l)
                return refuse(c, r, "the order of its messages");
            *l = m[k];
        }
    }
    return 0;
}

static uint32_t mapped(const fck_t *c, int r, uint32_t k)
{
    return c->map[r] != NULL ? c->map[r][k] : k;
}

/* The transfers' pairing, and the keys the played ranks' RECVs take. */
static int pair_xfers(fck_t *c, uint64_t **pair, uint64_t **keys)
{
    const hccn_sched_t *s = c->s;
    for (uint32_t x = 0; x < s->nxfers; x++) {
        hccn_sched_ref_t a = s->xfer_send[x], b = s->xfer_recv[x];
        if (c->rep[a.rank] == a.rank)
            pair[a.rank][a.step] = hccn_sched_fold_key(
                c->rep[b.rank], mapped(c, b.rank, b.step));
    }
    for (uint32_t x = 0; x < s->nxfers; x++) {
        hccn_sched_ref_t a = s->xfer_send[x], b = s->xfer_recv[x];
        int a0 = c->rep[a.rank];
        uint32_t s0 = mapped(c, a.rank, a.step);
        if (pair[a0][s0] != hccn_sched_fold_key(c->rep[b.rank],
                                             mapped(c, b.rank, b.step))) {
            snprintf(c->why, c->len, "the transfer from rank %d to %d "
                     "joins steps its copy does not", a.rank, b.rank);
            return 1;
        }
        if (c->rep[b.rank] == b.rank)
            keys[b.rank][b.step] = hccn_sched_fold_key(a0, s0);
    }
    return 0;
}

void hccn_sched_npu_tasks(void *arg, int r, hccn_sim_task_t *out)
{
    const hccn_sched_npus_t *x = arg;
    const hccn_sched_rank_t *rk = &x->s->ranks[r];
    for (uint32_t k = 0; k < rk->nsteps; k++)
        hccn_sched_step_task(&rk->steps[k], &x->npus[r], x->world, &out[k]);
}

void hccn_sched_fold_free(hccn_sched_fold_t *f)
{
    for (int r = 0; f->recv_key != NULL && r < f->nrep; r++)
        hccn_sim_free(f->recv_key[r]);
    hccn_sim_free(f->recv_key);
    f->recv_key = NULL;
    f->nrep = 0;
}

int hccn_sched_fold_check(const hccn_sched_t *s, const hccn_sim_npu_t *npus,
                       const hccn_sim_topo_t *topo,
                       const int *rep, int host_order,
                       hccn_sched_tasks_fn *tasks, void *arg,
                       hccn_sched_fold_t *f, char *why, size_t len)
{
    int n = s->nranks, rc = 0;
    uint32_t most = 0;
    for (int r = 0; r < n; r++)
        if (s->ranks[r].nsteps > most)
            most = s->ranks[r].nsteps;
    fck_t c = {s, npus, topo, rep, hccn_sim_calloc((size_t)n, sizeof(rep_t)),
               hccn_sim_calloc((size_t)n, sizeof(uint32_t *)),
               host_order,
               hccn_sim_malloc(((size_t)most + 1) * sizeof(hccn_sim_task_t)),
               why, len,
               hccn_sim_calloc((size_t)most + 1, sizeof(uint32_t)), most + 1,
               0};
    uint64_t **pair = hccn_sim_calloc((size_t)n, sizeof(*pair));
    *f = (hccn_sched_fold_t){n, hccn_sim_calloc((size_t)n, sizeof(uint64_t *))};
    if (c.reps == NULL || c.map == NULL || c.t == NULL || c.seen == NULL ||
        pair == NULL || f->recv_key == NULL)
        rc = -1;
    for (int r = 0; r < n && rc == 0; r++) {
        if (rep[r] != r)
            continue;
        size_t m = (size_t)s->ranks[r].nsteps + 1;
        pair[r] = hccn_sim_calloc(m, sizeof(**pair));
        f->recv_key[r] = hccn_sim_calloc(m, sizeof(**f->recv_key));
        if (pair[r] == NULL || f->recv_key[r] == NULL)
            rc = -1;
    }
    for (int r = 0; r < n && rc == 0; r++) {
        if (rep[r] == r)
            continue;
        if (rep[r] < 0 || rep[r] >= n || rep[rep[r]] != rep[r]) {
            rc = refuse(&c, r, "its copy is not played");
            break;
        }
        const hccn_sched_rank_t *rk = &s->ranks[r];
        /* A copy's tables are made when a rank first maps onto it: a
         * schedule that does not fold is refused at its first such rank
         * for the price of one copy, not of node 0's part. */
        if (c.reps[rep[r]].rk == NULL && rep_init(&c, rep[r], tasks, arg) != 0) {
            rc = -1;
            break;
        }
        const hccn_sched_rank_t *rk0 = c.reps[rep[r]].rk;
        if (rk->nsteps != rk0->nsteps || rk->ndeps != rk0->ndeps) {
            rc = refuse(&c, r, "its number of steps");
            break;
        }
        tasks(arg, r, c.t);
        if (!same_order(&c, r))
            rc = map_rank(&c, r);
    }
    if (rc == 0)
        rc = pair_xfers(&c, pair, f->recv_key);
    for (int r = 0; r < n; r++) {
        if (c.reps != NULL)
            rep_free(&c.reps[r]);
        if (pair != NULL)
            hccn_sim_free(pair[r]);
    }
    for (int r = 0; c.map != NULL && r < n; r++)
        hccn_sim_free(c.map[r]);
    hccn_sim_free(c.reps);
    hccn_sim_free(c.map);
    hccn_sim_free(c.t);
    hccn_sim_free(c.seen);
    hccn_sim_free(pair);
    if (rc != 0)
        hccn_sched_fold_free(f);
    return rc;
}
