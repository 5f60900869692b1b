/*
 * Topology file validation, the NICs of a node type (node_types[i].nics,
 * docs/topology.md "nics"): the array form, the block form, rails, link
 * efficiency and NICs under a PCIe switch. Called by topo_parse.c with the
 * fabric already parsed (pcie_group needs its groups).
 */
#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

#include <math.h>
#include <stdlib.h>

#define MIN_EFFICIENCY 1e-3
#define MAX_RAILS 64

typedef hccn_sim_jctx_t jctx_t;

/* The optional "efficiency" of o (achievable fraction of the wire rate,
 * MIN_EFFICIENCY..1, default the stack's for a link of this kind, else 1):
 * multiplies *bw and, when given, *bw2, by it and by mult (a NIC's
 * rails). */
hccn_status_t hccn_sim_jefficiency(hccn_sim_jctx_t *c, json_object *o,
                                   int kind, double *bw, double *bw2,
                                   int mult)
{
    double eff = c->link_eff != NULL ? c->link_eff[kind] : 1.0;
    int has = 0;
    hccn_status_t st = hccn_sim_jnum(c, o, "efficiency", MIN_EFFICIENCY, 0,
                                     1.0, &eff, &has);
    if (st)
        return st;
    *bw *= eff * mult;
    if (bw2 != NULL)
        *bw2 *= eff;
    return HCCN_OK;
}

static hccn_status_t nic_alloc(jctx_t *c, hccn_sim_type_spec_t *t, int n)
{
    t->nnics = n;
    t->nic_of = hccn_sim_malloc((size_t)t->nnpus * sizeof(int));
    t->nic_bw = hccn_sim_calloc((size_t)n, sizeof(double));
    t->nic_lat = hccn_sim_calloc((size_t)n, sizeof(double));
    t->nic_attach_bw = hccn_sim_calloc((size_t)n, sizeof(double));
    t->nic_group = hccn_sim_malloc((size_t)n * sizeof(int));
    if (!t->nic_of || !t->nic_bw || !t->nic_lat || !t->nic_attach_bw ||
        !t->nic_group)
        return hccn_sim_jnomem(c);
    for (int k = 0; k < n; k++)
        t->nic_group[k] = -1;
    for (int j = 0; j < t->nnpus; j++)
        t->nic_of[j] = -1;
    return HCCN_OK;
}

/* NIC k's optional pcie_group: a PCIe switch of a pcie fabric, which the NIC
 * then hangs off instead of off its NPUs. */
static hccn_status_t parse_nic_group(jctx_t *c, json_object *o,
                                     hccn_sim_type_spec_t *t, int k)
{
    long long g = 0;
    int has = 0;
    if (t->fabric != HCCN_SIM_FABRIC_PCIE)
        return hccn_sim_jforbid(c, o, "pcie_group",
                                "when fabric.type is \"pcie\"");
    hccn_status_t st = hccn_sim_jint(c, o, "pcie_group", 0, t->ngroups - 1,
                                     &g, &has);
    if (st == HCCN_OK && has)
        t->nic_group[k] = (int)g;
    return st;
}

/* bw_GBps, lat_us and attach_bw_GBps of NIC k (both forms share them). */
static hccn_status_t parse_nic_link(jctx_t *c, json_object *o,
                                    hccn_sim_type_spec_t *t, int k)
{
    int has;
    long long rails = 1;
    t->nic_attach_bw[k] = INFINITY;
    hccn_status_t st;
    if ((st = hccn_sim_jbw(c, o, "bw_GBps", &t->nic_bw[k], NULL)) ||
        (st = hccn_sim_jlat(c, o, "lat_us", &t->nic_lat[k], NULL)) ||
        (st = hccn_sim_jbw(c, o, "attach_bw_GBps", &t->nic_attach_bw[k], &has)) ||
        (st = hccn_sim_jint(c, o, "rails", 1, MAX_RAILS, &rails, &has)) ||
        (st = parse_nic_group(c, o, t, k)))
        return st;
    return hccn_sim_jefficiency(c, o, HCCN_SIM_LINK_NIC, &t->nic_bw[k], NULL,
                                (int)rails);
}

/* nics[k].npus: NPUs that no earlier NIC serves. */
static hccn_status_t parse_nic_npus(jctx_t *c, json_object *arr,
                                    hccn_sim_type_spec_t *t, int k)
{
    return hccn_sim_jclaim(c, arr, t->nnpus, t->nic_of, k,
                           "is already served by nics");
}

static hccn_status_t parse_nic_entry(jctx_t *c, json_object *o,
                                     hccn_sim_type_spec_t *t, int k)
{
    static const char *const keys[] = {"npus", "bw_GBps", "lat_us",
                                       "attach_bw_GBps", "rails",
                                       "efficiency", "pcie_group", NULL};
    json_object *arr = NULL;
    hccn_status_t st;
    if ((st = hccn_sim_jobject(c, o)) || (st = hccn_sim_jkeys(c, o, keys)) ||
        (st = hccn_sim_jarray(c, o, "npus", &arr)))
        return st;
    size_t old = hccn_sim_jkey(c, "npus");
    st = parse_nic_npus(c, arr, t, k);
    hccn_sim_jpop(c, old);
    return st ? st : parse_nic_link(c, o, t, k);
}

static hccn_status_t parse_nic_array(jctx_t *c, json_object *v,
                                     hccn_sim_type_spec_t *t)
{
    size_t n = json_object_array_length(v);
    hccn_status_t st;
    if (n == 0)
        return hccn_sim_jfail(c, "must not be empty");
    if (n > (size_t)t->nnpus)
        return hccn_sim_jfail(c, "has %zu NICs for %d NPUs", n, t->nnpus);
    if ((st = nic_alloc(c, t, (int)n)))
        return st;
    for (size_t k = 0; k < n && st == HCCN_OK; k++) {
        size_t old = hccn_sim_jindex(c, k);
        st = parse_nic_entry(c, json_object_array_get_idx(v, k), t, (int)k);
        hccn_sim_jpop(c, old);
    }
    return st;
}

/* {"count": k, ...}: k identical NICs serving equal blocks of NPUs. */
static hccn_status_t parse_nic_block(jctx_t *c, json_object *v,
                                     hccn_sim_type_spec_t *t)
{
    static const char *const keys[] = {"count", "bw_GBps", "lat_us",
                                       "attach_bw_GBps", "rails",
                                       "efficiency", "pcie_group", NULL};
    long long n = 0;
    hccn_status_t st;
    if ((st = hccn_sim_jkeys(c, v, keys)) ||
        (st = hccn_sim_jint(c, v, "count", 1, t->nnpus, &n, NULL)))
        return st;
    if (t->nnpus % n != 0)
        return hccn_sim_jfail_key(c, "count", "must divide npu.count (%d) "
                                  "(got %lld)", t->nnpus, n);
    if ((st = nic_alloc(c, t, (int)n)))
        return st;
    for (int j = 0; j < t->nnpus; j++)
        t->nic_of[j] = j / (t->nnpus / (int)n);
    for (int k = 0; k < n && st == HCCN_OK; k++)
        st = parse_nic_link(c, v, t, k);
    return st;
}

hccn_status_t hccn_sim_parse_nics(hccn_sim_jctx_t *c, json_object *v,
                                  hccn_sim_type_spec_t *t)
{
    hccn_sim_jgot_t got;
    if (json_object_is_type(v, json_type_array))
        return parse_nic_array(c, v, t);
    if (json_object_is_type(v, json_type_object))
        return parse_nic_block(c, v, t);
    return hccn_sim_jfail(c, "must be an array of NICs or an object (got %s)",
                          hccn_sim_jgot(v, &got));
}
