/*
 * Internals of the topology loader, shared by its four files:
 *   topo.c        entry points: read, tokenize, parse, build; free
 *   topo_parse.c  JSON document -> validated spec (every error message)
 *   topo_build.c  spec -> devices, links and the routing tables
 *   topo_route.c  routes and the summary (bisection bandwidth)
 * Never included outside device_sim/topo*.c.
 */
#ifndef HCCN_DEVICE_SIM_TOPO_INTERNAL_H
#define HCCN_DEVICE_SIM_TOPO_INTERNAL_H

#include "device_sim/topo.h"

/* Limits of a topology file (docs/topology.md, "Limits"). */
#define HCCN_SIM_MAX_NODES_PER_TYPE 65536
#define HCCN_SIM_MAX_NPUS_PER_NODE 1024
#define HCCN_SIM_MAX_NPUS (1 << 20)
#define HCCN_SIM_MAX_LINKS (1 << 24)
#define HCCN_SIM_MAX_ARENA_MIB 1048576
#define HCCN_SIM_MAX_FILE_BYTES (64 << 20)

/* One node type of the file, in SI units (bytes/s, seconds, bytes). */
typedef struct {
    int nnodes;                  /* "count" */
    int nnpus;                   /* npu.count */
    size_t arena_bytes;
    double reduce_bw, mem_bw, peak_flops;
    hccn_sim_fabric_t fabric;    /* NONE when nnpus == 1 */
    double fab_bw, fab_lat;
    int bidirectional;           /* ring */
    int ngroups;                 /* pcie */
    int *group_of;               /* pcie: group of each local NPU */
    double host_bw, host_lat;    /* pcie */
    int p2p;                     /* pcie */
    int nnics;                   /* 0 when "nics" is absent */
    int *nic_of;                 /* local NPU -> NIC, -1 for none */
    double *nic_bw, *nic_lat, *nic_attach_bw; /* per NIC; attach may be inf */
} hccn_sim_type_spec_t;

typedef enum {
    HCCN_SIM_NET_NONE,
    HCCN_SIM_NET_SWITCH,
    HCCN_SIM_NET_LEAF_SPINE,
} hccn_sim_net_kind_t;

typedef struct {
    hccn_sim_net_kind_t kind;
    double lat, spine_lat;       /* seconds */
    int nodes_per_leaf;
    double oversub;
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
} hccn_sim_npu_tab_t;

typedef struct {
    int out, in;                 /* NIC -> network, network -> NIC */
} hccn_sim_nic_tab_t;

typedef struct {
    int base;                    /* mesh: a->b is base + a*(n-1) + b', ring:
                                    forward link i -> i+1 is base + i */
    int back;                    /* ring: link i+1 -> i is back + i; -1 */
    int p2p;                     /* pcie */
} hccn_sim_node_tab_t;

typedef struct {
    int up, down;                /* PCIe switch <-> host, leaf <-> spine */
} hccn_sim_uplink_t;

typedef struct {
    hccn_sim_npu_tab_t *npu;     /* per NPU */
    hccn_sim_nic_tab_t *nics;    /* per NIC of the cluster */
    hccn_sim_node_tab_t *node;   /* per node */
    hccn_sim_uplink_t *groups;   /* per PCIe switch of the cluster */
    hccn_sim_uplink_t *leaves;   /* per leaf */
    int nnics, ngroups, nleaves;
    hccn_sim_net_kind_t net;
} hccn_sim_topo_priv_t;

/* Validates doc and fills spec (zeroed first). On error writes the one-line
 * message "<source>: <json path>: <rule>" to err, frees what it allocated and
 * returns HCCN_ERR_TOPOLOGY or HCCN_ERR_NOMEM. */
hccn_status_t hccn_sim_spec_parse(json_object *doc, const char *source,
                                  hccn_sim_spec_t *spec, char *err,
                                  size_t errlen);
void hccn_sim_spec_free(hccn_sim_spec_t *spec);

/* Directed links one node of type t contributes (fabric, NIC attach, NIC to
 * network when has_net). Used for the link limit and by the builder. */
long long hccn_sim_type_links(const hccn_sim_type_spec_t *t, int has_net);

/* Number of leaves of a leaf/spine network (0 for other networks). */
int hccn_sim_spec_leaves(const hccn_sim_spec_t *spec);

/* Builds the graph of a validated spec. Returns HCCN_ERR_NOMEM or HCCN_OK;
 * *out owns copies of everything (the spec may be freed afterwards). */
hccn_status_t hccn_sim_topo_build(const hccn_sim_spec_t *spec,
                                  const char *source, hccn_sim_topo_t **out);

/* Formats "<prefix>: " followed by fmt into err (truncated, NUL-terminated,
 * control characters replaced by '?' so the message stays one line). */
void hccn_sim_topo_errf(char *err, size_t errlen, const char *prefix,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif /* HCCN_DEVICE_SIM_TOPO_INTERNAL_H */
