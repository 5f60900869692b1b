/*
 * Inside the cost model's closed forms (cost.h, docs/selection.md): the
 * state of one prediction, and the pricing of transfers that run at the
 * same time on the topology (cost_flows.c), used by the per-algorithm
 * forms (cost_rounds.c). Not installed.
 *
 * Transfers name communicator ranks; a team splits the ranks into groups
 * of equal size that run the same pattern at the same time (the whole
 * communicator, the ranks of each node, the same-index ranks of every
 * node), so a form written for one group prices all of them at once,
 * sharing links as they would.
 */
#ifndef HCCN_HIERARCHY_COST_INTERNAL_H
#define HCCN_HIERARCHY_COST_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "hierarchy/cost.h"

/* Shift patterns (rounds, all-pairs phases) and pipelines are priced from
 * at most this many shifts or positions; beyond, a sample stands for the
 * rest (docs/selection.md). */
#define HCCN_CM_SAMPLE 64

typedef struct {
    int src, dst;            /* communicator ranks */
    uint64_t bytes;
    double lat;              /* route latency, s */
    double w;                /* seconds per byte it drains at */
    double eff;              /* its protocol's efficiency (1: no software
                                model; device_sim/software.h) */
} hccn_cm_xf_t;

typedef struct hccn_cm_team {
    int ngroups, size;
    const int *rank;         /* rank[g * size + i]: member i of group g */
} hccn_cm_team_t;

/* One prediction: the placement, the slowest rank's reduce and copy speed,
 * a transfer buffer of p * HCCN_CM_SAMPLE entries, and scratch space for
 * pricing. Per-link scratch is all zero between calls. */
typedef struct hccn_cm {
    const hccn_cost_place_t *pl;
    int p;
    double r;                /* seconds per byte reduced */
    double m;                /* seconds per byte copied (0: free) */
    hccn_cm_xf_t *x;
    int *cnt, *end, *touched;
    double *load;
    double *sz;
    size_t capsz;
    int failed;              /* no memory: the prediction is void */
    uint64_t proto_bytes;    /* not 0: hccn_hier_cm_flows picks protocols
                                for this size, not the transfers' (forms
                                that price a byte, then chunks of this) */
    uint64_t proto_div;      /* > 1: protocols picked for a transfer's
                                bytes / this (X instances priced as one,
                                hccn_hier_cm_instances) */
    uint64_t proto_mul;      /* > 1: ... for its bytes x this (the
                                schedule's hccn_sched_t.proto_scale) */
    uint64_t tree_bytes;     /* the call's hccn_sim_call_t.tree_bytes */
    int family;              /* the library algorithm whose step
                                costs apply (hccn_sim_call_t) */
    int nvswitch;            /* the call reduces in a node's switch:
                                its transfers may all run one protocol
                                (hccn_sim_sw_call_proto) */
    int eff_given;           /* hccn_hier_cm_flows: the transfers' eff set
                                by the caller, no step added */
    int lat_off;             /* hccn_hier_cm_flows and the in-switch
                                forms: no latency and no step, what a
                                form's transfers hold its links for */
    unsigned protos;         /* bit p: a transfer priced ran protocol p
                                (the call's launch: software.h) */
} hccn_cm_t;

/* Pipelined data: n chunks of c bytes, the last one last bytes. */
typedef struct {
    uint64_t c, n, last;
} hccn_cm_chunks_t;

/* Sets m up for nranks ranks placed by pl. 0, or -1 on no memory (then
 * hccn_hier_cm_free is still to be called). */
int hccn_hier_cm_init(hccn_cm_t *m, const hccn_cost_place_t *pl, int nranks);
void hccn_hier_cm_free(hccn_cm_t *m);

/* Prices the n transfers of x, which start at the same time: sets each
 * one's lat and w (links shared equally by the flows on them, in bytes on
 * the wire: bytes / eff). With a software model each one's protocol, from
 * its size, sets its eff and adds its step to lat; with m->eff_given the
 * caller has set eff and lat is the route's alone. With the software
 * model's per-message host time (send_s, recv_s) each lat also holds what
 * the ranks' hosts add, taking the transfers' messages one after another
 * (cost_flows.c, host_messages). weight > 1 stands for transfers left out
 * of a sample. */
void hccn_hier_cm_flows(hccn_cm_t *m, hccn_cm_xf_t *x, size_t n,
                        double weight);

/* Sets x->eff to the efficiency of x's protocol (the software model's
 * choice for its size and route, device_sim/software.h; 1 without one),
 * adds the protocol to m->protos and returns its step cost, seconds (0
 * without one). */
double hccn_hier_cm_protocol(hccn_cm_t *m, hccn_cm_xf_t *x);

/* lat + bytes * w of a priced transfer. */
double hccn_hier_cm_time(const hccn_cm_xf_t *x);

/* Seconds of a pipeline of h stages carrying the chunks of ck: stage i is
 * the transfers x[off[i] .. off[i+1]) (src and dst set), which move each
 * chunk on at once; a chunk crosses the stages in order, a hop sending it
 * once it has arrived and the hop's previous chunk has left. r (NULL: no
 * reductions) gives per stage the seconds per byte its receivers spend
 * reducing a chunk before passing it on. */
double hccn_hier_cm_pipeline(hccn_cm_t *m, hccn_cm_xf_t *x, int h,
                             const int *off, const hccn_cm_chunks_t *ck,
                             const double *r);

/* The shifts k in 1..size-1 a shift pattern is priced with, all or a
 * sample; returns their number (<= HCCN_CM_SAMPLE). */
int hccn_hier_cm_shifts(int size, int *ks);

/* Member i of group g, with i taken mod the group size. */
int hccn_hier_cm_member(const hccn_cm_team_t *t, int g, int i);

double hccn_hier_cm_max(double a, double b);

/* A timed event of a closed form's walk (rings_cost.c, cost_tree.c): its
 * time, bytes, and two indices the walk gives meaning to. */
typedef struct {
    double t, bytes;
    uint32_t at, q;
} hccn_cm_ev_t;

/* Events not yet taken, earliest first (ties by at, then q); ev has room
 * for as many as the walk may have pending at once. */
typedef struct {
    hccn_cm_ev_t *ev;
    size_t n;
} hccn_cm_evq_t;

void hccn_hier_cm_ev_push(hccn_cm_evq_t *h, hccn_cm_ev_t e);
hccn_cm_ev_t hccn_hier_cm_ev_pop(hccn_cm_evq_t *h);

/* A gathered tail's work on each member once its allgather is done
 * (levels_allreduce.c, gather_tail): a copy of block 0 and n - 1
 * reductions, of `bytes` each. */
double hccn_hier_cm_tail_sum(const hccn_cm_t *m, uint64_t bytes, int n);

/* A closed form: seconds for every group of t to run a (a->nranks the
 * group size, a->root a member index) at once, or HCCN_COST_NONE when the
 * algorithm does not do a->coll. */
typedef hccn_algo_cost_fn hccn_cm_form_fn;

/* The form of the algorithm named name (its table row's cost); NULL when
 * there is none. */
hccn_cm_form_fn hccn_hier_cm_form(const char *name);

/* X concurrent instances of algo's reduce-scatter or allgather of sub
 * (levels.h), on every group of t: priced as one of X blocks each,
 * the same bytes over the same links, each transfer under the protocol of
 * an instance's (1/X of its bytes); a ring's instances overlap one's
 * reductions with the others' transfers, so its time is the longer of
 * the transfers alone and the rank's reductions, plus one last reduction
 * of a block. 0 for an empty sub; sets m->failed for an unknown algo. */
double hccn_hier_cm_instances(hccn_cm_t *m, const char *algo,
                              const hccn_cm_team_t *t,
                              const hccn_coll_args_t *sub, int X);

/* The forms, each its algorithm's row's cost (hierarchy/algos.c), each in
 * its algorithm's file (algo_NAME.c), tree's in cost_tree.c, the
 * hierarchical rows' in cost_hier.c and cost_hier3.c. */
double hccn_hier_cm_mesh(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a);
/* algo_nvls.c: in-switch reduction inside one node, and as hier's
 * level 0. */
double hccn_hier_cm_nvls(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a);
double hccn_hier_cm_hier_nvls(hccn_cm_t *m, const hccn_cm_team_t *t,
                              const hccn_coll_args_t *a);
/* What one group of an in-switch exchange sees (algo_nvls.c): latency
 * with the protocol's step, the reduction unit's own latency, and seconds
 * per byte on the way up, the way down and through the unit. */
typedef struct {
    double alpha, ulat, up, down, unit;
} hccn_hier_nv_form_t;
/* nvls's time for one group of p ranks doing a under form f (also
 * sharp's, algo_sharp.c); HCCN_COST_NONE for other collectives. */
double hccn_hier_nv_time(hccn_cm_t *m, const hccn_hier_nv_form_t *f, int p,
                         const hccn_coll_args_t *a);
/* The links' time of one chunk of nvls's pipelined allreduce on every
 * group of t, blocks of b bytes, while the previous chunk's multicast
 * runs (a reduce-scatter and an allgather at once); -1 when a group is
 * not on one reducing switch. */
double hccn_hier_cm_nvls_stage(hccn_cm_t *m, const hccn_cm_team_t *t,
                               uint64_t b);
/* The transfer size nvls's form is taken at for a (bytes). */
uint64_t hccn_hier_nv_block(const hccn_coll_args_t *a);
/* algo_sharp.c: in-network reduction across nodes, and as hier's
 * level 1. */
double hccn_hier_cm_sharp(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a);
double hccn_hier_cm_hier_sharp(hccn_cm_t *m, const hccn_cm_team_t *t,
                               const hccn_coll_args_t *a);
/* cost_hier.c: the end of each of K chunks' two-part pipeline at the
 * top of hier's allreduce (levels_allreduce.c, top_split): chunk k's
 * input ready at in[k]; its reduction part after the previous one's, its
 * multicast after its reduction and the previous multicast. Parts of a
 * chunk (last: of the last one) x = {reduction alone, multicast alone,
 * reduction while the previous multicast runs, multicast while the next
 * reduction runs}; out[k] is chunk k's multicast's end. */
void hccn_hier_cm_two_part(const double *in, uint64_t K,
                           const double full[4], const double last[4],
                           double *out);
/* sharp's figures for group 0 of t, transfers of b bytes, into *f: 0, or
 * -1 when its routes do not pass the network's reducing switch. */
int hccn_hier_cm_sharp_form(hccn_cm_t *m, const hccn_cm_team_t *t,
                            uint64_t b, hccn_hier_nv_form_t *f);
double hccn_hier_cm_hier_nvls_sharp(hccn_cm_t *m, const hccn_cm_team_t *t,
                                    const hccn_coll_args_t *a);
double hccn_hier_cm_linear(hccn_cm_t *m, const hccn_cm_team_t *t,
                           const hccn_coll_args_t *a);
double hccn_hier_cm_bruck(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a);
double hccn_hier_cm_pairwise(hccn_cm_t *m, const hccn_cm_team_t *t,
                             const hccn_coll_args_t *a);
double hccn_hier_cm_hd(hccn_cm_t *m, const hccn_cm_team_t *t,
                       const hccn_coll_args_t *a);
double hccn_hier_cm_rdouble(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a);
double hccn_hier_cm_torus(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a);
double hccn_hier_cm_ring(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a);
/* algo_rings.c: channels of slice-pipelined rings. */
double hccn_hier_cm_rings(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a);
double hccn_hier_cm_tree(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a);
double hccn_hier_cm_hier(hccn_cm_t *m, const hccn_cm_team_t *t,
                         const hccn_coll_args_t *a);
double hccn_hier_cm_hier_rr(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a);
double hccn_hier_cm_hier_mh(hccn_cm_t *m, const hccn_cm_team_t *t,
                            const hccn_coll_args_t *a);
/* hier's and hier3's forms with the levels of a->levels (algo_levels.c). */
double hccn_hier_cm_hier_levels(hccn_cm_t *m, const hccn_cm_team_t *t,
                                const hccn_coll_args_t *a);
double hccn_hier_cm_hier3_levels(hccn_cm_t *m, const hccn_cm_team_t *t,
                                 const hccn_coll_args_t *a);
double hccn_hier_cm_hier3(hccn_cm_t *m, const hccn_cm_team_t *t,
                          const hccn_coll_args_t *a);
double hccn_hier_cm_hier3_hd(hccn_cm_t *m, const hccn_cm_team_t *t,
                             const hccn_coll_args_t *a);

/* A transfer of bytes from src to dst, not priced yet. */
hccn_cm_xf_t hccn_hier_cm_xf(int src, int dst, uint64_t bytes);

/* A message of n bytes in chunks of a->chunk_bytes, or dflt when 0 (whole
 * elements, at least one, at most n). */
hccn_cm_chunks_t hccn_hier_cm_chunks(const hccn_coll_args_t *a, uint64_t n,
                                     uint64_t dflt);

/* hccn_hier_cm_pipeline over the stages of m->x given by their sizes
 * (stage i: the next size[i] transfers), r as there. */
double hccn_hier_cm_staged(hccn_cm_t *m, int h, const int *size,
                           const hccn_cm_chunks_t *ck, const double *r);

/* The shapes the forms are made of (cost_rounds.c). */

/* Bytes of the whole message of a; of block i of a->nranks blocks. */
uint64_t hccn_hier_cm_whole(const hccn_coll_args_t *a);
uint64_t hccn_hier_cm_block(const hccn_coll_args_t *a, int i);

/* Seconds of a local copy of bytes. */
double hccn_hier_cm_copy(const hccn_cm_t *m, uint64_t bytes);

/* The slowest of the n priced transfers of x; done, if not NULL, gives the
 * time each sender (communicator rank) starts. */
double hccn_hier_cm_slowest(const hccn_cm_xf_t *x, size_t n,
                            const double *done);

/* One round, priced: in every group member i sends bytes to member i + k;
 * returns its slowest transfer's time. Leaves the round in m->x. */
double hccn_hier_cm_shift_round(hccn_cm_t *m, const hccn_cm_team_t *t,
                                int k, uint64_t bytes);

/* Every group's root and its other members, all at once (x[(k-1) *
 * ngroups + g] joins the root and member root+k, into the root when into
 * is set); with reduce the root reduces them in the order k = 1, 2, ... */
double hccn_hier_cm_star(hccn_cm_t *m, const hccn_cm_team_t *t, int root,
                         int into, uint64_t bytes, int reduce);

/* Per communicator rank, when it is done with the rounds so far. */
typedef struct {
    double *ready, *next;
} hccn_cm_clocks_t;

/* Clocks at 0 for m's ranks: 0, or -1 with m->failed set. */
int hccn_hier_cm_clocks_init(hccn_cm_t *m, hccn_cm_clocks_t *c);

/* The latest clock; frees the clocks. */
double hccn_hier_cm_clocks_end(hccn_cm_t *m, hccn_cm_clocks_t *c);

/* One round of the n transfers in m->x, priced as running together: each
 * starts when its sender is done with the previous rounds (and, with
 * recv_waits, its receiver too); the sender is done when it has drained,
 * the receiver when it has arrived and, with reduce, been reduced. */
void hccn_hier_cm_round_step(hccn_cm_t *m, size_t n, hccn_cm_clocks_t *c,
                             int recv_waits, int reduce);

#endif /* HCCN_HIERARCHY_COST_INTERNAL_H */
