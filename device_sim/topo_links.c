/*
 * The "links" fabric: an uneven intra-node mesh written as a list of
 * connections with multiplicities (docs/topology.md, fabric "links").
 *
 * Each connection [a, b, m] is m parallel cables between NPUs a and b: two
 * directed links of m x bw. A pair with no connection is routed through a
 * relay NPU: the r with a connection to both whose thinner connection is the
 * thickest (ties: the lowest r), two hops. The pair table (n x n per node
 * type) is computed once at load time, so a route is two array reads.
 */
#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

#include <stdlib.h>
#include <string.h>

#define MAX_MULT 64

/* One element [a, b] or [a, b, m] of fabric.links. */
static hccn_status_t parse_conn(hccn_sim_jctx_t *c, json_object *v,
                                const hccn_sim_type_spec_t *t, int *out)
{
    hccn_sim_jgot_t got;
    size_t len = json_object_is_type(v, json_type_array)
                     ? json_object_array_length(v) : 0;
    if (len != 2 && len != 3)
        return hccn_sim_jfail(c, "must be [a, b] or [a, b, multiplicity] "
                              "(got %s)", hccn_sim_jgot(v, &got));
    hccn_status_t st;
    if ((st = hccn_sim_jelem(c, v, 0, t->nnpus, &out[0])) ||
        (st = hccn_sim_jelem(c, v, 1, t->nnpus, &out[1])))
        return st;
    out[2] = 1;
    if (len == 3) {
        long long m = 0;
        size_t old = hccn_sim_jindex(c, 2);
        st = hccn_sim_jcheck_int(c, json_object_array_get_idx(v, 2), 1,
                                 MAX_MULT, &m);
        hccn_sim_jpop(c, old);
        out[2] = (int)m;
    }
    if (st == HCCN_OK && out[0] == out[1])
        return hccn_sim_jfail(c, "connects NPU %d to itself", out[0]);
    return st;
}

/* Connection index of the pair (x, y) in either order, or -1; the pair
 * table holds 2*c (+1 for the reverse direction) while parsing. */
static int conn_of(const hccn_sim_type_spec_t *t, int x, int y)
{
    int e = t->pair[(size_t)x * (size_t)t->nnpus + (size_t)y];
    return e >= 0 ? e / 2 : -1;
}

/* Relay for the unconnected pair (a, b): encoded -(r + 2), or -1. */
static int pick_relay(const hccn_sim_type_spec_t *t, int a, int b)
{
    int best = -1, best_m = 0;
    for (int r = 0; r < t->nnpus; r++) {
        int ca = conn_of(t, a, r), cb = conn_of(t, r, b);
        if (ca < 0 || cb < 0)
            continue;
        int ma = t->conn[3 * ca + 2], mb = t->conn[3 * cb + 2];
        int m = ma < mb ? ma : mb;
        if (m > best_m) {
            best_m = m;
            best = r;
        }
    }
    return best < 0 ? -1 : -(best + 2);
}

/* Fills the relays; fails naming the first pair that has no route. */
static hccn_status_t fill_relays(hccn_sim_jctx_t *c, hccn_sim_type_spec_t *t)
{
    int n = t->nnpus;
    int *relay = hccn_sim_malloc((size_t)n * (size_t)n * sizeof(int));
    if (relay == NULL)
        return hccn_sim_jnomem(c);
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            size_t i = (size_t)a * (size_t)n + (size_t)b;
            relay[i] = a == b || t->pair[i] >= 0 ? t->pair[i]
                                                 : pick_relay(t, a, b);
            if (a != b && relay[i] == -1) {
                hccn_sim_free(relay);
                return hccn_sim_jfail_key(c, "links", "NPUs %d and %d have "
                                          "neither a link nor a common "
                                          "neighbour to relay through",
                                          a, b);
            }
        }
    memcpy(t->pair, relay, (size_t)n * (size_t)n * sizeof(int));
    hccn_sim_free(relay);
    return HCCN_OK;
}

static hccn_status_t parse_conns(hccn_sim_jctx_t *c, json_object *arr,
                                 hccn_sim_type_spec_t *t)
{
    size_t n = json_object_array_length(arr);
    hccn_status_t st = HCCN_OK;
    if (n == 0)
        return hccn_sim_jfail(c, "must not be empty");
    t->conn = hccn_sim_malloc(n * 3 * sizeof(int));
    if (t->conn == NULL)
        return hccn_sim_jnomem(c);
    t->nconns = (int)n;
    for (size_t k = 0; k < n && st == HCCN_OK; k++) {
        size_t old = hccn_sim_jindex(c, k);
        int *e = &t->conn[3 * k];
        st = parse_conn(c, json_object_array_get_idx(arr, k), t, e);
        if (st == HCCN_OK && conn_of(t, e[0], e[1]) >= 0)
            st = hccn_sim_jfail(c, "NPUs %d and %d are already connected by "
                                "links[%d] (give the multiplicity instead)",
                                e[0], e[1], conn_of(t, e[0], e[1]));
        if (st == HCCN_OK) {
            t->pair[(size_t)e[0] * (size_t)t->nnpus + (size_t)e[1]] =
                2 * (int)k;
            t->pair[(size_t)e[1] * (size_t)t->nnpus + (size_t)e[0]] =
                2 * (int)k + 1;
        }
        hccn_sim_jpop(c, old);
    }
    return st;
}

hccn_status_t hccn_sim_parse_links(hccn_sim_jctx_t *c, json_object *f,
                                   hccn_sim_type_spec_t *t)
{
    json_object *arr = NULL;
    hccn_status_t st = hccn_sim_jtyped(c, f, "links", json_type_array,
                                       "an array", &arr, NULL);
    if (st)
        return st;
    if (t->nnpus > HCCN_SIM_MAX_LINKS_NPUS)
        return hccn_sim_jfail_key(c, "links", "a links fabric has at most "
                                  "%d NPUs (got %d)", HCCN_SIM_MAX_LINKS_NPUS,
                                  t->nnpus);
    size_t cells = (size_t)t->nnpus * (size_t)t->nnpus;
    t->pair = hccn_sim_malloc(cells * sizeof(int));
    if (t->pair == NULL)
        return hccn_sim_jnomem(c);
    for (size_t i = 0; i < cells; i++)
        t->pair[i] = -1;
    size_t old = hccn_sim_jkey(c, "links");
    st = parse_conns(c, arr, t);
    hccn_sim_jpop(c, old);
    return st ? st : fill_relays(c, t);
}

void hccn_sim_build_links(hccn_sim_topo_t *topo, int *nlink,
                          const hccn_sim_node_t *nd,
                          const hccn_sim_type_spec_t *t,
                          hccn_sim_node_tab_t *tab)
{
    tab->base = *nlink;
    for (int k = 0; k < t->nconns; k++) {
        const int *e = &t->conn[3 * k];
        double bw = t->fab_bw * e[2];
        for (int dir = 0; dir < 2; dir++) {
            hccn_sim_link_t *l = &topo->links[(*nlink)++];
            l->src = nd->first_npu + e[dir];
            l->dst = nd->first_npu + e[1 - dir];
            l->bw = bw;
            l->lat = t->fab_lat;
            l->level = HCCN_SIM_LEVEL_INTRA;
        }
    }
}

int hccn_sim_route_links(const hccn_sim_node_tab_t *tab, int n, int a, int b,
                         int *out)
{
    int e = tab->pair[(size_t)a * (size_t)n + (size_t)b];
    if (e >= 0) {
        out[0] = tab->base + e;
        return 1;
    }
    int r = -e - 2;
    out[0] = tab->base + tab->pair[(size_t)a * (size_t)n + (size_t)r];
    out[1] = tab->base + tab->pair[(size_t)r * (size_t)n + (size_t)b];
    return 2;
}

double hccn_sim_links_cut(const hccn_sim_topo_t *topo,
                          const hccn_sim_node_tab_t *tab,
                          const hccn_sim_node_t *nd, int half)
{
    double sum = 0.0;
    int n = nd->nnpus;
    for (int a = 0; a < half; a++)
        for (int b = half; b < n; b++) {
            int e = tab->pair[(size_t)a * (size_t)n + (size_t)b];
            if (e >= 0)
                sum += topo->links[tab->base + e].bw;
        }
    return sum;
}
