/*
 * hccn-topo export: an hccn topology written as an ASTRA-sim network YAML or
 * a SimGrid cluster, for cross-checking with those simulators. The file is
 * first validated by the topology loader; what the target format cannot hold
 * (NPU memory and reduction figures, names, sources) is listed in a comment;
 * shapes it cannot express at all are an error.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "hccn/hccn_sim.h"
#include "imp.h"

#define GIB_PER_GB (1e9 / 1073741824.0)

typedef struct {
    int nnpus, count;
    char fabric[16];        /* copies: the document is freed */
    double fab_bw, fab_lat;
    int bidir;
    double nic_bw, nic_lat;
    char net[16];           /* "" when one node */
    double net_lat, spine_lat, oversub;
    int per_leaf;
    double peak;
} shape_t;

static double get_num(json_object *o, const char *key, double dflt)
{
    json_object *v;
    return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v)
                                                 : dflt;
}

static json_object *get(json_object *o, const char *key)
{
    json_object *v = NULL;
    json_object_object_get_ex(o, key, &v);
    return v;
}

/* o's bw_GBps as the simulator uses it: x efficiency (absent: the
 * stack's for its kind of link, eff) x rails. */
static double get_bw(json_object *o, double eff)
{
    return get_num(o, "bw_GBps", 0) * get_num(o, "efficiency", eff) *
           get_num(o, "rails", 1);
}

/* Uniform NICs, one per NPU: their bandwidth and latency. */
static int read_nics(json_object *nics, shape_t *s, const char *file,
                     double eff, char *err)
{
    if (nics == NULL)
        return s->count > 1 ? -1 : 0;
    if (json_object_is_type(nics, json_type_object)) {
        if (get_num(nics, "count", 0) != s->nnpus || get(nics, "attach_bw_GBps"))
            return hccn_imp_fail(err, "%s: node_types[0].nics: one NIC per "
                                 "NPU without attach_bw_GBps is needed", file);
        s->nic_bw = get_bw(nics, eff);
        s->nic_lat = get_num(nics, "lat_us", 0);
        return 0;
    }
    size_t n = json_object_array_length(nics);
    for (size_t k = 0; k < n; k++) {
        json_object *c = json_object_array_get_idx(nics, k);
        double bw = get_bw(c, eff), lat = get_num(c, "lat_us", 0);
        if ((int)n != s->nnpus ||
            json_object_array_length(get(c, "npus")) != 1 ||
            get(c, "attach_bw_GBps") || (k > 0 && (bw != s->nic_bw ||
                                                   lat != s->nic_lat)))
            return hccn_imp_fail(err, "%s: node_types[0].nics[%zu]: the "
                                 "formats need one NIC per NPU, all alike, "
                                 "without attach_bw_GBps", file, k);
        s->nic_bw = bw;
        s->nic_lat = lat;
    }
    return 0;
}

static int read_shape(const char *file, shape_t *s, char *err)
{
    double eff[HCCN_NLINK];
    if (hccn_imp_check_file(file, err, eff))
        return -1;
    json_object *doc = json_object_from_file(file);
    if (doc == NULL)
        return hccn_imp_fail(err, "%s: cannot read", file);
    json_object *types = get(doc, "node_types");
    int rc = 0;
    memset(s, 0, sizeof(*s));
    if (json_object_array_length(types) != 1) {
        rc = hccn_imp_fail(err, "%s: node_types: %zu node types; the export "
                           "formats describe one kind of node", file,
                           json_object_array_length(types));
        goto out;
    }
    json_object *t = json_object_array_get_idx(types, 0);
    json_object *npu = get(t, "npu"), *fab = get(t, "fabric"), *net;
    s->nnpus = (int)get_num(npu, "count", 1);
    s->count = (int)get_num(t, "count", 1);
    s->peak = get_num(npu, "peak_TFLOPS", 0);
    if (s->nnpus > 1) {
        snprintf(s->fabric, sizeof(s->fabric), "%s",
                 json_object_get_string(get(fab, "type")));
        s->fab_bw = get_bw(fab, eff[strcmp(s->fabric, "pcie") == 0
                                        ? HCCN_LINK_PCIE
                                        : HCCN_LINK_FABRIC]);
        s->fab_lat = get_num(fab, "lat_us", 0);
        s->bidir = get(fab, "bidirectional") == NULL ||
                   json_object_get_boolean(get(fab, "bidirectional"));
    }
    if (s->count > 1 && (net = get(doc, "network")) != NULL) {
        snprintf(s->net, sizeof(s->net), "%s",
                 json_object_get_string(get(net, "type")));
        s->net_lat = get_num(net, "lat_us", 0);
        s->spine_lat = get_num(net, "spine_lat_us", s->net_lat);
        s->oversub = get_num(net, "oversubscription", 1);
        s->per_leaf = (int)get_num(net, "nodes_per_leaf", 0);
    }
    rc = read_nics(get(t, "nics"), s, file, eff[HCCN_LINK_NIC], err);
out:
    json_object_put(doc);
    return rc;
}

typedef struct {
    int n, npus[3];
    const char *kind[3];
    double bw[3], lat_us[3];
} dims_t;

static void add(dims_t *d, const char *kind, int npus, double bw, double lat)
{
    d->kind[d->n] = kind;
    d->npus[d->n] = npus;
    d->bw[d->n] = bw;
    d->lat_us[d->n++] = lat;
}

static int node_dim(const shape_t *s, const char *file, dims_t *d, char *err)
{
    if (s->nnpus == 1)
        return 0;
    if (!strcmp(s->fabric, "mesh"))
        add(d, "FullyConnected", s->nnpus, s->fab_bw, s->fab_lat);
    else if (!strcmp(s->fabric, "switch"))
        add(d, "Switch", s->nnpus, s->fab_bw, s->fab_lat / 2);
    else if (!strcmp(s->fabric, "ring") && s->bidir)
        add(d, "Ring", s->nnpus, s->fab_bw, s->fab_lat);
    else
        return hccn_imp_fail(err, "%s: node_types[0].fabric: a %s%s fabric "
                             "has no ASTRA-sim building block", file,
                             s->bidir ? "" : "one-way ", s->fabric);
    return 0;
}

/* The network: a Switch dimension (NIC + switch latency split over the two
 * links of a transfer), and for leaf/spine a second one for the spine. */
static int net_dims(const shape_t *s, const char *file, dims_t *d, char *err)
{
    double lat = (s->nic_lat + s->net_lat) / 2;
    if (s->count == 1)
        return 0;
    if (!strcmp(s->net, "switch")) {
        add(d, "Switch", s->count, s->nic_bw, lat);
        return 0;
    }
    if (strcmp(s->net, "leaf_spine") != 0)
        return hccn_imp_fail(err, "%s: network.type: a %s network has no "
                             "ASTRA-sim building block (switch and "
                             "leaf_spine do)", file, s->net);
    if (s->per_leaf <= 0 || s->count % s->per_leaf)
        return hccn_imp_fail(err, "%s: network.nodes_per_leaf: %d does not "
                             "divide the %d nodes", file, s->per_leaf,
                             s->count);
    add(d, "Switch", s->per_leaf, s->nic_bw, lat);
    add(d, "Switch", s->count / s->per_leaf, s->nic_bw / s->oversub,
        s->spine_lat / 2);
    return 0;
}

static void print_list(FILE *f, const char *key, const dims_t *d, int what)
{
    fprintf(f, "%s: [ ", key);
    for (int i = 0; i < d->n; i++) {
        fprintf(f, "%s", i ? ", " : "");
        if (what == 0)
            fprintf(f, "%s", d->kind[i]);
        else if (what == 1)
            fprintf(f, "%d", d->npus[i]);
        else if (what == 2)
            fprintf(f, "%.12g", d->bw[i] * GIB_PER_GB);
        else
            fprintf(f, "%.12g", d->lat_us[i] * 1000);
    }
    fprintf(f, " ]%s\n", what == 2 ? "  # GB/s, GB = 2^30 bytes"
                         : what == 3 ? "  # ns" : "");
}

int hccn_imp_export_astrasim(const char *topo_file, FILE *f, char *err)
{
    shape_t s;
    dims_t d = {0};
    if (read_shape(topo_file, &s, err) || node_dim(&s, topo_file, &d, err) ||
        net_dims(&s, topo_file, &d, err))
        return -1;
    if (d.n == 0)
        return hccn_imp_fail(err, "%s: one NPU: nothing to export", topo_file);
    fprintf(f, "# ASTRA-sim network file exported by hccn-topo from %s\n"
            "# not in this format: the NPU figures (arena, reduction and copy "
            "bandwidth, peak), names and sources%s\n", topo_file,
            s.nnpus == 1 ? "; one-NPU nodes: the network is dimension 0" : "");
    for (int w = 0; w < 4; w++)
        print_list(f, w == 0 ? "topology" : w == 1 ? "npus_count"
                      : w == 2 ? "bandwidth" : "latency", &d, w);
    return ferror(f) ? hccn_imp_fail(err, "write error") : 0;
}

int hccn_imp_export_simgrid(const char *topo_file, FILE *f, char *err)
{
    shape_t s;
    if (read_shape(topo_file, &s, err))
        return -1;
    if (s.nnpus != 1 || s.count < 2 || strcmp(s.net, "switch"))
        return hccn_imp_fail(err, "%s: a SimGrid cluster is one-NPU hosts on "
                             "one switch; this topology has %d NPU%s per node, "
                             "%d node%s%s%s", topo_file, s.nnpus,
                             s.nnpus > 1 ? "s" : "", s.count,
                             s.count > 1 ? "s" : "",
                             s.net[0] ? ", network " : "", s.net);
    fprintf(f, "<?xml version='1.0'?>\n"
            "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            "<!-- exported by hccn-topo from %s; not in this format: the NPU "
            "memory and reduction figures, names and sources%s. lat is half "
            "of hccn's NIC + switch latency (a route crosses two private "
            "links). -->\n<platform version=\"4.1\">\n", topo_file,
            s.peak > 0 ? "" : ", and peak_TFLOPS (speed 1Gf written)");
    fprintf(f, "  <cluster id=\"hccn\" prefix=\"node-\" suffix=\"\" "
            "radical=\"0-%d\" speed=\"%.12gf\" bw=\"%.12gGBps\" "
            "lat=\"%.12gus\" sharing_policy=\"SPLITDUPLEX\"/>\n</platform>\n",
            s.count - 1, s.peak > 0 ? s.peak * 1e12 : 1e9, s.nic_bw,
            (s.nic_lat + s.net_lat) / 2);
    return ferror(f) ? hccn_imp_fail(err, "write error") : 0;
}
