/*
 * hccn-perf --sweep-faults CLASS (included by hccn-perf.c only, after its
 * measuring functions; docs/perf.md, "Failure what-ifs"): the first
 * collective at the largest size (-e), out of place, once with no extra
 * fault and once per member of CLASS failed alone, then a table from the
 * most harmful to the least. CLASS is link (every link inside a node or in
 * the network), nic (all links of one NIC) or npu: failed (link_down,
 * npu_fail) or, with ":slow=F", slowed (link_slow F, npu_slow F). A case
 * whose collective fails is listed first, with why.
 */
#ifndef HCCN_TOOLS_PERF_FSWEEP_H
#define HCCN_TOOLS_PERF_FSWEEP_H

#include "tools/perf_faults.h"

/* ------------------------------------------------------------- the sweep */

typedef struct {
    char name[128];             /* what failed */
    json_object *faults;        /* its faults elements */
    double busbw, time_us;      /* NAN: the collective failed */
    char why[160];
} fcase_t;

/* A fault of kind on a link (name) or an NPU (npu >= 0). */
static json_object *one_fault(const char *kind, const char *link, int npu,
                              double factor)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "kind", json_object_new_string(kind));
    if (link != NULL)
        json_object_object_add(o, "link", json_object_new_string(link));
    else
        json_object_object_add(o, "npu", json_object_new_int(npu));
    if (!isnan(factor))
        json_object_object_add(o, "factor", json_object_new_double(factor));
    return o;
}

/* The cases of CLASS on topo into *out; their number, or -1 with the error
 * printed. */
static int sweep_cases(const char *cls, const hccn_topo_t *topo, fcase_t **out)
{
    double factor = NAN;
    char what[16] = "";
    const char *slow = strstr(cls, ":slow=");
    snprintf(what, sizeof(what), "%.*s",
             (int)(slow ? (size_t)(slow - cls) : strlen(cls)), cls);
    /* F is one number, all of what follows (a NaN, which JSON cannot
     * carry, or "2x" would be lost or misread on the way to the loader). */
    char *end = NULL;
    if (slow != NULL)
        factor = strtod(slow + 6, &end);
    int is_npu = !strcmp(what, "npu"), is_nic = !strcmp(what, "nic");
    if ((!is_npu && !is_nic && strcmp(what, "link") != 0) ||
        (slow != NULL && (end == slow + 6 || *end != '\0' || isnan(factor)))) {
        fprintf(stderr, "hccn-perf: --sweep-faults '%s': expected link, nic "
                "or npu, optionally with :slow=F (F a number)\n", cls);
        return -1;
    }
    const char *kind = is_npu ? (slow ? "npu_slow" : "npu_fail")
                              : (slow ? "link_slow" : "link_down");
    int ndev = hccn_topo_devices(topo), nl = hccn_topo_links(topo), n = 0;
    fcase_t *c = calloc((size_t)(ndev + nl + 1), sizeof(*c));
    for (int d = 0; c != NULL && d < ndev; d++) {
        hccn_device_info_t di = {.struct_size = sizeof(di)};
        hccn_topo_device(topo, d, &di);
        if ((is_npu && di.kind != HCCN_DEVICE_NPU) ||
            (is_nic && di.kind != HCCN_DEVICE_NIC) || (!is_npu && !is_nic))
            continue;
        snprintf(c[n].name, sizeof(c[n].name), "%s", di.name);
        c[n].faults = json_object_new_array();
        if (is_npu)
            json_object_array_add(c[n].faults, one_fault(kind, NULL, d, factor));
        for (int l = 0; is_nic && l < nl; l++) {
            hccn_link_info_t li = {.struct_size = sizeof(li)};
            hccn_topo_link(topo, l, &li);
            if ((li.src == d || li.dst == d) && isfinite(li.bw_Bps))
                json_object_array_add(c[n].faults,
                                      one_fault(kind, li.name, -1, factor));
        }
        n++;
    }
    for (int l = 0; c != NULL && !is_npu && !is_nic && l < nl; l++) {
        hccn_link_info_t li = {.struct_size = sizeof(li)};
        hccn_topo_link(topo, l, &li);
        if (li.level == 1 || !isfinite(li.bw_Bps))
            continue;     /* NIC attachments: the nic class */
        snprintf(c[n].name, sizeof(c[n].name), "%s", li.name);
        c[n].faults = json_object_new_array();
        json_object_array_add(c[n].faults, one_fault(kind, li.name, -1, factor));
        n++;
    }
    *out = c;
    return c != NULL ? n : -1;
}

/* Measures the case's topology (the base faults plus its own; NULL: the
 * base alone) into fc. */
static void sweep_measure(cli_t *cli, coll_t coll, fcase_t *fc)
{
    json_object *arr = json_object_new_array();
    json_object *parts[2] = {perf_faults.base, fc->faults};
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; parts[k] != NULL && i < json_object_array_length(parts[k]); i++)
            json_object_array_add(arr, json_object_get(
                                           json_object_array_get_idx(parts[k], i)));
    topo_spec_t spec = cli->topo;
    char *edit = faults_assign(arr);
    json_object_put(arr);
    spec.sweep_path = NULL;
    spec.nsweep = 0;
    if (spec.nsets < PERF_SETS_MAX)
        spec.sets[spec.nsets++] = edit;
    target_t tg = {0};
    record_t rec;
    hccn_status_t st = HCCN_ERR_INVALID;
    topo_spec_t keep = cli->topo;
    cli->topo = spec;
    if (make_target(cli, -1, &tg) == 0)
        st = cli->o.nodata
                 ? measure_nodata(tg.topo, &cli->o, coll, 0, cli->o.max_bytes,
                                  &rec, (char[256]){0})
                 : measure(tg.cl, &cli->o, coll, 0, cli->o.max_bytes, &rec,
                           &cli->links);
    cli->topo = keep;
    free_target(&tg);
    free(edit);
    fc->busbw = fc->time_us = NAN;
    if (st == HCCN_OK) {
        fc->busbw = rec.busbw;
        fc->time_us = rec.time_us;
    } else {
        snprintf(fc->why, sizeof(fc->why), "%s", hccn_last_error());
        char *nl = strchr(fc->why, '\n');
        if (nl != NULL)
            *nl = '\0';
    }
}

/* Most harmful first: failures, then by busbw; ties by name. */
static int case_cmp(const void *a, const void *b)
{
    const fcase_t *x = a, *y = b;
    int fx = isnan(x->busbw), fy = isnan(y->busbw);
    if (fx != fy)
        return fy - fx;
    if (!fx && x->busbw != y->busbw)
        return x->busbw < y->busbw ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* --sweep-faults: the table. Returns 0, or 2 for a bad class. */
static int sweep_faults(cli_t *cli)
{
    target_t tg;
    coll_t coll = (coll_t)cli->o.colls[0];
    if (make_topo(&cli->topo, -1, &tg.topo) != 0)
        return 2;
    fcase_t *cases = NULL, base = {.name = "(none)"};
    int n = sweep_cases(perf_faults.sweep, tg.topo, &cases);
    hccn_topo_free(tg.topo);
    if (n < 0)
        return 2;
    sweep_measure(cli, coll, &base);
    for (int i = 0; i < n; i++)
        sweep_measure(cli, coll, &cases[i]);
    qsort(cases, (size_t)n, sizeof(*cases), case_cmp);
    printf("# hccn-perf %s, %zu B, one %s at a time (%s): busbw in GB/s, "
           "most harmful first\n", coll_names[coll], cli->o.max_bytes,
           perf_faults.sweep, cli->o.nodata ? "timing only" : "with data");
    printf("%-4s %-40s %12s %10s %8s\n", "#", "failed", "time(us)", "busbw",
           "of none");
    printf("%-4s %-40s %12.3f %10.3f %7.1f%%\n", "-", base.name, base.time_us,
           base.busbw, 100.0);
    for (int i = 0; i < n; i++) {
        if (isnan(cases[i].busbw))
            printf("%-4d %-40s %12s %10s %8s  %s\n", i + 1, cases[i].name,
                   "-", "fails", "-", cases[i].why);
        else
            printf("%-4d %-40s %12.3f %10.3f %7.1f%%\n", i + 1, cases[i].name,
                   cases[i].time_us, cases[i].busbw,
                   100.0 * cases[i].busbw / base.busbw);
        json_object_put(cases[i].faults);
    }
    free(cases);
    links_clear(&cli->links);
    return isnan(base.busbw) ? 1 : 0;
}

#endif /* HCCN_TOOLS_PERF_FSWEEP_H */
