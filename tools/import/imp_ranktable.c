/*
 * HCCL rank tables (JSON): version "1.0" (server_list/device with string
 * fields), "1.2" (plus super_pod_list) and "2.0" (the same keys with JSON
 * integers). Rank tables carry no bandwidths: the server family's preset
 * (--npu 910a|910b, default 910b) gives them, and a note says so.
 *
 * NPUs are numbered by rank_id: each server (for 910A each HCCS group of 4)
 * must hold a contiguous block of ranks; super pods become leaves.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "imp.h"

#define MAX_DEV 16

typedef struct {
    const char *file;
    char *err;
    int ints;               /* version 2.0: integer fields */
} rt_t;

typedef struct {
    int ndev, dev_id[MAX_DEV], rank[MAX_DEV];
    const char *id;
    int pod;
} server_t;

static int fail(rt_t *r, const char *path, const char *what, const char *got)
{
    if (got != NULL)
        return hccn_imp_fail(r->err, "%s: %s: %s (got %s)", r->file, path,
                             what, got);
    return hccn_imp_fail(r->err, "%s: %s: %s", r->file, path, what);
}

static int allow(rt_t *r, json_object *o, const char *path,
                 const char *const *keys)
{
    if (!json_object_is_type(o, json_type_object))
        return fail(r, path, "must be an object", NULL);
    json_object_object_foreach(o, k, v) {
        (void)v;
        int ok = 0;
        for (int i = 0; keys[i] && !ok; i++)
            ok = !strcmp(keys[i], k);
        if (!ok) {
            char p[256];
            snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", k);
            return fail(r, p, "unknown key", NULL);
        }
    }
    return 0;
}

static json_object *need(rt_t *r, json_object *o, const char *path,
                         const char *key, json_type type)
{
    json_object *v;
    char p[256];
    snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", key);
    if (!json_object_object_get_ex(o, key, &v)) {
        fail(r, p, "required", NULL);
        return NULL;
    }
    if (!json_object_is_type(v, type)) {
        fail(r, p, type == json_type_array    ? "must be an array"
                   : type == json_type_string ? "must be a string"
                                              : "wrong type",
             json_object_to_json_string(v));
        return NULL;
    }
    return v;
}

/* A count or id: a string of digits (1.x) or a JSON integer (2.0). */
static int id_field(rt_t *r, json_object *o, const char *path,
                    const char *key, long max, int *out)
{
    json_object *v;
    char p[256];
    snprintf(p, sizeof(p), "%s%s%s", path, *path ? "." : "", key);
    if (!json_object_object_get_ex(o, key, &v))
        return fail(r, p, "required", NULL);
    long x = -1;
    if (r->ints && json_object_is_type(v, json_type_int)) {
        x = (long)json_object_get_int64(v);
    } else if (!r->ints && json_object_is_type(v, json_type_string)) {
        const char *s = json_object_get_string(v);
        char *end;
        x = *s >= '0' && *s <= '9' ? strtol(s, &end, 10) : -1;
        if (x >= 0 && *end != '\0')
            x = -1;
    } else {
        return fail(r, p, r->ints ? "must be an integer (version 2.0)"
                                  : "must be a string of digits (version 1.x)",
                    json_object_to_json_string(v));
    }
    if (x < 0 || x > max) {
        char m[64];
        snprintf(m, sizeof(m), "must be in 0..%ld", max);
        return fail(r, p, m, json_object_to_json_string(v));
    }
    *out = (int)x;
    return 0;
}

static int read_device(rt_t *r, json_object *d, const char *path,
                       server_t *s, int j)
{
    static const char *const keys[] = {
        "device_id", "device_ip", "rank_id", "super_device_id", "device_port",
        "backup_device_ip", "backup_device_port", "host_port",
        "device_logical_id", NULL};
    if (allow(r, d, path, keys) ||
        id_field(r, d, path, "device_id", MAX_DEV - 1, &s->dev_id[j]) ||
        id_field(r, d, path, "rank_id", 1 << 20, &s->rank[j]) ||
        need(r, d, path, "device_ip", json_type_string) == NULL)
        return -1;
    for (int k = 0; k < j; k++)
        if (s->dev_id[k] == s->dev_id[j])
            return fail(r, path, "device_id repeats an earlier device of "
                        "this server", NULL);
    return 0;
}

static int read_server(rt_t *r, json_object *o, int i, server_t *s)
{
    static const char *const keys[] = {"server_id", "host_ip", "host_nic_ip",
                                       "container_ip", "device", NULL};
    char path[64], dp[96];
    snprintf(path, sizeof(path), "server_list[%d]", i);
    json_object *id, *devs;
    if (allow(r, o, path, keys) ||
        (id = need(r, o, path, "server_id", json_type_string)) == NULL ||
        (devs = need(r, o, path, "device", json_type_array)) == NULL)
        return -1;
    s->id = json_object_get_string(id);
    s->pod = -1;
    s->ndev = (int)json_object_array_length(devs);
    snprintf(dp, sizeof(dp), "%s.device", path);
    if (s->ndev < 1 || s->ndev > MAX_DEV)
        return fail(r, dp, "must hold 1 to 16 devices", NULL);
    for (int j = 0; j < s->ndev; j++) {
        snprintf(dp, sizeof(dp), "%s.device[%d]", path, j);
        if (read_device(r, json_object_array_get_idx(devs, j), dp, s, j))
            return -1;
    }
    return 0;
}

/* rank ids must be 0..n-1, each server (group) a contiguous block. */
static int check_ranks(rt_t *r, server_t *sv, int ns, int total)
{
    char *seen = calloc((size_t)total, 1);
    if (seen == NULL)
        return fail(r, "$", "out of memory", NULL);
    int rc = 0;
    char path[96];
    for (int i = 0; i < ns && !rc; i++)
        for (int j = 0; j < sv[i].ndev && !rc; j++) {
            snprintf(path, sizeof(path), "server_list[%d].device[%d].rank_id",
                     i, j);
            if (sv[i].rank[j] >= total || seen[sv[i].rank[j]])
                rc = fail(r, path, sv[i].rank[j] >= total
                          ? "rank ids must be 0..(number of devices - 1)"
                          : "repeats an earlier rank_id", NULL);
            else
                seen[sv[i].rank[j]] = 1;
        }
    free(seen);
    return rc;
}

/* Devices of s in the HCCS group g of the preset, sorted by rank. */
static int group_devs(const server_t *s, int group, int g, int *idx)
{
    int n = 0;
    for (int j = 0; j < s->ndev; j++)
        if (group == 8 || s->dev_id[j] / group == g)
            idx[n++] = j;
    for (int a = 1; a < n; a++)
        for (int b = a; b > 0 && s->rank[idx[b]] < s->rank[idx[b - 1]]; b--) {
            int x = idx[b];
            idx[b] = idx[b - 1];
            idx[b - 1] = x;
        }
    return n;
}

static int add_node(rt_t *r, hccn_imp_topo_t *t, const hccn_imp_preset_t *p,
                    const server_t *s, int si, const int *idx, int n,
                    int *next_rank, double nic_GBps)
{
    char path[64];
    snprintf(path, sizeof(path), "server_list[%d]", si);
    for (int k = 0; k < n; k++)
        if (s->rank[idx[k]] != *next_rank + k)
            return fail(r, path, "its devices' rank_ids are not one "
                        "contiguous block following the previous server's "
                        "(order servers by rank_id)", NULL);
    *next_rank += n;
    hccn_imp_node_t *node = hccn_imp_add_type(
        t, p->group == 4 ? "hccs-group-of-4" : "atlas-800t-a2", n);
    if (node == NULL)
        return fail(r, path, "out of memory", NULL);
    hccn_imp_set_npu(t, node, p);
    if (n > 1) {
        node->fabric = HCCN_IMP_FAB_MESH;
        node->fab_bw = p->link_GBps;
        node->fab_lat = p->fab_lat_us;
    }
    for (int k = 0; k < n; k++)
        if (hccn_imp_add_nic(node, &k, 1, nic_GBps, HCCN_IMP_NIC_LAT_US))
            return fail(r, path, "out of memory", NULL);
    return 0;
}

static int build_nodes(rt_t *r, hccn_imp_topo_t *t, const hccn_imp_preset_t *p,
                       server_t *sv, int ns, const hccn_imp_opts_t *o)
{
    double nic = (o->nic_gbps > 0 ? o->nic_gbps : p->nic_Gbps) / 8;
    int next = 0, idx[MAX_DEV], groups = p->group == 4 ? 2 : 1;
    for (int i = 0; i < ns; i++) {
        for (int j = 0; j < sv[i].ndev; j++)
            if (sv[i].dev_id[j] >= 8) {
                char path[96];
                snprintf(path, sizeof(path), "server_list[%d].device[%d]."
                         "device_id", i, j);
                return fail(r, path, "an Atlas 800-class server has device "
                            "ids 0..7", NULL);
            }
        for (int g = 0; g < groups; g++) {
            int n = group_devs(&sv[i], p->group, g, idx);
            if (n > 0 && add_node(r, t, p, &sv[i], i, idx, n, &next, nic))
                return -1;
        }
    }
    hccn_imp_source(t, "fabric", "preset %s: HCCS full mesh of %d NPUs, %g "
                    "GB/s per link per direction, latency %g us; %s", p->name,
                    p->group, p->link_GBps, p->fab_lat_us, p->source);
    hccn_imp_source(t, "nics", "one NIC per device (its device_ip): %g Gb/s "
                    "= %g GB/s (%s), latency %g us assumed",
                    nic * 8, nic, o->nic_gbps > 0 ? "--nic-gbps" : p->name,
                    HCCN_IMP_NIC_LAT_US);
    hccn_imp_note(t, "rank tables carry no bandwidths or device model: "
                  "preset %s (%s)%s", p->name, p->what,
                  o->model ? "" : ", the default; --npu 910a for Atlas 800 "
                                  "(model 9000)");
    if (groups == 2)
        hccn_imp_note(t, "910A: each server's two HCCS groups of 4 are two "
                      "nodes; traffic between them goes through the NICs "
                      "(the host PCIe path is not modelled), as in "
                      "configs/ascend-910a.json");
    return 0;
}

/* super_pod_list (1.2): each server in one pod, pods contiguous and of
 * one size: a leaf per pod. */
static int read_pods(rt_t *r, json_object *list, server_t *sv, int ns,
                     hccn_imp_topo_t *t, int groups)
{
    static const char *const pkeys[] = {"super_pod_id", "server_list", NULL};
    static const char *const skeys[] = {"server_id", NULL};
    char path[96];
    int npods = (int)json_object_array_length(list), per = -1;
    for (int q = 0; q < npods; q++) {
        json_object *pod = json_object_array_get_idx(list, q), *svl;
        int id, n;
        snprintf(path, sizeof(path), "super_pod_list[%d]", q);
        if (allow(r, pod, path, pkeys) ||
            id_field(r, pod, path, "super_pod_id", 1 << 20, &id) ||
            (svl = need(r, pod, path, "server_list", json_type_array)) == NULL)
            return -1;
        n = (int)json_object_array_length(svl);
        for (int k = 0; k < n; k++) {
            json_object *e = json_object_array_get_idx(svl, k), *sid;
            snprintf(path, sizeof(path), "super_pod_list[%d].server_list[%d]",
                     q, k);
            if (allow(r, e, path, skeys) ||
                (sid = need(r, e, path, "server_id", json_type_string)) == NULL)
                return -1;
            int i = 0;
            while (i < ns && strcmp(sv[i].id, json_object_get_string(sid)))
                i++;
            if (i == ns || sv[i].pod >= 0)
                return fail(r, path, i == ns ? "no such server in server_list"
                            : "server already in an earlier super pod", NULL);
            sv[i].pod = q;
        }
        if (per >= 0 && n != per)
            return fail(r, path, "super pods of different sizes are not "
                        "supported (hccn's leaves hold the same number of "
                        "nodes)", NULL);
        per = n;
    }
    for (int i = 0; i < ns; i++) {
        snprintf(path, sizeof(path), "server_list[%d]", i);
        if (sv[i].pod < 0)
            return fail(r, path, "in no super pod of super_pod_list", NULL);
        if (per > 0 && sv[i].pod != i / per)
            return fail(r, path, "super pods must hold consecutive servers "
                        "(in rank order)", NULL);
    }
    t->net = HCCN_IMP_NET_LEAF_SPINE;
    t->nodes_per_leaf = per * groups;
    t->oversub = 1;
    t->net_lat = t->spine_lat = HCCN_IMP_NET_LAT_US;
    hccn_imp_source(t, "network", "super_pod_list: %d super pods of %d "
                    "servers, one leaf each, joined by a spine", npods, per);
    return hccn_imp_note(t, "super pods: the links inside and between them "
                         "are not in the rank table: non-blocking "
                         "(oversubscription 1), %g us per switch, assumed",
                         HCCN_IMP_NET_LAT_US);
}

static int read_doc(rt_t *r, json_object *doc, server_t **out, int *ns)
{
    static const char *const keys[] = {"status", "version", "server_count",
                                       "server_list", "super_pod_list", NULL};
    json_object *st, *ver, *list;
    int count;
    if (allow(r, doc, "", keys) ||
        (st = need(r, doc, "", "status", json_type_string)) == NULL ||
        (ver = need(r, doc, "", "version", json_type_string)) == NULL)
        return -1;
    const char *v = json_object_get_string(ver);
    if (strcmp(v, "1.0") && strcmp(v, "1.2") && strcmp(v, "2.0"))
        return fail(r, "version", "supported: \"1.0\", \"1.2\", \"2.0\"", v);
    if (strcmp(json_object_get_string(st), "completed"))
        return fail(r, "status", "the rank table is not \"completed\"",
                    json_object_get_string(st));
    r->ints = !strcmp(v, "2.0");
    if (id_field(r, doc, "", "server_count", 65536, &count) ||
        (list = need(r, doc, "", "server_list", json_type_array)) == NULL)
        return -1;
    *ns = (int)json_object_array_length(list);
    if (*ns != count || count == 0)
        return fail(r, "server_count", "must be the number of server_list "
                    "entries (at least 1)", json_object_get_string(
                        json_object_object_get(doc, "server_count")));
    if ((*out = calloc((size_t)*ns, sizeof(server_t))) == NULL)
        return fail(r, "$", "out of memory", NULL);
    int total = 0;
    for (int i = 0; i < *ns; i++) {
        if (read_server(r, json_object_array_get_idx(list, i), i, &(*out)[i]))
            return -1;
        total += (*out)[i].ndev;
    }
    return check_ranks(r, *out, *ns, total);
}

static json_object *parse_json(const char *text, size_t len, const char *file,
                               char *err)
{
    json_tokener *tok = json_tokener_new();
    if (tok == NULL)
        return hccn_imp_fail(err, "%s: out of memory", file), NULL;
    json_object *doc = NULL;
    if (memchr(text, '\0', len) == NULL && len < (size_t)1 << 30)
        doc = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    if (doc == NULL || e != json_tokener_success ||
        (size_t)json_tokener_get_parse_end(tok) != len) {
        size_t end = doc ? len : json_tokener_get_parse_end(tok);
        int line = 1;
        for (size_t i = 0; i < end && i < len; i++)
            line += text[i] == '\n';
        const char *why = e == json_tokener_continue ? "unexpected end of data"
                          : e == json_tokener_success ? "not JSON"
                                                      : json_tokener_error_desc(e);
        hccn_imp_fail(err, "%s:%d: JSON syntax error: %s", file, line, why);
        json_object_put(doc);
        doc = NULL;
    }
    json_tokener_free(tok);
    return doc;
}

int hccn_imp_ranktable_text(const char *text, size_t len, const char *file,
                            const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                            char *err)
{
    rt_t r = {file, err, 0};
    const hccn_imp_preset_t *p = hccn_imp_preset(o->model ? o->model : "910b");
    if (p == NULL || p->group == 0)
        return hccn_imp_fail(err, "--npu %s: rank tables need an Ascend "
                             "preset (910a, 910b)", o->model);
    json_object *doc = parse_json(text, len, file, err), *pods;
    server_t *sv = NULL;
    int ns = 0, rc = doc ? read_doc(&r, doc, &sv, &ns) : -1;
    if (rc == 0 && json_object_object_get_ex(doc, "super_pod_list", &pods)) {
        if (!json_object_is_type(pods, json_type_array))
            rc = fail(&r, "super_pod_list", "must be an array", NULL);
        else
            rc = read_pods(&r, pods, sv, ns, t, p->group == 4 ? 2 : 1);
    }
    if (rc == 0)
        rc = build_nodes(&r, t, p, sv, ns, o);
    if (rc == 0 && (t->description = malloc(256)) != NULL)
        snprintf(t->description, 256, "Imported from HCCL rank table %s "
                 "(version %s, %d server%s)", file, json_object_get_string(
                     json_object_object_get(doc, "version")), ns,
                 ns > 1 ? "s" : "");
    free(sv);
    json_object_put(doc);
    return rc;
}

int hccn_imp_ranktable(const char *file, const hccn_imp_opts_t *o,
                       hccn_imp_topo_t *t, char *err)
{
    size_t len;
    char *text = hccn_imp_read_file(file, &len, err);
    if (text == NULL)
        return -1;
    int rc = hccn_imp_ranktable_text(text, len, file, o, t, err);
    free(text);
    return rc;
}
