/*
 * The optional "stack" and "software" keys of a topology file
 * (docs/topology.md, Software; the model is device_sim/software.h):
 *
 *   "stack": "nccl-2.2x",
 *   "software": {
 *     "launch_us": 6.6,
 *     "host_us": 4.6, "ranks_per_thread": 8, "slots": 8,
 *     "send_overhead_us": 0.27, "recv_overhead_us": 0.55,
 *     "ll":     {"step_us": {"intra": 0.6, "net": 2.7}, "efficiency": 0.5,
 *                "launch_us": 6.6},
 *     "ll128":  {"enabled": false},
 *     "simple": {"step_us": 3.4, "efficiency": 1, "max_bytes": 0}
 *   }
 *
 * "stack" names a preset (software.c); "software" overrides it
 * field by field, or, without a stack, a model of no cost whose only
 * protocol is the bulk one. A protocol's launch_us defaults to the
 * stack's: a file's "launch_us" replaces the preset's per protocol too,
 * but for the protocols whose own the file gives. A per-class value is a number (both classes)
 * or {"intra": x, "net": y} (either may be left out, not both). An
 * efficiency is at least 0.001, as a link's: a smaller one makes a
 * transfer's time absurd (1e-300 gives 1e300 s, a large one inf).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/software.h"
#include "device_sim/topo_internal.h"

/* The keys of a per-class value, of a per-span one (max_GBps) and of the
 * per-kind link_efficiency (HCCN_SIM_LINK_*). */
static const char *const class_names[] = {"intra", "net", NULL};
static const char *const span_names[] = {"two_nodes", "more_nodes", NULL};
static const char *const link_names[] = {"fabric", "pcie", "nic", NULL};

/* Sets out[k] for each of names from v: a number for all, or an object
 * with some of names (not none). scale converts the file's unit. */
static hccn_status_t values(hccn_sim_jctx_t *c, json_object *o,
                            const char *key, const char *const *names,
                            double lo, int lo_open, double hi, double scale,
                            double *out)
{
    json_object *v;
    double x;
    int has;
    if (!json_object_object_get_ex(o, key, &v))
        return HCCN_OK;
    if (!json_object_is_type(v, json_type_object)) {
        hccn_status_t st = hccn_sim_jnum(c, o, key, lo, lo_open, hi, &x,
                                         NULL);
        for (int k = 0; names[k] != NULL && st == HCCN_OK; k++)
            out[k] = x * scale;
        return st;
    }
    size_t old = hccn_sim_jkey(c, key);
    hccn_status_t st = hccn_sim_jkeys(c, v, names);
    if (st == HCCN_OK && json_object_object_length(v) == 0)
        st = names[2] == NULL
                 ? hccn_sim_jfail(c, "must give %s, %s or both (got an "
                                     "empty object)", names[0], names[1])
                 : hccn_sim_jfail(c, "must give one or more of %s, %s, %s "
                                     "(got an empty object)",
                                  names[0], names[1], names[2]);
    for (int k = 0; names[k] != NULL && st == HCCN_OK; k++) {
        st = hccn_sim_jnum(c, v, names[k], lo, lo_open, hi, &x, &has);
        if (st == HCCN_OK && has)
            out[k] = x * scale;
    }
    hccn_sim_jpop(c, old);
    return st;
}

/* A per-class value: {"intra": x, "net": y} or a number for both. */
static hccn_status_t class_values(hccn_sim_jctx_t *c, json_object *o,
                                  const char *key, double lo, int lo_open,
                                  double hi, double scale, double *out)
{
    return values(c, o, key, class_names, lo, lo_open, hi, scale, out);
}

/* Sets *out (seconds) from key, a number of microseconds 0..1e6, where
 * the object gives it; leaves *out as it was where it does not. */
static hccn_status_t opt_us(hccn_sim_jctx_t *c, json_object *o,
                            const char *key, double *out)
{
    double x;
    int has;
    hccn_status_t st = hccn_sim_jnum(c, o, key, 0.0, 0, 1e6, &x, &has);
    if (st == HCCN_OK && has)
        *out = x * 1e-6;
    return st;
}

/* "tree_bw": the tree allreduce's share of its bandwidth by call size,
 * an array of 1 to HCCN_SIM_TREE_SIZES numbers in (0, 1], the i-th for
 * calls of 64 B x 2^i up to twice that; sizes past the array's end take
 * all of it. */
static hccn_status_t parse_tree_bw(hccn_sim_jctx_t *c, json_object *o,
                                   hccn_sim_proto_t *p)
{
    json_object *arr;
    hccn_sim_jgot_t got;
    if (!json_object_object_get_ex(o, "tree_bw", NULL))
        return HCCN_OK;
    hccn_status_t st = hccn_sim_jarray(c, o, "tree_bw", &arr);
    if (st != HCCN_OK)
        return st;
    size_t n = json_object_array_length(arr);
    if (n == 0 || n > HCCN_SIM_TREE_SIZES)
        return hccn_sim_jfail_key(c, "tree_bw", "must have 1 to %d numbers, "
                                  "one per size from 64 B, doubling (got "
                                  "%zu)", HCCN_SIM_TREE_SIZES, n);
    size_t key = hccn_sim_jkey(c, "tree_bw");
    for (size_t i = 0; i < HCCN_SIM_TREE_SIZES && st == HCCN_OK; i++) {
        p->tree_bw[i] = 0.0;
        if (i >= n)
            continue;
        json_object *v = json_object_array_get_idx(arr, i);
        double x = json_object_is_type(v, json_type_int) ||
                           json_object_is_type(v, json_type_double)
                       ? json_object_get_double(v) : NAN;
        size_t old = hccn_sim_jindex(c, i);
        if (!(x > 0.0 && x <= 1.0))
            st = hccn_sim_jfail(c, "must be a number in (0, 1] (got %s)",
                                hccn_sim_jgot(v, &got));
        hccn_sim_jpop(c, old);
        p->tree_bw[i] = x;
    }
    hccn_sim_jpop(c, key);
    return st;
}

static hccn_status_t parse_proto(hccn_sim_jctx_t *c, json_object *o,
                                 hccn_sim_proto_t *p)
{
    static const char *const keys[] = {"enabled", "step_us", "efficiency",
                                       "max_bytes", "launch_us", "max_GBps",
                                       "ring_step_us", "tree_step_us",
                                       "tree_bw", NULL};
    int on, has;
    hccn_status_t st;
    if (!json_object_is_type(o, json_type_object))
        return hccn_sim_jfail(c, "must be an object");
    if ((st = hccn_sim_jkeys(c, o, keys)) ||
        (st = hccn_sim_jbool(c, o, "enabled", &on, &has)))
        return st;
    if (has)
        p->on = on;
    else if (json_object_object_length(o) > 0)
        p->on = 1;   /* giving a protocol's costs turns it on */
    if ((st = opt_us(c, o, "launch_us", &p->launch_s)))
        return st;
    if ((st = opt_us(c, o, "ring_step_us", &p->ring_step_s)))
        return st;
    if ((st = class_values(c, o, "step_us", 0.0, 0, 1e6, 1e-6, p->step_s)) ||
        (st = class_values(c, o, "efficiency", 1e-3, 0, 1.0, 1.0, p->eff)))
        return st;
    /* A file's step_us serves the tree too, unless it gives the tree's. */
    if (json_object_object_get_ex(o, "step_us", NULL))
        p->tree_on = 0;
    if (json_object_object_get_ex(o, "tree_step_us", NULL)) {
        if (!p->tree_on)   /* a class left out takes the protocol's step */
            memcpy(p->tree_step_s, p->step_s, sizeof(p->tree_step_s));
        p->tree_on = 1;
    }
    if ((st = class_values(c, o, "tree_step_us", 0.0, 0, 1e6, 1e-6,
                           p->tree_step_s)))
        return st;
    if ((st = values(c, o, "max_GBps", span_names, 0.0, 0, 1e6, 1e9,
                     p->max_bw)) ||
        (st = parse_tree_bw(c, o, p)))
        return st;
    return class_values(c, o, "max_bytes", 0.0, 0, 0x1p62, 1.0,
                        p->max_bytes);
}

/* "algorithms": "library" (the stack's own, for its default choice) or
 * "all" (every row of the table). */
static hccn_status_t parse_algorithms(hccn_sim_jctx_t *c, json_object *o,
                                      hccn_sim_sw_t *sw)
{
    const char *v;
    int has;
    hccn_status_t st = hccn_sim_jstring(c, o, "algorithms", &v, &has);
    if (st != HCCN_OK || !has)
        return st;
    if (strcmp(v, "library") != 0 && strcmp(v, "all") != 0)
        return hccn_sim_jfail_key(c, "algorithms", "must be \"library\" or "
                                  "\"all\" (got \"%s\")", v);
    sw->all_algorithms = strcmp(v, "all") == 0;
    return HCCN_OK;
}

static hccn_status_t parse_fields(hccn_sim_jctx_t *c, json_object *o,
                                  hccn_sim_sw_t *sw)
{
    static const char *const keys[] = {"launch_us", "host_us",
                                       "ranks_per_thread", "ll", "ll128",
                                       "simple", "sources", "notes",
                                       "channels", "allpairs_max_bytes",
                                       "nvls_launch_us", "nvls_step_us",
                                       "nvls_net_step_us",
                                       "slots", "ring_plateau",
                                       "algorithms", "send_overhead_us",
                                       "recv_overhead_us", "link_efficiency",
                                       NULL};
    double x;
    long long n;
    int has;
    hccn_status_t st;
    if (!json_object_is_type(o, json_type_object))
        return hccn_sim_jfail(c, "must be an object");
    if ((st = hccn_sim_jkeys(c, o, keys)) ||
        (st = hccn_sim_jnum(c, o, "launch_us", 0.0, 0, 1e6, &x, &has)))
        return st;
    if (has) {   /* every protocol's, but those the file gives below */
        sw->launch_s = x * 1e-6;
        for (int p = 0; p < HCCN_SIM_NPROTO; p++)
            sw->proto[p].launch_s = 0.0;
    }
    if ((st = opt_us(c, o, "nvls_launch_us", &sw->nvls_launch_s)))
        return st;
    if (json_object_object_get_ex(o, "nvls_step_us", NULL))
        sw->nvls_step_on = 1;
    if ((st = opt_us(c, o, "nvls_step_us", &sw->nvls_step_s)))
        return st;
    if ((st = opt_us(c, o, "nvls_net_step_us", &sw->nvls_net_step_s)))
        return st;
    if ((st = opt_us(c, o, "host_us", &sw->host_s)))
        return st;
    if ((st = hccn_sim_jnum(c, o, "ring_plateau", 1.0, 0, 100.0, &x, &has)))
        return st;
    if (has)
        sw->ring_plateau = x;
    if ((st = opt_us(c, o, "send_overhead_us", &sw->send_s)))
        return st;
    if ((st = opt_us(c, o, "recv_overhead_us", &sw->recv_s)))
        return st;
    if ((st = hccn_sim_jint(c, o, "ranks_per_thread", 1, 1 << 20, &n, &has)))
        return st;
    if (has)
        sw->per_thread = (int)n;
    if ((st = hccn_sim_jint(c, o, "channels", 1, 32, &n, &has)))
        return st;
    if (has)
        sw->channels = (int)n;
    if ((st = hccn_sim_jnum(c, o, "allpairs_max_bytes", 0.0, 0, 0x1p62, &x,
                            &has)))
        return st;
    if (has)
        sw->allpairs_max_bytes = x;
    if ((st = hccn_sim_jint(c, o, "slots", 1, 64, &n, &has)))
        return st;
    if (has)
        sw->slots = (int)n;
    if ((st = parse_algorithms(c, o, sw)) ||
        (st = values(c, o, "link_efficiency", link_names, 1e-3, 0, 1.0, 1.0,
                     sw->link_eff)))
        return st;
    for (int p = 0; p < HCCN_SIM_NPROTO && st == HCCN_OK; p++) {
        json_object *v;
        const char *name = hccn_sim_proto_name(p);
        if (!json_object_object_get_ex(o, name, &v))
            continue;
        size_t old = hccn_sim_jkey(c, name);
        st = parse_proto(c, v, &sw->proto[p]);
        hccn_sim_jpop(c, old);
    }
    if (st == HCCN_OK && !sw->proto[0].on && !sw->proto[1].on &&
        !sw->proto[2].on)
        return hccn_sim_jfail(c, "no protocol is enabled");
    return st;
}

/* The model of no cost (the "none" preset: the bulk protocol alone, at
 * full efficiency), named by no stack. */
static void sw_none(hccn_sim_sw_t *sw)
{
    *sw = *hccn_sim_sw_preset("none");
    sw->stack[0] = '\0';
}

static hccn_status_t parse_stack(hccn_sim_jctx_t *c, json_object *doc,
                                 hccn_sim_sw_t *sw)
{
    const char *name;
    int has;
    hccn_status_t st = hccn_sim_jstring(c, doc, "stack", &name, &has);
    if (st != HCCN_OK || !has)
        return st;
    const hccn_sim_sw_t *p = hccn_sim_sw_preset(name);
    if (p == NULL) {
        char known[256] = "";
        for (const char *const *n = hccn_sim_sw_presets(); *n; n++)
            snprintf(known + strlen(known), sizeof(known) - strlen(known),
                     "%s%s", known[0] ? ", " : "", *n);
        return hccn_sim_jfail_key(c, "stack", "unknown stack \"%s\" "
                                  "(known: %s)", name, known);
    }
    *sw = *p;
    return HCCN_OK;
}

/* The model doc's "stack" and "software" give, over the model of no
 * cost. */
static hccn_status_t parse_model(hccn_sim_jctx_t *c, json_object *doc,
                                 hccn_sim_sw_t *sw)
{
    json_object *v;
    sw_none(sw);
    hccn_status_t st = parse_stack(c, doc, sw);
    if (st == HCCN_OK && json_object_object_get_ex(doc, "software", &v)) {
        size_t old = hccn_sim_jkey(c, "software");
        st = parse_fields(c, v, sw);
        hccn_sim_jpop(c, old);
    }
    return st;
}

hccn_status_t hccn_sim_sw_parse(json_object *doc, const char *source,
                                hccn_sim_sw_t **out, char *err,
                                size_t errlen)
{
    hccn_sim_jctx_t c = {.source = source, .err = err, .errlen = errlen};
    *out = NULL;
    if (!json_object_object_get_ex(doc, "software", NULL) &&
        !json_object_object_get_ex(doc, "stack", NULL))
        return HCCN_OK;
    hccn_sim_sw_t *sw = hccn_sim_malloc(sizeof(*sw));
    if (sw == NULL)
        return hccn_sim_jnomem(&c);
    hccn_status_t st = parse_model(&c, doc, sw);
    if (st != HCCN_OK) {
        hccn_sim_free(sw);
        return st;
    }
    *out = sw;
    return HCCN_OK;
}
