/*
 * hccn-perf: failure what-ifs (included by hccn-perf.c only; docs/perf.md,
 * "Failure what-ifs").
 *
 * --fault SPEC (repeatable) adds a fault to the topology's plan: SPEC is
 * an element of the topology's "faults" key, as JSON
 * ('{"kind":"link_slow","link":"node0.nic0->net","factor":0.25}') or in
 * short form 'KIND TARGET[@AT_US] [FACTOR]' ('link_down node0.nic0->net@0',
 * 'npu_slow 3 2'). The faults join the file's as one "faults=[...]" edit,
 * which the loader checks like the file's own.
 *
 * --sweep-faults CLASS: tools/perf_fsweep.h.
 */
#ifndef HCCN_TOOLS_PERF_FAULTS_H
#define HCCN_TOOLS_PERF_FAULTS_H

#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hccn/hccn.h"
#include "hccn/hccn_sim.h"
#include "tools/perf_topo.h"

#define PERF_FAULTS_MAX 32

static struct {
    const char *specs[PERF_FAULTS_MAX];   /* --fault, in order */
    int n;
    const char *sweep;                    /* --sweep-faults CLASS, or NULL */
    json_object *base;                    /* the file's and --fault's */
    char *edit;                           /* "faults=[...]" of base */
} perf_faults;

/* Notes one --fault SPEC; -1 when there are too many. */
static int faults_add_spec(const char *spec)
{
    if (perf_faults.n == PERF_FAULTS_MAX) {
        fprintf(stderr, "hccn-perf: at most %d --fault options\n",
                PERF_FAULTS_MAX);
        return -1;
    }
    perf_faults.specs[perf_faults.n++] = spec;
    return 0;
}

/* SPEC as a faults element; NULL with the error printed. */
static json_object *fault_object(const char *spec)
{
    if (spec[0] == '{') {
        json_object *o = json_tokener_parse(spec);
        if (o == NULL || !json_object_is_type(o, json_type_object)) {
            fprintf(stderr, "hccn-perf: --fault '%s': not a JSON object\n",
                    spec);
            json_object_put(o);
            return NULL;
        }
        return o;
    }
    char kind[32], target[256];
    double factor = NAN;
    int n = sscanf(spec, "%31s %255s %lf", kind, target, &factor);
    if (n < 2) {
        fprintf(stderr, "hccn-perf: --fault '%s': expected 'KIND "
                "TARGET[@AT_US] [FACTOR]' or a JSON object\n", spec);
        return NULL;
    }
    json_object *o = json_object_new_object();
    char *at = strrchr(target, '@');
    if (at != NULL)
        *at++ = '\0';
    json_object_object_add(o, "kind", json_object_new_string(kind));
    if (strncmp(kind, "npu", 3) == 0)
        json_object_object_add(o, "npu", json_object_new_int(atoi(target)));
    else
        json_object_object_add(o, "link", json_object_new_string(target));
    if (at != NULL)
        json_object_object_add(o, "at_us", json_object_new_double(atof(at)));
    if (n == 3)
        json_object_object_add(o, "factor", json_object_new_double(factor));
    return o;
}

/* "faults=" and arr as JSON (malloc'ed). */
static char *faults_assign(json_object *arr)
{
    const char *text = json_object_to_json_string_ext(arr, JSON_C_TO_STRING_PLAIN);
    size_t len = strlen(text) + 8;
    char *s = malloc(len);
    if (s != NULL)
        snprintf(s, len, "faults=%s", text);
    return s;
}

/* A copy of the file's faults plus the --fault ones, into
 * perf_faults.base, and their edit appended to spec's --set list (once
 * there are any). Returns 0, or 2 with the error printed. */
static int faults_prepare(topo_spec_t *spec)
{
    hccn_topo_t *t = NULL;
    if (perf_faults.n == 0 && perf_faults.sweep == NULL)
        return 0;
    if (hccn_topo_load(spec->path, NULL, 0, &t) != HCCN_OK) {
        fprintf(stderr, "hccn-perf: %s\n", hccn_last_error());
        return 2;
    }
    json_object *doc = json_object_from_file(hccn_topo_source(t));
    hccn_topo_free(t);
    json_object *file = NULL, *arr = json_object_new_array();
    if (doc != NULL && json_object_object_get_ex(doc, "faults", &file))
        for (size_t i = 0; i < json_object_array_length(file); i++)
            json_object_array_add(arr, json_object_get(
                                           json_object_array_get_idx(file, i)));
    json_object_put(doc);
    for (int i = 0; i < perf_faults.n; i++) {
        json_object *o = fault_object(perf_faults.specs[i]);
        if (o == NULL) {
            json_object_put(arr);
            return 2;
        }
        json_object_array_add(arr, o);
    }
    perf_faults.base = arr;
    if (perf_faults.n > 0) {
        if (spec->nsets == PERF_SETS_MAX ||
            (perf_faults.edit = faults_assign(arr)) == NULL) {
            fprintf(stderr, "hccn-perf: too many --set and --fault edits\n");
            return 2;
        }
        spec->sets[spec->nsets++] = perf_faults.edit;
    }
    return 0;
}

static void faults_free(void)
{
    json_object_put(perf_faults.base);
    free(perf_faults.edit);
}

#endif /* HCCN_TOOLS_PERF_FAULTS_H */
