/*
 * hccn-perf: link utilisation (included by hccn-perf.c only). After every
 * run the cluster's per-link totals (hccn_cluster_link_stats) are added up by
 * link name, so a table's summary covers all its sizes, variants and sweep
 * values, warm-up and the barriers between them included:
 *
 *   bytes   carried by the directed link over all runs
 *   busy    bytes / bandwidth: the time the link would need at full rate
 *   active  time during which at least one transfer crossed it
 *   util    busy / span, the span being the runs' simulated time added up
 *
 * Printed after the table as '#' lines (the busiest links first) and
 * written to --json under "links".
 */
#ifndef HCCN_TOOLS_PERF_LINKS_H
#define HCCN_TOOLS_PERF_LINKS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hccn/hccn_sim.h"

#define LINK_TOP 8
#define LINK_NAME ((int)sizeof(((hccn_link_info_t *)0)->name))

typedef struct {
    char name[LINK_NAME];       /* "SRC->DST" by device names */
    int level;
    double bw;                  /* bytes/s of the latest run */
    double bytes, busy, active; /* bytes, seconds, seconds */
} link_acc_t;

typedef struct {
    link_acc_t *v;
    int n, cap;
    double span;                /* seconds, all runs */
    int runs;
} link_sum_t;

static const char *const link_levels[] = {"intra", "nic", "net"};

static link_acc_t *link_find(link_sum_t *ls, const char *name)
{
    for (int i = 0; i < ls->n; i++)
        if (strcmp(ls->v[i].name, name) == 0)
            return &ls->v[i];
    if (ls->n == ls->cap) {
        int cap = ls->cap ? 2 * ls->cap : 64;
        link_acc_t *v = realloc(ls->v, (size_t)cap * sizeof(*v));
        if (v == NULL)
            return NULL;
        ls->v = v;
        ls->cap = cap;
    }
    link_acc_t *a = &ls->v[ls->n++];
    memset(a, 0, sizeof(*a));
    snprintf(a->name, sizeof(a->name), "%s", name);
    return a;
}

/* Adds the totals of cl's last run (call after hccn_cluster_run). */
static void links_add_run(link_sum_t *ls, hccn_cluster_t *cl)
{
    const hccn_topo_t *topo = hccn_cluster_topo(cl);
    int nlinks = hccn_topo_links(topo);
    ls->runs++;
    for (int l = 0; l < nlinks; l++) {
        hccn_link_info_t k = {.struct_size = sizeof(k)};
        hccn_link_stats_t st = {.struct_size = sizeof(st)};
        if (hccn_topo_link(topo, l, &k) != HCCN_OK ||
            hccn_cluster_link_stats(cl, l, &st) != HCCN_OK)
            continue;
        if (l == 0)
            ls->span += st.span_s;
        if (!(st.bytes > 0.0) || !isfinite(k.bw_Bps))
            continue;
        link_acc_t *a = link_find(ls, k.name);
        if (a == NULL)
            continue;
        a->level = k.level;
        a->bw = k.bw_Bps;
        a->bytes += st.bytes;
        a->busy += st.busy_s;
        a->active += st.active_s;
    }
}

/* Busiest first; equal ones by name, so the order is deterministic. */
static int link_cmp(const void *pa, const void *pb)
{
    const link_acc_t *a = pa, *b = pb;
    if (a->busy != b->busy)
        return a->busy > b->busy ? -1 : 1;
    return strcmp(a->name, b->name);
}

static double link_util(const link_sum_t *ls, double t)
{
    return ls->span > 0.0 ? t / ls->span : 0.0;
}

/* Prints the LINK_TOP busiest links as '#' lines (sorts ls). */
static void links_print(link_sum_t *ls)
{
    if (ls->n > 0)
        qsort(ls->v, (size_t)ls->n, sizeof(*ls->v), link_cmp);
    int top = ls->n < LINK_TOP ? ls->n : LINK_TOP, w = 4;
    for (int i = 0; i < top; i++)
        if ((int)strlen(ls->v[i].name) > w)
            w = (int)strlen(ls->v[i].name);
    printf("# Link utilisation     : %d run%s, %.3f us simulated; busiest %d "
           "of %d links that carried bytes\n", ls->runs,
           ls->runs == 1 ? "" : "s", ls->span * 1e6, top, ls->n);
    if (top == 0)
        return;
    printf("#   %-*s %5s %14s %9s %12s %12s %6s %6s\n", w, "link", "level",
           "bytes", "bw(GB/s)", "busy(us)", "active(us)", "util", "active");
    for (int i = 0; i < top; i++) {
        const link_acc_t *a = &ls->v[i];
        printf("#   %-*s %5s %14.0f %9.2f %12.3f %12.3f %6.3f %6.3f\n", w,
               a->name, link_levels[a->level], a->bytes, a->bw / 1e9,
               a->busy * 1e6, a->active * 1e6, link_util(ls, a->busy),
               link_util(ls, a->active));
    }
}

/* {"collective", "runs", "span_us", "links": [...]} with every link that
 * carried bytes, busiest first (call after links_print). */
static json_object *links_json(const link_sum_t *ls, const char *coll)
{
    json_object *o = json_object_new_object(), *arr = json_object_new_array();
    json_object_object_add(o, "collective", json_object_new_string(coll));
    json_object_object_add(o, "runs", json_object_new_int(ls->runs));
    json_object_object_add(o, "span_us", json_object_new_double(ls->span *
                                                                1e6));
    for (int i = 0; i < ls->n; i++) {
        const link_acc_t *a = &ls->v[i];
        json_object *l = json_object_new_object();
        json_object_object_add(l, "link", json_object_new_string(a->name));
        json_object_object_add(l, "level",
                               json_object_new_string(link_levels[a->level]));
        json_object_object_add(l, "bw_GBps", json_object_new_double(a->bw /
                                                                    1e9));
        json_object_object_add(l, "bytes", json_object_new_double(a->bytes));
        json_object_object_add(l, "busy_us",
                               json_object_new_double(a->busy * 1e6));
        json_object_object_add(l, "active_us",
                               json_object_new_double(a->active * 1e6));
        json_object_object_add(l, "util",
                               json_object_new_double(link_util(ls, a->busy)));
        json_object_array_add(arr, l);
    }
    json_object_object_add(o, "links", arr);
    return o;
}

static void links_clear(link_sum_t *ls)
{
    free(ls->v);
    memset(ls, 0, sizeof(*ls));
}

#endif /* HCCN_TOOLS_PERF_LINKS_H */
