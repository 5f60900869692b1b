/*
 * Writing an imported cluster as hccn topology JSON (docs/topology.md):
 * merging identical node types, the --hosts/--network choices, and a check
 * with the topology loader before anything is written.
 */
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "imp.h"

static json_object *num(double x)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "%.12g", x);
    return json_object_new_double_s(x, buf);
}

static json_object *int_array(const int *v, int n)
{
    json_object *a = json_object_new_array();
    for (int i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_int(v[i]));
    return a;
}

static json_object *npu_json(const hccn_imp_node_t *n)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "count", json_object_new_int(n->nnpus));
    json_object_object_add(o, "arena_MiB", json_object_new_int64(n->arena_mib));
    json_object_object_add(o, "reduce_bw_GBps", num(n->reduce_bw));
    if (n->mem_bw > 0)
        json_object_object_add(o, "mem_bw_GBps", num(n->mem_bw));
    if (n->peak_tflops > 0)
        json_object_object_add(o, "peak_TFLOPS", num(n->peak_tflops));
    return o;
}

static json_object *groups_json(const hccn_imp_node_t *n)
{
    json_object *a = json_object_new_array();
    for (int g = 0; g < n->ngroups; g++) {
        json_object *grp = json_object_new_array();
        for (int j = 0; j < n->nnpus; j++)
            if (n->group_of[j] == g)
                json_object_array_add(grp, json_object_new_int(j));
        json_object_array_add(a, grp);
    }
    return a;
}

static json_object *fabric_json(const hccn_imp_node_t *n)
{
    static const char *const types[] = {"", "mesh", "switch", "ring", "pcie"};
    json_object *o = json_object_new_object();
    json_object_object_add(o, "type", json_object_new_string(types[n->fabric]));
    json_object_object_add(o, "bw_GBps", num(n->fab_bw));
    json_object_object_add(o, "lat_us", num(n->fab_lat));
    if (n->fabric == HCCN_IMP_FAB_PCIE) {
        json_object_object_add(o, "groups", groups_json(n));
        json_object_object_add(o, "host_bw_GBps", num(n->host_bw));
        json_object_object_add(o, "host_lat_us", num(n->host_lat));
        json_object_object_add(o, "p2p", json_object_new_boolean(n->p2p));
    }
    return o;
}

/* k identical NICs serving NPU k each: the short object form. */
static int one_per_npu(const hccn_imp_node_t *n)
{
    if (n->nnics != n->nnpus)
        return 0;
    for (int k = 0; k < n->nnics; k++)
        if (n->nics[k].nnpus != 1 || n->nics[k].npus[0] != k ||
            n->nics[k].bw != n->nics[0].bw || n->nics[k].lat != n->nics[0].lat)
            return 0;
    return 1;
}

static json_object *nics_json(const hccn_imp_node_t *n)
{
    if (one_per_npu(n)) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "count", json_object_new_int(n->nnics));
        json_object_object_add(o, "bw_GBps", num(n->nics[0].bw));
        json_object_object_add(o, "lat_us", num(n->nics[0].lat));
        return o;
    }
    json_object *a = json_object_new_array();
    for (int k = 0; k < n->nnics; k++) {
        json_object *o = json_object_new_object();
        json_object_object_add(o, "npus",
                               int_array(n->nics[k].npus, n->nics[k].nnpus));
        json_object_object_add(o, "bw_GBps", num(n->nics[k].bw));
        json_object_object_add(o, "lat_us", num(n->nics[k].lat));
        json_object_array_add(a, o);
    }
    return a;
}

static json_object *type_json(const hccn_imp_node_t *n, int with_name)
{
    json_object *o = json_object_new_object();
    if (with_name)
        json_object_object_add(o, "name", json_object_new_string(n->name));
    json_object_object_add(o, "count", json_object_new_int(n->count));
    json_object_object_add(o, "npu", npu_json(n));
    if (n->fabric != HCCN_IMP_FAB_NONE)
        json_object_object_add(o, "fabric", fabric_json(n));
    if (n->nnics > 0)
        json_object_object_add(o, "nics", nics_json(n));
    return o;
}

static json_object *network_json(const hccn_imp_topo_t *t)
{
    json_object *o = json_object_new_object();
    int ls = t->net == HCCN_IMP_NET_LEAF_SPINE;
    json_object_object_add(o, "type",
                           json_object_new_string(ls ? "leaf_spine" : "switch"));
    json_object_object_add(o, "lat_us", num(t->net_lat));
    if (ls) {
        json_object_object_add(o, "nodes_per_leaf",
                               json_object_new_int(t->nodes_per_leaf));
        json_object_object_add(o, "oversubscription", num(t->oversub));
        json_object_object_add(o, "spine_lat_us", num(t->spine_lat));
    }
    return o;
}

static json_object *doc_json(const hccn_imp_topo_t *t)
{
    json_object *d = json_object_new_object();
    json_object_object_add(d, "version", json_object_new_int(1));
    if (t->name)
        json_object_object_add(d, "name", json_object_new_string(t->name));
    if (t->description)
        json_object_object_add(d, "description",
                               json_object_new_string(t->description));
    json_object *src = json_object_new_object();
    for (int i = 0; i < t->nsources; i++)
        json_object_object_add(src, t->sources[i].key,
                               json_object_new_string(t->sources[i].text));
    json_object_object_add(d, "sources", src);
    json_object *notes = json_object_new_array();
    for (int i = 0; i < t->nnotes; i++)
        json_object_array_add(notes, json_object_new_string(t->notes[i]));
    json_object_object_add(d, "notes", notes);
    json_object *types = json_object_new_array();
    for (int i = 0; i < t->ntypes; i++)
        json_object_array_add(types, type_json(&t->types[i], 1));
    json_object_object_add(d, "node_types", types);
    if (t->net != HCCN_IMP_NET_NONE)
        json_object_object_add(d, "network", network_json(t));
    return d;
}

char *hccn_imp_to_json(const hccn_imp_topo_t *t, char *err)
{
    json_object *d = doc_json(t);
    const char *s = json_object_to_json_string_ext(
        d, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
               JSON_C_TO_STRING_NOSLASHESCAPE);
    char *copy = s ? strdup(s) : NULL;
    json_object_put(d);
    if (copy == NULL)
        hccn_imp_fail(err, "out of memory");
    return copy;
}

/* Two node types describe the same node when their JSON (without the name
 * and count) is the same. */
static int same_type(const hccn_imp_node_t *a, const hccn_imp_node_t *b)
{
    hccn_imp_node_t x = *a, y = *b;
    x.count = y.count = 1;
    json_object *ja = type_json(&x, 0), *jb = type_json(&y, 0);
    int same = !strcmp(json_object_to_json_string(ja),
                       json_object_to_json_string(jb));
    json_object_put(ja);
    json_object_put(jb);
    return same;
}

static void merge_types(hccn_imp_topo_t *t)
{
    int w = 0;
    for (int i = 0; i < t->ntypes; i++) {
        if (w > 0 && same_type(&t->types[w - 1], &t->types[i])) {
            t->types[w - 1].count += t->types[i].count;
            hccn_imp_node_t dead = t->types[i];
            for (int k = 0; k < dead.nnics; k++)
                free(dead.nics[k].npus);
            free(dead.nics);
            free(dead.group_of);
            free(dead.name);
            continue;
        }
        t->types[w++] = t->types[i];
    }
    t->ntypes = w;
}

static int apply_opts(hccn_imp_topo_t *t, const hccn_imp_opts_t *o, char *err)
{
    if (o->hosts > 0) {
        if (t->ntypes != 1 || t->types[0].count != 1)
            return hccn_imp_fail(err, "--hosts needs one host in the input "
                                 "(got %d node types)", t->ntypes);
        t->types[0].count = o->hosts;
        hccn_imp_note(t, "--hosts %d: the one host read is repeated %d "
                      "times", o->hosts, o->hosts);
    }
    int nodes = 0;
    for (int i = 0; i < t->ntypes; i++)
        nodes += t->types[i].count;
    if (nodes < 2 || t->net != HCCN_IMP_NET_NONE)
        return 0;
    t->net = o->net == HCCN_IMP_NET_LEAF_SPINE ? o->net : HCCN_IMP_NET_SWITCH;
    t->net_lat = t->spine_lat = HCCN_IMP_NET_LAT_US;
    t->oversub = o->oversub > 0 ? o->oversub : 1;
    t->nodes_per_leaf = o->per_leaf;
    hccn_imp_source(t, "network", "--network %s (the input files describe "
                    "hosts, not the network between them)",
                    t->net == HCCN_IMP_NET_SWITCH ? "switch" : "fat-tree");
    hccn_imp_note(t, "network.lat_us = %g us per switch: assumption (no "
                  "input gives it; as configs/default.json)",
                  HCCN_IMP_NET_LAT_US);
    return 0;
}

int hccn_imp_write(hccn_imp_topo_t *t, const hccn_imp_opts_t *o,
                   const char *out, char *err)
{
    merge_types(t);
    if (apply_opts(t, o, err))
        return -1;
    if (o->name) {
        free(t->name);
        t->name = strdup(o->name);
    }
    char *json = hccn_imp_to_json(t, err);
    if (json == NULL ||
        hccn_imp_check_json(json, out ? out : "output", err)) {
        free(json);
        return -1;
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    int rc = 0;
    if (f == NULL)
        rc = hccn_imp_fail(err, "%s: cannot write", out);
    else if (fprintf(f, "%s\n", json) < 0 || (out && fclose(f) != 0))
        rc = hccn_imp_fail(err, "%s: write error", out ? out : "stdout");
    free(json);
    return rc;
}
