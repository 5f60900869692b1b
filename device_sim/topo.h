/*
 * The topology graph: what a topology file (docs/topology.md) describes,
 * turned into devices, directed links and routes between NPUs.
 *
 * NPUs are numbered 0..nnpus-1 in file order: node types in order, the nodes
 * of a type in order, the NPUs of a node in order. That number is the NPU's
 * rank in the world communicator.
 *
 * Every physical connection is two links, one per direction, each its own
 * bandwidth resource. A route is the ordered list of links a message from one
 * NPU to another crosses; its latency is the sum of its links' latencies plus
 * the latency of every switch it passes through (docs/topology.md says which
 * link carries which latency).
 */
#ifndef HCCN_DEVICE_SIM_TOPO_H
#define HCCN_DEVICE_SIM_TOPO_H

#include <limits.h>
#include <stddef.h>
#include <json-c/json.h>

#include "hccn/hccn.h"

#define HCCN_SIM_ROUTE_MAX 16   /* links in the longest possible route */
#define HCCN_SIM_NAME_MAX 48

typedef enum {
    HCCN_SIM_DEV_NPU,
    HCCN_SIM_DEV_SWITCH,  /* intra-node switch, leaf, spine or network switch */
    HCCN_SIM_DEV_NIC,
    HCCN_SIM_DEV_BRIDGE,  /* PCIe switch or host bridge */
} hccn_sim_dev_kind_t;

typedef enum {
    HCCN_SIM_FABRIC_NONE,   /* single-NPU node */
    HCCN_SIM_FABRIC_MESH,
    HCCN_SIM_FABRIC_SWITCH,
    HCCN_SIM_FABRIC_RING,
    HCCN_SIM_FABRIC_PCIE,
    HCCN_SIM_FABRIC_LINKS,  /* explicit connection list (topo_links.c) */
} hccn_sim_fabric_t;

/* Links carry a level: 0 inside a node, 1 between a node and the network,
 * 2 inside the network (leaf to spine). */
enum { HCCN_SIM_LEVEL_INTRA = 0, HCCN_SIM_LEVEL_NIC = 1, HCCN_SIM_LEVEL_NET = 2 };

typedef struct {
    hccn_sim_dev_kind_t kind;
    int node;                    /* -1 for devices of the network */
    double lat;                  /* seconds added by crossing it (switches) */
    char name[HCCN_SIM_NAME_MAX];/* "node1.npu3", "node0.nic2", "leaf0" ... */
} hccn_sim_dev_t;

typedef struct {
    int src, dst;                /* device indices */
    double bw;                   /* bytes/s in this direction; INFINITY = free */
    double lat;                  /* seconds */
    int level;
} hccn_sim_link_t;

typedef struct {
    size_t arena_bytes;
    double reduce_bw;            /* bytes/s reduced by this NPU */
    double mem_bw;               /* bytes/s of a local copy; 0 = copies free */
    double peak_flops;           /* FLOP/s; 0 when the file gives none */
    double peak_flops_of[HCCN_DTYPE_COUNT]; /* per dtype (peak_TFLOPS as an
                                    object); 0 where the file gives none */
    int node, local;             /* node index and index inside the node */
    int dev;                     /* device index of this NPU */
    int nic;                     /* device index of its NIC, -1 if none */
} hccn_sim_npu_t;

typedef struct {
    int first_npu, nnpus;        /* NPUs first_npu .. first_npu+nnpus-1 */
    int type;                    /* index into the file's node_types */
    hccn_sim_fabric_t fabric;
    int leaf;                    /* leaf switch index, -1 when none */
    int reduce_link;             /* its switch's reduction unit (a link from
                                    the switch to itself), -1 when none */
    unsigned reduce_dtypes, reduce_ops; /* what the unit reduces: bit per
                                    hccn_dtype_t / hccn_redop_t */
    double nic_bw;               /* bytes/s its NICs carry to the network,
                                    together (0: none, or no network) */
} hccn_sim_node_t;

typedef struct hccn_sim_topo hccn_sim_topo_t;

/* The software model (device_sim/software.h). */
typedef struct hccn_sim_sw hccn_sim_sw_t;

/* A planned fault (the file's "faults", or hccn_cluster_add_fault). */
typedef enum {
    HCCN_SIM_FAULT_LINK_DOWN,    /* link unusable from `at` */
    HCCN_SIM_FAULT_LINK_SLOW,    /* link bandwidth x factor from `at` */
    HCCN_SIM_FAULT_NPU_SLOW,     /* NPU's local work and compute / factor
                                    ... i.e. take factor times longer */
    HCCN_SIM_FAULT_NPU_FAIL,     /* NPU fails at `at` */
} hccn_sim_fault_kind_t;

typedef struct {
    hccn_sim_fault_kind_t kind;
    int link;                    /* link faults: link index */
    int npu;                     /* NPU faults: NPU index */
    double at;                   /* seconds of simulated time */
    double factor;               /* *_SLOW: bandwidth x factor (links),
                                    time x factor (NPUs) */
} hccn_sim_fault_t;

struct hccn_sim_topo {
    char *name;                  /* "name" field, or the file's base name */
    char *source;                /* file path or the name given for a string */
    int nnodes, nnpus, ndevs, nlinks;
    hccn_sim_node_t *nodes;
    hccn_sim_npu_t *npus;
    hccn_sim_dev_t *devs;
    hccn_sim_link_t *links;
    void *priv;                  /* loader-private routing tables */
    int nfaults;
    hccn_sim_fault_t *faults;    /* the file's "faults", in file order */
    hccn_sim_sw_t *sw;           /* "stack"/"software"; NULL: none */
    int net_reduce_link;         /* the network switch's reduction unit (a
                                    link from it to itself), -1 when none */
    unsigned net_reduce_dtypes, net_reduce_ops; /* what it reduces */
};

/* What selection sees of topo under the faults (device_sim/fault_view.c):
 * a copy whose links and NPUs carry the faults in effect when a run starts
 * (the rest shared with topo, which must outlive it), or NULL when no
 * fault changes anything (*nomem set when there was no memory). */
hccn_sim_topo_t *hccn_sim_topo_fault_view(const hccn_sim_topo_t *topo,
                                          const hccn_sim_fault_t *faults,
                                          int n, int *nomem);
void hccn_sim_topo_fault_view_free(hccn_sim_topo_t *view);

/* The index of the link named "SRC->DST" (device names), or -1. */
int hccn_sim_topo_find_link(const hccn_sim_topo_t *topo, const char *name);

/* The same lookup for many names: an index of topo's device and link
 * names, built in O(n log n), answering in O(log n). NULL on no memory.
 * topo must outlive it. */
typedef struct hccn_sim_link_index hccn_sim_link_index_t;
hccn_sim_link_index_t *hccn_sim_link_index_new(const hccn_sim_topo_t *topo);
int hccn_sim_link_index_find(const hccn_sim_link_index_t *ix, const char *name);
void hccn_sim_link_index_free(hccn_sim_link_index_t *ix);

/* Loads and validates a topology. On error returns HCCN_ERR_TOPOLOGY (or
 * HCCN_ERR_IO / HCCN_ERR_NOMEM), *out is NULL and err holds one line:
 * "<source>: <json path>: <rule broken>" (with line:column for JSON syntax
 * errors). */
hccn_status_t hccn_sim_topo_load_file(const char *path, hccn_sim_topo_t **out,
                                      char *err, size_t errlen);
hccn_status_t hccn_sim_topo_load_string(const char *json, const char *source,
                                        hccn_sim_topo_t **out, char *err,
                                        size_t errlen);
/* As above from a parsed document (not consumed; the caller keeps it). */
hccn_status_t hccn_sim_topo_load_json(json_object *doc, const char *source,
                                      hccn_sim_topo_t **out, char *err,
                                      size_t errlen);

void hccn_sim_topo_free(hccn_sim_topo_t *topo);

/* The file a topology argument names (topo_find.c): arg itself when it is
 * an existing file or an absolute path; else arg's file name, with or
 * without ".json", looked up in the config directories. Writes the path to
 * path; HCCN_ERR_IO with err listing where it looked when none has it.
 * hccn_sim_topo_load_file does this itself. */
hccn_status_t hccn_sim_topo_find(const char *arg, char *path, size_t pathlen,
                                 char *err, size_t errlen);

/* The config directories, in lookup order (installed share/hccn/configs,
 * then the source tree's configs/ for a build-tree binary): writes up to
 * max and returns how many. Directories that do not exist are included. */
int hccn_sim_topo_dirs(char (*dirs)[PATH_MAX], int max);

/* The route from NPU a to NPU b (a != b): writes up to HCCN_SIM_ROUTE_MAX
 * link indices to links, returns their number, and sets *lat to the route's
 * latency in seconds. Returns 0 for a == b (no links, zero latency). Pure and
 * thread-safe; O(route length). */
int hccn_sim_topo_route(const hccn_sim_topo_t *topo, int a, int b,
                        int *links, double *lat);

/* Whether every node of topo is a copy of node 0 (docs/performance.md,
 * Folding): the same NPUs, links and routes inside, the same way out to
 * the network and in, no fault plan, and, on several leaves, the same tree
 * above every node (as many nodes under each switch of a tier, the same
 * uplinks). If so, returns 0 with rep[r] = the copy in node 0 of NPU r
 * (nnpus entries), link_map[l] = that of link l and link_div[l] = how many
 * nodes share link l (nlinks entries each; node 0's own and unused links
 * map to themselves, and a node's own link is shared by 1): folded, each
 * of node 0's flows on a link stands for link_div flows. Else -1 with why
 * saying what differs. */
int hccn_sim_topo_fold(const hccn_sim_topo_t *topo, int *rep, int *link_map,
                       double *link_div, char *why, size_t len);

/* As hccn_sim_topo_fold, onto the first node of every leaf instead of
 * node 0 (docs/performance.md, "Folding onto every leaf"), where the
 * leaves or the tree above them differ: every leaf that holds nodes holds
 * as many (two or more), and every node is a copy of its leaf's first
 * (the same NPUs, links and routes inside, the same way up to its leaf
 * and down). rep[r] is then the copy of NPU r in its leaf's first node,
 * link_map[l] that of link l (every link above the nodes maps to
 * itself), and link_div[l] the nodes of a leaf on every link above the
 * nodes (each node played carries the traffic of them all), 1 on the
 * nodes' own. */
int hccn_sim_topo_fold_leaves(const hccn_sim_topo_t *topo, int *rep,
                              int *link_map, double *link_div, char *why,
                              size_t len);

/* How far apart NPUs a and b are: 0 in one node, 1 on one leaf (or a
 * network of one switch), then one more for every tier of switches a
 * route between them climbs. Routes between pairs as far apart cross
 * the same tiers. */
int hccn_sim_topo_apart(const hccn_sim_topo_t *topo, int a, int b);

/* The other route from NPU a to NPU b where the topology has one that
 * shares no link with hccn_sim_topo_route's: on a ring with links both
 * ways, the longer way round. -1 where there is none (every other fabric
 * and the inter-node network have one structural route: NPUs do not
 * forward but for a links fabric's one relay, and switches, NICs and the
 * spine are single devices). Used to send traffic around a downed link;
 * where it gives nothing whole, the engine tries a relay NPU
 * (device_sim/flow_relay.c). */
int hccn_sim_topo_route_alt(const hccn_sim_topo_t *topo, int a, int b,
                            int *links, double *lat);

/* Staged PCIe traffic of node (device_sim/topo_staged.c): 1 with its
 * fabric.staged efficiency and duplex when its pcie fabric has no p2p, else
 * 0 (and 0, 0); either pointer may be NULL. */
int hccn_sim_topo_staged(const hccn_sim_topo_t *topo, int node,
                         double *efficiency, double *duplex);

/* In-switch reduction (device_sim/topo_reduce.c). The reduction unit of
 * node's switch when it reduces dtype with op (hccn_dtype_t, hccn_redop_t
 * values), else -1. */
int hccn_sim_topo_reduce_node(const hccn_sim_topo_t *topo, int node,
                              int dtype, int op);

/* The network switch's reduction unit when it reduces dtype with op, else
 * -1 (network.reduce; docs/topology.md). */
int hccn_sim_topo_reduce_net(const hccn_sim_topo_t *topo, int dtype, int op);

/* Where a route from NPU src (links[0..n)) reaches the reducing switch of
 * src's node, or else the reducing network switch: the index k of the
 * link entering it (links[0..k] is the way up, the rest the way down),
 * with *unit its reduction unit; -1 when the route passes neither. */
int hccn_sim_topo_reduce_split(const hccn_sim_topo_t *topo, int src,
                               const int *links, int n, int *unit);

/* Summary figures printed by hccn-topo. */
typedef struct {
    int links_per_level[3];      /* directed links (wires: an NPU's stage
                                    links, topo_staged.c, are not counted) */
    double bw_per_level[3];      /* bytes/s of one link of that level (min) */
    double bisection_bw;         /* bytes/s, one direction, across the
                                    worst balanced cut of the NPUs */
} hccn_sim_topo_summary_t;

void hccn_sim_topo_summarize(const hccn_sim_topo_t *topo,
                             hccn_sim_topo_summary_t *sum);

/* ---- topology overrides (device_sim/topo_override.c) -------------------- */

/* Applies one "PATH=VALUE" assignment to a parsed topology document, before
 * validation. PATH is a JSON path as in the loader's errors ("network.lat_us",
 * "node_types[0].nics.bw_GBps"); VALUE is parsed as JSON when it is one JSON
 * value, else taken as a string. Containers on the path must exist; the last
 * key of an object is replaced or added (the loader then rejects a key the
 * format does not know, naming its path). On error doc is unchanged, err
 * holds "<path>: <why>", and the result is HCCN_ERR_INVALID (malformed
 * assignment) or HCCN_ERR_TOPOLOGY (the path is not in doc). */
hccn_status_t hccn_sim_topo_override(json_object *doc, const char *assignment,
                                     char *err, size_t errlen);

/* ---- end of topology overrides ------------------------------------------ */

#endif /* HCCN_DEVICE_SIM_TOPO_H */
