/*
 * The simulation API's topologies (include/hccn/hccn_sim.h): loading with
 * PATH=VALUE edits, and read-only views of devices, links, routes, the
 * summary, the levels the cost model sees and the software model. A
 * public hccn_topo_t is the loader's hccn_sim_topo_t; every query checks
 * its arguments and reports through hccn_last_error().
 */
#include <json-c/json.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/software.h"
#include "hccn/hccn_sim.h"
#include "hierarchy/cost.h"
#include "runtime/rt.h"

/* The document of path with edits applied into *out, or an error (set)
 * naming the file or the edit. */
static hccn_status_t edited_doc(const char *arg, const char *const *edits,
                                int nedits, json_object **out)
{
    char path[PATH_MAX], why[RT_ERR_MAX];
    *out = NULL;
    /* A config name is looked up as the loader would (topo_find.c). */
    if (hccn_sim_topo_find(arg, path, sizeof(path), why, sizeof(why)) !=
        HCCN_OK)
        return hccn_rt_error(HCCN_ERR_IO, "%s", why);
    json_object *doc = json_object_from_file(path);
    if (doc == NULL) {
        /* Let the loader say what is wrong with the file itself. */
        char err[RT_ERR_MAX];
        hccn_sim_topo_t *t = NULL;
        hccn_status_t rc = hccn_sim_topo_load_file(path, &t, err, sizeof(err));
        hccn_sim_topo_free(t);
        return rc != HCCN_OK ? hccn_rt_error(rc, "%s", err)
                             : hccn_rt_error(HCCN_ERR_IO, "%s: cannot parse",
                                             path);
    }
    for (int i = 0; i < nedits; i++) {
        char err[RT_ERR_MAX];
        if (edits[i] == NULL) {
            json_object_put(doc);
            return hccn_rt_error(HCCN_ERR_INVALID, "edit %d is NULL", i);
        }
        hccn_status_t rc = hccn_sim_topo_override(doc, edits[i], err,
                                                  sizeof(err));
        if (rc != HCCN_OK) {
            json_object_put(doc);
            return hccn_rt_error(rc, "edit %s: %s", edits[i], err);
        }
    }
    *out = doc;
    return HCCN_OK;
}

int hccn_topo_config_dir(int i, char *buf, size_t len)
{
    char dirs[8][PATH_MAX];
    int n = hccn_sim_topo_dirs(dirs, 8);
    if (i < 0 || i >= n || buf == NULL || len == 0)
        return -1;
    return snprintf(buf, len, "%s", dirs[i]) < (int)len ? 0 : -1;
}

hccn_status_t hccn_topo_load(const char *path, const char *const *edits,
                             int nedits, hccn_topo_t **out)
{
    if (out == NULL || path == NULL || nedits < 0 ||
        (nedits > 0 && edits == NULL))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_load: %s",
                             out == NULL ? "out is NULL"
                             : path == NULL ? "path is NULL"
                                            : "bad edits");
    *out = NULL;
    char err[RT_ERR_MAX];
    hccn_status_t rc;
    if (nedits == 0) {
        rc = hccn_sim_topo_load_file(path, out, err, sizeof(err));
    } else {
        json_object *doc;
        if ((rc = edited_doc(path, edits, nedits, &doc)) != HCCN_OK)
            return rc;
        rc = hccn_sim_topo_load_json(doc, path, out, err, sizeof(err));
        json_object_put(doc);
    }
    return rc == HCCN_OK ? HCCN_OK : hccn_rt_error(rc, "%s", err);
}

hccn_status_t hccn_topo_load_json(const char *json, const char *name,
                                  hccn_topo_t **out)
{
    if (out == NULL || json == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_load_json: %s is "
                             "NULL", out == NULL ? "out" : "json");
    char err[RT_ERR_MAX];
    hccn_status_t rc = hccn_sim_topo_load_string(
        json, name != NULL ? name : "<string>", out, err, sizeof(err));
    return rc == HCCN_OK ? HCCN_OK : hccn_rt_error(rc, "%s", err);
}

void hccn_topo_free(hccn_topo_t *topo)
{
    hccn_sim_topo_free(topo);
}

hccn_status_t hccn_cluster_create_edited(const char *path,
                                         const char *const *edits, int nedits,
                                         const hccn_cluster_opts_t *opts,
                                         hccn_cluster_t **out)
{
    if (nedits == 0)
        return hccn_cluster_create(path, opts, out);
    if (out == NULL || path == NULL || nedits < 0 || edits == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create_edited: "
                             "out, path or edits is NULL");
    *out = NULL;
    json_object *doc;
    hccn_status_t rc = edited_doc(path, edits, nedits, &doc);
    if (rc != HCCN_OK)
        return rc;
    const char *text = json_object_to_json_string_ext(doc,
                                                      JSON_C_TO_STRING_PLAIN);
    rc = hccn_cluster_create_json(text, path, opts, out);
    json_object_put(doc);
    return rc;
}

const hccn_topo_t *hccn_cluster_topo(const hccn_cluster_t *cl)
{
    return hccn_rt_cluster_check("hccn_cluster_topo", cl) == HCCN_OK
               ? cl->topo
               : NULL;
}

const char *hccn_topo_name(const hccn_topo_t *t)
{
    return t != NULL ? t->name : "";
}

const char *hccn_topo_source(const hccn_topo_t *t)
{
    return t != NULL ? t->source : "";
}

int hccn_topo_npus(const hccn_topo_t *t) { return t ? t->nnpus : 0; }
int hccn_topo_nodes(const hccn_topo_t *t) { return t ? t->nnodes : 0; }
int hccn_topo_devices(const hccn_topo_t *t) { return t ? t->ndevs : 0; }
int hccn_topo_links(const hccn_topo_t *t) { return t ? t->nlinks : 0; }

/* HCCN_OK if info is usable (not NULL, struct_size large enough). */
static hccn_status_t check_out(const char *fn, const void *info,
                               size_t have, size_t need)
{
    if (info == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: the output is NULL", fn);
    if (have < need)
        return hccn_rt_error(HCCN_ERR_INVALID, "%s: struct_size %zu, "
                             "expected %zu", fn, have, need);
    return HCCN_OK;
}

hccn_status_t hccn_topo_device(const hccn_topo_t *t, int dev,
                               hccn_device_info_t *info)
{
    hccn_status_t rc = check_out("hccn_topo_device", info,
                                 info ? info->struct_size : 0, sizeof(*info));
    if (rc != HCCN_OK)
        return rc;
    if (t == NULL || dev < 0 || dev >= t->ndevs)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_device: device %d "
                             "out of range [0, %d)", dev, t ? t->ndevs : 0);
    const hccn_sim_dev_t *d = &t->devs[dev];
    info->kind = (hccn_device_kind_t)d->kind;
    info->node = d->node;
    info->lat_s = d->lat;
    info->name = d->name;
    return HCCN_OK;
}

hccn_status_t hccn_topo_link(const hccn_topo_t *t, int link,
                             hccn_link_info_t *info)
{
    hccn_status_t rc = check_out("hccn_topo_link", info,
                                 info ? info->struct_size : 0, sizeof(*info));
    if (rc != HCCN_OK)
        return rc;
    if (t == NULL || link < 0 || link >= t->nlinks)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_link: link %d out "
                             "of range [0, %d)", link, t ? t->nlinks : 0);
    const hccn_sim_link_t *l = &t->links[link];
    info->src = l->src;
    info->dst = l->dst;
    info->level = l->level;
    info->bw_Bps = l->bw;
    info->lat_s = l->lat;
    snprintf(info->name, sizeof(info->name), "%s->%s", t->devs[l->src].name,
             t->devs[l->dst].name);
    return HCCN_OK;
}

hccn_status_t hccn_topo_route(const hccn_topo_t *t, int a, int b, int *links,
                              int *nlinks, double *lat_s)
{
    if (t == NULL || links == NULL || nlinks == NULL || lat_s == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_route: NULL "
                             "argument");
    if (a < 0 || b < 0 || a >= t->nnpus || b >= t->nnpus)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_route: NPUs must "
                             "be in 0..%d (got %d, %d)", t->nnpus - 1, a, b);
    *nlinks = hccn_sim_topo_route(t, a, b, links, lat_s);
    return HCCN_OK;
}

int hccn_topo_staged(const hccn_topo_t *t, int node, double *efficiency,
                     double *duplex)
{
    return hccn_sim_topo_staged(t, node, efficiency, duplex);
}

hccn_status_t hccn_topo_summary(const hccn_topo_t *t, hccn_topo_summary_t *s)
{
    hccn_status_t rc = check_out("hccn_topo_summary", s,
                                 s ? s->struct_size : 0, sizeof(*s));
    if (rc != HCCN_OK)
        return rc;
    if (t == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_summary: topology "
                             "is NULL");
    hccn_sim_topo_summary_t sum;
    hccn_sim_topo_summarize(t, &sum);
    for (int l = 0; l < 3; l++) {
        s->links_per_level[l] = sum.links_per_level[l];
        s->bw_per_level[l] = sum.bw_per_level[l];
    }
    s->bisection_Bps = sum.bisection_bw;
    return HCCN_OK;
}

/* Latency and bottleneck bandwidth of the route between NPUs a and b. */
static void route_figs(const hccn_sim_topo_t *t, int a, int b, double *lat,
                       double *bw)
{
    int links[HCCN_SIM_ROUTE_MAX];
    int k = hccn_sim_topo_route(t, a, b, links, lat);
    *bw = INFINITY;
    for (int i = 0; i < k; i++)
        *bw = fmin(*bw, t->links[links[i]].bw);
}

/* The third level (pods under leaf switches), as the hierarchical rows
 * derive it (docs/algorithms.md, hier3), or why there are only two. mem
 * holds 5 * n ints. */
static void pods(const hccn_cost_place_t *pl, int n, int *mem,
                 hccn_levels_t *lv)
{
    hccn_hier_view_t v;
    lv->nlevels = 2;
    if (hccn_hier_cost_view(pl, n, mem, mem + n, &v) != 0 ||
        hccn_hier_cost_pods(pl, mem + 2 * n, &v) != 0) {
        snprintf(lv->why, sizeof(lv->why), "%s", hccn_sim_nomem_msg());
        return;
    }
    int *ppod = mem + 3 * n, *psize = mem + 4 * n, even = 1, first = -1;
    memset(ppod, 0, 2 * (size_t)n * sizeof(int));
    for (int r = 0; r < n; r++)
        psize[v.node[r]]++;
    for (int r = 0; r < n && v.pod != NULL; r++)
        if (v.local[r] == 0) {
            ppod[v.pod[r]]++;   /* nodes per pod */
            if (v.pod[r] == 1 && first < 0)
                first = r;
        }
    for (int k = 0; k < v.nnodes; k++)
        even &= psize[k] == psize[0];
    for (int q = 0; q < v.npods; q++)
        even &= ppod[q] == ppod[0];
    const char *why = v.pod == NULL   ? "no leaf switches"
                      : v.npods < 2   ? "one pod"
                      : !even         ? "pods or nodes of different sizes"
                      : ppod[0] == 1  ? "one node per pod: level 1 crosses "
                                        "the spine"
                      : psize[0] == 1 ? "one rank per node: pods in the "
                                        "place of nodes"
                                      : NULL;
    if (why != NULL) {
        snprintf(lv->why, sizeof(lv->why), "%s", why);
        return;
    }
    lv->nlevels = 3;
    lv->npods = v.npods;
    lv->nodes_per_pod = ppod[0];
    route_figs(pl->topo, pl->world[0], pl->world[first], &lv->alpha_s[2],
               &lv->bw_Bps[2]);
}

hccn_status_t hccn_topo_levels(const hccn_topo_t *t, int nranks,
                               hccn_levels_t *lv)
{
    hccn_status_t rc = check_out("hccn_topo_levels", lv,
                                 lv ? lv->struct_size : 0, sizeof(*lv));
    if (rc != HCCN_OK)
        return rc;
    if (t == NULL || nranks < 1 || nranks > t->nnpus)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_topo_levels: %d ranks "
                             "on %d NPUs", nranks, t ? t->nnpus : 0);
    int *mem = hccn_sim_malloc(6 * (size_t)nranks * sizeof(int));
    if (mem == NULL)
        return hccn_sim_fail_context("hccn_topo_levels");
    int *world = mem + 5 * nranks;
    for (int r = 0; r < nranks; r++)
        world[r] = r;
    hccn_cost_place_t pl = {t, world};
    hccn_cost_levels_t cl;
    hccn_hier_cost_levels(&pl, nranks, &cl);
    size_t size = lv->struct_size;
    memset(lv, 0, sizeof(*lv));
    lv->struct_size = size;
    lv->nnodes = cl.nnodes;
    lv->ppn = cl.ppn;
    for (int l = 0; l < 2; l++) {
        lv->alpha_s[l] = cl.alpha[l];
        lv->bw_Bps[l] = cl.bw[l];
    }
    lv->reduce_Bps = cl.reduce_bw;
    pods(&pl, nranks, mem, lv);
    hccn_sim_free(mem);
    return HCCN_OK;
}

/* ------------------------------------------------------- software --- */

/* What hccn-calibrate starts its fit from, in the file's units. */
const char *hccn_proto_name(int proto)
{
    return hccn_sim_proto_name(proto);
}

_Static_assert((int)HCCN_NPROTO == (int)HCCN_SIM_NPROTO &&
                   HCCN_TREE_SIZES == HCCN_SIM_TREE_SIZES,
               "hccn_software_t mirrors the software model's tables");

static void copy_model(const hccn_sim_sw_t *sw, hccn_software_t *out)
{
    memcpy(out->stack, sw->stack, sizeof(out->stack));
    out->stack[sizeof(out->stack) - 1] = '\0';
    out->launch_us = sw->launch_s * 1e6;
    out->host_us = sw->host_s * 1e6;
    out->ranks_per_thread = sw->per_thread;
    out->slots = sw->slots;
    out->channels = sw->channels;
    out->nvls_launch_us = sw->nvls_launch_s * 1e6;
    out->nvls_step_us = sw->nvls_step_s * 1e6;
    out->nvls_step_set = sw->nvls_step_on;
    out->nvls_net_step_us = sw->nvls_net_step_s * 1e6;
    out->allpairs_max_bytes = sw->allpairs_max_bytes;
    out->send_overhead_us = sw->send_s * 1e6;
    out->recv_overhead_us = sw->recv_s * 1e6;
    out->ring_plateau = sw->ring_plateau;
    for (int k = 0; k < HCCN_NLINK; k++)
        out->link_efficiency[k] = sw->link_eff[k];
    for (int p = 0; p < HCCN_NPROTO; p++) {
        out->enabled[p] = sw->proto[p].on;
        out->proto_launch_us[p] = sw->proto[p].launch_s * 1e6;
        for (int k = 0; k < 2; k++)
            out->max_GBps[p][k] = sw->proto[p].max_bw[k] * 1e-9;
        out->ring_step_us[p] = sw->proto[p].ring_step_s * 1e6;
        out->tree_step_set[p] = sw->proto[p].tree_on;
        for (int i = 0; i < HCCN_TREE_SIZES; i++)
            out->tree_bw[p][i] = sw->proto[p].tree_bw[i];
        for (int c = 0; c < HCCN_NCLASS; c++) {
            out->step_us[p][c] = sw->proto[p].step_s[c] * 1e6;
            out->tree_step_us[p][c] = sw->proto[p].tree_step_s[c] * 1e6;
            out->efficiency[p][c] = sw->proto[p].eff[c];
            out->max_bytes[p][c] = sw->proto[p].max_bytes[c];
        }
    }
}

hccn_status_t hccn_topo_software(const hccn_topo_t *topo,
                                 hccn_software_t *out)
{
    if (topo == NULL || out == NULL ||
        out->struct_size != sizeof(hccn_software_t))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_topo_software: %s",
                             topo == NULL ? "topo is NULL"
                             : out == NULL ? "out is NULL"
                                           : "out->struct_size is not "
                                             "sizeof(hccn_software_t)");
    size_t size = out->struct_size;
    memset(out, 0, sizeof(*out));
    out->struct_size = size;
    /* Without one: the model of no cost, the "none" preset, unnamed. */
    copy_model(topo->sw != NULL ? topo->sw : hccn_sim_sw_preset("none"), out);
    if (topo->sw == NULL)
        out->stack[0] = '\0';
    out->present = topo->sw != NULL;
    return HCCN_OK;
}
