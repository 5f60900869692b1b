/*
 * hccn-perf: the cluster to measure, made from a topology file edited by
 * --set PATH=VALUE assignments and one --sweep value (included by
 * hccn-perf.c only).
 *
 * The library applies the assignments to the file's document before it
 * validates it (hccn_topo_load, hccn_cluster_create_edited): a field the
 * format does not know, or a value it rejects, is reported by the loader
 * as "<file>: <json path>: <rule>", an assignment that does not apply as
 * "edit <assignment>: <why>".
 */
#ifndef HCCN_TOOLS_PERF_TOPO_H
#define HCCN_TOOLS_PERF_TOPO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"

#define PERF_SETS_MAX 64

typedef struct {
    const char *path;                    /* the topology file (-t) */
    const char *sets[PERF_SETS_MAX];     /* --set assignments, in order */
    int nsets;
    char *sweep_path;                    /* --sweep PATH, or NULL */
    char **sweep_values;                 /* its values (malloc'ed) */
    int nsweep;
} topo_spec_t;

/* Splits "V1,V2,..." at the commas that are outside brackets, braces and
 * quotes, so that JSON arrays and objects can be values. Returns the number
 * of values (each malloc'ed into *out), or -1 for an empty value. */
static int split_values(const char *list, char ***out)
{
    size_t len = strlen(list);
    char **v = calloc(len + 1, sizeof(*v));
    int n = 0, depth = 0, quoted = 0;
    const char *start = list;
    for (const char *p = list;; p++) {
        if (*p == '"' && (p == list || p[-1] != '\\'))
            quoted = !quoted;
        else if (!quoted && (*p == '[' || *p == '{'))
            depth++;
        else if (!quoted && (*p == ']' || *p == '}'))
            depth--;
        if (*p == '\0' || (*p == ',' && depth == 0 && !quoted)) {
            if (p == start)
                goto empty;
            v[n++] = strndup(start, (size_t)(p - start));
            start = p + 1;
        }
        if (*p == '\0')
            break;
    }
    *out = v;
    return n;
empty:
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return -1;
}

/* Parses "--sweep PATH=V1,V2,..." into spec. Returns 0, or -1 with the
 * error printed. */
static int parse_sweep(topo_spec_t *spec, const char *arg)
{
    const char *eq = strchr(arg, '=');
    if (eq == NULL || eq == arg) {
        fprintf(stderr, "hccn-perf: --sweep '%s': expected PATH=V1,V2,...\n",
                arg);
        return -1;
    }
    spec->sweep_path = strndup(arg, (size_t)(eq - arg));
    spec->nsweep = split_values(eq + 1, &spec->sweep_values);
    if (spec->nsweep < 1) {
        fprintf(stderr, "hccn-perf: --sweep '%s': empty value in the list\n",
                arg);
        return -1;
    }
    return 0;
}

static void free_spec(topo_spec_t *spec)
{
    for (int i = 0; i < spec->nsweep; i++)
        free(spec->sweep_values[i]);
    free(spec->sweep_values);
    free(spec->sweep_path);
}

/* The edits of spec with sweep value number v (-1: no sweep): the --set
 * assignments in order, then "PATH=VALUE" of the sweep. Returns their
 * number; *sweep (to free) holds the sweep's assignment or NULL. */
static int spec_edits(const topo_spec_t *spec, int v, const char **edits,
                      char **sweep)
{
    int n = 0;
    for (int i = 0; i < spec->nsets; i++)
        edits[n++] = spec->sets[i];
    *sweep = NULL;
    if (v >= 0) {
        size_t len = strlen(spec->sweep_path) + strlen(spec->sweep_values[v]);
        *sweep = malloc(len + 2);
        snprintf(*sweep, len + 2, "%s=%s", spec->sweep_path,
                 spec->sweep_values[v]);
        edits[n++] = *sweep;
    }
    return n;
}

/* The topology alone (timing-only runs: no arenas, no threads), loaded as
 * make_cluster loads it. Returns 0, or 2 with the error printed. */
static int make_topo(const topo_spec_t *spec, int v, hccn_topo_t **out)
{
    const char *edits[PERF_SETS_MAX + 1];
    char *sweep;
    int n = spec_edits(spec, v, edits, &sweep);
    hccn_status_t st = hccn_topo_load(spec->path, edits, n, out);
    free(sweep);
    if (st == HCCN_OK)
        return 0;
    fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
    return 2;
}

/* nccl-tests' -g G: one host thread drives G GPUs. Where the topology
 * (with the --set edits) has a software model and no edit names
 * ranks_per_thread, appends the edit that gives it G (docs/software.md):
 * into the file's "software" object, or a new one where the file names
 * only a stack. Returns 0, or 2 with the error printed. */
static int spec_gpus(topo_spec_t *spec, int g)
{
    static char edit[64];
    const char *edits[PERF_SETS_MAX + 1];
    hccn_software_t sw = {.struct_size = sizeof(sw)};
    hccn_topo_t *t;
    for (int i = 0; i < spec->nsets; i++)
        if (strstr(spec->sets[i], "ranks_per_thread") != NULL)
            return 0;
    if (g <= 1 || make_topo(spec, -1, &t) != 0)
        return g <= 1 ? 0 : 2;
    hccn_topo_software(t, &sw);
    hccn_topo_free(t);
    if (!sw.present)
        return 0;
    if (spec->nsets == PERF_SETS_MAX) {
        fprintf(stderr, "hccn-perf: -g: more than %d --set edits\n",
                PERF_SETS_MAX - 1);
        return 2;
    }
    snprintf(edit, sizeof(edit), "software.ranks_per_thread=%d", g);
    spec->sets[spec->nsets++] = edit;
    for (int i = 0; i < spec->nsets; i++)
        edits[i] = spec->sets[i];
    if (hccn_topo_load(spec->path, edits, spec->nsets, &t) == HCCN_OK)
        hccn_topo_free(t);
    else   /* no "software" object to edit: the file names a stack only */
        snprintf(edit, sizeof(edit), "software={\"ranks_per_thread\": %d}",
                 g);
    return 0;
}

/* Set in a client process of a cluster that spans several processes
 * (docs/processes.md): the host alone prints and writes files. */
static int perf_client;

/* Creates the cluster of spec with sweep value number v (-1: no sweep).
 * Returns 0, or 2 with the error printed and *out NULL. */
static int make_cluster(const topo_spec_t *spec, int v, hccn_cluster_t **out)
{
    const char *edits[PERF_SETS_MAX + 1];
    char *sweep;
    int n = spec_edits(spec, v, edits, &sweep);
    hccn_status_t st = hccn_cluster_create_edited(spec->path, edits, n, NULL,
                                                  out);
    free(sweep);
    if (st == HCCN_OK && hccn_cluster_proc_rank(*out) > 0 && !perf_client) {
        perf_client = 1;
        fflush(stdout);
        if (freopen("/dev/null", "w", stdout) == NULL)
            clearerr(stdout);   /* still a client: it writes no files */
    }
    if (st == HCCN_OK)
        return 0;
    fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
    return 2;
}

#endif /* HCCN_TOOLS_PERF_TOPO_H */
