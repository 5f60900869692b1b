/*
 * Algorithm selection. The choice depends only on the arguments, the
 * topology view and the override string, so every rank of a communicator
 * makes the same one.
 */
#ifndef HCCN_HIERARCHY_SELECT_H
#define HCCN_HIERARCHY_SELECT_H

#include "hierarchy/coll.h"

/* Picks the algorithm for a; override is an algorithm name (HCCN_ALGO) or
 * NULL. An override that does not support the collective is an error:
 * returns NULL and writes why. */
const hccn_algo_t *hccn_hier_select(const hccn_coll_args_t *a,
                                    const char *override, char *why,
                                    size_t len);

#endif
