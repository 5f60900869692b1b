/*
 * The flows a change re-rates (docs/timing.md, Link sharing): the
 * connected component of the links that a started or ended flow crosses,
 * found by a search over the per-link flow lists (flow.c's header says
 * why refilling it alone gives the bits of refilling every flow).
 *
 * Bursts. A collective often starts thousands of transfers at one
 * instant over one fabric (a mesh step: every NPU to every other through
 * one switch), all in one component, and refilling it after each start
 * costs the square of the burst; and a pipeline's drain is followed at
 * the same instant by the starts it lets go (the next chunk on the
 * link), two refills of one component. Instead the changes of one
 * instant (a drain, then the starts the instant's events make) join a
 * burst: the links they touch are seeded, and the flows those reach are
 * refilled once, when the instant's events are done (or something reads
 * rates), with the same bits as refilling after each change:
 *
 * - Rates. Every flow a change can re-rate is reached from its links at
 *   the end of the instant (a drain opens the burst, starts only add), and
 *   max-min fair rates by progressive filling are a function of the
 *   component's flows (fill.c), so each comes out as its last refill in
 *   the sequence would have left it.
 * - Bytes left and drain times. A re-rating that changes a flow's rate
 *   brings its bytes left up to date at `now` and takes the drain time
 *   from there; a later one at that instant only moves the drain time
 *   (no time has passed), and one that gives back the rate the flow had
 *   before the instant restores its bytes left and drain time as they
 *   were (flow.c, flow_rerated). So they are a function of the rates
 *   before and after the instant, however its changes are grouped into
 *   re-ratings: one per change, one per burst, or a burst cut where a
 *   settle stops at the horizon.
 * - Order of events. No flow drains at the instant of a change that
 *   re-rated it: its drain time is at least the clock's next step
 *   (flow.c, drain_time), so the drains due at an instant are those due
 *   when the clock got there, reaped first, and the instant's other
 *   events follow each other as they would have, re-rated or not in
 *   between. A start of no bytes or no finite link (it drains at once)
 *   re-rates the burst first and then drains, as it would have.
 *
 * Traced runs and the reference solver refill after each change.
 * `tests/unit/test_solver_ref.c` compares every task's end with the
 * reference's, with `==`.
 *
 * Slack links. A filling in which link x is never picked gives the same
 * bits without x: x's share only competes for the pick, and what is
 * subtracted from x is read by no other link. The shares picked never
 * fall from round to round (the link picked has the least share s, and a
 * link that loses a of its n flows at s keeps (c - a s) / (n - a) >= s
 * when c / n >= s), so every flow still unfixed at a round of share s
 * ends with at least s; if x's flows end with rates that sum to less
 * than its capacity, at every round x's capacity left exceeded its
 * unfixed flows times s, and x was never picked. In floating point a
 * share may fall by the rounding of the subtractions, a few units in the
 * last place of the largest bandwidth per round; the check below asks
 * for a margin of (flows on x + 2) x (links + 2) x the largest bandwidth
 * x 2^-50, above that rounding and below any headroom that counts (on
 * ten thousand links, a 10^-11 part of the largest bandwidth per flow).
 *
 * So a link that a filling leaves with SLACK_ROOM of its bandwidth or
 * more is made slack: searches do not cross it (flows meet only through
 * other links) and fillings leave it out, so a component is the flows
 * bound together, not all the flows of a fabric (on PCIe servers without
 * peer-to-peer, where every copy crosses its NPU's staging links, one
 * cluster-wide component became one per node). Each re-rating then
 * checks the slack links crossed by the flows whose rate changed or is
 * infinite (flows crossing only slack links come out infinite): the
 * rates of every flow on the link must sum to less than its capacity
 * less the margin. A link that fails is a resource again and the
 * re-rating is redone with it (a component searched for is widened to
 * the flows the link joins): the rates are those of filling with every
 * link, and a flow is brought up to date exactly where it would have
 * been. Flows whose rate did not change do not move a link's sum, and
 * drains only lower it. The check reads a link's flows only where it
 * must: each slack link keeps a lower bound of its room (its capacity
 * less its flows' rates, less the rounding of every step that moved it),
 * lowered by each rate that grew and raised by each flow that leaves;
 * only where the bound falls to the margin are the rates summed.
 */
#include <math.h>
#include <string.h>

#include "device_sim/engine_internal.h"
#include "device_sim/trace.h"

void hccn_sim_comp_begin(hccn_sim_engine_t *eng)
{
    if (++eng->epoch == 0) {
        for (int l = 0; l < eng->topo->nlinks; l++)
            eng->lk[l].mark = 0;
        for (int i = 0; i < eng->nflows; i++)
            eng->flows[i]->mark = 0;
        eng->epoch = 1;
    }
    eng->nqueue = 0;
    eng->qdone = 0;
    eng->nseed = 0;
}

/* A filling leaves a link this share of its bandwidth or more: slack. */
#define SLACK_ROOM 0.01

/* Queues link l for the search, once. */
static void queue_link(hccn_sim_engine_t *eng, int l)
{
    if (eng->lk[l].mark != eng->epoch) {
        eng->lk[l].mark = eng->epoch;
        eng->queue[eng->nqueue++] = l;
    }
}

/* Queues f's links that are resources. */
static void seed(hccn_sim_engine_t *eng, const flow_t *f)
{
    for (unsigned m = f->res; m != 0; m &= m - 1)
        queue_link(eng, f->links[__builtin_ctz(m)]);
}

void hccn_sim_comp_seed(hccn_sim_engine_t *eng, const flow_t *f)
{
    seed(eng, f);
}

void hccn_sim_comp_add(hccn_sim_engine_t *eng, flow_t *f)
{
    f->mark = eng->epoch;
    eng->comp[eng->nseed++] = f;
    seed(eng, f);
}

/* Goes on with the search from the first link not searched yet, adding
 * the flows met to comp from n on; returns the new count. */
static int comp_search(hccn_sim_engine_t *eng, int n)
{
    for (; eng->qdone < eng->nqueue; eng->qdone++) {
        int l = eng->queue[eng->qdone];
        for (int i = 0; i < eng->lk[l].active; i++) {
            flow_t *f = eng->lk[l].flows[i];
            if (f->mark == eng->epoch)
                continue;
            f->mark = eng->epoch;
            eng->comp[n++] = f;
            seed(eng, f);
        }
    }
    return n;
}

void hccn_sim_comp_refill(hccn_sim_engine_t *eng)
{
    int n = comp_search(eng, eng->nseed);
    hccn_sim_flow_fill(eng, eng->comp, n, 1);
    /* The queue now holds every link whose flows changed. */
    if (eng->trace != NULL) {           /* trace hook: rates set at now */
        hccn_sim_flow_sort(eng->comp, n);
        hccn_sim_trace_rates(eng, eng->comp, n, eng->queue, eng->nqueue);
    }
}

void hccn_sim_engine_set_reference(hccn_sim_engine_t *eng, int on)
{
    pthread_mutex_lock(&eng->lock);
    hccn_sim_burst_flush(eng);
    hccn_sim_slack_clear(eng);
    eng->no_bursts = on;
    pthread_mutex_unlock(&eng->lock);
}

/* Bursts, unless tracing (each re-rating is recorded) or the reference
 * solver (a re-rating after each change, to compare with). */
static int bursts_on(const hccn_sim_engine_t *eng)
{
    return eng->trace == NULL && !eng->no_bursts;
}

int hccn_sim_burst_add(hccn_sim_engine_t *eng, flow_t *f)
{
    /* A flow of no bytes or no finite link drains at once: the instant's
     * changes so far are re-rated first, as they would have been. */
    if (!bursts_on(eng) || f->nlinks == 0) {
        hccn_sim_burst_flush(eng);
        return 0;
    }
    if (!eng->burst) {
        hccn_sim_comp_begin(eng);
        eng->burst = 1;
    }
    hccn_sim_comp_add(eng, f);
    eng->burst_starts++;
    return 1;
}

void hccn_sim_burst_reaped(hccn_sim_engine_t *eng)
{
    if (!bursts_on(eng)) {
        hccn_sim_comp_refill(eng);
        return;
    }
    eng->burst = 1;
    eng->burst_reaps++;
}

void hccn_sim_burst_flush(hccn_sim_engine_t *eng)
{
    if (!eng->burst)
        return;         /* nothing kept either: drains are kept only in
                           the burst their reap opens (flow_swap.c) */
    eng->burst = 0;
    if (!hccn_sim_swap_rerate(eng))
        hccn_sim_comp_refill(eng);
}

/* ------------------------------------------------------ slack links --- */

_Static_assert(HCCN_SIM_ROUTE_MAX <= 32, "a flow's links fit flow_t.res");

/* Every place of f's route. */
static unsigned all_places(const flow_t *f)
{
    return f->nlinks > 0 ? 0xffffffffu >> (32 - f->nlinks) : 0u;
}

void hccn_sim_slack_mask(const hccn_sim_engine_t *eng, flow_t *f)
{
    f->res = 0;
    for (int k = 0; k < f->nlinks; k++)
        if (!eng->lk[f->links[k]].slack)
            f->res |= 1u << k;
}

/* Makes link l slack (on) or a resource, in the masks of its flows too:
 * the loops over a flow's resources (the search, the filling) then skip
 * its slack links without reading their flags. */
static void slack_set(hccn_sim_engine_t *eng, int l, int on)
{
    eng->lk[l].slack = (unsigned char)on;
    for (int i = 0; i < eng->lk[l].active; i++) {
        flow_t *f = eng->lk[l].flows[i];
        for (int k = 0; k < f->nlinks; k++)
            if (f->links[k] == l)
                f->res = on ? f->res & ~(1u << k) : f->res | 1u << k;
    }
}

void hccn_sim_slack_clear(hccn_sim_engine_t *eng)
{
    for (int l = 0; l < eng->topo->nlinks; l++)
        eng->lk[l].slack = 0;
    for (int i = 0; i < eng->nflows; i++)
        eng->flows[i]->res = all_places(eng->flows[i]);
}

/* The rounding of one addition or subtraction of values within twice
 * the link's capacity, cap: what keeps a link's room below the exact room. */
static double ulps(double cap)
{
    return cap * 0x1p-51;
}

void hccn_sim_slack_give(hccn_sim_engine_t *eng, int l, double rate)
{
    double cap = eng->lk[l].bw;
    int w = eng->lk[l].w;
    eng->lk[l].room += w * rate - w * ulps(cap);
}

/* The margin below which a link's room (its capacity less its flows'
 * rates) does not count as room (see the header). */
static double room_margin(const hccn_sim_engine_t *eng, int l)
{
    return ((double)eng->lk[l].active * eng->lk[l].w + 2) *
           eng->slack_eps;
}

int hccn_sim_link_room(const hccn_sim_engine_t *eng, int l, double *sum)
{
    double s = 0.0;
    for (int j = 0; j < eng->lk[l].active; j++)
        s += eng->lk[l].flows[j]->rate;
    s *= eng->lk[l].w;
    if (sum != NULL)
        *sum = s;
    return s <= eng->lk[l].bw - room_margin(eng, l);
}

/* The check of slack link l, given next, a lower bound of its room at
 * the new rates: 1 if the rates leave it more than the margin, its room
 * in lk[].next. The bound decides where it can (the flows on a link that
 * kept their rates need not be read); else the rates are summed. */
static int slack_holds(hccn_sim_engine_t *eng, int l, double next)
{
    if (!(next > room_margin(eng, l))) {
        double sum, cap = eng->lk[l].bw;
        if (!hccn_sim_link_room(eng, l, &sum))
            return 0;
        next = cap - sum -
               ((double)eng->lk[l].active * eng->lk[l].w + 1) * ulps(cap);
    }
    eng->lk[l].next = next;
    return 1;
}

/* Makes every slack link crossed by a flow of flows[0..n) whose rate
 * changed or is infinite a resource again if the rates of its flows sum
 * to more than its capacity less the margin, and queues it for the
 * search; returns how many. Where none is, each such link's room becomes
 * what the new rates leave. A flow new on a link (its old rate infinite)
 * takes its whole rate from the room; a rate that grew past twice the
 * capacity leaves the bound below the margin, and the rates are summed. */
int hccn_sim_slack_check(hccn_sim_engine_t *eng, flow_t **flows, int n)
{
    int nlist = 0, bound = 0;
    if (++eng->chk_epoch == 0) {
        memset(eng->link_chk, 0,
               (size_t)eng->topo->nlinks * sizeof(*eng->link_chk));
        eng->chk_epoch = 1;
    }
    for (int i = 0; i < n; i++) {
        const flow_t *f = flows[i];
        if (f->rate == f->was && !isinf(f->rate))
            continue;
        double more = isinf(f->was) ? f->rate : f->rate - f->was;
        for (unsigned s = all_places(f) & ~f->res; s != 0; s &= s - 1) {
            int l = f->links[__builtin_ctz(s)];
            if (eng->link_chk[l] != eng->chk_epoch) {
                eng->link_chk[l] = eng->chk_epoch;
                eng->lk[l].next = eng->lk[l].room;
                eng->slack_list[nlist++] = l;
            }
            eng->lk[l].next -= eng->lk[l].w * (more + ulps(eng->lk[l].bw));
        }
    }
    for (int j = 0; j < nlist; j++) {
        int l = eng->slack_list[j];
        if (slack_holds(eng, l, eng->lk[l].next))
            continue;
        slack_set(eng, l, 0);
        eng->slack_undone++;
        queue_link(eng, l);
        bound++;
    }
    for (int j = 0; bound == 0 && j < nlist; j++)
        eng->lk[eng->slack_list[j]].room = eng->lk[eng->slack_list[j]].next;
    return bound;
}

int hccn_sim_comp_fill(hccn_sim_engine_t *eng, flow_t **flows, int n,
                       int widen)
{
    hccn_sim_fill(eng, flows, n);
    while (hccn_sim_slack_check(eng, flows, n) > 0) {
        for (int i = 0; i < n; i++)
            flows[i]->rate = flows[i]->was;
        if (widen)
            n = comp_search(eng, n);
        hccn_sim_fill(eng, flows, n);
    }
    if (eng->trace != NULL || eng->no_bursts)
        return n;               /* every link a resource, as always */
    for (int j = 0; j < eng->ntouched; j++) {
        int l = eng->touched[j];
        double cap = eng->lk[l].bw;
        if (eng->lk[l].cap >= SLACK_ROOM * cap) {
            /* its capacity less lk[l].active subtractions */
            slack_set(eng, l, 1);
            eng->lk[l].room = eng->lk[l].cap -
                              ((double)eng->lk[l].active * eng->lk[l].w + 1) *
                              ulps(cap);
            eng->slack_made++;
        }
    }
    return n;
}
