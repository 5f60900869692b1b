/*
 * The cost model's pricing of transfers that run at the same time on the
 * topology (cost_internal.h, docs/selection.md): phases of concurrent
 * transfers sharing links, and pipelines.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/software.h"
#include "hierarchy/cost_internal.h"

int hccn_hier_cm_init(hccn_cm_t *m, const hccn_cost_place_t *pl, int nranks)
{
    size_t nl = (size_t)pl->topo->nlinks + 1;
    memset(m, 0, sizeof(*m));
    m->pl = pl;
    m->p = nranks;
    m->x = hccn_sim_malloc((size_t)nranks * HCCN_CM_SAMPLE * sizeof(*m->x));
    m->cnt = hccn_sim_calloc(nl, sizeof(int));
    m->end = hccn_sim_malloc(nl * sizeof(int));
    m->touched = hccn_sim_malloc(nl * sizeof(int));
    m->load = hccn_sim_calloc(nl, sizeof(double));
    if (!m->x || !m->cnt || !m->end || !m->touched || !m->load)
        return -1;
    return 0;
}

void hccn_hier_cm_free(hccn_cm_t *m)
{
    hccn_sim_free(m->x);
    hccn_sim_free(m->cnt);
    hccn_sim_free(m->end);
    hccn_sim_free(m->touched);
    hccn_sim_free(m->load);
    hccn_sim_free(m->sz);
    memset(m, 0, sizeof(*m));
}

double hccn_hier_cm_max(double a, double b)
{
    return a > b ? a : b;
}

double hccn_hier_cm_time(const hccn_cm_xf_t *x)
{
    return x->lat + (double)x->bytes * x->w;
}

int hccn_hier_cm_member(const hccn_cm_team_t *t, int g, int i)
{
    return t->rank[(size_t)g * t->size + (size_t)(((i % t->size) + t->size) %
                                                  t->size)];
}

int hccn_hier_cm_shifts(int size, int *ks)
{
    int n = size - 1 <= HCCN_CM_SAMPLE ? size - 1 : HCCN_CM_SAMPLE;
    for (int i = 0; i < n; i++)
        ks[i] = 1 + (int)((int64_t)i * (size - 1) / n);
    return n;
}

/* ------------------------------------------------------------- phases --- */

/* The finite-bandwidth links of x's route (only they are resources). */
static int route(const hccn_cm_t *m, const hccn_cm_xf_t *x, int *links,
                 double *lat)
{
    const hccn_sim_topo_t *topo = m->pl->topo;
    int n = hccn_sim_topo_route(topo, m->pl->world[x->src],
                                m->pl->world[x->dst], links, lat);
    int kept = 0;
    for (int k = 0; k < n; k++)
        if (isfinite(topo->links[links[k]].bw))
            links[kept++] = links[k];
    return kept;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

/* Counts the flows of x (those with bytes) on every link and keeps their
 * sizes on the wire (bytes / eff) grouped by link, sorted, as running
 * sums: link l's are sz[end[l] - cnt[l] .. end[l]). Returns the number of
 * links touched. */
static int group_sizes(hccn_cm_t *m, const hccn_cm_xf_t *x, size_t n)
{
    int links[HCCN_SIM_ROUTE_MAX], nt = 0;
    double lat;
    size_t need = n * HCCN_SIM_ROUTE_MAX, pos = 0;
    if (need > m->capsz) {
        double *sz = hccn_sim_realloc(m->sz, need * sizeof(double));
        if (sz == NULL) {
            m->failed = 1;
            return 0;
        }
        m->sz = sz;
        m->capsz = need;
    }
    for (size_t i = 0; i < n; i++)
        for (int k = x[i].bytes ? route(m, &x[i], links, &lat) : 0; k-- > 0;)
            if (m->cnt[links[k]]++ == 0)
                m->touched[nt++] = links[k];
    for (int t = 0; t < nt; t++) {
        m->end[m->touched[t]] = (int)pos;
        pos += (size_t)m->cnt[m->touched[t]];
    }
    for (size_t i = 0; i < n; i++)
        for (int k = x[i].bytes ? route(m, &x[i], links, &lat) : 0; k-- > 0;)
            m->sz[m->end[links[k]]++] = (double)x[i].bytes / x[i].eff;
    for (int t = 0; t < nt; t++) {
        int l = m->touched[t];
        double *seg = m->sz + (m->end[l] - m->cnt[l]);
        qsort(seg, (size_t)m->cnt[l], sizeof(double), cmp_double);
        for (int k = 1; k < m->cnt[l]; k++)
            seg[k] += seg[k - 1];
    }
    return nt;
}

/* Bytes link l carries before a flow of b bytes on it has drained when its
 * flows share it equally: the sum over them of min(their size, b). */
static double link_work(const hccn_cm_t *m, int l, double b)
{
    const double *seg = m->sz + (m->end[l] - m->cnt[l]);
    int lo = 0, hi = m->cnt[l];
    while (lo < hi) {   /* lo = how many sizes are <= b */
        int mid = (lo + hi) / 2;
        double size = seg[mid] - (mid > 0 ? seg[mid - 1] : 0.0);
        if (size <= b)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (lo > 0 ? seg[lo - 1] : 0.0) + (double)(m->cnt[l] - lo) * b;
}

double hccn_hier_cm_protocol(hccn_cm_t *m, hccn_cm_xf_t *x)
{
    const hccn_sim_topo_t *topo = m->pl->topo;
    int links[HCCN_SIM_ROUTE_MAX];
    double lat, bw = INFINITY;
    x->eff = 1.0;
    if (topo->sw == NULL)
        return 0.0;
    int n = hccn_sim_topo_route(topo, m->pl->world[x->src],
                                m->pl->world[x->dst], links, &lat);
    for (int k = 0; k < n; k++)
        if (topo->links[links[k]].bw < bw)
            bw = topo->links[links[k]].bw;
    int cls = hccn_sim_sw_class(topo, links, n);
    uint64_t b = m->proto_bytes ? m->proto_bytes
                 : m->proto_div > 1 ? x->bytes / m->proto_div
                                    : x->bytes;
    if (m->proto_mul > 1)
        b *= m->proto_mul;
    int src = m->pl->world[x->src];
    int q = hccn_sim_sw_call_proto(topo->sw, m->nvswitch);
    if (q < 0)
        q = hccn_sim_sw_pick_at(topo, src, b, cls, bw);
    m->protos |= 1u << q;
    x->eff = hccn_sim_sw_eff(topo, q, cls, src) *
             hccn_sim_sw_tree_bw(topo->sw, q, m->tree_bytes);
    return hccn_sim_sw_step(topo->sw, q, cls, m->family);
}

/* The hosts' time per message (software.h, LogGP's o) of the n transfers
 * of x, priced as starting together. A rank issues its S sends one after
 * another, send_s each in x's order: the j-th (of 1..S) leaves j send_s
 * late. Where it has its sender's link to itself that delays its arrival
 * by as much; where the S share the link, started one after another,
 * they end one after another too, the last when the link has carried them
 * all (as though started together), each earlier one send_s before the
 * next; a transfer arrives at the later of the two. Each rank's host then
 * takes in what arrives, in order of
 * arrival, recv_s each, after its own sends: a transfer is done when its
 * receiver has taken it in, and its lat grows by what that adds to its
 * end. A transfer counts for weight (a sample) x proto_div (instances
 * priced as one) messages. */
typedef struct {
    double at;               /* arrival */
    int dst;
    size_t i;
} host_msg_t;

static int msg_cmp(const void *a, const void *b)
{
    const host_msg_t *x = a, *y = b;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

static void host_messages(hccn_cm_t *m, hccn_cm_xf_t *x, size_t n,
                          double weight)
{
    const hccn_sim_sw_t *sw = m->pl->topo->sw;
    double k = weight * (double)(m->proto_div > 1 ? m->proto_div : 1);
    double *sends = hccn_sim_calloc(2 * (size_t)m->p, sizeof(double));
    host_msg_t *q = hccn_sim_malloc((n + 1) * sizeof(*q));
    if (sends == NULL || q == NULL) {
        m->failed = 1;
        goto out;
    }
    double *issued = sends + m->p;
    for (size_t i = 0; i < n; i++)
        sends[x[i].src] += k;
    for (size_t i = 0; i < n; i++) {
        double drain = (double)x[i].bytes * x[i].w, S = sends[x[i].src];
        double j = issued[x[i].src] += k;
        q[i] = (host_msg_t){
            hccn_hier_cm_max(x[i].lat + drain - (S - j) * sw->send_s,
                             j * sw->send_s + x[i].lat + drain / S),
            x[i].dst, i};
    }
    qsort(q, n, sizeof(*q), msg_cmp);
    double host = 0.0;
    for (size_t j = 0; j < n; j++) {
        if (j == 0 || q[j].dst != q[j - 1].dst)
            host = sends[q[j].dst] * sw->send_s;
        host = hccn_hier_cm_max(host, q[j].at) + k * sw->recv_s;
        x[q[j].i].lat += host - hccn_hier_cm_time(&x[q[j].i]);
    }
out:
    hccn_sim_free(sends);
    hccn_sim_free(q);
}

/* Processor sharing: a transfer has drained when its most loaded link has
 * carried, of every flow on it, as many bytes on the wire as the transfer
 * has (a flow of a less efficient protocol takes more of the link, as in
 * the engine). Exact for flows that start together and meet on one link;
 * 0-byte transfers take only their latency. */
void hccn_hier_cm_flows(hccn_cm_t *m, hccn_cm_xf_t *x, size_t n,
                        double weight)
{
    const hccn_sim_link_t *tl = m->pl->topo->links;
    int links[HCCN_SIM_ROUTE_MAX];
    for (size_t i = 0; i < n; i++)   /* lat: the step, for now */
        x[i].lat = m->eff_given ? 0.0 : hccn_hier_cm_protocol(m, &x[i]);
    int nt = group_sizes(m, x, n);
    for (size_t i = 0; i < n && !m->failed; i++) {
        double step = x[i].lat;
        int k = route(m, &x[i], links, &x[i].lat);
        double b = (double)x[i].bytes, wire = b / x[i].eff;
        x[i].w = 0.0;
        while (b > 0.0 && k-- > 0)
            x[i].w = hccn_hier_cm_max(x[i].w,
                                      weight * link_work(m, links[k], wire) /
                                          (tl[links[k]].bw * wire));
        x[i].lat = m->lat_off ? 0.0
                               : hccn_sim_sw_hop_lat(x[i].lat, step,
                                                     m->tree_bytes);
        x[i].w /= x[i].eff;
    }
    for (int t = 0; t < nt; t++)
        m->cnt[m->touched[t]] = 0;
    const hccn_sim_sw_t *sw = m->pl->topo->sw;
    if (sw != NULL && (sw->send_s > 0.0 || sw->recv_s > 0.0) &&
        !m->lat_off && !m->failed)
        host_messages(m, x, n, weight);
}

/* ----------------------------------------------------------- pipelines --- */

/* A pipeline's stages: stage i is the transfers x[off[i] .. off[i+1]),
 * whose receivers reduce r[i] seconds per byte of each chunk. */
typedef struct {
    hccn_cm_t *m;
    const hccn_cm_xf_t *x;
    int h;
    const int *off;
    const hccn_cm_chunks_t *ck;
    const double *r;
} pipe_t;

/* Adds weight to the load of every finite link of stage i. */
static void stage_load(const pipe_t *pp, int i, double weight)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    for (int j = pp->off[i]; j < pp->off[i + 1]; j++)
        for (int k = route(pp->m, &pp->x[j], links, &lat); k-- > 0;)
            pp->m->load[links[k]] += weight;
}

/* Seconds per byte of stage i's slowest hop under the current loads. */
static double stage_w(const pipe_t *pp, int i)
{
    const hccn_sim_link_t *tl = pp->m->pl->topo->links;
    int links[HCCN_SIM_ROUTE_MAX];
    double lat, w = 0.0;
    for (int j = pp->off[i]; j < pp->off[i + 1]; j++)
        for (int k = route(pp->m, &pp->x[j], links, &lat); k-- > 0;)
            w = hccn_hier_cm_max(w, pp->m->load[links[k]] /
                                        (tl[links[k]].bw * pp->x[j].eff));
    return w;
}

static void stages_clear(const pipe_t *pp)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    for (int j = 0; j < pp->off[pp->h]; j++)
        for (int k = route(pp->m, &pp->x[j], links, &lat); k-- > 0;)
            pp->m->load[links[k]] = 0.0;
}

/* out[i] = seconds per byte of stage i while stages lo(i) .. lo(i)+len-1
 * (clipped to 0..h-1) are busy at once, lo(i) = i - back; each loads its
 * links by 1, except the stage at lo(i) by tail when tail > 0 (a shorter
 * chunk there). A window sliding right: every stage loaded and unloaded
 * once. */
static void slide(const pipe_t *pp, int back, int len, double tail,
                  double *out)
{
    int in_lo = 0, in_hi = -1;   /* stages loaded: in_lo .. in_hi */
    for (int i = 0; i < pp->h; i++) {
        int lo = i - back < 0 ? 0 : i - back;
        int hi = i - back + len - 1 >= pp->h ? pp->h - 1 : i - back + len - 1;
        while (in_hi < hi)
            stage_load(pp, ++in_hi, 1.0);
        while (in_lo < lo)
            stage_load(pp, in_lo++, -1.0);
        int short_at = tail > 0.0 && lo == i - back;
        if (short_at)
            stage_load(pp, lo, tail - 1.0);
        out[i] = stage_w(pp, i);
        if (short_at)
            stage_load(pp, lo, 1.0 - tail);
    }
    stages_clear(pp);
}

/* The pipeline as a flow shop in which stage k is the bottleneck: the
 * first chunk reaches k (sharing links with the chunks behind it), all the
 * bytes cross k (sharing with every stage busy in the steady state), and
 * the last chunk goes on to the end (sharing with those ahead). The worst
 * k gives the time. Exact when stages share no links; high when they do,
 * since k is faster while the pipeline fills and drains. */
static double flow_shop(const pipe_t *pp, double *w)
{
    const hccn_cm_chunks_t *ck = pp->ck;
    int h = pp->h, win = ck->n < (uint64_t)h ? (int)ck->n : h;
    double *fill = w, *steady = w + h, *drain = w + 2 * (size_t)h;
    double c = (double)ck->c, last = (double)ck->last;
    double n = (double)(ck->n - 1) * c + last;
    slide(pp, win - 1, win, ck->n <= (uint64_t)h ? last / c : 0.0, fill);
    if (win == h)
        slide(pp, h, 2 * h, 0.0, steady);   /* every stage, always */
    else
        slide(pp, win / 2, win, 0.0, steady);
    slide(pp, 0, win, 0.0, drain);
    double before = 0.0, after = 0.0, worst = 0.0;
    for (int i = 0; i < h; i++)
        after += last * (drain[i] + pp->r[i]);
    for (int k = 0; k < h; k++) {
        double r = pp->r[k];
        after -= last * (drain[k] + r);
        double move = before + n * steady[k] + last * r;
        double red = before + c * fill[k] + n * r;
        worst = hccn_hier_cm_max(worst, hccn_hier_cm_max(move, red) + after);
        before += c * (fill[k] + r);
    }
    return worst;
}

/* A lockstep round in which stages lo..hi are loaded (stage tail_at with
 * the short last chunk): as long as its slowest stage's drain, plus the
 * reduction for the stage `front` that carries the first chunk (reduced
 * before it moves on), overlapped with the drain elsewhere. */
static double round_len(const pipe_t *pp, int lo, int hi, int tail_at,
                        int front)
{
    double len = 0.0;
    for (int j = lo; j <= hi; j++) {
        double b = (double)(j == tail_at ? pp->ck->last : pp->ck->c);
        double d = b * stage_w(pp, j), red = b * pp->r[j];
        len = hccn_hier_cm_max(len, j == front ? d + red
                                               : hccn_hier_cm_max(d, red));
    }
    return len;
}

/* The pipeline in lockstep: in round t stage j carries chunk t - j and the
 * round lasts as long as its slowest stage. Exact for stages of equal
 * speed, high when one is slower (the others would run ahead). The steady
 * rounds (every stage busy with a full chunk) are priced once. */
static double lockstep(const pipe_t *pp)
{
    const hccn_cm_chunks_t *ck = pp->ck;
    uint64_t h = (uint64_t)pp->h, rounds = ck->n + h - 1;
    double total = 0.0, tail = (double)ck->last / (double)ck->c;
    int in_lo = 0, in_hi = -1, tail_at = -1;
    for (uint64_t t = 0; t < rounds; t++) {
        int lo = t + 1 > ck->n ? (int)(t + 1 - ck->n) : 0;
        int hi = t + 1 < h ? (int)t : (int)h - 1;
        while (in_hi < hi)
            stage_load(pp, ++in_hi, 1.0);
        for (; in_lo < lo; in_lo++)
            stage_load(pp, in_lo, in_lo == tail_at ? -tail : -1.0);
        if (t + 1 >= ck->n && tail_at != lo) {
            tail_at = lo;   /* the last chunk's stage */
            stage_load(pp, lo, tail - 1.0);
        }
        double len = round_len(pp, lo, hi, tail_at, t < h ? (int)t : -1);
        if (t == h && ck->n >= h + 2) {
            len *= (double)(ck->n - 1 - h);   /* rounds h .. n-2 */
            t = ck->n - 2;
        }
        total += len;
    }
    stages_clear(pp);
    return total;
}

/* The stages' latencies add once (the slowest hop of each); the rest is
 * the smaller of two estimates that each err only on the high side. */
double hccn_hier_cm_pipeline(hccn_cm_t *m, hccn_cm_xf_t *x, int h,
                             const int *off, const hccn_cm_chunks_t *ck,
                             const double *r)
{
    double *w = hccn_sim_malloc(4 * (size_t)(h > 0 ? h : 1) * sizeof(double));
    if (w == NULL || h < 1) {
        m->failed |= w == NULL;
        hccn_sim_free(w);
        return 0.0;
    }
    double *rr = w + 3 * (size_t)h, lat = 0.0;
    pipe_t pp = {m, x, h, off, ck, rr};
    hccn_hier_cm_flows(m, x, (size_t)off[h], 1.0);
    for (int i = 0; i < h; i++) {
        double worst = 0.0;
        for (int j = off[i]; j < off[i + 1]; j++)
            worst = hccn_hier_cm_max(worst, x[j].lat);
        lat += worst;
        rr[i] = r != NULL ? r[i] : 0.0;
    }
    double shop = flow_shop(&pp, w), step = lockstep(&pp);
    hccn_sim_free(w);
    return lat + (step < shop ? step : shop);
}
