/*
 * Recovery after a failure (runtime/recover.c, runtime/recover_round.c):
 * the rendezvous of hccn_comm_agree, hccn_comm_shrink and hccn_comm_grow.
 *
 * A call is one record per communicator (rt_comm.ft, under its lock). Its
 * participants are the communicator's members and, for a grow, the ranks
 * that join. A participant is settled when it has arrived alive, or can no
 * longer arrive: its NPU failed by the plan and its clock has passed the
 * failure, or it returned from its function. Once every participant is
 * settled the alive ones run rounds: each round is an allgather of every
 * participant's vote over the real links, on a communicator of the round's
 * members; a round in which a member fails is run again without it.
 */
#ifndef HCCN_RUNTIME_RECOVER_H
#define HCCN_RUNTIME_RECOVER_H

#include "runtime/rt.h"

enum { RT_FT_AGREE, RT_FT_SHRINK, RT_FT_GROW };
enum { RT_FT_NONE, RT_FT_ALIVE, RT_FT_DEAD };

/* Default costs (hccn_recovery_opts_t). */
#define RT_FT_DETECT_S 1e-3
#define RT_FT_INIT_S 1e-4

typedef struct rt_ft {
    int open;                 /* a call is in progress */
    uint64_t seq;             /* its number on the communicator */
    int kind;                 /* RT_FT_* */
    uint64_t tag;             /* grow: a hash of the joiners' list */
    int nmem;                 /* members (comm size) */
    int np, capp;             /* participants: members, then joiners */
    int *who;                 /* world rank of each participant */
    int *state;               /* RT_FT_* of each participant */
    int *flag;                /* each participant's vote */
    uint64_t *seqs;           /* per member: calls it has made */
    int inside;               /* participants between arrival and leave */
    int started;              /* round 0 set up */
    int round;                /* the current round */
    int nround;               /* participants in the current round */
    int nrep;                 /* of them, reported */
    int *rep;                 /* per participant: last round reported + 1 */
    int *rep_ok;              /* ... and whether its allgather succeeded */
    double *rep_end;          /* ... and its clock after it */
    hccn_status_t *rep_st;
    char rep_msg[RT_ERR_MAX]; /* the first failure's message in the round */
    double t_detect;          /* the round cannot start earlier */
    rt_comm_t *rcomm;         /* the current round's communicator */
    int final;                /* decided: status, result */
    hccn_status_t status;
    char msg[RT_ERR_MAX];
    rt_comm_t *result;        /* shrink and grow: the new communicator */
    int **known;              /* per member: failed comm ranks it learnt */
    int *nknown;
} rt_ft_t;

/* Frees a recovery record (NULL: nothing). */
void hccn_rt_ft_free(rt_ft_t *ft);

/* The error of a call on a revoked communicator (named after fn). */
hccn_status_t hccn_rt_ft_revoked_error(const char *fn, hccn_comm_t *comm);

/* One agree (kind RT_FT_AGREE), shrink or grow of the calling rank ctx:
 * comm is its handle (NULL: a joiner of a grow, with c the communicator
 * it joins), flag its vote (the AND on return), ranks/n the joiners
 * (grow), *out the new communicator's token (shrink, grow). */
hccn_status_t hccn_rt_ft_call(const char *fn, hccn_ctx_t *ctx, rt_comm_t *c,
                              hccn_comm_t *comm, int kind, int *flag,
                              const int *ranks, int n, hccn_comm_t **out);

/* The communicator whose open grow lists world rank me as a joiner, or
 * NULL (ranks waiting for one poll it). */
rt_comm_t *hccn_rt_ft_find_grow(hccn_cluster_t *cl, int me, uint64_t tag);

/* Moves ctx's clock on to t, recorded in the trace as a stretch named
 * name (nothing when the clock is there already). */
void hccn_rt_ft_clock_to(hccn_ctx_t *ctx, double t, const char *name);

/* The votes' exchange of one round: a Bruck allgather of (flag, idx) over
 * rc, in device memory of ctx's arena; *and_out becomes the AND of every
 * flag received. */
hccn_status_t hccn_rt_ft_vote(hccn_ctx_t *ctx, rt_comm_t *rc, int idx,
                              int flag, int *and_out);

/* The members of round communicator rc meet in the engine: every clock
 * becomes the latest of theirs (the time of the round's decision). */
hccn_status_t hccn_rt_ft_round_sync(hccn_ctx_t *ctx, rt_comm_t *rc,
                                    const char *fn);

/* The gate of grow call seq on c for participant i: comm rank 0 meets each
 * of the n joiners (who cannot know the record before), then every
 * participant meets at once, all in the engine; a participant that
 * returned without arriving ends it with HCCN_ERR_REMOTE. */
hccn_status_t hccn_rt_ft_grow_gate(hccn_ctx_t *ctx, rt_comm_t *c, int i,
                                   uint64_t seq, uint64_t tag, int n,
                                   const char *fn);

/* A joiner of a grow (index j in its list of tag) and comm rank 0 of the
 * grown communicator meet in simulated time: the engine holds the joiner
 * until rank 0 has arrived (its clock becomes the later of the two). peer:
 * the other's rank, whose return ends the wait (HCCN_ERR_REMOTE); -1 when
 * the caller does not know it. */
hccn_status_t hccn_rt_ft_pair_join(hccn_ctx_t *ctx, uint64_t tag, int j,
                                   int peer, const char *fn);

/* The hash of a grow's list of joiners that its participants agree on. */
uint64_t hccn_rt_ft_tag(int kind, const int *ranks, int n);

/* The detection delay and communicator set-up time of cl. */
double hccn_rt_ft_detect_s(const hccn_cluster_t *cl);
double hccn_rt_ft_init_s(const hccn_cluster_t *cl);

#endif /* HCCN_RUNTIME_RECOVER_H */
