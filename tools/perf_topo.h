/*
 * hccn-perf: the cluster to measure, made from a topology file edited by
 * --set PATH=VALUE assignments and one --sweep value (included by
 * hccn-perf.c only).
 *
 * Without edits the file is loaded as it is (hccn_cluster_create), so error
 * messages are the loader's own. With edits the file is parsed, every
 * assignment is applied to the document (hccn_sim_topo_override), and the
 * edited document is handed to hccn_cluster_create_json under the file's
 * name: a field the format does not know, or a value it rejects, is then
 * reported by the loader as "<file>: <json path>: <rule>".
 */
#ifndef HCCN_TOOLS_PERF_TOPO_H
#define HCCN_TOOLS_PERF_TOPO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "device_sim/topo.h"
#include "hccn/hccn.h"

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

/* Applies one assignment, printing "hccn-perf: OPTION ASSIGNMENT: why" on
 * error. Returns 0 or -1. */
static int apply(json_object *doc, const char *option, const char *assignment)
{
    char err[1024];
    if (hccn_sim_topo_override(doc, assignment, err, sizeof(err)) == HCCN_OK)
        return 0;
    fprintf(stderr, "hccn-perf: %s %s: %s\n", option, assignment, err);
    return -1;
}

/* The topology document of spec with sweep value number v (-1: no sweep)
 * applied, or NULL (errors printed; the file's own syntax error too).
 * file receives the file spec->path names (a config name is looked up). */
static json_object *edited_doc(const topo_spec_t *spec, int v,
                               char file[PATH_MAX])
{
    char err[1024];
    json_object *doc = NULL;
    if (hccn_sim_topo_find(spec->path, file, PATH_MAX, err, sizeof(err)) !=
        HCCN_OK) {
        fprintf(stderr, "hccn-perf: %s\n", err);
        return NULL;
    }
    if ((doc = json_object_from_file(file)) == NULL) {
        hccn_sim_topo_t *topo = NULL;
        if (hccn_sim_topo_load_file(file, &topo, err, sizeof(err)) != 0)
            fprintf(stderr, "hccn-perf: %s\n", err);
        else
            fprintf(stderr, "hccn-perf: %s: cannot parse\n", file);
        hccn_sim_topo_free(topo);
        return NULL;
    }
    int rc = 0;
    for (int i = 0; i < spec->nsets && rc == 0; i++)
        rc = apply(doc, "--set", spec->sets[i]);
    if (rc == 0 && v >= 0) {
        size_t len = strlen(spec->sweep_path) + strlen(spec->sweep_values[v]);
        char *a = malloc(len + 2);
        snprintf(a, len + 2, "%s=%s", spec->sweep_path, spec->sweep_values[v]);
        rc = apply(doc, "--sweep", a);
        free(a);
    }
    if (rc != 0) {
        json_object_put(doc);
        return NULL;
    }
    return doc;
}

/* The topology alone (timing-only runs: no arenas, no threads), loaded as
 * make_cluster loads it. Returns 0, or 2 with the error printed. */
static int make_topo(const topo_spec_t *spec, int v, hccn_sim_topo_t **out)
{
    char err[1024];
    hccn_status_t st;
    *out = NULL;
    if (spec->nsets == 0 && v < 0) {
        st = hccn_sim_topo_load_file(spec->path, out, err, sizeof(err));
    } else {
        char file[PATH_MAX];
        json_object *doc = edited_doc(spec, v, file);
        if (doc == NULL)
            return 2;
        st = hccn_sim_topo_load_json(doc, file, out, err, sizeof(err));
        json_object_put(doc);
    }
    if (st == HCCN_OK)
        return 0;
    fprintf(stderr, "hccn-perf: %s\n", err);
    return 2;
}

/* Creates the cluster of spec with sweep value number v (-1: no sweep).
 * Returns 0, or 2 with the error printed and *out NULL. */
static int make_cluster(const topo_spec_t *spec, int v, hccn_cluster_t **out)
{
    *out = NULL;
    if (spec->nsets == 0 && v < 0) {
        if (hccn_cluster_create(spec->path, NULL, out) == HCCN_OK)
            return 0;
        fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
        return 2;
    }
    char file[PATH_MAX];
    json_object *doc = edited_doc(spec, v, file);
    if (doc == NULL)
        return 2;
    const char *text = json_object_to_json_string_ext(doc,
                                                      JSON_C_TO_STRING_PLAIN);
    int rc = 0;
    if (hccn_cluster_create_json(text, file, NULL, out) != HCCN_OK) {
        fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
        rc = 2;
    }
    json_object_put(doc);
    return rc;
}

#endif /* HCCN_TOOLS_PERF_TOPO_H */
