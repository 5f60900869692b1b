/*
 * The flows a change re-rates (docs/timing.md, Link sharing): the
 * connected component of the links that a started or ended flow crosses,
 * found by a search over the per-link flow lists (flow.c's header says
 * why refilling it alone gives the bits of refilling every flow).
 *
 * Bursts. A collective often starts thousands of transfers at one
 * instant over one fabric (a mesh step: every NPU to every other through
 * one switch), all in one component, and refilling it after each start
 * costs the square of the burst. Instead the starts at one instant join
 * a burst, refilled once when something other than another start at
 * that instant comes next, with the same bits as refilling after each:
 *
 * - Rates. Components only grow during a burst (nothing drains, see
 *   below), so each flow's last refill in the sequence was over the
 *   component it has at the end, and max-min fair rates by progressive
 *   filling are a function of the component's flows (fill.c).
 * - Bytes left and drain times. A refill brings a flow whose rate
 *   changed up to date: bytes left at `now` and the drain time
 *   `now + left / rate`. The burst holds only flows already brought to
 *   `now` (their `since` is `now`: started in the burst, or re-rated at
 *   this instant before it), for which that changes nothing but the drain
 *   time, a function of the last rate alone. A flow whose rate changed
 *   and changed back in the sequence therefore ends with the drain time
 *   it had. A flow last brought up to date earlier would be rebased on
 *   the first change in the sequence, with rounding a single refill
 *   would not repeat: a start that reaches one closes the burst (refills
 *   it as it was) and is refilled at once, as before.
 * - Order of events. No flow of the burst may drain at `now` between two
 *   starts: each is held to `now + left / cap > now`, `cap` the least
 *   bandwidth on its route, above any rate it can get; so the starts run
 *   back to back as they would have.
 *
 * Traced runs record each refill's rates and never open a burst.
 */
#include <math.h>
#include <string.h>

#include "device_sim/engine_internal.h"
#include "device_sim/trace.h"

void hccn_sim_comp_begin(hccn_sim_engine_t *eng)
{
    if (++eng->epoch == 0) {
        memset(eng->link_mark, 0,
               (size_t)eng->topo->nlinks * sizeof(*eng->link_mark));
        for (int i = 0; i < eng->nflows; i++)
            eng->flows[i]->mark = 0;
        eng->epoch = 1;
    }
    eng->nqueue = 0;
    eng->qdone = 0;
}

void hccn_sim_comp_seed(hccn_sim_engine_t *eng, const flow_t *f)
{
    for (int k = 0; k < f->nlinks; k++) {
        int l = f->links[k];
        if (eng->link_mark[l] != eng->epoch) {
            eng->link_mark[l] = eng->epoch;
            eng->queue[eng->nqueue++] = l;
        }
    }
}

/* A burst may hold f (header): brought up to date at now, and draining
 * after now at any rate its route allows. */
static int burst_ok(const hccn_sim_engine_t *eng, const flow_t *f)
{
    if (f->since != eng->now || f->nlinks == 0)
        return 0;
    double cap = INFINITY;
    for (int k = 0; k < f->nlinks; k++) {
        double c = eng->topo->links[f->links[k]].bw *
                   eng->link_factor[f->links[k]];
        if (c < cap)
            cap = c;
    }
    return eng->now + f->remaining / cap > eng->now;
}

/* Goes on with the search from the first link not searched yet, adding
 * the flows met to comp from n on; returns the new count. With check, -1
 * at the first flow a burst may not hold. */
static int comp_search(hccn_sim_engine_t *eng, int n, int check)
{
    for (; eng->qdone < eng->nqueue; eng->qdone++) {
        int l = eng->queue[eng->qdone];
        for (int i = 0; i < eng->link_active[l]; i++) {
            flow_t *f = eng->link_flows[l][i];
            if (f->mark == eng->epoch)
                continue;
            if (check && !burst_ok(eng, f))
                return -1;
            f->mark = eng->epoch;
            eng->comp[n++] = f;
            hccn_sim_comp_seed(eng, f);
        }
    }
    return n;
}

void hccn_sim_comp_refill(hccn_sim_engine_t *eng)
{
    int n = comp_search(eng, 0, 0);
    hccn_sim_flow_fill(eng, eng->comp, n);
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
    eng->no_bursts = on;
    pthread_mutex_unlock(&eng->lock);
}

int hccn_sim_burst_add(hccn_sim_engine_t *eng, flow_t *f)
{
    if (eng->trace != NULL || eng->no_bursts || !burst_ok(eng, f)) {
        hccn_sim_burst_flush(eng);
        return 0;
    }
    if (!eng->burst) {
        hccn_sim_comp_begin(eng);
        eng->burst = 1;
        eng->nburst = 0;
    }
    /* f itself first: its links may all have been searched already. */
    f->mark = eng->epoch;
    eng->comp[eng->nburst] = f;
    hccn_sim_comp_seed(eng, f);
    int n = comp_search(eng, eng->nburst + 1, 1);
    if (n >= 0) {
        eng->nburst = n;
        eng->burst_starts++;
        return 1;
    }
    eng->burst_breaks++;
    /* f reaches a flow the burst may not hold: the burst as it was before
     * f (f is on its links, but not in comp[0..nburst) and not counted:
     * fill.c reads only the flows it is given), then f's component at
     * once. */
    hccn_sim_burst_flush(eng);
    return 0;
}

void hccn_sim_burst_flush(hccn_sim_engine_t *eng)
{
    if (!eng->burst)
        return;
    eng->burst = 0;
    hccn_sim_flow_fill(eng, eng->comp, eng->nburst);
}
