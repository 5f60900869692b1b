/*
 * The "fat_tree" network: tiers of switches, each with its own fan-in,
 * oversubscription and latency, under one core switch (docs/topology.md,
 * network "fat_tree").
 *
 * Tier 0 switches are the leaves: leaf l holds nodes l*c0 ..; a switch of
 * tier k > 0 holds switches i*ck .. of tier k-1; the switches of the last
 * tier join at the core. Each switch below the core has one uplink each
 * way, of (the bandwidth coming up into it) / its tier's oversubscription.
 * A route climbs from the sender's leaf to the lowest common ancestor and
 * down again: O(tiers) array reads.
 */
#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define MAX_OVERSUB 1e6
#define MAX_US 1e9

/* levels[k]: {"children": n, "oversubscription": r, "lat_us": x}. */
static hccn_status_t parse_tier(hccn_sim_jctx_t *c, json_object *o,
                                hccn_sim_net_spec_t *net, int k)
{
    static const char *const keys[] = {"children", "oversubscription",
                                       "lat_us", NULL};
    hccn_sim_jgot_t got;
    long long n = 0;
    double lat = 0.0;
    int has = 0;
    hccn_status_t st;
    if (!json_object_is_type(o, json_type_object))
        return hccn_sim_jfail(c, "must be an object (got %s)",
                              hccn_sim_jgot(o, &got));
    net->tier_oversub[k] = 1.0;
    net->tier_lat[k] = net->lat;
    if ((st = hccn_sim_jkeys(c, o, keys)) ||
        (st = hccn_sim_jint(c, o, "children", 1, HCCN_SIM_MAX_NPUS, &n,
                            NULL)) ||
        (st = hccn_sim_jnum(c, o, "oversubscription", 1, 0, MAX_OVERSUB,
                            &net->tier_oversub[k], &has)) ||
        (st = hccn_sim_jnum(c, o, "lat_us", 0, 0, MAX_US, &lat, &has)))
        return st;
    net->tier_children[k] = (int)n;
    if (has)
        net->tier_lat[k] = lat * 1e-6;
    return HCCN_OK;
}

hccn_status_t hccn_sim_parse_tree(hccn_sim_jctx_t *c, json_object *o,
                                  hccn_sim_net_spec_t *net)
{
    json_object *arr = NULL;
    hccn_status_t st = hccn_sim_jtyped(c, o, "levels", json_type_array,
                                       "an array", &arr, NULL);
    if (st)
        return st;
    size_t n = json_object_array_length(arr);
    if (n < 1 || n > HCCN_SIM_MAX_TIERS)
        return hccn_sim_jfail_key(c, "levels", "must have 1..%d tiers (got "
                                  "%zu)", HCCN_SIM_MAX_TIERS, n);
    net->ntiers = (int)n;
    size_t old = hccn_sim_jkey(c, "levels");
    for (size_t k = 0; k < n && st == HCCN_OK; k++) {
        size_t mark = hccn_sim_jindex(c, k);
        st = parse_tier(c, json_object_array_get_idx(arr, k), net, (int)k);
        hccn_sim_jpop(c, mark);
    }
    hccn_sim_jpop(c, old);
    net->nodes_per_leaf = net->tier_children[0];
    return st;
}

int hccn_sim_tree_switches(const hccn_sim_spec_t *spec, int *per_tier)
{
    int below = spec->nnodes, total = 0;
    for (int k = 0; k < spec->net.ntiers; k++) {
        int c = spec->net.tier_children[k];
        below = (below + c - 1) / c;
        per_tier[k] = below;
        total += below;
    }
    return total;
}

static void put_link(hccn_sim_topo_t *t, int *nlink, int src, int dst,
                     double bw, int *out)
{
    hccn_sim_link_t *l = &t->links[*nlink];
    l->src = src;
    l->dst = dst;
    l->bw = bw;
    l->lat = 0.0;
    l->level = HCCN_SIM_LEVEL_NET;
    *out = (*nlink)++;
}

hccn_sim_uplink_t *hccn_sim_tree_uplink(const hccn_sim_topo_priv_t *p, int k,
                                        int i)
{
    return k == 0 ? &p->leaves[i] : &p->upper[p->tier_base[k] + i];
}

int hccn_sim_build_tree(hccn_sim_topo_t *t, hccn_sim_topo_priv_t *p,
                         const hccn_sim_spec_t *spec, const double *leaf_bw,
                         int dev0, int *ndev, int *nlink)
{
    const hccn_sim_net_spec_t *net = &spec->net;
    int count[HCCN_SIM_MAX_TIERS], first[HCCN_SIM_MAX_TIERS + 1];
    hccn_sim_tree_switches(spec, count);
    first[0] = dev0;
    for (int k = 0; k < net->ntiers; k++) {
        first[k + 1] = first[k] + count[k];
        for (int i = 0; i < count[k]; i++) {
            hccn_sim_dev_t *d = &t->devs[(*ndev)++];
            d->kind = HCCN_SIM_DEV_SWITCH;
            d->node = -1;
            d->lat = net->tier_lat[k];
            if (k == 0)
                snprintf(d->name, sizeof(d->name), "leaf%d", i);
            else
                snprintf(d->name, sizeof(d->name), "tier%d.%d", k, i);
        }
    }
    int core = (*ndev)++;
    t->devs[core] = (hccn_sim_dev_t){.kind = HCCN_SIM_DEV_SWITCH, .node = -1,
                                     .lat = net->lat, .name = "core"};
    double *below = hccn_sim_calloc((size_t)(count[0] > 0 ? count[0] : 1),
                           sizeof(double));
    if (below == NULL)
        return -1;
    for (int i = 0; i < count[0]; i++)
        below[i] = leaf_bw[i];
    for (int k = 0; k < net->ntiers; k++) {
        int top = k + 1 == net->ntiers, c = top ? 1 : net->tier_children[k + 1];
        double *sum = hccn_sim_calloc((size_t)(top ? 1 : count[k + 1]), sizeof(double));
        if (sum == NULL) {
            hccn_sim_free(below);
            return -1;
        }
        for (int i = 0; i < count[k]; i++) {
            double bw = below[i] / net->tier_oversub[k];
            int parent = top ? core : first[k + 1] + i / c;
            hccn_sim_uplink_t *u = hccn_sim_tree_uplink(p, k, i);
            put_link(t, nlink, first[k] + i, parent, bw, &u->up);
            put_link(t, nlink, parent, first[k] + i, bw, &u->down);
            sum[top ? 0 : i / c] += bw;
        }
        hccn_sim_free(below);
        below = sum;
    }
    hccn_sim_free(below);
    return 0;
}

int hccn_sim_route_tree(const hccn_sim_topo_priv_t *p, int la, int lb,
                        int *out)
{
    int up[HCCN_SIM_MAX_TIERS], down[HCCN_SIM_MAX_TIERS], n = 0;
    for (int k = 0; la != lb && k < p->ntiers; k++) {
        hccn_sim_uplink_t *ua = hccn_sim_tree_uplink(p, k, la);
        hccn_sim_uplink_t *ub = hccn_sim_tree_uplink(p, k, lb);
        up[n] = ua->up;
        down[n++] = ub->down;
        if (k + 1 < p->ntiers) {
            la /= p->tier_children[k + 1];
            lb /= p->tier_children[k + 1];
        }
    }
    for (int k = 0; k < n; k++)
        out[k] = up[k];
    for (int k = 0; k < n; k++)
        out[n + k] = down[n - 1 - k];
    return 2 * n;
}

double hccn_sim_tree_bisection(const hccn_sim_topo_t *topo, double *a,
                               double *b)
{
    const hccn_sim_topo_priv_t *p = topo->priv;
    int count = p->nleaves;
    double total = 0.0;
    for (int k = 0; k < p->ntiers; k++) {
        int top = k + 1 == p->ntiers, c = top ? count : p->tier_children[k + 1];
        for (int i = 0; i < count; i++) {
            hccn_sim_uplink_t *u = hccn_sim_tree_uplink(p, k, i);
            double local = fmin(a[i], b[i]);
            double au = fmin(a[i] - local, topo->links[u->up].bw);
            double bd = fmin(b[i] - local, topo->links[u->down].bw);
            total += local;
            a[i] = b[i] = 0.0;   /* i / c <= i: fold into the parent */
            a[i / c] += au;
            b[i / c] += bd;
        }
        count = (count + c - 1) / c;
    }
    return total + fmin(a[0], b[0]);
}
