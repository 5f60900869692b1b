/*
 * Topology importers and exporters of hccn-topo (docs/import.md).
 *
 * Every importer reads one foreign description into an hccn_imp_topo_t (the
 * shape of hccn's topology format: node types, one fabric each, NICs, one
 * network), with a `sources` entry per figure and a `notes` entry for every
 * preset and approximation; hccn_imp_write() turns it into topology JSON,
 * validates it with the loader, and writes it.
 *
 * Errors: a function returning int gives 0 on success and -1 on failure, with
 * the one-line message "FILE:LINE: element: what" (text formats) or
 * "FILE: json.path: what" (JSON) in err[HCCN_IMP_ERRLEN].
 */
#ifndef HCCN_TOOLS_IMP_H
#define HCCN_TOOLS_IMP_H

#include <stddef.h>
#include <stdio.h>

#define HCCN_IMP_ERRLEN 1024
#define HCCN_IMP_MAX_FILE (64L << 20)

enum { HCCN_IMP_FAB_NONE, HCCN_IMP_FAB_MESH, HCCN_IMP_FAB_SWITCH,
       HCCN_IMP_FAB_RING, HCCN_IMP_FAB_PCIE };
enum { HCCN_IMP_NET_NONE, HCCN_IMP_NET_SWITCH, HCCN_IMP_NET_LEAF_SPINE };

typedef struct {
    int *npus;          /* the NPUs this NIC serves */
    int nnpus;
    double bw, lat;     /* GB/s, us */
} hccn_imp_nic_t;

typedef struct {
    char *name;
    int count;          /* identical nodes */
    int nnpus;
    long arena_mib;
    double reduce_bw, mem_bw, peak_tflops;   /* 0: absent */
    int fabric;         /* HCCN_IMP_FAB_* */
    double fab_bw, fab_lat;
    int *group_of;      /* pcie: the group of each NPU */
    int ngroups, p2p;
    double host_bw, host_lat;
    hccn_imp_nic_t *nics;
    int nnics;
} hccn_imp_node_t;

typedef struct {
    char *key, *text;
} hccn_imp_source_t;

typedef struct {
    char *name, *description;
    hccn_imp_node_t *types;
    int ntypes;
    int net;            /* HCCN_IMP_NET_* */
    double net_lat, spine_lat, oversub;
    int nodes_per_leaf;
    hccn_imp_source_t *sources;
    int nsources;
    char **notes;
    int nnotes;
} hccn_imp_topo_t;

/* What the device of a file is, when the file does not say (a preset). */
typedef struct {
    const char *name;       /* "a100", "910b", "generic", ... */
    const char *what;       /* "NVIDIA A100-SXM4-80GB" */
    int sm;                 /* CUDA compute capability x10; 0: not a GPU */
    double link_GBps;       /* one NVLink/HCCS link, per direction */
    int links;              /* NVLink links per GPU (0: none) */
    double pcie_GBps;       /* the device's own PCIe link */
    long arena_mib;
    double mem_GBps, peak_tflops;
    double nic_Gbps;        /* the NIC of the server class, per NPU */
    int group;              /* NPUs per HCCS group (Ascend), else 0 */
    double fab_lat_us;      /* NVLink/HCCS transfer latency (assumed) */
    const char *source;     /* where the figures come from */
} hccn_imp_preset_t;

/* Command-line choices shared by the importers. */
typedef struct {
    const char *model;      /* --gpu/--npu MODEL, NULL: per format */
    int hosts;              /* --hosts N (0: one per file) */
    int net;                /* --network: HCCN_IMP_NET_* (0: switch) */
    int per_leaf;           /* fat-tree:R */
    double oversub;         /* fat-tree:R:O */
    double nic_gbps;        /* --nic-gbps (0: preset) */
    int per_numa;           /* detect --per numa */
    const char *name;       /* --name */
} hccn_imp_opts_t;

/* Latencies no file gives: stated assumptions (docs/import.md). */
#define HCCN_IMP_PCIE_LAT_US 0.5
#define HCCN_IMP_NIC_LAT_US 1.0
#define HCCN_IMP_NET_LAT_US 1.0

/* ---- model (imp_model.c) ---- */

/* Formats "FILE:LINE: " style messages into err; always returns -1. */
int hccn_imp_fail(char *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends a note / a source (printf style); -1 only when out of memory. */
int hccn_imp_note(hccn_imp_topo_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int hccn_imp_source(hccn_imp_topo_t *t, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A new node type appended to t (zeroed, count 1), or NULL when out of
 * memory. */
hccn_imp_node_t *hccn_imp_add_type(hccn_imp_topo_t *t, const char *name,
                                   int nnpus);
/* Appends a NIC serving npus[0..n-1]; -1 when out of memory. */
int hccn_imp_add_nic(hccn_imp_node_t *n, const int *npus, int nnpus,
                     double bw, double lat);
/* Sets the NPU figures of n from preset p (and a source/note naming it). */
void hccn_imp_set_npu(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                      const hccn_imp_preset_t *p);
/* Frees everything t holds (t itself is not freed). */
void hccn_imp_free(hccn_imp_topo_t *t);
/* x rounded to 12 significant digits (undoes unit-conversion noise). */
double hccn_imp_round(double x);

/* ---- output (imp_write.c) ---- */

/* Merges consecutive identical node types, applies opts' --hosts and
 * --network, serializes t, validates it with the topology loader and writes
 * it to out (stdout when NULL). */
int hccn_imp_write(hccn_imp_topo_t *t, const hccn_imp_opts_t *o,
                   const char *out, char *err);
/* The topology JSON of t as a malloc'd string, or NULL (message in err). */
char *hccn_imp_to_json(const hccn_imp_topo_t *t, char *err);

/* ---- the topology loader (imp_load.c) ---- */

/* 0 when json (named name in messages) loads as a topology; else -1 with
 * the loader's message in err. */
int hccn_imp_check_json(const char *json, const char *name, char *err);
/* 0 when the topology file path loads, with the link efficiencies of its
 * stack (HCCN_NLINK of them, 1 without one) in link_eff when not NULL; else
 * -1 with the loader's message. */
int hccn_imp_check_file(const char *path, char *err, double *link_eff);

/* ---- presets (imp_presets.c) ---- */

/* The preset called name, or NULL. */
const hccn_imp_preset_t *hccn_imp_preset(const char *name);
/* The GPU preset of compute capability sm (x10), or NULL. */
const hccn_imp_preset_t *hccn_imp_preset_sm(int sm);
/* The comma-separated preset names, for messages. */
const char *hccn_imp_preset_names(void);

/* ---- NICs from PCIe distances (imp_nics.c) ---- */

/* Gives each of the ngpus NPUs of n the NICs nearest to it, from
 * dist[g * nnics + k] (smaller = nearer; < 0: unreachable), nic_GBps[k] and
 * names[k]; every merge, pairing and left-out NIC becomes a note. */
int hccn_imp_assign_nics(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                         const double *dist, int ngpus, int nnics,
                         const double *nic_GBps, char *const *names,
                         const char *file, char *err);
/* A GPU-to-GPU link matrix (links[a*n+b] NVLinks) made into n's fabric:
 * switch, even mesh, or an approximation listed in notes. */
int hccn_imp_nvlink_fabric(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                           const int *links, int to_switch,
                           const hccn_imp_preset_t *p, const char *file,
                           char *err);

/* ---- files ---- */

/* The whole file as a NUL-terminated malloc'd string, or NULL (err set). */
char *hccn_imp_read_file(const char *path, size_t *len, char *err);

/* A format's reader of text already in memory (the *_text functions). */
typedef int hccn_imp_text_fn(const char *text, size_t len, const char *file,
                             const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                             char *err);

/* Reads each of nfiles files (one host each) with read, then describes t
 * as "Imported from WHAT FILE[ and others (one host per file)]". 0, or -1
 * with err set. */
int hccn_imp_hosts(const char *const *files, int nfiles, hccn_imp_text_fn *read,
                   const char *what, const hccn_imp_opts_t *o,
                   hccn_imp_topo_t *t, char *err);

/* ---- the formats ---- */

int hccn_imp_nccl(const char *const *files, int nfiles,
                  const hccn_imp_opts_t *o, hccn_imp_topo_t *t, char *err);
int hccn_imp_ranktable(const char *file, const hccn_imp_opts_t *o,
                       hccn_imp_topo_t *t, char *err);
int hccn_imp_nvsmi(const char *const *files, int nfiles,
                   const hccn_imp_opts_t *o, hccn_imp_topo_t *t, char *err);
int hccn_imp_astrasim(const char *file, const hccn_imp_opts_t *o,
                      hccn_imp_topo_t *t, char *err);
int hccn_imp_simgrid(const char *file, const hccn_imp_opts_t *o,
                     hccn_imp_topo_t *t, char *err);
int hccn_imp_detect(const hccn_imp_opts_t *o, hccn_imp_topo_t *t, char *err);

/* The same, from text already in memory (file names messages; fuzzing). */
int hccn_imp_nccl_text(const char *text, size_t len, const char *file,
                       const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                       char *err);
int hccn_imp_ranktable_text(const char *text, size_t len, const char *file,
                            const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                            char *err);
int hccn_imp_nvsmi_text(const char *text, size_t len, const char *file,
                        const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                        char *err);
int hccn_imp_astrasim_text(const char *text, size_t len, const char *file,
                           const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                           char *err);
int hccn_imp_simgrid_text(const char *text, size_t len, const char *file,
                          const hccn_imp_opts_t *o, hccn_imp_topo_t *t,
                          char *err);

/* The format of text by its content ("nccl-xml", ...), or NULL. */
const char *hccn_imp_sniff(const char *text, size_t len);

/* Export the loaded topology file to ASTRA-sim YAML / SimGrid XML on f;
 * what the format cannot hold is listed in comments, what it cannot express
 * at all is an error. */
int hccn_imp_export_astrasim(const char *topo_file, FILE *f, char *err);
int hccn_imp_export_simgrid(const char *topo_file, FILE *f, char *err);

/* hccn-topo import|export|detect ARGS: the subcommand's main. */
int hccn_imp_main(int argc, char **argv);

#endif
