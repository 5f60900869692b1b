/*
 * Swaps: the starts of a burst that take the places of its drains
 * (flow_comp.c, Bursts). A pipeline's chunks follow each other on their
 * links: when one drains, the next often starts at the same instant on
 * the same links into the same device. Then a refill of the burst's
 * component gives every other flow the rate it had and each start the
 * rate of the flow it replaces, bit for bit, because max-min rates by
 * progressive filling are a function of the component's links, in their
 * order, and of the links each flow crosses (fill.c), and neither has
 * changed:
 *
 * - the links: each start crosses the links its drain crossed, at the
 *   same places of its route, slack and resources alike;
 * - their order, that of each link's canonically first flow (fill.c):
 *   a start is paired with a drain of its device and batch (the k-th
 *   drain with the k-th start), and either every link they fill has a
 *   flow from before the burst ahead of both, so that its first flow is
 *   what it was, or no other flow in flight into that device in that
 *   batch has an index between theirs, so that the start compares with
 *   every other flow as its drain did, and each link's first flow is
 *   what it was, or its start.
 *
 * So a swap gives each start its drain's rate and skips the refill's
 * search and filling: in a pipeline of large components (a tree across
 * hundreds of nodes whose NICs are all bound, or recursive doubling over
 * a thousand ranks) those are most of the engine's time. The slack links
 * the starts cross are checked as the refill would check them; where one
 * is found bound the refill goes on as it would have, from its search,
 * which the check has widened. tests/unit/test_solver_ref.c compares
 * every task's end with the reference solver's, which refills after each
 * change, with `==`.
 *
 * Drains that free no one. A burst of drains alone gives the links they
 * leave room, and only a flow that the pick of one of those links fixed
 * (fill.c records each flow's, fixed_by) can gain from it: where none is
 * left on them, the filling without the drains picks the other links in
 * the same order with the same shares (no drain crossed them, so no
 * subtraction from them changes), and never picks the drains' links,
 * which keep more room than the slack check's margin (flow_comp.c,
 * checked here). Every flow keeps its rate and its fixing link, and the
 * refill is skipped. A swap's start takes its drain's fixing link, as
 * the refill would give it.
 */
#include <math.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/engine_internal.h"

/* A device's flows in flight compared with the swaps of one group
 * (device and batch) costs the product of their counts: past this, the
 * burst is refilled instead. */
#define ORDER_WORK_MAX (1 << 16)

void hccn_sim_in_add(hccn_sim_engine_t *eng, flow_t *f)
{
    flow_t **head = &eng->in_head[f->dev];
    f->in_prev = NULL;
    f->in_next = *head;
    if (*head != NULL)
        (*head)->in_prev = f;
    *head = f;
}

void hccn_sim_in_remove(hccn_sim_engine_t *eng, flow_t *f)
{
    if (f->in_prev != NULL)
        f->in_prev->in_next = f->in_next;
    else if (eng->in_head[f->dev] == f)
        eng->in_head[f->dev] = f->in_next;
    if (f->in_next != NULL)
        f->in_next->in_prev = f->in_prev;
    f->in_prev = f->in_next = NULL;
}

int hccn_sim_swap_keep(hccn_sim_engine_t *eng, flow_t *f)
{
    if (eng->trace != NULL || eng->no_bursts)
        return 0;           /* every change is re-rated on its own */
    if (eng->ngone == eng->capgone) {
        int cap = eng->capgone ? 2 * eng->capgone : 16;
        flow_t **a = hccn_sim_realloc(eng->gone, (size_t)cap * sizeof(*a));
        if (a == NULL) {
            eng->swap_lost = 1;     /* a drain not kept: no swap */
            return 0;
        }
        eng->gone = a;
        eng->capgone = cap;
    }
    eng->gone[eng->ngone++] = f;
    return 1;
}

void hccn_sim_swap_drop(hccn_sim_engine_t *eng)
{
    for (int i = 0; i < eng->ngone; i++)
        hccn_sim_flow_release(eng, eng->gone[i]);
    eng->ngone = 0;
    eng->swap_lost = 0;
}

/* The starts comp[0..n) in canonical order into fresh, and each paired
 * with the drain at its place in gone (both canonical): 1 if every pair
 * has one device and batch and crosses the same links at the same
 * places, the drain at a finite rate. */
static int pairs_match(hccn_sim_engine_t *eng, int n)
{
    if (n > eng->capfresh) {
        flow_t **a = hccn_sim_realloc(eng->fresh, (size_t)n * sizeof(*a));
        if (a == NULL)
            return 0;
        eng->fresh = a;
        eng->capfresh = n;
    }
    memcpy(eng->fresh, eng->comp, (size_t)n * sizeof(*eng->fresh));
    hccn_sim_flow_sort(eng->fresh, n);
    for (int i = 0; i < n; i++) {
        const flow_t *s = eng->fresh[i], *d = eng->gone[i];
        if (s->dev != d->dev || s->seq != d->seq || s->nlinks != d->nlinks ||
            s->res != d->res || !isfinite(d->rate) || !(d->rate > 0.0) ||
            memcmp(s->links, d->links,
                   (size_t)s->nlinks * sizeof(*s->links)) != 0)
            return 0;
    }
    return 1;
}

/* 1 if no flow in flight into the device of pairs [a, b) (one device and
 * batch), other than the starts, has an index that the pairs' drains and
 * starts fall on different sides of. */
static int group_in_order(const hccn_sim_engine_t *eng, int a, int b)
{
    const flow_t *s0 = eng->fresh[a];
    long work = 0;
    for (const flow_t *g = eng->in_head[s0->dev]; g != NULL; g = g->in_next) {
        if (g->seq != s0->seq || g->mark == eng->epoch)
            continue;       /* another batch, or a start of the burst */
        if ((work += b - a) > ORDER_WORK_MAX)
            return 0;
        int before_d = 0, before_s = 0;
        for (int i = a; i < b; i++) {
            before_d += eng->gone[i]->idx < g->idx;
            before_s += eng->fresh[i]->idx < g->idx;
        }
        if (before_d != before_s)
            return 0;
    }
    return 1;
}

/* 1 if on every link pair i fills, a flow that was in flight before the
 * burst comes before its drain and its start: every such link's first
 * flow stays what it was. */
static int pair_led(const hccn_sim_engine_t *eng, int i)
{
    const flow_t *d = eng->gone[i], *s = eng->fresh[i];
    for (unsigned r = s->res; r != 0; r &= r - 1) {
        int l = s->links[__builtin_ctz(r)], led = 0;
        for (int j = 0; j < eng->lk[l].active && !led; j++) {
            const flow_t *g = eng->lk[l].flows[j];
            led = g->mark != eng->epoch && hccn_sim_flow_cmp(g, d) < 0 &&
                  hccn_sim_flow_cmp(g, s) < 0;
        }
        if (!led)
            return 0;
    }
    return 1;
}

static int pairs_in_order(const hccn_sim_engine_t *eng, int n)
{
    for (int a = 0, b; a < n; a = b) {
        int led = 1;
        for (b = a; b < n && eng->fresh[b]->dev == eng->fresh[a]->dev &&
                    eng->fresh[b]->seq == eng->fresh[a]->seq; b++)
            led = led && pair_led(eng, b);
        if (!led && !group_in_order(eng, a, b))
            return 0;
    }
    return 1;
}

/* Gives each start its drain's rate; 0, with the starts as they were, if
 * a slack link they cross is bound (the check has queued it). */
static int swap(hccn_sim_engine_t *eng, int n)
{
    for (int i = 0; i < n; i++) {
        eng->fresh[i]->was = INFINITY;
        eng->fresh[i]->rate = eng->gone[i]->rate;
        eng->fresh[i]->fixed_by = eng->gone[i]->fixed_by;
    }
    /* In the refill's order: the starts are its first flows, and the
     * others keep their rates. */
    if (hccn_sim_slack_check(eng, eng->comp, n) > 0) {
        for (int i = 0; i < n; i++)
            eng->comp[i]->rate = INFINITY;
        return 0;
    }
    for (int i = 0; i < n; i++)
        hccn_sim_flow_rerated(eng, eng->comp[i], INFINITY);
    eng->swaps++;
    return 1;
}

/* ----------------------------------------- drains that free no one --- */

/* 1 if the burst's drains (it has no starts) leave every other flow its
 * rate: no flow in flight on a resource link a drain crossed was fixed
 * by that link's pick, and the rates left on each such link leave it
 * room. */
static int drains_free_no_one(const hccn_sim_engine_t *eng)
{
    for (int i = 0; i < eng->ngone; i++) {
        const flow_t *d = eng->gone[i];
        for (unsigned r = d->res; r != 0; r &= r - 1) {
            int l = d->links[__builtin_ctz(r)];
            for (int j = 0; j < eng->lk[l].active; j++)
                if (eng->lk[l].flows[j]->fixed_by == l)
                    return 0;
            if (!hccn_sim_link_room(eng, l, NULL))
                return 0;
        }
    }
    return 1;
}

int hccn_sim_swap_rerate(hccn_sim_engine_t *eng)
{
    int n = eng->nseed, done = 0;
    if (n > 0 && n == eng->ngone && !eng->swap_lost &&
        pairs_match(eng, n) && pairs_in_order(eng, n))
        done = swap(eng, n);
    else if (n == 0 && eng->ngone > 0 && !eng->swap_lost &&
             drains_free_no_one(eng)) {
        eng->frees++;
        done = 1;
    }
    hccn_sim_swap_drop(eng);
    return done;
}
