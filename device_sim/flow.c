/*
 * Link sharing: transfers in flight are fluid flows over their routes, and
 * their rates are max-min fair (progressive filling, fill.c). Links of
 * infinite bandwidth are not resources. Rates change only when a flow
 * starts or drains, so the engine moves fluid time from event to event.
 *
 * Only the flows that share a link, directly or through other flows, with
 * a flow that started or ended are re-rated (their connected component).
 * This gives the same rates, bit for bit, as filling all flows at once:
 * a component's filling reads and writes only its own links, so the links
 * picked in it, in order, the shares and the subtractions are the same
 * whichever other components are filled in between, and the flows of
 * other components keep rates that a refill would reproduce exactly.
 *
 * Links the rates leave room on are not searched (flow_comp.c, Slack
 * links): a component is then the flows actually bound together, and a
 * check after each re-rating keeps the bits of filling with every link.
 *
 * An event costs what its component costs, not what all flows cost: a
 * flow's bytes left are brought up to date only when its rate changes
 * (remaining at `since`, draining at `rate` from then on), its drain time
 * is recomputed then and kept in a heap (drain.c), and a link's busy time
 * is added when its last flow leaves.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/engine_internal.h"
#include "device_sim/software.h"
#include "device_sim/trace.h"

/* A drain within this much of the earliest one is the same event; it keeps
 * rounding residue from making extra sub-femtosecond events. */
#define DRAIN_EPS 1e-15

static int flow_cmp_ptr(const void *x, const void *y)
{
    return hccn_sim_flow_cmp(*(flow_t *const *)x, *(flow_t *const *)y);
}

void hccn_sim_flow_sort(flow_t **flows, int n)
{
    if (n > 1)
        qsort(flows, (size_t)n, sizeof(*flows), flow_cmp_ptr);
}

#define LINE ((uintptr_t)64)

/* The first cache-line boundary at or after p. */
static void *line_up(void *p)
{
    return (void *)(((uintptr_t)p + LINE - 1) & ~(LINE - 1));
}

int hccn_sim_flow_init(hccn_sim_engine_t *eng)
{
    int n = eng->topo->nlinks;
    size_t m = (size_t)(n > 0 ? n : 1);
    eng->lk_mem = hccn_sim_calloc(m + 1, sizeof(*eng->lk)); /* + a line */
    if (eng->lk_mem != NULL)
        eng->lk = line_up(eng->lk_mem);
    eng->link_capflows = hccn_sim_calloc(m, sizeof(int));
    eng->link_since = hccn_sim_calloc(m, sizeof(double));
    eng->queue = hccn_sim_calloc(m, sizeof(int));
    if (!eng->lk || !eng->link_capflows || !eng->link_since || !eng->queue)
        return -1;
    eng->touched = hccn_sim_calloc(m, sizeof(int));
    eng->link_order = hccn_sim_calloc(m, sizeof(*eng->link_order));
    eng->link_sort = hccn_sim_calloc(4 * m, sizeof(uint64_t));
    size_t tree = 2;
    while (tree < 2 * m)
        tree *= 2;
    eng->pick_tree = hccn_sim_calloc(tree, sizeof(int));
    eng->pick_share = hccn_sim_calloc(m, sizeof(double));
    eng->pick_dirty = hccn_sim_calloc(m, sizeof(int));
    eng->pick_mark = hccn_sim_calloc(m, 1);
    eng->link_bytes = hccn_sim_calloc(m, sizeof(double));
    eng->link_busy = hccn_sim_calloc(m, sizeof(double));
    eng->link_factor = hccn_sim_calloc(m, sizeof(double));
    eng->link_chk = hccn_sim_calloc(m, sizeof(unsigned));
    eng->slack_list = hccn_sim_calloc(m, sizeof(int));
    eng->in_head = hccn_sim_calloc((size_t)(eng->ndev > 0 ? eng->ndev : 1),
                                   sizeof(*eng->in_head));
    if (!eng->in_head || !eng->touched ||
        !eng->link_order || !eng->link_sort ||
        !eng->pick_tree ||
        !eng->pick_share || !eng->pick_dirty || !eng->pick_mark ||
        !eng->link_bytes || !eng->link_busy ||
        !eng->link_factor ||
        !eng->link_chk ||
        !eng->slack_list)
        return -1;
    for (int l = 0; l < n; l++) {
        hccn_sim_link_scale(eng, l, 1.0);
        eng->lk[l].w = 1;
    }
    eng->tree_links = 64;
    /* flow_comp.c, Slack links: the rounding of a filling, per flow. */
    double top = 0.0;
    for (int l = 0; l < n; l++)
        if (isfinite(eng->topo->links[l].bw) && eng->topo->links[l].bw > top)
            top = eng->topo->links[l].bw;
    eng->slack_eps = (n + 2.0) * top * 0x1p-50;
    return 0;
}

/* ------------------------------------------------------- flow memory --- */

/* An ended flow is poisoned until it starts again (alloc.h). */
#define POISON HCCN_SIM_POISON
#define UNPOISON HCCN_SIM_UNPOISON

/* A flow's place in a slab: its first line holds what a re-rating reads
 * (engine_internal.h). */
#define FLOW_STRIDE ((sizeof(flow_t) + LINE - 1) / LINE * LINE)
#define SLAB_FLOWS 256

flow_t *hccn_sim_flow_new(hccn_sim_engine_t *eng)
{
    flow_t *f = eng->flow_spare;
    if (f != NULL) {
        UNPOISON(f, sizeof(*f));
        eng->flow_spare = f->in_next;
    } else {
        if (eng->nslabs == 0 || eng->slab_used == SLAB_FLOWS) {
            if (eng->nslabs == eng->capslabs) {
                int cap = eng->capslabs ? 2 * eng->capslabs : 16;
                void **s = hccn_sim_realloc(eng->slabs,
                                            (size_t)cap * sizeof(*s));
                if (s == NULL)
                    return NULL;
                eng->slabs = s;
                eng->capslabs = cap;
            }
            void *m = hccn_sim_malloc(SLAB_FLOWS * FLOW_STRIDE + LINE);
            if (m == NULL)
                return NULL;
            eng->slabs[eng->nslabs++] = m;
            eng->slab_used = 0;
        }
        char *base = line_up(eng->slabs[eng->nslabs - 1]);
        f = (flow_t *)(base + (size_t)eng->slab_used++ * FLOW_STRIDE);
    }
    memset(f, 0, sizeof(*f));
    return f;
}

void hccn_sim_flow_release(hccn_sim_engine_t *eng, flow_t *f)
{
    f->in_next = eng->flow_spare;
    eng->flow_spare = f;
    POISON(f, sizeof(*f));
    /* in_next stays readable: the chain of spares goes through it */
    UNPOISON(&f->in_next, sizeof(f->in_next));
}

/* Gives every flow's memory back (the engine's end). */
static void slabs_free(hccn_sim_engine_t *eng)
{
    for (int i = 0; i < eng->nslabs; i++) {
        UNPOISON(eng->slabs[i], SLAB_FLOWS * FLOW_STRIDE + LINE);
        hccn_sim_free(eng->slabs[i]);
    }
    hccn_sim_free(eng->slabs);
    eng->slabs = NULL;
    eng->nslabs = eng->capslabs = eng->slab_used = 0;
    eng->flow_spare = NULL;
}

void hccn_sim_flow_reset(hccn_sim_engine_t *eng)
{
    for (int i = 0; i < eng->nflows; i++)
        hccn_sim_flow_release(eng, eng->flows[i]);
    eng->nflows = 0;
    hccn_sim_swap_drop(eng);
    memset(eng->in_head, 0, (size_t)eng->ndev * sizeof(*eng->in_head));
    eng->burst = 0;
    eng->now = 0.0;
    size_t n = (size_t)eng->topo->nlinks;
    memset(eng->link_bytes, 0, n * sizeof(double));
    memset(eng->link_busy, 0, n * sizeof(double));
    for (size_t l = 0; l < n; l++)
        eng->lk[l].active = 0;
    hccn_sim_slack_clear(eng);
    /* Folded, a link that w nodes cross carries each flow of the nodes
     * played as w flows (fill.c): the unfolded run's counts and
     * subtractions, so its rates, bit for bit. */
    eng->link_w_on = 0;
    for (size_t l = 0; l < n; l++) {
        hccn_sim_link_scale(eng, (int)l, 1.0);
        eng->lk[l].w = eng->fold_div != NULL ? (int)eng->fold_div[l] : 1;
        eng->link_w_on |= eng->lk[l].w != 1;
    }
}

void hccn_sim_link_scale(hccn_sim_engine_t *eng, int l, double factor)
{
    eng->link_factor[l] = factor;
    eng->lk[l].bw = eng->topo->links[l].bw * factor;
}

void hccn_sim_flow_free(hccn_sim_engine_t *eng)
{
    /* Not hccn_sim_flow_reset: after a failed init some arrays are NULL. */
    eng->nflows = 0;
    hccn_sim_swap_drop(eng);
    slabs_free(eng);
    hccn_sim_free(eng->gone);
    hccn_sim_free(eng->fresh);
    hccn_sim_free(eng->in_head);
    hccn_sim_free(eng->flows);
    hccn_sim_free(eng->touched);
    hccn_sim_free(eng->link_order);
    hccn_sim_free(eng->link_sort);
    hccn_sim_free(eng->pick_tree);
    hccn_sim_free(eng->pick_share);
    hccn_sim_free(eng->pick_dirty);
    hccn_sim_free(eng->pick_mark);
    hccn_sim_free(eng->link_bytes);
    hccn_sim_free(eng->link_busy);
    hccn_sim_free(eng->link_factor);
    hccn_sim_free(eng->link_chk);
    hccn_sim_free(eng->slack_list);
    for (int l = 0; eng->lk != NULL && l < eng->topo->nlinks; l++)
        hccn_sim_free(eng->lk[l].flows);
    hccn_sim_free(eng->lk_mem);
    eng->lk = NULL;
    hccn_sim_free(eng->link_capflows);
    hccn_sim_free(eng->link_since);
    hccn_sim_free(eng->queue);
    hccn_sim_free(eng->comp);
}

/* f now crosses its links: counted on each, listed on each; a link that
 * was idle is busy from now. Returns -1 on no memory (nothing changed). */
static int links_add(hccn_sim_engine_t *eng, flow_t *f)
{
    for (int k = 0; k < f->nlinks; k++) {
        int l = f->links[k];
        if (eng->lk[l].active == eng->link_capflows[l]) {
            int cap = eng->link_capflows[l] ? 2 * eng->link_capflows[l] : 4;
            flow_t **a = hccn_sim_realloc(eng->lk[l].flows,
                                          (size_t)cap * sizeof(*a));
            if (a == NULL)
                return -1;
            eng->lk[l].flows = a;
            eng->link_capflows[l] = cap;
        }
    }
    for (int k = 0; k < f->nlinks; k++) {
        int l = f->links[k];
        if (eng->lk[l].active == 0)
            eng->link_since[l] = eng->now;
        eng->lk[l].flows[eng->lk[l].active++] = f;
    }
    hccn_sim_slack_mask(eng, f);
    return 0;
}

/* f no longer crosses its links; a link it leaves idle was busy until
 * now; a slack link has f's rate more room. */
static void links_remove(hccn_sim_engine_t *eng, const flow_t *f)
{
    for (int k = 0; k < f->nlinks; k++) {
        int l = f->links[k];
        if (eng->lk[l].slack && isfinite(f->rate))
            hccn_sim_slack_give(eng, l, f->rate);
        flow_t **a = eng->lk[l].flows;
        int n = eng->lk[l].active;
        for (int i = 0; i < n; i++)
            if (a[i] == f) {
                a[i] = a[n - 1];
                break;
            }
        if (--eng->lk[l].active == 0)
            eng->link_busy[l] += eng->now - eng->link_since[l];
    }
}

/* What f has left at time t, having drained at `rate` since f->since. */
static double bytes_left(const flow_t *f, double rate, double t)
{
    if (!(t > f->since))
        return f->remaining;
    if (isinf(rate))
        return 0.0;
    return f->remaining - rate * (t - f->since);
}

/* When f drains at its rate, from what it had left at f->since: bytes
 * left drain after since, if only by the clock's least step (a time of
 * less than that would round to since, where a flow whose rate a change
 * at since moved would drain at the instant of the change, before its
 * other changes; flow_comp.c, Bursts). */
static double drain_time(const flow_t *f)
{
    if (f->remaining <= 0.0 || isinf(f->rate))
        return f->since;
    if (f->rate <= 0.0)
        return INFINITY;
    double t = f->since + f->remaining / f->rate;
    return t > f->since ? t : nextafter(f->since, INFINITY);
}

/* f has drained at `rate` until now and drains at f->rate from now on:
 * its bytes left are brought up to date and its drain time follows. */
static void flow_rebase(hccn_sim_engine_t *eng, flow_t *f, double rate)
{
    f->remaining = bytes_left(f, rate, eng->now);
    f->since = eng->now;
    f->drain = drain_time(f);
    hccn_sim_drain_update(eng, f);
}

/* f's rate changed from `was` in a re-rating at now. Its bytes left and
 * drain time follow; or, where an earlier re-rating at now changed it and
 * this one gives back the rate it had before that, they are what they
 * were before (as if its rate had never changed: the bits do not depend
 * on how the instant's changes were grouped into re-ratings). */
void hccn_sim_flow_rerated(hccn_sim_engine_t *eng, flow_t *f, double was)
{
    if (f->undo_at == eng->now && f->rate == f->undo_rate) {
        f->remaining = f->undo_rem;
        f->since = f->undo_since;
        f->undo_at = -INFINITY;
        f->drain = drain_time(f);
        hccn_sim_drain_update(eng, f);
        eng->rate_restores++;
        return;
    }
    if (f->undo_at != eng->now) {
        f->undo_at = eng->now;
        f->undo_rate = was;
        f->undo_rem = f->remaining;
        f->undo_since = f->since;
    }
    flow_rebase(eng, f, was);
}

/* New rates for flows[0..n), every flow on their links that are not
 * slack (with widen, and the flows a slack link found bound joins). A
 * flow whose rate comes out as it was keeps its bytes left and drain time
 * as they were (rebasing them would only add rounding). */
void hccn_sim_flow_fill(hccn_sim_engine_t *eng, flow_t **flows, int n,
                        int widen)
{
    n = hccn_sim_comp_fill(eng, flows, n, widen);
    for (int i = 0; i < n; i++)
        if (flows[i]->rate != flows[i]->was)
            hccn_sim_flow_rerated(eng, flows[i], flows[i]->was);
}

/* Puts f on the live route from its sender to its receiver (the caller
 * has checked there is one; route[0..n) with latency lat, or NULL: found
 * here) for its remaining bytes. Only finite links are resources. */
static int flow_route(hccn_sim_engine_t *eng, flow_t *f, const int *route,
                      int n, double lat)
{
    const hccn_sim_topo_t *topo = eng->topo;
    int down;
    if (route != NULL) {
        memcpy(f->links, route, (size_t)n * sizeof(*route));
        f->lat = lat;
    } else {
        n = hccn_sim_flow_route(eng, f->send->dev, f->send->peer, f->links,
                                &f->lat, &down);
    }
    if (n > 0 && f->send->via != HCCN_SIM_VIA_ROUTE)
        n = hccn_sim_flow_via(eng, f->send->via, f->send->dev, f->links, n,
                              &f->lat);
    f->nlinks = 0;
    for (int k = 0; k < n; k++)
        if (isfinite(topo->links[f->links[k]].bw))
            f->links[f->nlinks++] = f->links[k];
    if (f->remaining <= 0.0)
        f->nlinks = 0;
    if (links_add(eng, f) != 0) {
        f->nlinks = 0;
        f->res = 0;
        return -1;
    }
    for (int k = 0; k < f->nlinks; k++)
        eng->link_bytes[f->links[k]] += f->remaining;
    return 0;
}

/* Takes f off its links, giving back the bytes it has not carried. */
static void flow_unroute(hccn_sim_engine_t *eng, flow_t *f)
{
    links_remove(eng, f);
    for (int k = 0; k < f->nlinks; k++)
        eng->link_bytes[f->links[k]] -= f->remaining;
    f->nlinks = 0;
    f->res = 0;
}

/* f is no longer in flight (the caller frees it). */
static void flow_remove(hccn_sim_engine_t *eng, flow_t *f)
{
    links_remove(eng, f);
    hccn_sim_in_remove(eng, f);
    hccn_sim_drain_remove(eng, f);
}

/* Every flow at once (after a link's bandwidth changed: which links
 * have room is found afresh). */
static void flow_rates(hccn_sim_engine_t *eng)
{
    hccn_sim_slack_clear(eng);
    if (eng->nflows > 0)
        memcpy(eng->comp, eng->flows,
               (size_t)eng->nflows * sizeof(*eng->comp));
    hccn_sim_flow_fill(eng, eng->comp, eng->nflows, 0);
    if (eng->trace != NULL) {           /* trace hook: rates set at now */
        hccn_sim_flow_sort(eng->comp, eng->nflows);
        hccn_sim_trace_rates(eng, eng->comp, eng->nflows, NULL, 0);
    }
}

/* Room for one more flow in the drain heap and the component list. */
static int flows_grow(hccn_sim_engine_t *eng)
{
    int cap = eng->capflows ? 2 * eng->capflows : 64;
    flow_t **a = hccn_sim_realloc(eng->flows, (size_t)cap * sizeof(*a));
    if (a == NULL)
        return -1;
    eng->flows = a;
    a = hccn_sim_realloc(eng->comp, (size_t)cap * sizeof(*a));
    if (a == NULL)
        return -1;
    eng->comp = a;
    eng->capflows = cap;
    return 0;
}

/* The software model's part (software.h): f's protocol, from its size
 * (that of the block it is a slice of, hccn_sim_call_t) and its nominal
 * route (route[0..n) when not NULL), adds its step cost to f's latency
 * and divides its bytes by its efficiency. */
static void flow_protocol(const hccn_sim_engine_t *eng, flow_t *f,
                          const int *route, int n)
{
    const hccn_sim_topo_t *topo = eng->topo;
    const hccn_sim_batch_t *call = f->send->batch;
    uint64_t b = f->send->bytes * call->proto_scale;
    int cls, p = route != NULL
        ? hccn_sim_sw_links_pick(topo, f->send->dev, route, n, b, &cls)
        : hccn_sim_sw_route_pick(topo, f->send->dev, f->send->peer, b, &cls);
    if (call->proto >= 0)
        p = call->proto;
    f->sw_lat = hccn_sim_sw_step(topo->sw, p, cls, call->family);
    f->remaining = (double)f->send->bytes /
                   (hccn_sim_sw_eff(topo, p, cls, f->send->dev) *
                    hccn_sim_sw_tree_bw(topo->sw, p, call->tree_bytes));
}

int hccn_sim_flow_start(hccn_sim_engine_t *eng, etask_t *send, etask_t *recv,
                        const int *route, int n, double lat, int nominal)
{
    if (eng->nflows == eng->capflows && flows_grow(eng) != 0)
        return -1;
    flow_t *f = hccn_sim_flow_new(eng);
    if (f == NULL)
        return -1;
    f->send = send;
    f->recv = recv;
    f->dev = recv->dev;
    f->seq = recv->batch->seq;
    f->idx = recv->idx;
    f->remaining = (double)send->bytes;
    if (eng->topo->sw != NULL)
        flow_protocol(eng, f, nominal ? route : NULL, n);
    f->since = eng->now;
    f->rate = INFINITY;   /* no finite link: drains at once */
    f->fixed_by = -1;
    f->drain = eng->now;
    f->undo_at = -INFINITY;
    if (flow_route(eng, f, route, n, lat) != 0) {
        hccn_sim_flow_release(eng, f);
        return -1;
    }
    if (eng->topo->sw != NULL && send->batch->tree_bytes > 0)
        /* what the hop's latency adds to the route's */
        f->sw_lat = hccn_sim_sw_hop_lat(f->lat, f->sw_lat,
                                        send->batch->tree_bytes) - f->lat;
    hccn_sim_drain_push(eng, f);
    hccn_sim_in_add(eng, f);
    if (hccn_sim_burst_add(eng, f))
        return 0;
    hccn_sim_comp_begin(eng);
    hccn_sim_comp_add(eng, f);
    hccn_sim_comp_refill(eng);
    return 0;
}

double hccn_sim_flow_next(hccn_sim_engine_t *eng)
{
    return eng->nflows > 0 ? eng->flows[0]->drain : INFINITY;
}

void hccn_sim_flow_advance(hccn_sim_engine_t *eng, double t)
{
    if (t > eng->now) {
        hccn_sim_burst_flush(eng);
        eng->now = t;
    }
}

void hccn_sim_flow_reap(hccn_sim_engine_t *eng,
                        void (*done)(hccn_sim_engine_t *, flow_t *))
{
    double limit = eng->now + DRAIN_EPS;
    int n = 0;

    hccn_sim_burst_flush(eng);

    /* The drained flows leave the heap in drain order; done() sees them in
     * canonical order. It only queues events, and the component list is
     * free until the refill. */
    while (eng->nflows > 0 && eng->flows[0]->drain <= limit) {
        flow_t *f = eng->flows[0];
        hccn_sim_drain_remove(eng, f);
        eng->comp[n++] = f;
    }
    if (n == 0)
        return;
    hccn_sim_flow_sort(eng->comp, n);
    hccn_sim_comp_begin(eng);
    for (int i = 0; i < n; i++) {
        flow_t *f = eng->comp[i];
        links_remove(eng, f);
        hccn_sim_in_remove(eng, f);
        hccn_sim_comp_seed(eng, f);
        done(eng, f);
        if (!hccn_sim_swap_keep(eng, f))
            hccn_sim_flow_release(eng, f);
    }
    hccn_sim_burst_reaped(eng);
}

void hccn_sim_flow_rerate(hccn_sim_engine_t *eng)
{
    hccn_sim_burst_flush(eng);
    flow_rates(eng);
}

void hccn_sim_flow_drop(hccn_sim_engine_t *eng, const etask_t *t)
{
    hccn_sim_burst_flush(eng);
    for (int i = 0; i < eng->nflows; i++) {
        flow_t *f = eng->flows[i];
        if (f->send != t && f->recv != t)
            continue;
        flow_remove(eng, f);
        hccn_sim_comp_begin(eng);
        hccn_sim_comp_seed(eng, f);
        hccn_sim_flow_release(eng, f);
        hccn_sim_comp_refill(eng);
        return;
    }
}

static int route_down(const hccn_sim_engine_t *eng, const int *links, int n)
{
    for (int k = 0; k < n; k++)
        if (eng->link_factor[links[k]] <= 0.0)
            return links[k];
    return -1;
}

int hccn_sim_flow_route(const hccn_sim_engine_t *eng, int src, int dst,
                        int *links, double *lat, int *down)
{
    int n = hccn_sim_topo_route(eng->topo, src, dst, links, lat);
    if (eng->fold_link != NULL)
        for (int k = 0; k < n; k++)
            links[k] = eng->fold_link[links[k]];
    *down = route_down(eng, links, n);
    if (*down < 0)
        return n;
    int alt[HCCN_SIM_ROUTE_MAX];
    double alt_lat;
    int m = hccn_sim_topo_route_alt(eng->topo, src, dst, alt, &alt_lat);
    if ((m <= 0 || route_down(eng, alt, m) >= 0) &&
        (m = hccn_sim_flow_relay(eng, src, dst, alt, &alt_lat)) <= 0)
        return -1;
    memcpy(links, alt, (size_t)m * sizeof(*links));
    *lat = alt_lat;
    return m;
}

/* The canonically first flow on link l, or NULL. */
static flow_t *first_on(const hccn_sim_engine_t *eng, int l)
{
    flow_t *first = NULL;
    for (int i = 0; i < eng->lk[l].active; i++) {
        flow_t *f = eng->lk[l].flows[i];
        if (first == NULL || hccn_sim_flow_cmp(f, first) < 0)
            first = f;
    }
    return first;
}

void hccn_sim_flow_cut(hccn_sim_engine_t *eng, int l,
                       void (*failed)(hccn_sim_engine_t *, flow_t *))
{
    /* One flow at a time, in canonical order: failed() may drop other
     * flows, on l or not. A re-routed flow no longer crosses l. */
    flow_t *f;
    hccn_sim_burst_flush(eng);
    while ((f = first_on(eng, l)) != NULL) {
        int links[HCCN_SIM_ROUTE_MAX], down;
        double lat;
        flow_rebase(eng, f, f->rate);
        /* The bytes not yet sent go round the downed link if they can. */
        if (hccn_sim_flow_route(eng, f->send->dev, f->recv->dev, links, &lat,
                                &down) >= 0) {
            flow_unroute(eng, f);
            if (flow_route(eng, f, NULL, 0, 0.0) == 0)
                continue;
        }
        flow_remove(eng, f);
        failed(eng, f);
        hccn_sim_flow_release(eng, f);
    }
    flow_rates(eng);
}

void hccn_sim_link_stats(hccn_sim_engine_t *eng, int link, double *bytes,
                         double *busy)
{
    pthread_mutex_lock(&eng->lock);
    if (link >= 0 && link < eng->topo->nlinks) {
        *bytes = eng->link_bytes[link];
        *busy = eng->link_busy[link];
        if (eng->lk[link].active > 0)
            *busy += eng->now - eng->link_since[link];
    } else {
        *bytes = 0.0;
        *busy = 0.0;
    }
    pthread_mutex_unlock(&eng->lock);
}
