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

/* 1 if s is a whole number as JSON writes one (a sign, digits): kept as
 * text, so that the loader can tell an overflowing one and say so. */
static int fault_is_integer(const char *s)
{
    size_t k = s[0] == '-';
    return s[k] != '\0' && strspn(s + k, "0123456789") == strlen(s + k) &&
           strlen(s) < 64;
}

/* The number s (all of it), as a JSON double in *out; 0, or -1. */
static int fault_number(const char *s, json_object **out)
{
    char *end;
    double x = strtod(s, &end);
    if (end == s || *end != '\0')
        return -1;
    *out = json_object_new_double(x);
    return 0;
}

/* Prints "--fault 'SPEC': why", SPEC's control characters shown as '?'
 * (a terminal must not act on them). */
static void fault_error(const char *spec, const char *why)
{
    char shown[512];
    snprintf(shown, sizeof(shown), "%s", spec);
    for (char *c = shown; *c != '\0'; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    fprintf(stderr, "hccn-perf: --fault '%s': %s\n", shown, why);
}

/* SPEC's short form 'KIND TARGET[@AT_US] [FACTOR]' as a faults element;
 * NULL with the error printed. Every word must be what its place asks
 * for: a target that is no NPU index, a time or factor that is no
 * number, or a word more, is an error (never read as 0 or dropped). */
static json_object *fault_short(const char *spec)
{
    char kind[32], target[256], factor[64], extra[2];
    const char *why = NULL;
    int n = sscanf(spec, "%31s %255s %63s %1s", kind, target, factor, extra);
    json_object *o = json_object_new_object(), *v = NULL;
    char *at = n >= 2 ? strrchr(target, '@') : NULL;
    if (at != NULL)
        *at++ = '\0';
    if (n < 2)
        why = "expected 'KIND TARGET[@AT_US] [FACTOR]' or a JSON object";
    else if (n == 4)
        why = "a word more than 'KIND TARGET[@AT_US] [FACTOR]'";
    json_object_object_add(o, "kind", json_object_new_string(kind));
    if (why == NULL && strncmp(kind, "npu", 3) == 0) {
        if (!fault_is_integer(target) ||
            (v = json_tokener_parse(target)) == NULL)
            why = "the target of an NPU fault must be its index";
        else
            json_object_object_add(o, "npu", v);
    } else if (why == NULL) {
        json_object_object_add(o, "link", json_object_new_string(target));
    }
    if (why == NULL && at != NULL) {
        if (fault_number(at, &v) != 0)
            why = "the time after '@' must be a number of microseconds";
        else
            json_object_object_add(o, "at_us", v);
    }
    if (why == NULL && n == 3) {
        if (fault_number(factor, &v) != 0)
            why = "the factor must be a number";
        else
            json_object_object_add(o, "factor", v);
    }
    if (why == NULL)
        return o;
    fault_error(spec, why);
    json_object_put(o);
    return NULL;
}

/* SPEC as a faults element; NULL with the error printed. */
static json_object *fault_object(const char *spec)
{
    if (spec[0] == '{') {
        json_object *o = json_tokener_parse(spec);
        if (o == NULL || !json_object_is_type(o, json_type_object)) {
            fault_error(spec, "not a JSON object");
            json_object_put(o);
            return NULL;
        }
        return o;
    }
    return fault_short(spec);
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
