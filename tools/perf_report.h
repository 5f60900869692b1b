/*
 * hccn-perf: results and how they are printed (included by hccn-perf.c
 * only): nccl-tests' table, hccl_test's table, JSON and CSV.
 *
 * One record is one size of one collective in one variant (out-of-place or
 * in-place) for one sweep value.
 */
#ifndef HCCN_TOOLS_PERF_REPORT_H
#define HCCN_TOOLS_PERF_REPORT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hccn/hccn.h"
#include "tools/perf_data.h"

static const char *const coll_names[C_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce",
    "alltoall", "sendrecv", "scatter", "gather", "hypercube"};

enum { FMT_NCCL, FMT_HCCL };

typedef struct {
    coll_t coll;
    int sweep;                  /* index of the sweep value, -1 if none */
    int nranks, nodes;
    size_t size, count;         /* bytes and elements, as nccl-tests */
    int inplace;
    double time_us, algbw, busbw, factor;
    long wrong;                 /* -1: not checked */
    double wall_us;             /* host time of one iteration */
    int folded;                 /* timing only: -1 with data, 0 or 1 */
    char algo[64];              /* what ran, per level for hierarchical
                                   ones ("hier(mesh,ring)") */
    hccn_dtype_t dtype;         /* -d (one of them for -d all) */
    hccn_redop_t op;            /* -o (one of them for -o all) */
} record_t;

typedef struct {
    int format;
    const char *config, *algo;  /* -t file; --algo value or "auto" */
    const char *const *sets;
    int nsets;
    const char *sweep_path;
    char *const *sweep_values;
    int root, iters, warmup;
    record_t *recs;             /* every record, for JSON and CSV */
    size_t nrecs, cap;
    json_object *links;         /* per collective: link totals (JSON) */
} report_t;

/* nccl-tests' bus bandwidth factors (docs/perf.md). */
static double bus_factor(coll_t c, int n)
{
    switch (c) {
    case C_ALLREDUCE:
        return 2.0 * (n - 1) / n;
    case C_REDUCE_SCATTER:
    case C_ALLGATHER:
    case C_ALLTOALL:
    case C_SCATTER:
    case C_GATHER:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

/* nccl-tests' name of a dtype ("float"), or hccn's where it has none. */
static const char *type_name(hccn_dtype_t dt)
{
    switch (dt) {
    case HCCN_FP16: return "half";
    case HCCN_BF16: return "bfloat16";
    case HCCN_FP32: return "float";
    case HCCN_FP64: return "double";
    default: return hccn_dtype_name(dt);
    }
}

static const char *redop_col(const record_t *r)
{
    return reduces(r->coll) ? hccn_redop_name(r->op) : "none";
}

static int root_col(const report_t *rep, coll_t c)
{
    return c == C_BROADCAST || c == C_REDUCE || c == C_SCATTER ||
                   c == C_GATHER ? rep->root : -1;
}

static void add_record(report_t *rep, const record_t *r)
{
    if (rep->nrecs == rep->cap) {
        rep->cap = rep->cap ? 2 * rep->cap : 64;
        rep->recs = realloc(rep->recs, rep->cap * sizeof(*rep->recs));
    }
    rep->recs[rep->nrecs++] = *r;
}

static int sweep_width(const report_t *rep)
{
    int w = (int)strlen(rep->sweep_path);
    return w < 10 ? 10 : w;
}

/* Prints the start of a header line: '#' in place of the row's first
 * space, then the sweep column (if any) and the five leading columns. */
static void header_lead(const report_t *rep, const char *sweep,
                        const char *const cols[5])
{
    if (rep->sweep_path)
        printf("#%*s %12s", sweep_width(rep), sweep, cols[0]);
    else
        printf("#%12s", cols[0]);
    printf(" %12s %8s %6s %6s", cols[1], cols[2], cols[3], cols[4]);
}

/* The column headers, once per collective. variants: 1 out-of-place,
 * 2 in-place, 3 both. */
static void print_header(const report_t *rep, int variants)
{
    int sw = rep->sweep_path ? sweep_width(rep) : 0;
    if (rep->format == FMT_HCCL) {
        if (sw)
            printf("%-*s   ", sw, rep->sweep_path);
        printf("data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | "
               "check_result:\n");
        return;
    }
    static const char *const names[2] = {"out-of-place", "in-place"};
    static const char *const blank[5] = {"", "", "", "", ""};
    static const char *const cols[5] = {"size", "count", "type", "redop",
                                        "root"};
    static const char *const units[5] = {"(B)", "(elements)", "", "", ""};
    header_lead(rep, "", blank);
    for (int v = 0; v < 2; v++)
        if (variants & (1 << v))
            printf(" %*s%-*s", (int)(36 - strlen(names[v])) / 2, "",
                   36 - (int)(36 - strlen(names[v])) / 2, names[v]);
    printf("\n");
    header_lead(rep, rep->sweep_path ? rep->sweep_path : "", cols);
    for (int v = 0; v < 2; v++)
        if (variants & (1 << v))
            printf(" %11s %8s %8s %6s", "time", "algbw", "busbw", "#wrong");
    printf(" %10s\n", "wall");
    header_lead(rep, "", units);
    for (int v = 0; v < 2; v++)
        if (variants & (1 << v))
            printf(" %11s %8s %8s %6s", "(us)", "(GB/s)", "(GB/s)", "");
    printf(" %10s\n", "(ms)");
}

static void wrong_text(const record_t *r, char *buf, size_t len)
{
    if (r->wrong < 0)
        snprintf(buf, len, "N/A");
    else
        snprintf(buf, len, "%ld", r->wrong);
}

/* One size: recs[v] for each variant printed (NULL for a variant that has
 * no record, e.g. alltoall in place). wall_ms: host time of the whole size. */
static void print_row(const report_t *rep, int variants, const record_t *oop,
                      const record_t *ip, double wall_ms)
{
    const record_t *first = oop ? oop : ip;
    const record_t *rv[2] = {oop, ip};
    char w[32];
    if (rep->sweep_path)
        printf(rep->format == FMT_HCCL ? "%-*s   " : " %*s", sweep_width(rep),
               rep->sweep_values[first->sweep]);
    if (rep->format == FMT_HCCL) {
        wrong_text(first, w, sizeof(w));
        printf("%-18zu   %-14.2f   %-20.5f   %s\n", first->size,
               first->time_us, first->algbw,
               first->wrong < 0 ? "N/A" : first->wrong ? "failed" : "success");
        return;
    }
    printf(" %12zu %12zu %8s %6s %6d", first->size, first->count,
           type_name(first->dtype), redop_col(first),
           root_col(rep, first->coll));
    for (int v = 0; v < 2; v++) {
        if (!(variants & (1 << v)))
            continue;
        if (rv[v] == NULL) {
            printf(" %11s %8s %8s %6s", "N/A", "N/A", "N/A", "N/A");
            continue;
        }
        wrong_text(rv[v], w, sizeof(w));
        printf(" %11.2f %8.2f %8.2f %6s", rv[v]->time_us, rv[v]->algbw,
               rv[v]->busbw, w);
    }
    printf(" %10.1f\n", wall_ms);
}

static json_object *record_json(const report_t *rep, const record_t *r)
{
    json_object *o = json_object_new_object(), *sets = json_object_new_array();
    for (int i = 0; i < rep->nsets; i++)
        json_object_array_add(sets, json_object_new_string(rep->sets[i]));
    json_object_object_add(o, "collective",
                           json_object_new_string(coll_names[r->coll]));
    json_object_object_add(o, "config", json_object_new_string(rep->config));
    json_object_object_add(o, "algorithm", json_object_new_string(r->algo));
    json_object_object_add(o, "requested", json_object_new_string(rep->algo));
    json_object_object_add(o, "sets", sets);
    json_object_object_add(o, "sweep_path", rep->sweep_path
        ? json_object_new_string(rep->sweep_path) : NULL);
    json_object_object_add(o, "sweep_value", r->sweep >= 0
        ? json_object_new_string(rep->sweep_values[r->sweep]) : NULL);
    json_object_object_add(o, "nranks", json_object_new_int(r->nranks));
    json_object_object_add(o, "nodes", json_object_new_int(r->nodes));
    json_object_object_add(o, "size", json_object_new_int64((int64_t)r->size));
    json_object_object_add(o, "count",
                           json_object_new_int64((int64_t)r->count));
    json_object_object_add(o, "type",
                           json_object_new_string(type_name(r->dtype)));
    json_object_object_add(o, "redop",
                           json_object_new_string(redop_col(r)));
    json_object_object_add(o, "root",
                           json_object_new_int(root_col(rep, r->coll)));
    json_object_object_add(o, "inplace", json_object_new_boolean(r->inplace));
    json_object_object_add(o, "time_us", json_object_new_double(r->time_us));
    json_object_object_add(o, "algbw_GBps", json_object_new_double(r->algbw));
    json_object_object_add(o, "busbw_GBps", json_object_new_double(r->busbw));
    json_object_object_add(o, "busbw_factor",
                           json_object_new_double(r->factor));
    json_object_object_add(o, "wrong", r->wrong >= 0
        ? json_object_new_int64(r->wrong) : NULL);
    json_object_object_add(o, "wall_us", json_object_new_double(r->wall_us));
    json_object_object_add(o, "folded", r->folded >= 0
        ? json_object_new_boolean(r->folded) : NULL);
    json_object_object_add(o, "iters", json_object_new_int(rep->iters));
    json_object_object_add(o, "warmup_iters", json_object_new_int(rep->warmup));
    return o;
}

/* Writes {"tool": "hccn-perf", "records": [...]}. Returns 0 or -1. */
static int write_json(const report_t *rep, const char *path)
{
    json_object *doc = json_object_new_object(), *recs = json_object_new_array();
    json_object_object_add(doc, "tool", json_object_new_string("hccn-perf"));
    json_object_object_add(doc, "time_unit",
                           json_object_new_string("simulated microseconds"));
    for (size_t i = 0; i < rep->nrecs; i++)
        json_object_array_add(recs, record_json(rep, &rep->recs[i]));
    json_object_object_add(doc, "records", recs);
    if (rep->links != NULL)
        json_object_object_add(doc, "links", json_object_get(rep->links));
    int rc = json_object_to_file_ext(path, doc, JSON_C_TO_STRING_PRETTY |
                                     JSON_C_TO_STRING_NOSLASHESCAPE);
    json_object_put(doc);
    return rc == 0 ? 0 : -1;
}

/* A CSV field: quoted when it holds a comma, a quote or a newline. */
static void csv_field(FILE *f, const char *s, int last)
{
    if (strpbrk(s, ",\"\n") != NULL) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

static int write_csv(const report_t *rep, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "collective,config,algorithm,requested,sets,sweep_path,"
               "sweep_value,"
               "nranks,nodes,size,count,type,redop,root,inplace,time_us,"
               "algbw_GBps,busbw_GBps,busbw_factor,wrong,wall_us\n");
    char sets[4096] = "";
    for (int i = 0; i < rep->nsets; i++) {
        size_t used = strlen(sets);
        snprintf(sets + used, sizeof(sets) - used, "%s%s", i ? ";" : "",
                 rep->sets[i]);
    }
    for (size_t i = 0; i < rep->nrecs; i++) {
        const record_t *r = &rep->recs[i];
        char w[32];
        csv_field(f, coll_names[r->coll], 0);
        csv_field(f, rep->config, 0);
        csv_field(f, r->algo, 0);
        csv_field(f, rep->algo, 0);
        csv_field(f, sets, 0);
        csv_field(f, rep->sweep_path ? rep->sweep_path : "", 0);
        csv_field(f, r->sweep >= 0 ? rep->sweep_values[r->sweep] : "", 0);
        snprintf(w, sizeof(w), "%ld", r->wrong);
        fprintf(f, "%d,%d,%zu,%zu,%s,%s,%d,%d,%.17g,%.17g,%.17g,%.17g,%s,"
                   "%.17g\n",
                r->nranks, r->nodes, r->size, r->count, type_name(r->dtype),
                redop_col(r), root_col(rep, r->coll), r->inplace,
                r->time_us, r->algbw, r->busbw, r->factor,
                r->wrong < 0 ? "" : w, r->wall_us);
    }
    return fclose(f) == 0 ? 0 : -1;
}

#endif /* HCCN_TOOLS_PERF_REPORT_H */
