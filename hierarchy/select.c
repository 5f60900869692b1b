/*
 * Algorithm selection (see select.h).
 */
#include <stdio.h>

#include "hierarchy/select.h"

static const char *default_algo(hccn_coll_t coll)
{
    switch (coll) {
    case HCCN_COLL_ALLTOALL:
    case HCCN_COLL_BARRIER:
        return "mesh";
    case HCCN_COLL_SCATTER:
    case HCCN_COLL_GATHER:
        return "linear";
    default:
        return "ring";
    }
}

const hccn_algo_t *hccn_hier_select(const hccn_coll_args_t *a,
                                    const hccn_hier_select_in_t *in,
                                    char *why, size_t len, char *report,
                                    size_t rlen)
{
    const char *override = in->spec;
    if (report != NULL && rlen > 0)
        report[0] = '\0';
    const char *name = override != NULL && *override ? override
                                                     : default_algo(a->coll);
    const hccn_algo_t *algo = hccn_hier_algo_find(name);
    if (algo == NULL) {
        snprintf(why, len, "unknown algorithm '%s' (hccn-info lists them)",
                 name);
        return NULL;
    }
    if (!(algo->colls & (1u << a->coll))) {
        snprintf(why, len, "algorithm '%s' does not implement %s", name,
                 hccn_coll_name(a->coll));
        return NULL;
    }
    return algo;
}
