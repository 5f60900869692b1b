/*
 * SimGrid platform XML: a <cluster> (flat; directly under <platform> or in
 * one <zone>), or one Full-routing <zone> of <host>s, <link>s and <route>s
 * that form a star (each host behind its own private link). Each host is a
 * one-NPU node; its private link is its NIC; the cluster's switch is the
 * network. SimGrid units (Bps/bps with decimal or binary prefixes, s/ms/us/
 * ns/ps, flops) are required on every figure.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "imp.h"
#include "xml.h"

typedef struct {
    const char *file;
    char *err;
    hccn_imp_topo_t *t;
    const hccn_imp_preset_t *p;
} sg_t;

typedef struct {
    const char *suffix;
    double scale;
} unit_t;

static const unit_t bw_units[] = {
    {"TiBps", 1099511627776.0}, {"GiBps", 1073741824.0}, {"MiBps", 1048576.0},
    {"KiBps", 1024.0}, {"TBps", 1e12}, {"GBps", 1e9}, {"MBps", 1e6},
    {"kBps", 1e3}, {"KBps", 1e3}, {"Bps", 1}, {"Tibps", 1099511627776.0 / 8},
    {"Gibps", 1073741824.0 / 8}, {"Mibps", 1048576.0 / 8}, {"Kibps", 128.0},
    {"Tbps", 1e12 / 8}, {"Gbps", 1e9 / 8}, {"Mbps", 1e6 / 8},
    {"kbps", 1e3 / 8}, {"bps", 1.0 / 8}, {NULL, 0}};
static const unit_t lat_units[] = {{"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6},
                                   {"ms", 1e-3}, {"s", 1}, {NULL, 0}};
static const unit_t speed_units[] = {{"Pf", 1e15}, {"Tf", 1e12}, {"Gf", 1e9},
                                     {"Mf", 1e6}, {"kf", 1e3}, {"f", 1},
                                     {NULL, 0}};

/* value with one of units, in base units (B/s, s, flop/s). */
static int with_unit(sg_t *g, const hccn_xml_el_t *e, const char *attr,
                     const unit_t *units, int required, double *out)
{
    const char *v = hccn_xml_get(e, attr);
    if (v == NULL) {
        if (!required)
            return 0;
        return hccn_imp_fail(g->err, "%s:%d: <%s>: attribute '%s' is "
                             "required", g->file, e->line, e->name, attr);
    }
    char *end;
    double x = strtod(v, &end);
    for (int i = 0; end != v && units[i].suffix; i++)
        if (!strcmp(end, units[i].suffix) && isfinite(x) && x >= 0) {
            *out = x * units[i].scale;
            return 0;
        }
    return hccn_imp_fail(g->err, "%s:%d: <%s>: %s=\"%s\": not a number with "
                         "a unit (e.g. %s)", g->file, e->line, e->name, attr,
                         v, units[0].suffix[1] == 'i' ? "125MBps, 10Gbps"
                            : units[0].suffix[1] == 's' ? "50us, 1.5ms"
                                                        : "1Gf");
}

/* Counts the hosts of radical "0-15" or "0-3,8,10-11". */
static int radical_count(sg_t *g, const hccn_xml_el_t *e, int *count)
{
    const char *s = hccn_xml_get(e, "radical");
    long n = 0;
    while (s && *s) {
        char *end;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0)
            break;
        if (*end == '-') {
            const char *q = end + 1;
            b = strtol(q, &end, 10);
            if (end == q || b < a)
                break;
        }
        /* b - a cannot overflow (0 <= a <= b); n + b - a + 1 could. */
        if (b - a >= 65536 - n)
            return hccn_imp_fail(g->err, "%s:%d: <cluster>: radical holds "
                                 "more than 65536 hosts", g->file, e->line);
        n += b - a + 1;
        if (*end == '\0') {
            *count = (int)n;
            return 0;
        }
        if (*end != ',')
            break;
        s = end + 1;
    }
    return hccn_imp_fail(g->err, "%s:%d: <cluster>: radical=\"%s\": expected "
                         "ranges like \"0-15\" or \"0-3,8,10-11\"", g->file,
                         e->line, s ? hccn_xml_get(e, "radical") : "");
}

static hccn_imp_node_t *host_node(sg_t *g, const char *name, double flops)
{
    hccn_imp_node_t *n = hccn_imp_add_type(g->t, name, 1);
    if (n == NULL) {
        hccn_imp_fail(g->err, "%s: out of memory", g->file);
        return NULL;
    }
    hccn_imp_set_npu(g->t, n, g->p);
    n->peak_tflops = hccn_imp_round(flops / 1e12);
    return n;
}

static int policy_note(sg_t *g, const hccn_xml_el_t *e, const char *attr)
{
    const char *pol = hccn_xml_get(e, attr);
    if (pol == NULL || !strcmp(pol, "SPLITDUPLEX"))
        return 0;
    if (strcmp(pol, "SHARED") && strcmp(pol, "FATPIPE"))
        return hccn_imp_fail(g->err, "%s:%d: <%s>: %s=\"%s\" is not "
                             "SPLITDUPLEX, SHARED or FATPIPE", g->file,
                             e->line, e->name, attr, pol);
    return hccn_imp_note(g->t, "%s:%d: <%s> %s=\"%s\": hccn links are full "
                         "duplex, one bandwidth per direction; written as "
                         "SPLITDUPLEX", g->file, e->line, e->name, attr, pol);
}

static int cluster(sg_t *g, const hccn_xml_el_t *e)
{
    static const char *const allowed[] = {
        "id", "prefix", "suffix", "radical", "speed", "core", "bw", "lat",
        "sharing_policy", "topology", "topo_parameters", "bb_bw", "bb_lat",
        "bb_sharing_policy", "router_id", "limiter_link", "loopback_bw",
        "loopback_lat", NULL};
    double speed, bw, lat, bb_bw = 0, bb_lat = 0;
    const char *topo = hccn_xml_get(e, "topology"), *core;
    int hosts = 0, cores = 1;
    static const char *const required[] = {"id", "prefix", "suffix",
                                           "radical", NULL};
    if (hccn_xml_allow(e, allowed, g->file, g->err))
        return -1;
    for (int k = 0; required[k]; k++)
        if (hccn_xml_get(e, required[k]) == NULL)
            return hccn_imp_fail(g->err, "%s:%d: <cluster>: attribute '%s' "
                                 "is required", g->file, e->line, required[k]);
    if (radical_count(g, e, &hosts) ||
        with_unit(g, e, "speed", speed_units, 1, &speed) ||
        with_unit(g, e, "bw", bw_units, 1, &bw) ||
        with_unit(g, e, "lat", lat_units, 1, &lat) ||
        with_unit(g, e, "bb_bw", bw_units, 0, &bb_bw) ||
        with_unit(g, e, "bb_lat", lat_units, 0, &bb_lat) ||
        policy_note(g, e, "sharing_policy"))
        return -1;
    if (topo && strcmp(topo, "FLAT"))
        return hccn_imp_fail(g->err, "%s:%d: <cluster>: topology=\"%s\" is "
                             "not supported (FLAT only)", g->file, e->line,
                             topo);
    if ((core = hccn_xml_get(e, "core")) != NULL &&
        ((cores = atoi(core)) < 1 || cores > 1 << 20))
        return hccn_imp_fail(g->err, "%s:%d: <cluster>: core=\"%s\" must be "
                             "a positive integer", g->file, e->line, core);
    hccn_imp_node_t *n = host_node(g, hccn_xml_get(e, "id"), speed * cores);
    if (n == NULL)
        return -1;
    n->count = hosts;
    int zero = 0;
    double nic_lat = hccn_imp_round(lat * 1e6);
    if (hccn_imp_add_nic(n, &zero, 1, hccn_imp_round(bw / 1e9), nic_lat))
        return hccn_imp_fail(g->err, "%s: out of memory", g->file);
    g->t->net = hosts > 1 ? HCCN_IMP_NET_SWITCH : HCCN_IMP_NET_NONE;
    g->t->net_lat = hccn_imp_round((lat + bb_lat) * 1e6);
    hccn_imp_source(g->t, "nics", "%s:%d: <cluster id=\"%s\">: %d hosts, "
                    "one NPU each, private link bw %g GB/s per direction, "
                    "lat %g us", g->file, e->line, hccn_xml_get(e, "id"),
                    hosts, bw / 1e9, nic_lat);
    hccn_imp_source(g->t, "network", "a SimGrid route crosses two private "
                    "links (2 x lat) and the backbone (bb_lat): NIC lat_us = "
                    "lat, network lat_us = lat + bb_lat = %g us",
                    g->t->net_lat);
    if (cores > 1)
        hccn_imp_note(g->t, "core=%d: one NPU per host; peak_TFLOPS counts "
                      "all cores", cores);
    if (bb_bw > 0)
        hccn_imp_note(g->t, "the backbone's bandwidth (bb_bw %g GB/s, shared "
                      "by all traffic) is not modelled: hccn's switch is "
                      "non-blocking", bb_bw / 1e9);
    return 0;
}

/* ---- a Full-routing zone of hosts, links and routes ---- */

typedef struct {
    const hccn_xml_el_t **host, **link;
    int nhosts, nlinks;
    int *priv;              /* each host's private link, -1: none yet */
    char *pair;             /* routed pairs */
    double mid_lat;
    int mid_routes, mid_uneven;
} star_t;

static int find_id(const hccn_xml_el_t **v, int n, const char *id)
{
    for (int i = 0; id && i < n; i++)
        if (!strcmp(hccn_xml_get(v[i], "id"), id))
            return i;
    return -1;
}

static int route_links(sg_t *g, star_t *s, const hccn_xml_el_t *r, int *ids)
{
    static const char *const allowed[] = {"id", "direction", NULL};
    for (int k = 0; k < r->nkids; k++) {
        const hccn_xml_el_t *c = r->kids[k];
        if (strcmp(c->name, "link_ctn") || hccn_xml_allow(c, allowed, g->file,
                                                          g->err))
            return g->err[0] ? -1 : hccn_imp_fail(g->err, "%s:%d: <%s>: only "
                                   "<link_ctn> is supported in a route",
                                   g->file, c->line, c->name);
        if ((ids[k] = find_id(s->link, s->nlinks, hccn_xml_get(c, "id"))) < 0)
            return hccn_imp_fail(g->err, "%s:%d: <link_ctn>: no <link> with "
                                 "id=\"%s\"", g->file, c->line,
                                 hccn_xml_get(c, "id") ? hccn_xml_get(c, "id")
                                                       : "");
    }
    return 0;
}

static int set_priv(sg_t *g, star_t *s, const hccn_xml_el_t *r, int h, int l)
{
    if (s->priv[h] >= 0 && s->priv[h] != l)
        return hccn_imp_fail(g->err, "%s:%d: <route>: host '%s' reaches "
                             "others through different links: not a star "
                             "(each host behind one private link)", g->file,
                             r->line, hccn_xml_get(s->host[h], "id"));
    s->priv[h] = l;
    return 0;
}

static int route(sg_t *g, star_t *s, const hccn_xml_el_t *r)
{
    static const char *const allowed[] = {"src", "dst", "symmetrical", NULL};
    int a = find_id(s->host, s->nhosts, hccn_xml_get(r, "src"));
    int b = find_id(s->host, s->nhosts, hccn_xml_get(r, "dst"));
    if (hccn_xml_allow(r, allowed, g->file, g->err))
        return -1;
    if (a < 0 || b < 0 || a == b || r->nkids < 2)
        return hccn_imp_fail(g->err, "%s:%d: <route>: src and dst must be two "
                             "different <host>s, joined by at least two "
                             "links", g->file, r->line);
    int *ids = malloc((size_t)r->nkids * sizeof(int)), rc = -1;
    if (ids == NULL)
        return hccn_imp_fail(g->err, "%s: out of memory", g->file);
    if (route_links(g, s, r, ids) || set_priv(g, s, r, a, ids[0]) ||
        set_priv(g, s, r, b, ids[r->nkids - 1]))
        goto out;
    double mid = 0;
    for (int k = 1; k < r->nkids - 1; k++) {
        double lat = 0;
        with_unit(g, s->link[ids[k]], "lat", lat_units, 0, &lat);
        mid += lat;
    }
    s->mid_uneven |= s->mid_routes > 0 && mid != s->mid_lat;
    s->mid_lat = mid;
    s->mid_routes += r->nkids > 2;
    s->pair[a * s->nhosts + b] = s->pair[b * s->nhosts + a] = 1;
    rc = 0;
out:
    free(ids);
    return rc;
}

static int collect(sg_t *g, star_t *s, const hccn_xml_el_t *zone)
{
    static const char *const hattr[] = {"id", "speed", "core", NULL};
    static const char *const lattr[] = {"id", "bw", "lat", "sharing_policy",
                                        NULL};
    for (int i = 0; i < zone->nkids; i++) {
        const hccn_xml_el_t *e = zone->kids[i];
        double x;
        if (!strcmp(e->name, "host")) {
            if (hccn_xml_allow(e, hattr, g->file, g->err) ||
                with_unit(g, e, "speed", speed_units, 1, &x))
                return -1;
            s->host[s->nhosts++] = e;
        } else if (!strcmp(e->name, "link")) {
            if (hccn_xml_allow(e, lattr, g->file, g->err) ||
                with_unit(g, e, "bw", bw_units, 1, &x) ||
                with_unit(g, e, "lat", lat_units, 0, &x) ||
                policy_note(g, e, "sharing_policy"))
                return -1;
            s->link[s->nlinks++] = e;
        } else if (strcmp(e->name, "route")) {
            return hccn_imp_fail(g->err, "%s:%d: <%s>: not supported in a "
                                 "zone (host, link, route, or one cluster)",
                                 g->file, e->line, e->name);
        }
        if ((!strcmp(e->name, "host") || !strcmp(e->name, "link")) &&
            hccn_xml_get(e, "id") == NULL)
            return hccn_imp_fail(g->err, "%s:%d: <%s>: attribute 'id' is "
                                 "required", g->file, e->line, e->name);
    }
    if (s->nhosts < 2 || s->nhosts > 4096)
        return hccn_imp_fail(g->err, "%s:%d: <zone>: %d hosts (2 to 4096 "
                             "supported)", g->file, zone->line, s->nhosts);
    return 0;
}

static int star_nodes(sg_t *g, star_t *s)
{
    double lat0 = 0;
    for (int h = 0; h < s->nhosts; h++) {
        const hccn_xml_el_t *he = s->host[h], *le;
        for (int o = 0; o < s->nhosts; o++)
            if (o != h && !s->pair[h * s->nhosts + o])
                return hccn_imp_fail(g->err, "%s:%d: <host id=\"%s\">: no "
                                     "route to '%s'", g->file, he->line,
                                     hccn_xml_get(he, "id"),
                                     hccn_xml_get(s->host[o], "id"));
        double speed = 0, bw = 0, lat = 0;
        le = s->link[s->priv[h]];
        with_unit(g, he, "speed", speed_units, 1, &speed);
        with_unit(g, le, "bw", bw_units, 1, &bw);
        with_unit(g, le, "lat", lat_units, 0, &lat);
        hccn_imp_node_t *n = host_node(g, hccn_xml_get(he, "id"), speed);
        int zero = 0;
        if (n == NULL || hccn_imp_add_nic(n, &zero, 1, hccn_imp_round(bw / 1e9),
                                          hccn_imp_round(lat * 1e6)))
            return hccn_imp_fail(g->err, "%s: out of memory", g->file);
        if (h == 0)
            lat0 = lat;
        else if (lat != lat0)
            hccn_imp_note(g->t, "private links of different latencies: the "
                          "network latency uses the first host's");
    }
    g->t->net = HCCN_IMP_NET_SWITCH;
    g->t->net_lat = hccn_imp_round((lat0 + s->mid_lat) * 1e6);
    hccn_imp_source(g->t, "nics", "%s: each <host>'s private link (the first "
                    "link of its routes) is its NIC", g->file);
    if (s->mid_routes > 0)
        hccn_imp_note(g->t, "links between the private links (a backbone) "
                      "add their latency%s; their bandwidth is not modelled",
                      s->mid_uneven ? " (they differ between routes: the "
                                      "last route's)" : "");
    return 0;
}

static int star(sg_t *g, const hccn_xml_el_t *zone)
{
    star_t s = {0};
    int n = zone->nkids, rc = -1;
    s.host = calloc((size_t)n, sizeof(*s.host));
    s.link = calloc((size_t)n, sizeof(*s.link));
    s.priv = malloc((size_t)n * sizeof(int));
    if (!s.host || !s.link || !s.priv) {
        hccn_imp_fail(g->err, "%s: out of memory", g->file);
        goto out;
    }
    if (collect(g, &s, zone))
        goto out;
    if ((s.pair = calloc((size_t)s.nhosts * s.nhosts, 1)) == NULL) {
        hccn_imp_fail(g->err, "%s: out of memory", g->file);
        goto out;
    }
    for (int h = 0; h < s.nhosts; h++)
        s.priv[h] = -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(zone->kids[i]->name, "route") && route(g, &s, zone->kids[i]))
            goto out;
    rc = star_nodes(g, &s);
out:
    free(s.host);
    free(s.link);
    free(s.priv);
    free(s.pair);
    return rc;
}

/* ---- the document ---- */

static int platform(sg_t *g, const hccn_xml_el_t *root)
{
    static const char *const pattr[] = {"version", NULL};
    static const char *const zattr[] = {"id", "routing", NULL};
    const char *v = hccn_xml_get(root, "version");
    if (strcmp(root->name, "platform"))
        return hccn_imp_fail(g->err, "%s:%d: <%s>: the root must be "
                             "<platform>", g->file, root->line, root->name);
    if (hccn_xml_allow(root, pattr, g->file, g->err))
        return -1;
    if (v == NULL || (strcmp(v, "4") && strcmp(v, "4.1")))
        return hccn_imp_fail(g->err, "%s:%d: <platform>: version must be "
                             "\"4\" or \"4.1\"", g->file, root->line);
    if (root->nkids != 1)
        return hccn_imp_fail(g->err, "%s:%d: <platform>: expected one "
                             "<cluster> or one <zone> (got %d elements)",
                             g->file, root->line, root->nkids);
    const hccn_xml_el_t *e = root->kids[0];
    if (!strcmp(e->name, "cluster"))
        return cluster(g, e);
    if (strcmp(e->name, "zone") && strcmp(e->name, "AS"))
        return hccn_imp_fail(g->err, "%s:%d: <%s>: not supported under "
                             "<platform> (cluster or zone)", g->file, e->line,
                             e->name);
    if (hccn_xml_allow(e, zattr, g->file, g->err))
        return -1;
    if (e->nkids == 1 && !strcmp(e->kids[0]->name, "cluster"))
        return cluster(g, e->kids[0]);
    const char *routing = hccn_xml_get(e, "routing");
    if (routing == NULL || strcmp(routing, "Full"))
        return hccn_imp_fail(g->err, "%s:%d: <%s>: hosts and routes need "
                             "routing=\"Full\"", g->file, e->line, e->name);
    return star(g, e);
}

int hccn_imp_simgrid_text(const char *text, size_t len, const char *file,
                          const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                          char *err)
{
    sg_t g = {file, err, t, hccn_imp_preset(o->model ? o->model : "generic")};
    if (g.p == NULL)
        return hccn_imp_fail(err, "--npu %s: no such preset (%s)", o->model,
                             hccn_imp_preset_names());
    hccn_xml_el_t *root = hccn_xml_parse(text, len, file, err);
    if (root == NULL)
        return -1;
    err[0] = '\0';
    int rc = platform(&g, root);
    hccn_xml_free(root);
    if (rc == 0) {
        hccn_imp_note(t, "NPU memory and reduction figures are not in SimGrid "
                      "platforms: preset %s; peak_TFLOPS from the host speed",
                      g.p->name);
        if ((t->description = malloc(256)) != NULL)
            snprintf(t->description, 256, "Imported from SimGrid platform %s",
                     file);
    }
    return rc;
}

int hccn_imp_simgrid(const char *file, const hccn_imp_opts_t *o,
                     hccn_imp_topo_t *t, char *err)
{
    size_t len;
    char *text = hccn_imp_read_file(file, &len, err);
    if (text == NULL)
        return -1;
    int rc = hccn_imp_simgrid_text(text, len, file, o, t, err);
    free(text);
    return rc;
}
