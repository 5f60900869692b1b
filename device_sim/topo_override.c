/*
 * Topology overrides: one "PATH=VALUE" assignment applied to a parsed
 * topology document before it is validated (hccn-perf --set and --sweep).
 *
 * PATH uses the JSON paths of the loader's error messages: keys joined by
 * '.', array elements as [index] ("node_types[0].nics.bw_GBps"); a leading
 * "$." is allowed. Every container on the way must exist; the last key of an
 * object is replaced, or added when missing, so that optional keys can be
 * given. Whether the result is a valid topology (a key that the format does
 * not know, a wrong type) is for the loader to say, with the same path.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "device_sim/fail.h"
#include "device_sim/topo.h"

#define PATH_DEPTH_MAX 32
#define KEY_MAX 64

typedef struct {
    char key[KEY_MAX];  /* "" for an array index */
    size_t index;
} seg_t;

/* Splits path into segments. Returns the number of segments, or -1 with
 * *bad pointing at the offending character. */
static int split_path(const char *path, seg_t *segs, const char **bad)
{
    const char *p = path;
    int n = 0;
    if (strncmp(p, "$.", 2) == 0)
        p += 2;
    while (*p != '\0') {
        if (n == PATH_DEPTH_MAX) {
            *bad = p;
            return -1;
        }
        seg_t *s = &segs[n];
        if (*p == '[') {
            char *end;
            if (!isdigit((unsigned char)p[1])) {
                *bad = p;
                return -1;
            }
            unsigned long long v = strtoull(p + 1, &end, 10);
            if (*end != ']' || v > (1ull << 31)) {
                *bad = p;
                return -1;
            }
            s->key[0] = '\0';
            s->index = (size_t)v;
            p = end + 1;
        } else {
            if (n > 0) {
                if (*p != '.') {
                    *bad = p;
                    return -1;
                }
                p++;
            }
            size_t len = 0;
            while (isalnum((unsigned char)p[len]) || p[len] == '_' ||
                   p[len] == '-')
                len++;
            if (len == 0 || len >= KEY_MAX) {
                *bad = p;
                return -1;
            }
            memcpy(s->key, p, len);
            s->key[len] = '\0';
            p += len;
        }
        n++;
    }
    if (n == 0)
        *bad = p;
    return n > 0 ? n : -1;
}

/* VALUE as JSON when the whole text is one JSON value, else as a string.
 * Sets *ok to 0 only when memory runs out. */
static json_object *parse_value(const char *text, int *ok)
{
    json_tokener *tok = json_tokener_new();
    *ok = tok != NULL;
    if (tok == NULL)
        return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    size_t len = strlen(text);
    json_object *v = json_tokener_parse_ex(tok, text, (int)len + 1);
    int parsed = json_tokener_get_error(tok) == json_tokener_success;
    if (parsed) {
        for (const char *p = text + json_tokener_get_parse_end(tok); *p; p++)
            if (!isspace((unsigned char)*p))
                parsed = 0;
    }
    json_tokener_free(tok);
    if (parsed)
        return v;   /* NULL here is JSON null */
    json_object_put(v);
    v = json_object_new_string(text);
    *ok = v != NULL;
    return v;
}

static const char *type_name(json_object *o)
{
    switch (json_object_get_type(o)) {
    case json_type_null: return "null";
    case json_type_boolean: return "a boolean";
    case json_type_double:
    case json_type_int: return "a number";
    case json_type_object: return "an object";
    case json_type_array: return "an array";
    case json_type_string: return "a string";
    }
    return "a value";
}

/* Appends segment s to the printable path where (truncating if full). */
static void path_append(char *where, size_t len, const seg_t *s)
{
    char part[KEY_MAX + 24];
    size_t used = strlen(where);
    if (s->key[0] != '\0')
        snprintf(part, sizeof(part), "%s%.*s", used ? "." : "", KEY_MAX - 1,
                 s->key);
    else
        snprintf(part, sizeof(part), "[%zu]", s->index);
    size_t plen = strlen(part);
    if (used + plen >= len)
        plen = len - used - 1;
    memcpy(where + used, part, plen);
    where[used + plen] = '\0';
}

/* Walks doc along segs and stores value at the last one. On error writes
 * "<path>: <why>" to err and returns HCCN_ERR_TOPOLOGY; value is then still
 * the caller's. */
static hccn_status_t store(json_object *doc, const seg_t *segs, int n,
                           json_object *value, char *err, size_t errlen)
{
    char where[512] = "";
    json_object *cur = doc;
    for (int i = 0; i < n; i++) {
        const seg_t *s = &segs[i];
        const char *at = where[0] ? where : "$";
        int last = i == n - 1;
        json_object *next = NULL;
        if (s->key[0] != '\0') {
            if (!json_object_is_type(cur, json_type_object))
                goto not_container;
            if (last && value == NULL) {   /* PATH=null: the key goes */
                json_object_object_del(cur, s->key);
                return HCCN_OK;
            }
            if (last)
                return json_object_object_add(cur, s->key, value) == 0
                           ? HCCN_OK
                           : HCCN_ERR_NOMEM;
            if (!json_object_object_get_ex(cur, s->key, &next)) {
                /* An object the path names is made, so an optional one
                 * can be added (software.link_efficiency.fabric on a
                 * file with a stack alone); a key the format does not
                 * know is then the loader's error, with its path. Taking
                 * a key away from an object that is not there leaves the
                 * document as it is. */
                if (value == NULL)
                    return HCCN_OK;
                for (int j = i + 1; j < n; j++)
                    if (segs[j].key[0] == '\0') {   /* no array is made */
                        path_append(where, sizeof(where), s);
                        snprintf(err, errlen, "%s: no such key in the "
                                 "topology", where);
                        return HCCN_ERR_TOPOLOGY;
                    }
                if ((next = json_object_new_object()) == NULL ||
                    json_object_object_add(cur, s->key, next) != 0) {
                    json_object_put(next);
                    return HCCN_ERR_NOMEM;
                }
            }
        } else {
            if (!json_object_is_type(cur, json_type_array))
                goto not_container;
            size_t len = json_object_array_length(cur);
            if (s->index >= len) {
                /* at is where, before the index is appended to it. */
                char array[sizeof(where)];
                snprintf(array, sizeof(array), "%s", at);
                path_append(where, sizeof(where), s);
                snprintf(err, errlen,
                         "%s: index out of range (%s has %zu element%s)",
                         where, array, len, len == 1 ? "" : "s");
                return HCCN_ERR_TOPOLOGY;
            }
            if (last)
                return json_object_array_put_idx(cur, s->index, value) == 0
                           ? HCCN_OK
                           : HCCN_ERR_NOMEM;
            next = json_object_array_get_idx(cur, s->index);
        }
        path_append(where, sizeof(where), s);
        cur = next;
        continue;
    not_container:;
        char full[512];
        snprintf(full, sizeof(full), "%s", where);
        path_append(full, sizeof(full), s);
        snprintf(err, errlen, "%s: %s is %s, not %s", full, at,
                 type_name(cur), s->key[0] ? "an object" : "an array");
        return HCCN_ERR_TOPOLOGY;
    }
    return HCCN_ERR_INTERNAL;
}

hccn_status_t hccn_sim_topo_override(json_object *doc, const char *assignment,
                                     char *err, size_t errlen)
{
    if (doc == NULL || assignment == NULL) {
        snprintf(err, errlen, "override: %s is NULL",
                 doc == NULL ? "document" : "assignment");
        return HCCN_ERR_INVALID;
    }
    const char *eq = strchr(assignment, '=');
    if (eq == NULL) {
        snprintf(err, errlen, "'%s': expected PATH=VALUE", assignment);
        return HCCN_ERR_INVALID;
    }
    char path[512];
    size_t plen = (size_t)(eq - assignment);
    if (plen >= sizeof(path)) {
        snprintf(err, errlen, "'%.40s...': path too long", assignment);
        return HCCN_ERR_INVALID;
    }
    memcpy(path, assignment, plen);
    path[plen] = '\0';
    seg_t segs[PATH_DEPTH_MAX];
    const char *bad = NULL;
    int n = split_path(path, segs, &bad);
    if (n < 0) {
        snprintf(err, errlen, "'%s': bad path at column %d (expected "
                 "key.key[index]...)", path, (int)(bad - path) + 1);
        return HCCN_ERR_INVALID;
    }
    int ok;
    json_object *value = parse_value(eq + 1, &ok);
    if (!ok) {
        snprintf(err, errlen, "%s: %s", path, hccn_sim_nomem_msg());
        return HCCN_ERR_NOMEM;
    }
    hccn_status_t rc = store(doc, segs, n, value, err, errlen);
    if (rc != HCCN_OK)
        json_object_put(value);
    if (rc == HCCN_ERR_NOMEM)
        snprintf(err, errlen, "%s: %s", path, hccn_sim_nomem_msg());
    return rc;
}
