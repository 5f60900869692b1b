/*
 * The software model of a topology (docs/timing.md, Software): what the
 * communication library running on the NPUs adds to the links' time. A
 * topology without "stack" or "software" has none, and times are the
 * links' alone.
 *
 *   - every call (a posted batch) starts launch_s after it could have,
 *     and ends no sooner than host_s x per_thread after it could have
 *     started (the host thread's issue of the call for each NPU it drives,
 *     which overlaps the NPUs' side: hccn_sim_sw_floor);
 *   - every transfer runs under one of three protocols (low latency,
 *     medium, bulk: NCCL's LL, LL128 and Simple), which adds step_s to
 *     its latency and moves bytes / eff on the wire;
 *   - the protocol of a transfer follows from its size and its route's
 *     class (inside a node, or through a NIC): below a protocol's
 *     max_bytes threshold where the file gives thresholds, else the one
 *     of least step_s + bytes / (eff x route bandwidth);
 *   - every message costs its sender's host send_s before it leaves and
 *     its receiver's host recv_s after it arrives (LogGP's o), each host
 *     taking its messages one after another, first come first served;
 *   - a connection keeps `slots` chunks in flight: the top of a
 *     two-level allreduce runs that many chunks at once
 *     (hierarchy/levels.h).
 *
 *   - across nodes a protocol may bound a call's bus bandwidth (max_bw):
 *     its efficiency through a NIC is then at most that bound over the
 *     node's NIC bandwidth (hccn_sim_sw_eff);
 *
 * The engine (flow.c) and the cost model (hierarchy/cost_flows.c) both ask
 * hccn_sim_sw_pick_at and hccn_sim_sw_eff, so they agree on every
 * transfer.
 */
#ifndef HCCN_DEVICE_SIM_SOFTWARE_H
#define HCCN_DEVICE_SIM_SOFTWARE_H

#include <stdint.h>

#include "device_sim/engine.h"
#include "device_sim/topo.h"

/* Protocols, in the order ties are broken. */
enum { HCCN_SIM_PROTO_LL = 0, HCCN_SIM_PROTO_LL128 = 1,
       HCCN_SIM_PROTO_SIMPLE = 2, HCCN_SIM_NPROTO = 3 };

/* The library algorithms whose steps cost apart (hccn_sim_call_t.family):
 * its ring across nodes (rings on several nodes: ring_step_s), its tree
 * (tree_step_s) and a call that reduces in a node's switch (its NVLS:
 * nvls_net_step_s through a NIC). */
enum { HCCN_SIM_FAM_OTHER = 0, HCCN_SIM_FAM_NET_RING = 1,
       HCCN_SIM_FAM_TREE = 2, HCCN_SIM_FAM_NVLS = 3 };

/* Call sizes the library's tree bandwidth factors cover: 64 B x 2^i for
 * i < HCCN_SIM_TREE_SIZES (64 B to 256 MiB; NCCL's treeCorrectionFactor
 * columns); larger calls take none. */
#define HCCN_SIM_TREE_SIZES 23

/* Route classes: inside one node, or through a NIC. */
enum { HCCN_SIM_CLS_INTRA = 0, HCCN_SIM_CLS_NET = 1, HCCN_SIM_NCLS = 2 };

/* How many nodes a topology spans, for a protocol's max_bw: two, or
 * more. */
enum { HCCN_SIM_SPAN_TWO = 0, HCCN_SIM_SPAN_MORE = 1, HCCN_SIM_NSPAN = 2 };

/* The kinds of link a stack's link_eff covers: a node's fabric of direct
 * links or a switch (NVLink, xGMI), a pcie fabric, a node's NICs. */
enum { HCCN_SIM_LINK_FABRIC = 0, HCCN_SIM_LINK_PCIE = 1,
       HCCN_SIM_LINK_NIC = 2, HCCN_SIM_NLINK = 3 };

typedef struct {
    int on;                          /* 0: never used */
    double step_s[HCCN_SIM_NCLS];    /* seconds added to each transfer */
    double eff[HCCN_SIM_NCLS];       /* fraction of the wire carrying data */
    double max_bytes[HCCN_SIM_NCLS]; /* used up to this size; 0: by cost */
    double launch_s;                 /* a call running it starts this much
                                        late (the library's baseLat for
                                        it); 0: the stack's launch_s */
    double ring_step_s;              /* a step inside a node of the
                                        library's ring across nodes costs
                                        at least this (NCCL's network
                                        overhead: such a ring posts every
                                        step to the network proxy); 0:
                                        its step_s */
    double tree_step_s[HCCN_SIM_NCLS]; /* a step of the library's tree
                                        (NCCL's hwLat tree row), where
                                        tree_on; else step_s */
    int tree_on;
    double tree_bw[HCCN_SIM_TREE_SIZES]; /* the share of its bandwidth
                                        the library's tree allreduce
                                        reaches by the call's size
                                        (column floor(log2(bytes / 64)),
                                        NCCL's treeCorrectionFactor);
                                        0: all of it */
    double max_bw[HCCN_SIM_NSPAN];   /* bytes/s: the most bus bandwidth a
                                        call under it reaches across two
                                        nodes and across more (NCCL's
                                        llMaxBw); 0: no bound
                                        (hccn_sim_sw_eff) */
} hccn_sim_proto_t;

struct hccn_sim_sw {
    char stack[32];                  /* the preset's name, "" for none */
    double launch_s;                 /* per call */
    double host_s;                   /* per call, per NPU a thread drives */
    int per_thread;                  /* NPUs one host thread drives */
    int channels;                    /* rings of the "rings" row; 0: from
                                        the topology (docs/algorithms.md) */
    double nvls_launch_s;            /* per call that reduces in a node's
                                        switch, in place of launch_s (the
                                        library's in-switch algorithm);
                                        0: launch_s */
    double nvls_step_s;              /* a step inside a node of a call
                                        that reduces in a node's switch,
                                        in place of its protocol's, where
                                        nvls_step_on (NCCL's NVLS: its
                                        launch is its whole latency in
                                        the node) */
    int nvls_step_on;
    double nvls_net_step_s;          /* a step through a NIC of a call
                                        that reduces in a node's switch
                                        (the library's NVLS tree across
                                        nodes), in place of its
                                        protocol's; 0: the protocol's */
    int nvls_simple;                 /* 1: a call that reduces in a node's
                                        switch runs the bulk protocol
                                        alone (NCCL's NVLS is Simple
                                        only) */
    double allpairs_max_bytes;       /* an allreduce of up to this many
                                        bytes on one node whose NPUs are
                                        all linked pairwise may run the
                                        library's all-pairs schedule
                                        ("mesh"); 0: never */
    int all_algorithms;              /* 1: the default choice may take
                                        every algorithm of the table (an
                                        MPI library's collectives have
                                        most of them); 0: a named stack's
                                        own (rings, tree, in-switch) */
    double send_s, recv_s;           /* the host's time for each message a
                                        rank sends / receives (LogGP's o):
                                        a rank's messages pay it one after
                                        another (docs/timing.md); 0: none */
    double ring_plateau;             /* > 1: the steps of the library's
                                        ring across nodes under the bulk
                                        protocol cost this many times
                                        their step_s (NCCL's "plateau
                                        effect of ring"); 0 or 1: none */
    int slots;                       /* pipeline slots a connection keeps
                                        in flight: chunks of one level of
                                        a hierarchical row under way at
                                        once (docs/software.md); >= 1 */
    double link_eff[HCCN_SIM_NLINK]; /* the share of a link's wire rate
                                        the library's bulk transfers
                                        reach, per kind of link: the
                                        "efficiency" of a fabric or NIC
                                        whose file gives none; 1: none */
    hccn_sim_proto_t proto[HCCN_SIM_NPROTO];
};

/* 1 when sw (may be NULL) charges a host time per message: each rank's
 * messages then go in the order of its tasks (hierarchy/fold.h). */
int hccn_sim_sw_host_order(const hccn_sim_sw_t *sw);

/* The name of protocol p ("ll", "ll128", "simple"). */
const char *hccn_sim_proto_name(int p);

/* The class of a route of n links (HCCN_SIM_CLS_NET when one of them is
 * not inside a node). */
int hccn_sim_sw_class(const hccn_sim_topo_t *topo, const int *links, int n);

/* The protocol of a transfer of bytes on a route of class cls whose
 * slowest link carries bw bytes/s (INFINITY: none is finite). sw must not
 * be NULL and must have a protocol on. */
int hccn_sim_sw_pick(const hccn_sim_sw_t *sw, uint64_t bytes, int cls,
                     double bw);

/* The step cost of protocol p on a route of class cls in a call of the
 * library algorithm family (HCCN_SIM_FAM_*): step_s[cls]; in the tree,
 * tree_step_s[cls] where given; inside a node of the ring across nodes,
 * at least ring_step_s, and the bulk protocol's steps of that ring
 * ring_plateau times as much; in a call that reduces in a node's switch,
 * nvls_step_s inside a node where nvls_step_on and nvls_net_step_s
 * through a NIC where given. */
double hccn_sim_sw_step(const hccn_sim_sw_t *sw, int p, int cls, int family);

/* The share of protocol p's bandwidth the library's tree allreduce of
 * bytes reaches (tree_bw by size; 1 where none is given, past the
 * table's last size, and for bytes 0: a call that is not one). */
double hccn_sim_sw_tree_bw(const hccn_sim_sw_t *sw, int p, uint64_t bytes);

/* The latency of a transfer whose route takes lat and whose protocol
 * step (hccn_sim_sw_step) is step: lat + step, but in the library tree's
 * allreduce across nodes (tree_bytes > 0), the larger of the two (NCCL's
 * tree row of hwLat is a hop's whole latency: docs/software.md). */
double hccn_sim_sw_hop_lat(double lat, double step, uint64_t tree_bytes);

/* The efficiency of protocol p for a transfer of class cls that NPU src
 * sends: the protocol's eff[cls], bounded through a NIC by its max_bw
 * over the bandwidth of src's node's NICs together (a ring across nodes
 * runs at the bus bandwidth of a node's NICs; the library caps a call's
 * bus bandwidth under p at max_bw, which slows each of its transfers
 * alike). The bound is max_bw[HCCN_SIM_SPAN_TWO] on a topology of two
 * nodes, max_bw[HCCN_SIM_SPAN_MORE] on more; never below 0.001, a link's
 * least efficiency. topo must have a software model. */
double hccn_sim_sw_eff(const hccn_sim_topo_t *topo, int p, int cls, int src);

/* As hccn_sim_sw_pick, for a transfer NPU src sends: each protocol at
 * its efficiency for src (hccn_sim_sw_eff). */
int hccn_sim_sw_pick_at(const hccn_sim_topo_t *topo, int src, uint64_t bytes,
                        int cls, double bw);

/* The protocol of a transfer of bytes from NPU src to NPU dst on topo's
 * nominal route (its class in *cls when cls is not NULL): what the engine
 * runs it under; -1 when topo has no software model. */
int hccn_sim_sw_route_pick(const hccn_sim_topo_t *topo, int src, int dst,
                           uint64_t bytes, int *cls);
/* The same on the nominal route links[0..n) from src, already found. */
int hccn_sim_sw_links_pick(const hccn_sim_topo_t *topo, int src,
                           const int *links, int n, uint64_t bytes, int *cls);

/* The protocol every transfer of a call runs, whatever its size: the
 * bulk one where the call reduces in a node's switch (nvswitch) and the
 * stack runs such calls under it alone (nvls_simple); else -1, each
 * transfer its own (hccn_sim_sw_pick). */
int hccn_sim_sw_call_proto(const hccn_sim_sw_t *sw, int nvswitch);

/* The launch (seconds) of a call whose transfers run under protocol p:
 * its launch_s, or the stack's where that is 0. */
double hccn_sim_sw_proto_launch(const hccn_sim_sw_t *sw, int p);

/* The launch of a call (seconds): nvls_launch_s where nvswitch (the call
 * reduces in a node's switch) and it is set, else the largest launch of
 * the protocols in protos (bit p: protocol p runs one of its transfers),
 * launch_s when protos is 0. */
double hccn_sim_sw_launch(const hccn_sim_sw_t *sw, unsigned protos,
                          int nvswitch);

/* 1 when every call of a protocol mask pays the same launch under sw (the
 * protocols on all have one launch): no call needs its mask. */
int hccn_sim_sw_launch_uniform(const hccn_sim_sw_t *sw);

/* The launch of a call whose part on device dev is tasks[0..n) (see
 * hccn_sim_sw_launch; the protocols are those the engine runs them
 * under: hccn_sim_sw_route_pick for their block, call's proto_scale
 * times their bytes, or the call's own, hccn_sim_sw_call_proto; call may
 * be NULL). topo must have a software model. */
double hccn_sim_sw_tasks_launch(const hccn_sim_topo_t *topo, int dev,
                                const hccn_sim_task_t *tasks, int n,
                                const hccn_sim_call_t *call);

/* As hccn_sim_sw_tasks_launch, for a post (engine.h): tasks NULL (a post
 * with a standing hint) takes hint's launch, from the post of the same
 * tasks that filled it; a post with tasks leaves its launch in hint. */
double hccn_sim_sw_post_launch(const hccn_sim_topo_t *topo, int dev,
                               const hccn_sim_task_t *tasks, int n,
                               hccn_sim_replay_hint_t *hint,
                               const hccn_sim_call_t *call);

/* The least time of a call after its start (its launch done): the host's
 * issue, host_s x per_thread, less the call's launch; <= 0 when it never
 * binds. */
double hccn_sim_sw_floor(const hccn_sim_sw_t *sw, double launch);

/* The preset named name, or NULL. */
const hccn_sim_sw_t *hccn_sim_sw_preset(const char *name);

/* The names of the presets, NULL-terminated. */
const char *const *hccn_sim_sw_presets(void);

#endif /* HCCN_DEVICE_SIM_SOFTWARE_H */
