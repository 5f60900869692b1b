/*
 * The simulation API: what hccn knows about a cluster beyond running it.
 *
 *  - topologies: load one (with PATH=VALUE edits), read its devices, links,
 *    routes, summary and levels;
 *  - prediction: the simulated time of a sequence of collectives on a
 *    topology without running them (no data, no threads), the algorithm
 *    the selection would choose and why, and each algorithm's predicted
 *    time by the cost model;
 *  - per-link statistics of a cluster's last run;
 *  - traces (Chrome/Perfetto JSON) of runs, and marks that tell warm-up
 *    and synchronising calls from the program's own;
 *  - a rank's communication summary: how much of its communication time
 *    was hidden behind declared compute, per collective kind and
 *    communicator, since a point it chooses.
 *
 * Handles are opaque; structs that may grow carry struct_size, which the
 * caller sets to sizeof(the struct) before the call. docs/sim_api.md.
 */
#ifndef HCCN_HCCN_SIM_H
#define HCCN_HCCN_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "hccn/hccn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Collective kinds (the calls of hccn_coll.h). */
typedef enum {
    HCCN_COLL_ALLREDUCE,
    HCCN_COLL_REDUCE_SCATTER,
    HCCN_COLL_ALLGATHER,
    HCCN_COLL_BROADCAST,
    HCCN_COLL_REDUCE,
    HCCN_COLL_ALLTOALL,
    HCCN_COLL_SCATTER,
    HCCN_COLL_GATHER,
    HCCN_COLL_BARRIER,
    HCCN_COLL_ALLTOALLV,
    HCCN_COLL_ALLGATHERV,
    HCCN_COLL_REDUCE_SCATTERV,
    HCCN_COLL_COUNT
} hccn_coll_t;

/* "allreduce", "reduce_scatter", ...; "?" for an unknown kind. */
HCCN_API const char *hccn_coll_name(hccn_coll_t coll);

/* ------------------------------------------------------------------------ */
/* Topologies.                                                               */

typedef struct hccn_sim_topo hccn_topo_t;

/* The i-th directory a topology name is looked up in (the installed
 * share/hccn/configs, then a build tree's source configs/; it may not
 * exist), written to buf. 0, or -1 past the last one or when it does not
 * fit. A path argument is used as given; a name ("hgx-h100", with or
 * without ".json") is looked up there by every function that loads one. */
HCCN_API int hccn_topo_config_dir(int i, char *buf, size_t len);

/* Loads and validates a topology file after applying edits[0..nedits) in
 * order, each "PATH=VALUE" (a JSON path as in the loader's errors, VALUE
 * one JSON value or else a string; docs/perf.md --set). On error *out is
 * NULL and hccn_last_error() names the file, the JSON path and the rule,
 * or the edit and why it does not apply. */
HCCN_API hccn_status_t hccn_topo_load(const char *path,
                                      const char *const *edits, int nedits,
                                      hccn_topo_t **out);
/* As hccn_topo_load from a JSON text (name is used in messages). */
HCCN_API hccn_status_t hccn_topo_load_json(const char *json,
                                           const char *name,
                                           hccn_topo_t **out);
/* Frees a topology from hccn_topo_load*; NULL is a no-op. */
HCCN_API void hccn_topo_free(hccn_topo_t *topo);

/* As hccn_cluster_create, with the topology file edited as hccn_topo_load
 * edits it. */
HCCN_API hccn_status_t hccn_cluster_create_edited(
    const char *path, const char *const *edits, int nedits,
    const hccn_cluster_opts_t *opts, hccn_cluster_t **out);

/* The cluster's own topology (owned by the cluster). */
HCCN_API const hccn_topo_t *hccn_cluster_topo(const hccn_cluster_t *cluster);

/* The "name" field (or the file's base name) and the file or name the
 * topology was loaded from. */
HCCN_API const char *hccn_topo_name(const hccn_topo_t *topo);
HCCN_API const char *hccn_topo_source(const hccn_topo_t *topo);
/* NPUs (ranks of the world), nodes, devices and directed links. */
HCCN_API int hccn_topo_npus(const hccn_topo_t *topo);
HCCN_API int hccn_topo_nodes(const hccn_topo_t *topo);
HCCN_API int hccn_topo_devices(const hccn_topo_t *topo);
HCCN_API int hccn_topo_links(const hccn_topo_t *topo);

typedef enum {
    HCCN_DEVICE_NPU,
    HCCN_DEVICE_SWITCH,
    HCCN_DEVICE_NIC,
    HCCN_DEVICE_BRIDGE,
} hccn_device_kind_t;

typedef struct {
    size_t struct_size;      /* sizeof(hccn_device_info_t) */
    hccn_device_kind_t kind;
    int node;                /* -1 for devices of the network */
    double lat_s;            /* seconds added by crossing it */
    const char *name;        /* "node1.npu3"; lives as long as the topology */
} hccn_device_info_t;

/* Links carry a level: 0 inside a node, 1 between a node and the network,
 * 2 inside the network. */
typedef struct {
    size_t struct_size;      /* sizeof(hccn_link_info_t) */
    int src, dst;            /* device indices */
    int level;
    double bw_Bps;           /* bytes/s in this direction; INFINITY: free */
    double lat_s;
    char name[112];          /* "SRC->DST" by device names */
} hccn_link_info_t;

HCCN_API hccn_status_t hccn_topo_device(const hccn_topo_t *topo, int dev,
                                        hccn_device_info_t *info);
HCCN_API hccn_status_t hccn_topo_link(const hccn_topo_t *topo, int link,
                                      hccn_link_info_t *info);

#define HCCN_ROUTE_MAX 16    /* links in the longest route */

/* The route from NPU a to NPU b: up to HCCN_ROUTE_MAX link indices in
 * links, their number in *nlinks (0 for a == b) and the latency in *lat_s. */
HCCN_API hccn_status_t hccn_topo_route(const hccn_topo_t *topo, int a, int b,
                                       int *links, int *nlinks,
                                       double *lat_s);

typedef struct {
    size_t struct_size;      /* sizeof(hccn_topo_summary_t) */
    int links_per_level[3];  /* directed links */
    double bw_per_level[3];  /* bytes/s of the slowest link of that level */
    double bisection_Bps;    /* one direction, the worst balanced cut */
} hccn_topo_summary_t;

HCCN_API hccn_status_t hccn_topo_summary(const hccn_topo_t *topo,
                                         hccn_topo_summary_t *sum);

/* Node's staged PCIe traffic (docs/topology.md, "Staged traffic without
 * peer-to-peer"): 1 with fabric.staged's efficiency and duplex when its
 * pcie fabric has p2p false, else 0 (and 0, 0). Either pointer may be NULL. */
HCCN_API int hccn_topo_staged(const hccn_topo_t *topo, int node,
                              double *efficiency, double *duplex);

/* The levels the cost model and the hierarchical algorithms see for a
 * communicator of the first nranks NPUs (docs/selection.md). */
typedef struct {
    size_t struct_size;      /* sizeof(hccn_levels_t) */
    int nnodes, ppn;         /* nodes holding ranks; most ranks on one */
    double alpha_s[3];       /* latency of level 0 (in a node), 1 (between
                                nodes), 2 (between pods); 0: no such level */
    double bw_Bps[3];        /* bottleneck bandwidth of each level */
    double reduce_Bps;       /* the slowest rank's reduction bandwidth */
    int nlevels;             /* 2 or 3 */
    int npods, nodes_per_pod;/* when nlevels == 3 */
    char why[96];            /* when nlevels == 2: why not 3 */
} hccn_levels_t;

HCCN_API hccn_status_t hccn_topo_levels(const hccn_topo_t *topo, int nranks,
                                        hccn_levels_t *lv);

/* ------------------------------------------------------------------------ */
/* Prediction and selection.                                                 */

/* One collective call, with the arguments every rank passes. */
typedef struct {
    size_t struct_size;      /* sizeof(hccn_call_t) */
    hccn_coll_t coll;
    uint64_t count;          /* elements, as the call's count argument */
    hccn_dtype_t dtype;
    int root;                /* rooted collectives */
    int inplace;             /* NCCL's in-place form */
    int compress;            /* HCCN_COMPRESS_* */
    const char *algo;        /* HCCN_ALGO grammar, or NULL / "" for the
                                cost model's choice (HCCN_ALGO is not read) */
    int nranks;              /* the first nranks NPUs; 0: all of them */
} hccn_call_t;

typedef struct {
    size_t struct_size;      /* sizeof(hccn_predict_opts_t) */
    int no_fold;             /* in: 1 = simulate every node */
    int folded;              /* out: every call was folded (onto node 0,
                                or onto every leaf's first node) */
    char why[256];           /* out: when not, why not (and how many
                                calls were: "(k of n calls folded)") */
    char schedule[64];       /* out: what the last call ran, as
                                hccn_choice_t.schedule names it (a
                                struct_size that ends before it: not
                                written) */
} hccn_predict_opts_t;

/* The simulated time of calls[0..ncalls) made back to back by every rank
 * of topo's world from clock 0, as blocking calls in one thread per rank
 * would make them, without data or threads (docs/performance.md): ends[i]
 * receives the latest end of call i over the ranks, in seconds. The times
 * are those a run with data reports. Every call's nranks must be 0; the
 * v-collectives are HCCN_ERR_UNSUPPORTED. opts may be NULL. */
HCCN_API hccn_status_t hccn_predict(const hccn_topo_t *topo,
                                    const hccn_call_t *calls, int ncalls,
                                    double *ends, hccn_predict_opts_t *opts);

/* The algorithm chosen for a call, and why. */
typedef struct {
    size_t struct_size;      /* sizeof(hccn_choice_t) */
    char algo[32];           /* the table's name: "ring", "hier", ... */
    char schedule[64];       /* what runs, per level for hierarchical
                                ones: "hier(mesh,ring)" */
    char why[1024];          /* the selection's line: the reason and every
                                candidate's predicted time */
} hccn_choice_t;

/* The choice the runtime makes for call on topo. */
HCCN_API hccn_status_t hccn_predict_choice(const hccn_topo_t *topo,
                                           const hccn_call_t *call,
                                           hccn_choice_t *out);

/* The choice made for the last collective the calling rank posted on
 * comm (HCCN_ERR_INVALID before the first). Call from the rank's thread. */
HCCN_API hccn_status_t hccn_comm_last_choice(hccn_comm_t *comm,
                                             hccn_choice_t *out);

/* The algorithm table. */
typedef struct {
    size_t struct_size;      /* sizeof(hccn_algo_info_t) */
    const char *name;        /* as HCCN_ALGO names it */
    const char *description; /* one line */
    unsigned colls;          /* bit (1u << hccn_coll_t) per collective */
    int cost_known;          /* the cost model prices it */
} hccn_algo_info_t;

HCCN_API int hccn_algo_count(void);
HCCN_API hccn_status_t hccn_algo_info(int index, hccn_algo_info_t *info);

enum { HCCN_PREDICT_AUTO, HCCN_PREDICT_ENGINE, HCCN_PREDICT_MODEL };

/* The cost model's predicted seconds of the algorithm named algo for call
 * (call->algo is ignored), by mode HCCN_PREDICT_*: *seconds < 0 when the
 * algorithm cannot run the call or has no model; *by_engine (may be NULL)
 * says whether the timing engine gave the figure. */
HCCN_API hccn_status_t hccn_predict_algo(const hccn_topo_t *topo,
                                         const hccn_call_t *call,
                                         const char *algo, int mode,
                                         double *seconds, int *by_engine);

/* ------------------------------------------------------------------------ */
/* Per-link statistics of a cluster's last run (hccn_cluster_run).           */

typedef struct {
    size_t struct_size;      /* sizeof(hccn_link_stats_t) */
    double bytes;            /* carried by the directed link */
    double busy_s;           /* bytes / bandwidth: time at full rate */
    double active_s;         /* time with at least one transfer on it */
    double span_s;           /* the run's length: the latest NPU clock */
    double utilisation;      /* busy_s / span_s (0 for an empty run) */
} hccn_link_stats_t;

HCCN_API hccn_status_t hccn_cluster_link_stats(const hccn_cluster_t *cluster,
                                               int link,
                                               hccn_link_stats_t *st);

/* ------------------------------------------------------------------------ */
/* Traces: timelines of runs in simulated time, for ui.perfetto.dev or
 * chrome://tracing. HCCN_TRACE=FILE traces every cluster of a program into
 * FILE without any call (written when a cluster is destroyed). */

typedef struct hccn_sim_trace hccn_trace_t;

HCCN_API hccn_status_t hccn_trace_create(hccn_trace_t **out);
/* Records cluster's later runs into trace (NULL: stops). A trace follows
 * one cluster at a time; runs of successive clusters follow each other on
 * its timeline. Only between runs. */
HCCN_API hccn_status_t hccn_trace_attach(hccn_cluster_t *cluster,
                                         hccn_trace_t *trace);
/* Writes everything recorded so far to path (the same program writes the
 * same bytes). Only between runs. */
HCCN_API hccn_status_t hccn_trace_write(hccn_trace_t *trace,
                                        const char *path);
HCCN_API void hccn_trace_destroy(hccn_trace_t *trace);

enum {
    HCCN_MARK_USER = 0,      /* the program's own operations */
    HCCN_MARK_WARMUP = 1,    /* warm-up: traced as "NAME (warm-up)" */
    HCCN_MARK_SYNC = 2,      /* the program's own synchronisation: left out
                                of traces and communication summaries */
};

/* Marks the calling rank's operations posted from now on. */
HCCN_API hccn_status_t hccn_mark(hccn_ctx_t *ctx, int mark);

/* ------------------------------------------------------------------------ */
/* Communication summary of one rank (docs/sim_api.md).                      */

enum { HCCN_SUMMARY_ALL = -1, HCCN_SUMMARY_P2P = -2 };

typedef struct {
    size_t struct_size;      /* sizeof(hccn_comm_summary_t) */
    int ops;                 /* operations that completed */
    double comm_s;           /* time with at least one of them in flight */
    double hidden_s;         /* of it, time with compute going on */
    double exposed_s;        /* comm_s - hidden_s */
    double compute_s;        /* declared compute (hccn_compute) */
    double since_s, until_s; /* the mark and the rank's clock now */
} hccn_comm_summary_t;

/* Starts (or restarts) the calling rank's summary at its clock now;
 * nothing is recorded before the first call. */
HCCN_API hccn_status_t hccn_summary_mark(hccn_ctx_t *ctx);

/* The rank's operations completed since the mark on comm (NULL: every
 * communicator) of kind (a hccn_coll_t, HCCN_SUMMARY_P2P for send/recv,
 * HCCN_SUMMARY_ALL). An operation counts from its call to its end;
 * compute overlapping that is what hides it. */
HCCN_API hccn_status_t hccn_summary(hccn_ctx_t *ctx, const hccn_comm_t *comm,
                                    int kind, hccn_comm_summary_t *out);

/* ------------------------------------------------------------------------ */
/* The topology's software model (docs/topology.md, software).               */

enum { HCCN_PROTO_LL, HCCN_PROTO_LL128, HCCN_PROTO_SIMPLE, HCCN_NPROTO };
enum { HCCN_CLASS_INTRA, HCCN_CLASS_NET, HCCN_NCLASS };
/* Kinds of link (link_efficiency): a node's fabric of direct links or a
 * switch, a pcie fabric, a node's NICs. */
enum { HCCN_LINK_FABRIC, HCCN_LINK_PCIE, HCCN_LINK_NIC, HCCN_NLINK };
/* Call sizes of tree_bw: 64 B x 2^i, i < HCCN_TREE_SIZES. */
#define HCCN_TREE_SIZES 23

typedef struct {
    size_t struct_size;      /* sizeof(hccn_software_t) */
    int present;             /* 0: the file has no stack or software */
    char stack[32];          /* the preset's name, "" for none */
    double launch_us;
    int enabled[HCCN_NPROTO];
    double step_us[HCCN_NPROTO][HCCN_NCLASS];
    double efficiency[HCCN_NPROTO][HCCN_NCLASS];
    double max_bytes[HCCN_NPROTO][HCCN_NCLASS];   /* 0: none */
    double host_us;          /* the host's issue of a call, per NPU */
    int ranks_per_thread;    /* NPUs one host thread drives */
    int slots;               /* pipeline slots a connection keeps in
                                flight (1: one chunk at a time) */
    int channels;            /* rings' channels; 0: from the topology */
    double nvls_launch_us;   /* launch of a call that reduces in a
                                node's switch; 0: launch_us */
    double nvls_step_us;     /* a step inside a node of such a call, in
                                place of its protocol's, where
                                nvls_step_set */
    int nvls_step_set;
    double nvls_net_step_us; /* a step through a NIC of such a call, in
                                place of its protocol's; 0: none */
    double allpairs_max_bytes;   /* the library's all-pairs allreduce up
                                    to this size on one fully linked
                                    node; 0: never */
    double proto_launch_us[HCCN_NPROTO];   /* launch of a call whose
                                              transfers run this protocol
                                              (the largest of its); 0:
                                              launch_us */
    double max_GBps[HCCN_NPROTO][2];   /* the most bus bandwidth a call
                                          under the protocol reaches
                                          across two nodes [0] and more
                                          [1]; 0: no bound */
    double ring_step_us[HCCN_NPROTO];  /* least step inside a node of
                                          the library's ring across
                                          nodes; 0: step_us */
    int tree_step_set[HCCN_NPROTO];    /* the library's tree has steps
                                          of its own: */
    double tree_step_us[HCCN_NPROTO][HCCN_NCLASS];
    double send_overhead_us; /* the host's time for each message a rank
                                sends (LogGP's o), one after another */
    double recv_overhead_us; /* ... and for each message it receives */
    double link_efficiency[HCCN_NLINK];  /* the efficiency a fabric or NIC
                                            of this kind takes where the
                                            file gives none; 1: none */
    double ring_plateau;     /* the bulk protocol's steps of the ring
                                across nodes cost this many times theirs;
                                0 or 1: none */
    double tree_bw[HCCN_NPROTO][HCCN_TREE_SIZES];   /* the share of its
                                bandwidth the tree allreduce across nodes
                                reaches, by call size (64 B x 2^i); 0:
                                all of it */
} hccn_software_t;

/* The protocol names as the file writes them ("ll", "ll128", "simple"). */
HCCN_API const char *hccn_proto_name(int proto);

/* topo's software model, as loaded (preset and overrides merged); a topo
 * without one gives present 0 and the model of no cost. */
HCCN_API hccn_status_t hccn_topo_software(const hccn_topo_t *topo,
                                          hccn_software_t *out);

#ifdef __cplusplus
}
#endif

#endif /* HCCN_HCCN_SIM_H */
