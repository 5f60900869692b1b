/*
 * Algorithm overrides in HCCL's HCCL_ALGO grammar (HCCN_ALGO, or a
 * communicator's or a call's option). docs/selection.md has the grammar,
 * every accepted name and examples:
 *
 *   ring                                    every collective: ring
 *   level0:mesh;level1:ring                 the hierarchical algorithm with
 *                                           mesh inside nodes, ring across
 *   level0:mesh;level1:ring;level2:ring     three levels: ring inside pods
 *                                           and across them (hier3)
 *   allreduce=level0:mesh;level1:H-D_R/allgather=ring
 *                                           per collective; the others are
 *                                           chosen by cost
 *
 * A spec is parsed once and kept by its text; parsing checks every name,
 * so a bad spec fails on every call, on every rank alike.
 */
#ifndef HCCN_HIERARCHY_ALGO_SPEC_H
#define HCCN_HIERARCHY_ALGO_SPEC_H

#include <stddef.h>

#include "hierarchy/coll.h"

#define HCCN_SPEC_NAME_MAX 32
#define HCCN_SPEC_PART_MAX 96

typedef enum {
    HCCN_SPEC_AUTO,      /* no override: the cheapest candidate */
    HCCN_SPEC_ALGO,      /* one algorithm by name */
    HCCN_SPEC_LEVELS,    /* level0..2 algorithms ("" = any) */
} hccn_spec_kind_t;

/* What a spec says for one collective. */
typedef struct {
    hccn_spec_kind_t kind;
    char algo[HCCN_SPEC_NAME_MAX];      /* ALGO: a table name or an alias */
    char level[3][HCCN_SPEC_NAME_MAX];  /* LEVELS: canonical names or "" */
    char part[HCCN_SPEC_PART_MAX];      /* the spec text it came from */
} hccn_spec_choice_t;

typedef struct {
    char text[256];                     /* the spec (cut if longer) */
    hccn_spec_choice_t dflt;            /* collectives without an entry */
    hccn_spec_choice_t op[HCCN_COLL_COUNT];
    unsigned ops;                       /* bit per collective with one */
} hccn_algo_spec_t;

/* Parses spec (NULL or "" = no override) into *out. Returns 0, or -1 with
 * why naming the spec and the part of it that is wrong. Pure. */
int hccn_hier_spec_parse(const char *spec, hccn_algo_spec_t *out, char *why,
                         size_t len);

/* Parsed specs by text (errors too), so that each distinct spec is parsed
 * once: owned by one cluster's selection cache (select.h), never shared
 * between clusters; the caller serialises access. All zero is empty. */
#define HCCN_SPEC_CACHE_SLOTS 32

typedef struct {
    struct {
        char *text;
        int rc;
        hccn_algo_spec_t spec;
        char why[512];
    } slot[HCCN_SPEC_CACHE_SLOTS];
    unsigned next;
} hccn_spec_cache_t;

/* As hccn_hier_spec_parse, through cache (NULL: parse every time). */
int hccn_hier_spec_get(hccn_spec_cache_t *cache, const char *spec,
                       hccn_algo_spec_t *out, char *why, size_t len);

/* Frees what cache holds and empties it. */
void hccn_hier_spec_cache_clear(hccn_spec_cache_t *cache);

/* The algorithm the spec forces for coll: *algo is NULL when the spec
 * leaves coll to the cost model. Returns 0, or -1 with why when the
 * forced algorithm does not exist or does not implement coll. *part, if
 * not NULL, gets the spec text responsible. */
int hccn_hier_spec_pick(const hccn_algo_spec_t *spec, hccn_coll_t coll,
                        const hccn_algo_t **algo, const char **part,
                        char *why, size_t len);

/* The table row that runs level0 inside nodes, level1 across them (inside
 * a pod when there is a level 2) and level2 across pods ("" = any), first
 * match in docs/selection.md's mapping; NULL if none. */
const hccn_algo_t *hccn_hier_spec_levels_row(const char *level0,
                                             const char *level1,
                                             const char *level2);

/* The rows running level0..level2 where "" (NA) stands for any level
 * algorithm, one after another: the first after `after` (NULL: the first
 * of all), in a fixed order; NULL past the last. */
const hccn_algo_t *hccn_hier_spec_levels_next(const char *level0,
                                              const char *level1,
                                              const char *level2,
                                              const hccn_algo_t *after);

/* 1 if the spec's choice for coll gives levels and leaves some as NA
 * (the cost model then chooses among hccn_hier_spec_levels_next's rows);
 * the choice's levels in *lv. */
int hccn_hier_spec_open_levels(const hccn_algo_spec_t *spec, hccn_coll_t coll,
                               const char *lv[3]);

#endif /* HCCN_HIERARCHY_ALGO_SPEC_H */
