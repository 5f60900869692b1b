/*
 * The flows in flight as a binary heap ordered by the time they drain, so
 * the next drain is read in O(1) and a flow whose rate changed moves in
 * O(log flows). Flows that drain at the same time are ordered canonically
 * (hccn_sim_flow_cmp), so the heap's shape, like everything else, depends
 * only on what was posted. Each flow knows its index (pos) in the heap.
 */
#include "device_sim/engine_internal.h"

int hccn_sim_flow_cmp(const flow_t *x, const flow_t *y)
{
    if (x->dev != y->dev)
        return x->dev < y->dev ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    if (x->idx != y->idx)
        return x->idx < y->idx ? -1 : 1;
    return 0;
}

static int before(const flow_t *x, const flow_t *y)
{
    if (x->drain != y->drain)
        return x->drain < y->drain;
    return hccn_sim_flow_cmp(x, y) < 0;
}

static void put(hccn_sim_engine_t *eng, int i, flow_t *f)
{
    eng->flows[i] = f;
    f->pos = i;
}

static void sift_up(hccn_sim_engine_t *eng, int i)
{
    flow_t *f = eng->flows[i];
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!before(f, eng->flows[p]))
            break;
        put(eng, i, eng->flows[p]);
        i = p;
    }
    put(eng, i, f);
}

static void sift_down(hccn_sim_engine_t *eng, int i)
{
    flow_t *f = eng->flows[i];
    int n = eng->nflows;
    for (;;) {
        int c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(eng->flows[c + 1], eng->flows[c]))
            c++;
        if (!before(eng->flows[c], f))
            break;
        put(eng, i, eng->flows[c]);
        i = c;
    }
    put(eng, i, f);
}

void hccn_sim_drain_push(hccn_sim_engine_t *eng, flow_t *f)
{
    put(eng, eng->nflows++, f);
    sift_up(eng, f->pos);
}

void hccn_sim_drain_remove(hccn_sim_engine_t *eng, flow_t *f)
{
    int i = f->pos;
    flow_t *last = eng->flows[--eng->nflows];
    if (last == f)
        return;
    put(eng, i, last);
    hccn_sim_drain_update(eng, last);
}

void hccn_sim_drain_update(hccn_sim_engine_t *eng, flow_t *f)
{
    int i = f->pos;
    if (i > 0 && before(f, eng->flows[(i - 1) / 2]))
        sift_up(eng, i);
    else
        sift_down(eng, i);
}
