/*
 * Internals of the topology loader, shared by its files:
 *   topo.c        entry points: read, tokenize, parse, build; free
 *   topo_json.c   checked JSON access: typed getters that know the JSON path
 *   topo_parse.c  JSON document -> validated spec (the format's rules)
 *   topo_nics.c   the NICs of a node type (rails, efficiency, pcie_group)
 *   topo_links.c  the "links" fabric; topo_tree.c the "fat_tree" network
 *   topo_build.c  spec -> devices, links and the routing tables
 *   topo_route.c  routes and the summary (bisection bandwidth)
 * Never included outside device_sim/topo*.c.
 */
#ifndef HCCN_DEVICE_SIM_TOPO_INTERNAL_H
#define HCCN_DEVICE_SIM_TOPO_INTERNAL_H

#include "device_sim/software.h"
#include "device_sim/topo.h"

/* Limits of a topology file (docs/topology.md, "Limits"). */
#define HCCN_SIM_MAX_NODES_PER_TYPE 65536
#define HCCN_SIM_MAX_NPUS_PER_NODE 1024
#define HCCN_SIM_MAX_NPUS (1 << 20)
#define HCCN_SIM_MAX_LINKS (1 << 24)
#define HCCN_SIM_MAX_ARENA_MIB 1048576
#define HCCN_SIM_MAX_FILE_BYTES (64 << 20)
#define HCCN_SIM_MAX_LINKS_NPUS 256  /* NPUs of a "links" fabric */
#define HCCN_SIM_MAX_TIERS 3         /* tiers of a fat tree below its core */
/* Smallest bandwidth (GB/s), peak (TFLOPS) and slow-link factor: beyond
 * them a transfer of the largest size would take an infinite time. */
#define HCCN_SIM_MIN_GBPS 1e-6
#define HCCN_SIM_MIN_TFLOPS 1e-6
#define HCCN_SIM_MIN_FACTOR 1e-6

/* One node type of the file, in SI units (bytes/s, seconds, bytes). */
typedef struct {
    int nnodes;                  /* "count" */
    int nnpus;                   /* npu.count */
    size_t arena_bytes;
    double reduce_bw, mem_bw, peak_flops;
    double peak_flops_of[HCCN_DTYPE_COUNT];   /* 0: not given */
    hccn_sim_fabric_t fabric;    /* NONE when nnpus == 1 */
    double fab_bw, fab_lat;
    int bidirectional;           /* ring */
    int ngroups;                 /* pcie */
    int *group_of;               /* pcie: group of each local NPU */
    double host_bw, host_lat;    /* pcie */
    int p2p;                     /* pcie */
    double stage_eff, stage_duplex; /* pcie without p2p: fabric.staged
                                    (topo_staged.c); 0 with p2p */
    int nconns;                  /* links: connections listed */
    int *conn;                   /* links: a, b, multiplicity per connection */
    int *pair;                   /* links: n x n; a->b is link base + pair
                                    (>= 0), or relay r as -(r + 2); -1 for
                                    a == b (topo_links.c) */
    int nnics;                   /* 0 when "nics" is absent */
    int *nic_of;                 /* local NPU -> NIC, -1 for none */
    double *nic_bw, *nic_lat, *nic_attach_bw; /* per NIC; attach may be inf */
    int *nic_group;              /* per NIC: the PCIe switch (pcie_group) it
                                    sits under, -1 when attached to NPUs */
    double red_bw;               /* fabric.reduce.bw_GBps in bytes/s; 0:
                                    the switch does not reduce */
    unsigned red_dtypes, red_ops;/* bit per hccn_dtype_t / hccn_redop_t */
} hccn_sim_type_spec_t;

typedef enum {
    HCCN_SIM_NET_NONE,
    HCCN_SIM_NET_SWITCH,
    HCCN_SIM_NET_LEAF_SPINE,
    HCCN_SIM_NET_FAT_TREE,
} hccn_sim_net_kind_t;

typedef struct {
    hccn_sim_net_kind_t kind;
    double lat, spine_lat;       /* seconds */
    int nodes_per_leaf;          /* leaf_spine; fat_tree: tier_children[0] */
    double oversub;
    int ntiers;                  /* fat_tree: levels */
    int tier_children[HCCN_SIM_MAX_TIERS];
    double tier_oversub[HCCN_SIM_MAX_TIERS];
    double tier_lat[HCCN_SIM_MAX_TIERS];  /* seconds */
    double red_bw, red_lat;      /* network.reduce: bytes/s, seconds; red_bw
                                    0: the network does not reduce */
    unsigned red_dtypes, red_ops;/* bit per hccn_dtype_t / hccn_redop_t */
} hccn_sim_net_spec_t;

/* A validated file. Owns its strings and arrays (hccn_sim_spec_free). */
typedef struct {
    char *name;                  /* "name", NULL when absent */
    int ntypes;
    hccn_sim_type_spec_t *types;
    hccn_sim_net_spec_t net;
    int nnodes, nnpus;
} hccn_sim_spec_t;

/* Routing tables, built once at load time, read by hccn_sim_topo_route.
 * Every entry is a link index, or -1 when the link does not exist. */
typedef struct {
    int fab_up, fab_down;        /* NPU <-> its (PCIe) switch */
    int nic_up, nic_down;        /* NPU <-> its NIC */
    int nic;                     /* index into priv->nics, -1 for none */
    int group;                   /* index into priv->groups (pcie), -1 */
    int stage_out, stage_in;     /* pcie without p2p: the staged copy's
                                    links (topo_staged.c), else -1 */
    int stage;                   /* pcie without p2p: the budget both
                                    directions share, else -1 */
} hccn_sim_npu_tab_t;

typedef struct {
    int out, in;                 /* NIC -> network, network -> NIC */
    int group;                   /* PCIe switch it sits under (index into
                                    priv->groups), -1 when attached to NPUs */
    int sw_up, sw_down;          /* NIC -> its PCIe switch, and back */
} hccn_sim_nic_tab_t;

typedef struct {
    int base;                    /* mesh: a->b is base + a*(n-1) + b', ring:
                                    forward link i -> i+1 is base + i */
    int back;                    /* ring: link i+1 -> i is back + i; -1 */
    int p2p;                     /* pcie */
    double stage_eff, stage_duplex; /* pcie without p2p, else 0 */
    const int *pair;             /* links: the type's pair table */
} hccn_sim_node_tab_t;

typedef struct {
    int up, down;                /* PCIe switch <-> host, leaf <-> spine */
} hccn_sim_uplink_t;

typedef struct {
    hccn_sim_npu_tab_t *npu;     /* per NPU */
    hccn_sim_nic_tab_t *nics;    /* per NIC of the cluster */
    hccn_sim_node_tab_t *node;   /* per node */
    hccn_sim_uplink_t *groups;   /* per PCIe switch of the cluster */
    hccn_sim_uplink_t *leaves;   /* per leaf (a fat tree's tier 0) */
    hccn_sim_uplink_t *upper;    /* fat tree: per switch of tiers 1.. */
    int ntiers, nupper;
    int tier_base[HCCN_SIM_MAX_TIERS];    /* tier k's first in upper */
    int tier_children[HCCN_SIM_MAX_TIERS];
    int nnics, ngroups, nleaves;
    hccn_sim_net_kind_t net;
    int ntypes;
    int **pairs;                 /* per node type: its links pair table */
} hccn_sim_topo_priv_t;

/* Validates doc and fills spec (zeroed first); a fabric or NIC that gives
 * no efficiency takes link_eff[its HCCN_SIM_LINK_* kind] (the software
 * model's link_eff; NULL: 1). On error writes the one-line message
 * "<source>: <json path>: <rule>" to err, frees what it allocated and
 * returns HCCN_ERR_TOPOLOGY or HCCN_ERR_NOMEM. */
hccn_status_t hccn_sim_spec_parse(json_object *doc, const char *source,
                                  const double *link_eff,
                                  hccn_sim_spec_t *spec, char *err,
                                  size_t errlen);
void hccn_sim_spec_free(hccn_sim_spec_t *spec);

/* Directed links one node of type t contributes (fabric, NIC attach, NIC to
 * network when has_net). Used for the link limit and by the builder. */
long long hccn_sim_type_links(const hccn_sim_type_spec_t *t, int has_net);

/* Number of leaves of a leaf/spine network or fat tree (0 for other
 * networks). */
int hccn_sim_spec_leaves(const hccn_sim_spec_t *spec);

/* Builds the graph of a validated spec. Returns HCCN_ERR_NOMEM or HCCN_OK;
 * *out owns copies of everything (the spec may be freed afterwards). */
hccn_status_t hccn_sim_topo_build(const hccn_sim_spec_t *spec,
                                  hccn_sim_topo_t **out);

/* A malloc'ed copy of the first n bytes of s, NUL-terminated; NULL when out
 * of memory. */
char *hccn_sim_topo_strndup(const char *s, size_t n);

/* Formats "<prefix>: " followed by fmt into err (truncated, NUL-terminated,
 * control characters replaced by '?' so the message stays one line). */
void hccn_sim_topo_errf(char *err, size_t errlen, const char *prefix,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ------------------------------------------------------------------------ */
/* JSON access (topo_json.c). A context carries the source name, the error
 * buffer and the JSON path of the value being checked. Every function that
 * returns a status writes "<source>: <path>: <rule>" on error and returns
 * HCCN_ERR_TOPOLOGY (HCCN_ERR_NOMEM for jnomem).                           */

typedef struct {
    const char *source;
    char *err;
    size_t errlen;
    char path[512];
    size_t len;
    const double *link_eff;   /* the stack's efficiency of a fabric or NIC
                                 whose file gives none, per HCCN_SIM_LINK_*
                                 kind (hccn_sim_sw_t.link_eff); NULL: 1 */
} hccn_sim_jctx_t;

/* Append ".key" ("key" at the top) or "[i]" to the path; return the length
 * that hccn_sim_jpop restores. */
size_t hccn_sim_jkey(hccn_sim_jctx_t *c, const char *key);
size_t hccn_sim_jindex(hccn_sim_jctx_t *c, size_t i);
void hccn_sim_jpop(hccn_sim_jctx_t *c, size_t old);

/* Report a broken rule at the path (+ ".key"); always HCCN_ERR_TOPOLOGY. */
hccn_status_t hccn_sim_jfail(hccn_sim_jctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
hccn_status_t hccn_sim_jfail_key(hccn_sim_jctx_t *c, const char *key,
                                 const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
hccn_status_t hccn_sim_jnomem(hccn_sim_jctx_t *c);

/* The value as written in the file, shortened, for "(got ...)"; returns
 * buf->s. */
typedef struct {
    char s[48];
} hccn_sim_jgot_t;
const char *hccn_sim_jgot(json_object *v, hccn_sim_jgot_t *buf);

/* Typed getters for obj.key. present == NULL: the key is required; else
 * *present says whether it was there (*out untouched when absent). */
hccn_status_t hccn_sim_jint(hccn_sim_jctx_t *c, json_object *obj,
                            const char *key, long long lo, long long hi,
                            long long *out, int *present);
/* A finite number with lo < x (lo_open) or lo <= x, and x <= hi. */
hccn_status_t hccn_sim_jnum(hccn_sim_jctx_t *c, json_object *obj,
                            const char *key, double lo, int lo_open,
                            double hi, double *out, int *present);
/* As hccn_sim_jnum, and also x >= floor: the smallest value that keeps
 * every time finite (a bandwidth of 1e-300 GB/s is > 0 but absurd). The
 * message gives the range floor..hi. */
hccn_status_t hccn_sim_jnum_floor(hccn_sim_jctx_t *c, json_object *obj,
                                  const char *key, double lo, int lo_open,
                                  double floor, double hi, double *out,
                                  int *present);
hccn_status_t hccn_sim_jbool(hccn_sim_jctx_t *c, json_object *obj,
                             const char *key, int *out, int *present);
hccn_status_t hccn_sim_jstring(hccn_sim_jctx_t *c, json_object *obj,
                               const char *key, const char **out,
                               int *present);
/* A value of the given JSON type; what names it ("an array"). */
hccn_status_t hccn_sim_jtyped(hccn_sim_jctx_t *c, json_object *obj,
                              const char *key, json_type type,
                              const char *what, json_object **out,
                              int *present);

/* A bandwidth key (GB/s, 1e-6..1e9) in bytes/s; a latency key (us,
 * 0..1e9) in seconds. present as for the typed getters above. */
hccn_status_t hccn_sim_jbw(hccn_sim_jctx_t *c, json_object *o,
                          const char *key, double *out, int *present);
hccn_status_t hccn_sim_jlat(hccn_sim_jctx_t *c, json_object *o,
                           const char *key, double *out, int *present);
/* o's optional "efficiency" (0.001..1; default the stack's for a link of
 * this kind, c->link_eff[kind], or 1): multiplies *bw by it and by mult (a
 * NIC's rails), and *bw2 (when not NULL) by it. */
hccn_status_t hccn_sim_jefficiency(hccn_sim_jctx_t *c, json_object *o,
                                   int kind, double *bw, double *bw2,
                                   int mult);

/* v (at the current path) is an integer in lo..hi. */
hccn_status_t hccn_sim_jcheck_int(hccn_sim_jctx_t *c, json_object *v,
                                  long long lo, long long hi, long long *out);
/* Element i of array arr is an NPU index in 0..n-1. */
hccn_status_t hccn_sim_jelem(hccn_sim_jctx_t *c, json_object *arr, size_t i,
                             int n, int *out);
/* o[key], which must be an array (absent: a failure naming it). */
hccn_status_t hccn_sim_jarray(hccn_sim_jctx_t *c, json_object *o,
                              const char *key, json_object **out);
/* v (at the current path) must be an object. */
hccn_status_t hccn_sim_jobject(hccn_sim_jctx_t *c, json_object *v);
/* The NPUs listed in array arr (non-empty, each in 0..n-1) go to owner k:
 * owner[x] = k, failing on one another owner has ("NPU x <taken>[j]"). */
hccn_status_t hccn_sim_jclaim(hccn_sim_jctx_t *c, json_object *arr, int n,
                              int *owner, int k, const char *taken);
/* Fails on the first key of obj, in file order, not in the NULL-terminated
 * allowed list. */
hccn_status_t hccn_sim_jkeys(hccn_sim_jctx_t *c, json_object *obj,
                             const char *const *allowed);
/* Fails when obj has key: "only allowed <why>". */
hccn_status_t hccn_sim_jforbid(hccn_sim_jctx_t *c, json_object *obj,
                               const char *key, const char *why);

/* fabric.reduce of f (topo_reduce.c), at the path of the fabric: absent
 * leaves t->red_bw 0; on a fabric other than "switch" it is an error. */
hccn_status_t hccn_sim_parse_reduce(hccn_sim_jctx_t *c, json_object *f,
                                    hccn_sim_type_spec_t *t);
/* Switch reduction units of the whole cluster (one per node whose switch
 * reduces): the links added after all others. */
long long hccn_sim_reduce_units(const hccn_sim_spec_t *spec);
/* network.reduce of o (topo_reduce.c), at the path of the network: absent
 * leaves net->red_bw 0; on a network other than "switch" it is an error. */
hccn_status_t hccn_sim_parse_net_reduce(hccn_sim_jctx_t *c, json_object *o,
                                        hccn_sim_net_spec_t *net);

/* node_types[i].nics (topo_nics.c), at the path of "nics"; t's fabric is
 * parsed already. */
hccn_status_t hccn_sim_parse_nics(hccn_sim_jctx_t *c, json_object *v,
                                  hccn_sim_type_spec_t *t);

/* The "links" fabric (topo_links.c). Parses fabric.links of f into t's
 * connections and pair table (relays chosen), failing at the path. */
hccn_status_t hccn_sim_parse_links(hccn_sim_jctx_t *c, json_object *f,
                                   hccn_sim_type_spec_t *t);
/* Adds node nd's links (2 per connection, in list order, a->b first) at
 * *nlink and sets tab->base; the caller points tab->pair at a copy of the
 * type's pair table that topo owns. */
void hccn_sim_build_links(hccn_sim_topo_t *topo, int *nlink,
                          const hccn_sim_node_t *nd,
                          const hccn_sim_type_spec_t *t,
                          hccn_sim_node_tab_t *tab);
/* The route from local NPU a to b (a != b) of an n-NPU links node: 1 link,
 * or 2 through the relay. */
int hccn_sim_route_links(const hccn_sim_node_tab_t *tab, int n, int a, int b,
                         int *out);
/* Bandwidth of the links from local NPUs [0, half) to [half, n). */
double hccn_sim_links_cut(const hccn_sim_topo_t *topo,
                          const hccn_sim_node_tab_t *tab,
                          const hccn_sim_node_t *nd, int half);

/* The "fat_tree" network (topo_tree.c). Parses o's "levels" into net. */
hccn_status_t hccn_sim_parse_tree(hccn_sim_jctx_t *c, json_object *o,
                                  hccn_sim_net_spec_t *net);
/* Switches of each tier (per_tier, ntiers entries) of spec's fat tree;
 * returns their total. */
int hccn_sim_tree_switches(const hccn_sim_spec_t *spec, int *per_tier);
/* Adds the tiers' switches at device *ndev (== dev0; leaves first, the core
 * last) and their uplinks at *nlink, tier by tier; leaf_bw[l] is what comes
 * up into leaf l (its NICs). Fills p->leaves and p->upper. Returns -1
 * when out of memory, else 0. */
int hccn_sim_build_tree(hccn_sim_topo_t *t, hccn_sim_topo_priv_t *p,
                         const hccn_sim_spec_t *spec, const double *leaf_bw,
                         int dev0, int *ndev, int *nlink);
/* The uplinks (up and down) of switch i of tier k of a fat tree, or of
 * leaf i (k 0) of a leaf/spine network. */
hccn_sim_uplink_t *hccn_sim_tree_uplink(const hccn_sim_topo_priv_t *p, int k,
                                        int i);

/* The network links from leaf la up to the common ancestor and down to
 * leaf lb (none when la == lb); returns their number. */
int hccn_sim_route_tree(const hccn_sim_topo_priv_t *p, int la, int lb,
                        int *out);
/* Bisection through the tree, given per leaf what its first-half nodes can
 * send (a) and its second-half nodes receive (b); both arrays are used as
 * scratch. */
double hccn_sim_tree_bisection(const hccn_sim_topo_t *topo, double *a,
                               double *b);

/* fabric.staged of a pcie fabric f whose p2p is parsed (topo_staged.c):
 * the defaults when p2p is false and it is absent, an error when p2p is
 * true and it is present; t->stage_eff stays 0 with p2p. */
hccn_status_t hccn_sim_parse_staged(hccn_sim_jctx_t *c, json_object *f,
                                    hccn_sim_type_spec_t *t);
/* Adds the stage links of every NPU of pcie node nd without p2p at *nlink
 * (stage out, stage in, stage; each NPU -> itself) and fills tab's and the
 * NPUs' tables. */
void hccn_sim_build_staged(hccn_sim_topo_t *topo, hccn_sim_topo_priv_t *p,
                           int *nlink, const hccn_sim_node_t *nd,
                           const hccn_sim_type_spec_t *t,
                           hccn_sim_node_tab_t *tab);
/* The staged route from NPU a to NPU b of one pcie node without p2p: the
 * sender's stage links, the PCIe tree through the host, the receiver's
 * stage links; returns its length (8). */
int hccn_sim_route_staged(const hccn_sim_topo_priv_t *p, int a, int b,
                          int *out);

/* Parses doc's optional "faults" against the built graph (topo_faults.c). */
hccn_status_t hccn_sim_topo_parse_faults(json_object *doc, const char *source,
                                         hccn_sim_topo_t *topo, char *err,
                                         size_t errlen);

/* Parses doc's optional "stack" and "software" (topo_software.c) into a
 * new model in *out, or NULL when the file has neither; errors as
 * hccn_sim_spec_parse's. Parsed before the rest of the file, whose
 * links take the model's link_eff. */
hccn_status_t hccn_sim_sw_parse(json_object *doc, const char *source,
                                hccn_sim_sw_t **out, char *err,
                                size_t errlen);

#endif /* HCCN_DEVICE_SIM_TOPO_INTERNAL_H */
