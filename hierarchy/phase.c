/*
 * Readable names of schedule phases (hccn_step_t.phase) for traces. Each
 * algorithm numbers its phases itself (the enums at the top of its file);
 * this table says what they mean, per collective where that matters.
 */
#include <string.h>

#include "hierarchy/coll.h"

/* The hierarchical schedules ("hier(mesh,ring)", ...): phases 1..3 are the
 * level-0 and level-1 parts in the order algo_hier.c builds them, 4 the
 * tail of count % L elements. */
static const char *hier_phase(hccn_coll_t coll, int phase)
{
    static const char *const names[][3] = {
        [HCCN_COLL_ALLREDUCE] = {"intra reduce-scatter", "inter allreduce",
                                 "intra allgather"},
        [HCCN_COLL_REDUCE_SCATTER] = {"intra reduce-scatter",
                                      "inter reduce-scatter", NULL},
        [HCCN_COLL_ALLGATHER] = {"inter allgather", "intra allgather", NULL},
        [HCCN_COLL_BROADCAST] = {"intra scatter", "inter broadcast",
                                 "intra allgather"},
        [HCCN_COLL_REDUCE] = {"intra reduce-scatter", "inter reduce",
                              "intra gather"},
    };
    if (phase == 4)
        return "tail";
    if ((unsigned)coll > HCCN_COLL_REDUCE || phase < 1 || phase > 3)
        return NULL;
    return names[coll][phase - 1];
}

static const char *flat_phase(const char *algo, hccn_coll_t coll, int phase)
{
    int rooted = coll == HCCN_COLL_BROADCAST || coll == HCCN_COLL_REDUCE;
    if (strcmp(algo, "ring") == 0 || strcmp(algo, "hier(ring)") == 0) {
        if (rooted)
            return phase == 1 ? "chain" : NULL;
        return phase == 1 ? "reduce-scatter" : phase == 2 ? "allgather"
                                                          : NULL;
    }
    if (strcmp(algo, "mesh") == 0)
        return phase == 1 ? "reduce" : phase == 2 ? "gather" : NULL;
    if (strcmp(algo, "rdouble") == 0)
        return phase == 1 ? "fold" : phase == 2 ? "exchange"
                                                : phase == 4 ? "unfold" : NULL;
    if (strcmp(algo, "hd") == 0) {
        static const char *const hd[] = {"fold", "reduce-scatter",
                                         "allgather", "unfold"};
        return phase >= 1 && phase <= 4 ? hd[phase - 1] : NULL;
    }
    if (strcmp(algo, "tree") == 0)
        return phase == 1 ? "up" : phase == 2 ? "down" : NULL;
    if (strcmp(algo, "linear") == 0)
        return phase == 1 ? "gather" : phase == 2 ? "release" : NULL;
    return phase == 1 ? "exchange" : NULL;
}

const char *hccn_sched_phase_name(const char *algo, hccn_coll_t coll,
                                  int phase)
{
    if (phase == 0)
        return NULL;
    if (strncmp(algo, "hier(", 5) == 0 && strcmp(algo, "hier(ring)") != 0)
        return hier_phase(coll, phase);
    return flat_phase(algo, coll, phase);
}
