/*
 * Hierarchical collectives as a composition of levels (docs/algorithms.md,
 * "Levels"). A level is a way of grouping the ranks: level 0 the ranks of
 * one node, level 1 the ranks with the same place inside their node on the
 * nodes of one pod (or of the whole cluster), level 2 the same across
 * pods, and so on. With group sizes n[0], n[1], ..., n[k-1] every rank has
 * a place x = x0 + n0 * (x1 + n1 * (x2 + ...)), xi its index in its
 * level-i group; at[x] is the rank at place x.
 *
 * allreduce       per chunk of the message (a multiple of n0 ... n(k-1)
 *                 elements, so that every top member's block is the same
 *                 size on every node): a reduce-scatter at each level below the top
 *                 on the block the level below left (phases 1 .. k-1), an
 *                 allreduce of the last piece at the top (phase k), then
 *                 allgathers back down (phases k+1 .. 2k-1). Each level
 *                 runs its phases in chunk order, so the levels
 *                 overlap: chunk c+1 climbs while chunk c crosses the
 *                 top. With lv->slots = D > 1 every level keeps D chunks
 *                 in flight (the library's pipeline slots): its phase of
 *                 chunk c waits for the one chunk c passed before and
 *                 for the level's phase of chunk c-D (the first D
 *                 reduce-scatters one after another, and every one
 *                 where the level's switch reduces), in SCRATCH set
 *                 c % D of its own; below the top the allgathers run
 *                 beside the reduce-scatters, in D sets of their own. A
 *                 level below whose groups have more than
 *                 HCCN_LEVELS_BESIDE_MAX ranks keeps D = 1: one chunk
 *                 at a time, every allgather after the last
 *                 reduce-scatter (as with no stack); under a top whose
 *                 switch reduces every level keeps at most
 *                 HCCN_LEVELS_TOP_FLIGHT transfers of the top's worth
 *                 of chunks. The
 *                 count % (n0 ... n(k-1)) elements left over go last: an
 *                 allreduce at every level (phase 2k), at the top a
 *                 gathered tail where they do not split over its members
 *                 (hccn_hier_levels_tail_algo).
 * reduce_scatter  level 0 first, on all the data: inside each group,
 *                 every rank ends with the group's sum of the blocks whose
 *                 place at level 0 is its own; then level 1 on those (1/n0
 *                 of the data), and so on outwards; the last writes RECV.
 * allgather       the outermost level first, on the rank's own block;
 *                 then each inner level on what the outer ones brought;
 *                 level 0 writes RECV.
 * In reduce_scatter and allgather, phase i runs one flat sub-collective
 * per group and per combination of the places above i (the blocks of one
 * combination are contiguous, those of one rank are not), all at once;
 * every level moves each byte once, so every NIC carries the least there
 * is. They need at[] to be the identity (ranks numbered by place).
 *
 * The flat algorithm of every level is the caller's (lv->algo); each is
 * built once per (algorithm, collective, size) and appended to every group
 * (hierarchy/compose.h).
 */
#ifndef HCCN_HIERARCHY_LEVELS_H
#define HCCN_HIERARCHY_LEVELS_H

#include "hierarchy/coll.h"
#include "hierarchy/compose.h"
#include "hierarchy/fold.h"

#define HCCN_LEVELS_MAX 8
#define HCCN_LEVELS_MEMO 8
/* With slots, a level below the top whose groups have at most this many
 * ranks keeps slots and runs its allgathers beside its reduce-scatters
 * (allreduce, above); a larger one keeps one chunk at a time and its
 * allgathers after: each of its phases is n (n-1) transfers in a switch
 * node, and phases in flight together drain at different instants, each
 * re-rating the others' (on 72-GPU racks the engine's work grows from
 * seconds to many minutes, for a fraction of a percent of simulated
 * time). */
#define HCCN_LEVELS_BESIDE_MAX 16
/* With slots, under a top whose switch reduces every level keeps at most
 * as many chunks in flight as keep this many of the top's transfers in
 * flight (a chunk: n (n-1) in each of its groups), and the default chunk
 * grows as many times as the slots shrink (hccn_hier_levels_top_chunk):
 * all of the top's transfers cross the switch's one unit, so they are
 * one component of the engine, re-rated at every start and drain (16
 * nodes of 8 GPUs under SHARP, 1 GiB hier_nvls_sharp: 1 920 a chunk; 8
 * chunks in flight took the engine from 2.5 s to 300 s, one chunk 8
 * times as large takes 0.3 s, 3681 us simulated against 2884 with 2
 * chunks in flight and 8580 with one chunk of the default size). */
#define HCCN_LEVELS_TOP_FLIGHT (1 << 11)

typedef struct {
    int k;                               /* levels, 1..HCCN_LEVELS_MAX */
    int n[HCCN_LEVELS_MAX];              /* group size of each level */
    const char *algo[HCCN_LEVELS_MAX];   /* its flat algorithm */
    const char *name;                    /* the schedule's name */
    int slots;                           /* allreduce: chunks the top
                                            keeps in flight; 0 = 1 */
} hccn_hier_levels_t;

/* A composition under way. */
typedef struct {
    hccn_sched_t *s;
    const hccn_coll_args_t *a;
    const hccn_hier_levels_t *lv;
    const int *at;                 /* place -> rank, nranks entries */
    int *grp;                      /* one group's ranks */
    hccn_frontier_t *f[HCCN_LEVELS_MAX];  /* each level's latest sinks */
    hccn_frontier_t *tmp, *one;
    uint64_t sbase[HCCN_LEVELS_MAX];      /* each level's SCRATCH */
    struct {                       /* the flat schedules built so far */
        const char *algo;
        hccn_coll_t coll;
        int n, root;
        uint64_t count;
        hccn_sched_t *s;
        int folds;                 /* folded builds: 0 not known, 1, -1 no */
        hccn_sched_fold_t fold;
    } memo[HCCN_LEVELS_MEMO];
    int memo_next;
    /* Folded builds (coll.h, fold_rep; two levels only): per rank whether
     * its steps are kept (node 0's); NULL for a whole build. */
    unsigned char *keep;
    int unfoldable;                /* an outer schedule does not fold */
} hccn_hier_comp_t;

/* Starts a composition into s for a (places by lv and at). 0, or -1 on no
 * memory (hccn_hier_levels_fini is still to be called). */
int hccn_hier_levels_init(hccn_hier_comp_t *h, hccn_sched_t *s,
                     const hccn_coll_args_t *a, const hccn_hier_levels_t *lv,
                     const int *at);
void hccn_hier_levels_fini(hccn_hier_comp_t *h);

/* Folded builds: keeps the ranks of level-0 group 0 when a->fold_rep asks
 * for them (they must be ranks 0 .. fold_nrep-1, each other rank's copy
 * the rank of that group with its level-0 index), two levels only; marks
 * s folded. 0 (also when it does not apply), -1 on no memory. */
int hccn_hier_levels_fold(hccn_hier_comp_t *h);

/* The flat schedule of algo for n ranks (owned by h; NULL if it cannot be
 * built). */
const hccn_sched_t *hccn_hier_levels_flat(hccn_hier_comp_t *h, const char *algo,
                                     hccn_coll_t coll, int n, uint64_t count,
                                     int root);

/* The ranks of group g of level i, by index in the group (h's buffer).
 * Groups are numbered by their first member's place. */
const int *hccn_hier_levels_group(hccn_hier_comp_t *h, int i, uint64_t g);

/* Groups of level i. */
uint64_t hccn_hier_levels_ngroups(const hccn_hier_comp_t *h, int i);

/* The slots of a top that runs algo over groups of n ranks, with d > 1
 * slots: d for every peer a member sends to in turn (the library's
 * slots are its connections'; halving-doubling's log2 n partners, one
 * next rank on a ring), at most 64; 1 with d = 1. */
int hccn_hier_levels_top_peers_slots(int d, const char *algo, int n);

/* The slots, of d, of a top whose switch reduces, in `groups` groups of
 * n ranks: HCCN_LEVELS_TOP_FLIGHT's share, at least 1 (the schedule's
 * and the closed form's). */
int hccn_hier_levels_top_slots(int d, int n, uint64_t groups);

/* A gathered tail's allgather is the mesh's (one step) on tops of at
 * most this many members, a ring's (n - 1 steps) on larger ones: the
 * mesh starts n (n - 1) transfers per local index at once, and on 256
 * nodes of 8 under a fat tree the engine took minutes over them. */
#define HCCN_LEVELS_TAIL_MESH_MAX 16

/* The flat algorithm whose allgather ends an allreduce's tail of t
 * elements (levels_allreduce.c: fewer than the chunks' multiple) at a
 * top of n members, followed by a sum of the n blocks in member order
 * (gather_tail), where t does not split evenly over the members: "mesh"
 * or "ring" (HCCN_LEVELS_TAIL_MESH_MAX). NULL where t splits evenly: the
 * top's own allreduce ends it. */
const char *hccn_hier_levels_tail_algo(int n, uint64_t t);

/* The least block a step of a ring top moves, in the default chunk: the
 * block of the default chunk (HCCN_HIER_CHUNK, 4 MiB) on two nodes of 8
 * ranks, 4 MiB / 8 / 2, half of NCCL's slot (NCCL_BUFFSIZE / NCCL_STEPS
 * = 512 KiB). The library's ring moves a step's slots whatever the
 * ring's length; a chunk's share over n members shrinks as 1/n. */
#define HCCN_LEVELS_RING_BLOCK ((uint64_t)256 << 10)

/* The default chunk (dflt) of an allreduce whose top runs algo across n
 * members under unit ranks each (the levels below): on a ring ("ring")
 * of three or more, at least unit x n x HCCN_LEVELS_RING_BLOCK, so that
 * each step of the ring moves that block at least; dflt on every other
 * top. */
uint64_t hccn_hier_levels_ring_chunk(const char *algo, int n, uint64_t unit,
                                     uint64_t dflt);

/* The least block of a member of a level that reduces in its switch:
 * NCCL's NVLS step (NCCL_NVLS_CHUNKSIZE, 128 KiB, src/transport/nvls.cc),
 * the piece of each rank's share that the switch reduces and multicasts
 * at a time. */
#define HCCN_LEVELS_SWITCH_BLOCK ((uint64_t)128 << 10)

/* The default chunk (dflt) of an allreduce whose first level runs algo0
 * over groups of n0: where that level reduces in its switch, at least n0
 * x HCCN_LEVELS_SWITCH_BLOCK, so that each member's block of a chunk is
 * the library's step at least (4 MiB holds 32 such blocks: only a
 * larger switch node, a 72-GPU rack, grows its chunk); where it is a
 * ring of three or more, at least n0 x HCCN_LEVELS_RING_BLOCK, for the
 * reason a ring top takes it (hccn_hier_levels_ring_chunk: nodes of more
 * than 16 grow theirs); dflt otherwise. */
uint64_t hccn_hier_levels_first_chunk(const hccn_coll_args_t *a,
                                      const char *algo0, int n0,
                                      uint64_t dflt);

/* The default chunk (dflt) of an allreduce with `slots` slots under such
 * a top: as many times dflt as the top keeps fewer slots, so that the
 * bytes in flight are the slots' (a larger chunk, whose steps the fewer
 * transfers amortise, for more chunks in flight). */
uint64_t hccn_hier_levels_top_chunk(int slots, int n, uint64_t groups,
                                    uint64_t dflt);

/* Appends sub for the ranks of grp, its SEND and RECV mapped as given, its
 * SCRATCH at scratch; its roots wait for after, its sinks go to last.
 * Folded, only kept ranks are appended. 0, or -1 with s->failed set. */
int hccn_hier_levels_put(hccn_hier_comp_t *h, const hccn_sched_t *sub,
                    const int *grp, hccn_bufmap_t send, hccn_bufmap_t recv,
                    uint64_t scratch, const hccn_frontier_t *after,
                    hccn_frontier_t *last, int phase);

/* tmp = a | b (h's buffer). */
const hccn_frontier_t *hccn_hier_levels_both(hccn_hier_comp_t *h,
                                        const hccn_frontier_t *a,
                                        const hccn_frontier_t *b);

/* The collectives: append a->coll's schedule to h->s. 0, or -1 with
 * h->s->failed set. chunk is allreduce's default chunk in bytes. */
int hccn_hier_levels_allreduce(hccn_hier_comp_t *h, uint64_t chunk);
int hccn_hier_levels_rs_ag(hccn_hier_comp_t *h);

#endif /* HCCN_HIERARCHY_LEVELS_H */
