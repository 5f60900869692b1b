/*
 * Algorithm selection. The choice depends only on the arguments, the
 * topology and the override string, so every rank of a communicator makes
 * the same one.
 */
#ifndef HCCN_HIERARCHY_SELECT_H
#define HCCN_HIERARCHY_SELECT_H

#include "device_sim/topo.h"
#include "hierarchy/coll.h"

/* What selection remembers (predictions by their inputs, parsed specs):
 * one per cluster or timing-only predictor, never process-global, so two
 * clusters in one process neither share nor contend. Thread-safe. */
typedef struct hccn_hier_cache hccn_hier_cache_t;

/* A new empty cache; NULL on no memory. */
hccn_hier_cache_t *hccn_hier_cache_new(void);
void hccn_hier_cache_free(hccn_hier_cache_t *c);

typedef struct {
    const hccn_sim_topo_t *topo;
    const int *world;         /* comm rank -> NPU index in topo */
    const char *spec;         /* override in HCCN_ALGO's grammar, or NULL */
    hccn_hier_cache_t *cache; /* NULL: nothing is remembered */
} hccn_hier_select_in_t;

/* Picks the algorithm for a. An override that names an unknown algorithm
 * or one that cannot run a is an error: returns NULL, writes why and
 * records it (device_sim/fail.h) as "algorithm: <why>", with
 * HCCN_ERR_UNSUPPORTED if the spec names one known algorithm, else
 * HCCN_ERR_INVALID (HCCN_ERR_NOMEM for want of memory).
 * report (may be NULL) receives one line on the choice and the candidates'
 * predicted times, for HCCN_DEBUG=INFO. */
const hccn_algo_t *hccn_hier_select(const hccn_coll_args_t *a,
                                    const hccn_hier_select_in_t *in,
                                    char *why, size_t len, char *report,
                                    size_t rlen);

#endif
