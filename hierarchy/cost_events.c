/*
 * The closed forms' queue of events (cost_internal.h): a binary min-heap
 * of timed events, earliest first, ties by (at, q), so that a walk that
 * takes its events from it is the same walk on every host.
 */
#include "hierarchy/cost_internal.h"

static int ev_less(const hccn_cm_ev_t *x, const hccn_cm_ev_t *y)
{
    if (x->t != y->t)
        return x->t < y->t;
    return x->at != y->at ? x->at < y->at : x->q < y->q;
}

void hccn_hier_cm_ev_push(hccn_cm_evq_t *h, hccn_cm_ev_t e)
{
    size_t i = h->n++;
    while (i > 0 && ev_less(&e, &h->ev[(i - 1) / 2])) {
        h->ev[i] = h->ev[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->ev[i] = e;
}

hccn_cm_ev_t hccn_hier_cm_ev_pop(hccn_cm_evq_t *h)
{
    hccn_cm_ev_t top = h->ev[0], e = h->ev[--h->n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, m = l;
        if (l >= h->n)
            break;
        if (l + 1 < h->n && ev_less(&h->ev[l + 1], &h->ev[l]))
            m = l + 1;
        if (!ev_less(&h->ev[m], &e))
            break;
        h->ev[i] = h->ev[m];
        i = m;
    }
    if (h->n > 0)
        h->ev[i] = e;
    return top;
}
