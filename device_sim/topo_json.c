/*
 * Checked access to a JSON document for the topology parser: typed getters
 * that know the JSON path of the value they read and report a broken rule as
 * one line "<source>: <json path>: <rule>" (topo_internal.h, "JSON access").
 */
#include "device_sim/fail.h"
#include "device_sim/topo_internal.h"

#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The path and error messages                                              */

static void path_advance(hccn_sim_jctx_t *c, int n)
{
    if (n > 0)
        c->len += (size_t)n;
    if (c->len >= sizeof(c->path))
        c->len = sizeof(c->path) - 1;
}

size_t hccn_sim_jkey(hccn_sim_jctx_t *c, const char *key)
{
    size_t old = c->len;
    path_advance(c, snprintf(c->path + c->len, sizeof(c->path) - c->len,
                             "%s%.64s", c->len ? "." : "", key));
    return old;
}

size_t hccn_sim_jindex(hccn_sim_jctx_t *c, size_t i)
{
    size_t old = c->len;
    path_advance(c, snprintf(c->path + c->len, sizeof(c->path) - c->len,
                             "[%zu]", i));
    return old;
}

void hccn_sim_jpop(hccn_sim_jctx_t *c, size_t old)
{
    c->len = old;
    c->path[old] = '\0';
}

static hccn_status_t vfail(hccn_sim_jctx_t *c, const char *fmt, va_list ap)
{
    char msg[512], prefix[1024];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    snprintf(prefix, sizeof(prefix), "%s: %s", c->source,
             c->len ? c->path : "$");
    hccn_sim_topo_errf(c->err, c->errlen, prefix, "%s", msg);
    return HCCN_ERR_TOPOLOGY;
}

hccn_status_t hccn_sim_jfail(hccn_sim_jctx_t *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hccn_status_t st = vfail(c, fmt, ap);
    va_end(ap);
    return st;
}

hccn_status_t hccn_sim_jfail_key(hccn_sim_jctx_t *c, const char *key,
                                 const char *fmt, ...)
{
    va_list ap;
    size_t old = hccn_sim_jkey(c, key);
    va_start(ap, fmt);
    hccn_status_t st = vfail(c, fmt, ap);
    va_end(ap);
    hccn_sim_jpop(c, old);
    return st;
}

hccn_status_t hccn_sim_jnomem(hccn_sim_jctx_t *c)
{
    hccn_sim_topo_errf(c->err, c->errlen, c->source, "%s",
                       hccn_sim_nomem_msg());
    return HCCN_ERR_NOMEM;
}

/* json-c saturates an integer literal beyond 64 bits at INT64_MIN or
 * UINT64_MAX: echoing that would show a number the file does not hold.
 * (A literal of exactly one of those two values is reported the same.) */
static int int_beyond_64_bits(json_object *v)
{
    if (!json_object_is_type(v, json_type_int))
        return 0;
    return json_object_get_int64(v) == INT64_MIN ||
           json_object_get_uint64(v) == UINT64_MAX;
}

const char *hccn_sim_jgot(json_object *v, hccn_sim_jgot_t *buf)
{
    size_t n = sizeof(buf->s);
    const char *s = "null";
    if (json_object_is_type(v, json_type_object))
        s = "an object";
    else if (json_object_is_type(v, json_type_array))
        s = "an array";
    else if (int_beyond_64_bits(v))
        s = "an integer beyond the 64-bit range";
    else if (v != NULL)
        s = json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN);
    if (strlen(s) < n)
        return strcpy(buf->s, s);
    snprintf(buf->s, n, "%.*s...", (int)n - 4, s);
    return buf->s;
}

/* ------------------------------------------------------------------------ */
/* Typed getters                                                            */

/* Handles an absent key: an error when required (present == NULL). */
static hccn_status_t absent(hccn_sim_jctx_t *c, const char *key, int *present)
{
    if (present == NULL)
        return hccn_sim_jfail_key(c, key, "required");
    *present = 0;
    return HCCN_OK;
}

/* Looks key up; returns 1 (and sets *present) when it is there. */
static int find(json_object *obj, const char *key, json_object **v,
                int *present)
{
    if (!json_object_object_get_ex(obj, key, v))
        return 0;
    if (present != NULL)
        *present = 1;
    return 1;
}

hccn_status_t hccn_sim_jcheck_int(hccn_sim_jctx_t *c, json_object *v,
                                  long long lo, long long hi, long long *out)
{
    hccn_sim_jgot_t got;
    if (!json_object_is_type(v, json_type_int))
        return hccn_sim_jfail(c, "must be an integer (got %s)",
                              hccn_sim_jgot(v, &got));
    long long x = json_object_get_int64(v);
    if (x < lo || x > hi)
        return hccn_sim_jfail(c, "must be in %lld..%lld (got %s)", lo, hi,
                              hccn_sim_jgot(v, &got));
    *out = x;
    return HCCN_OK;
}

hccn_status_t hccn_sim_jint(hccn_sim_jctx_t *c, json_object *obj,
                            const char *key, long long lo, long long hi,
                            long long *out, int *present)
{
    json_object *v;
    if (!find(obj, key, &v, present))
        return absent(c, key, present);
    size_t old = hccn_sim_jkey(c, key);
    hccn_status_t st = hccn_sim_jcheck_int(c, v, lo, hi, out);
    hccn_sim_jpop(c, old);
    return st;
}

hccn_status_t hccn_sim_jnum_floor(hccn_sim_jctx_t *c, json_object *obj,
                                  const char *key, double lo, int lo_open,
                                  double floor, double hi, double *out,
                                  int *present)
{
    json_object *v;
    hccn_sim_jgot_t got;
    if (!find(obj, key, &v, present))
        return absent(c, key, present);
    if (!json_object_is_type(v, json_type_int) &&
        !json_object_is_type(v, json_type_double))
        return hccn_sim_jfail_key(c, key, "must be a number (got %s)",
                                  hccn_sim_jgot(v, &got));
    double x = json_object_get_double(v);
    if (!isfinite(x))
        return hccn_sim_jfail_key(c, key, "must be a finite number (got %s); "
                                  "allowed: %g to %g",
                                  hccn_sim_jgot(v, &got), floor, hi);
    if (lo_open ? x <= lo : x < lo)
        return hccn_sim_jfail_key(c, key, "must be %s %g (got %s); allowed: "
                                  "%g to %g", lo_open ? ">" : ">=", lo,
                                  hccn_sim_jgot(v, &got), floor, hi);
    if (x < floor)
        return hccn_sim_jfail_key(c, key, "must be >= %g (got %s); allowed: "
                                  "%g to %g", floor, hccn_sim_jgot(v, &got),
                                  floor, hi);
    if (x > hi)
        return hccn_sim_jfail_key(c, key, "must be <= %g (got %s); allowed: "
                                  "%g to %g", hi, hccn_sim_jgot(v, &got),
                                  floor, hi);
    *out = x;
    return HCCN_OK;
}

hccn_status_t hccn_sim_jnum(hccn_sim_jctx_t *c, json_object *obj,
                            const char *key, double lo, int lo_open,
                            double hi, double *out, int *present)
{
    return hccn_sim_jnum_floor(c, obj, key, lo, lo_open, lo, hi, out,
                               present);
}

hccn_status_t hccn_sim_jbool(hccn_sim_jctx_t *c, json_object *obj,
                             const char *key, int *out, int *present)
{
    json_object *v;
    hccn_sim_jgot_t got;
    if (!find(obj, key, &v, present))
        return absent(c, key, present);
    if (!json_object_is_type(v, json_type_boolean))
        return hccn_sim_jfail_key(c, key, "must be true or false (got %s)",
                                  hccn_sim_jgot(v, &got));
    *out = json_object_get_boolean(v);
    return HCCN_OK;
}

hccn_status_t hccn_sim_jtyped(hccn_sim_jctx_t *c, json_object *obj,
                              const char *key, json_type type,
                              const char *what, json_object **out,
                              int *present)
{
    json_object *v;
    hccn_sim_jgot_t got;
    if (!find(obj, key, &v, present))
        return absent(c, key, present);
    if (!json_object_is_type(v, type))
        return hccn_sim_jfail_key(c, key, "must be %s (got %s)", what,
                                  hccn_sim_jgot(v, &got));
    *out = v;
    return HCCN_OK;
}

hccn_status_t hccn_sim_jstring(hccn_sim_jctx_t *c, json_object *obj,
                               const char *key, const char **out,
                               int *present)
{
    json_object *v = NULL;
    hccn_status_t st = hccn_sim_jtyped(c, obj, key, json_type_string,
                                       "a string", &v, present);
    if (st == HCCN_OK && v != NULL)
        *out = json_object_get_string(v);
    return st;
}

hccn_status_t hccn_sim_jkeys(hccn_sim_jctx_t *c, json_object *obj,
                             const char *const *allowed)
{
    struct json_object_iterator it = json_object_iter_begin(obj);
    struct json_object_iterator end = json_object_iter_end(obj);
    for (; !json_object_iter_equal(&it, &end); json_object_iter_next(&it)) {
        const char *key = json_object_iter_peek_name(&it);
        int known = 0;
        for (const char *const *a = allowed; *a != NULL && !known; a++)
            known = strcmp(key, *a) == 0;
        if (known)
            continue;
        char list[256] = "";
        for (const char *const *a = allowed; *a != NULL; a++)
            snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
                     a == allowed ? "" : ", ", *a);
        return hccn_sim_jfail_key(c, key, "unknown key (allowed: %s)", list);
    }
    return HCCN_OK;
}

hccn_status_t hccn_sim_jforbid(hccn_sim_jctx_t *c, json_object *obj,
                               const char *key, const char *why)
{
    json_object *v;
    if (!json_object_object_get_ex(obj, key, &v))
        return HCCN_OK;
    return hccn_sim_jfail_key(c, key, "only allowed %s", why);
}

hccn_status_t hccn_sim_jarray(hccn_sim_jctx_t *c, json_object *o,
                              const char *key, json_object **out)
{
    return hccn_sim_jtyped(c, o, key, json_type_array, "an array", out, NULL);
}

hccn_status_t hccn_sim_jobject(hccn_sim_jctx_t *c, json_object *v)
{
    hccn_sim_jgot_t got;
    if (json_object_is_type(v, json_type_object))
        return HCCN_OK;
    return hccn_sim_jfail(c, "must be an object (got %s)",
                          hccn_sim_jgot(v, &got));
}

hccn_status_t hccn_sim_jclaim(hccn_sim_jctx_t *c, json_object *arr, int n,
                              int *owner, int k, const char *taken)
{
    size_t len = json_object_array_length(arr);
    hccn_status_t st = HCCN_OK;
    if (len == 0)
        return hccn_sim_jfail(c, "must not be empty");
    for (size_t i = 0; i < len && st == HCCN_OK; i++) {
        int x = 0;
        if ((st = hccn_sim_jelem(c, arr, i, n, &x)))
            break;
        if (owner[x] >= 0) {
            size_t old = hccn_sim_jindex(c, i);
            st = hccn_sim_jfail(c, "NPU %d %s[%d]", x, taken, owner[x]);
            hccn_sim_jpop(c, old);
        }
        owner[x] = k;
    }
    return st;
}

hccn_status_t hccn_sim_jelem(hccn_sim_jctx_t *c, json_object *arr, size_t i,
                             int n, int *out)
{
    long long x = 0;
    size_t old = hccn_sim_jindex(c, i);
    hccn_status_t st = hccn_sim_jcheck_int(
        c, json_object_array_get_idx(arr, i), 0, n - 1, &x);
    hccn_sim_jpop(c, old);
    *out = (int)x;
    return st;
}
