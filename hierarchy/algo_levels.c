/*
 * Hierarchical compositions of any flat algorithm per level
 * (docs/algorithms.md, "Levels"; the composition itself is levels.h).
 *
 * The named rows of the table (hier, hier_rr, hier_mh, hier3, hier3_hd)
 * fix one combination each; every other combination of ring, mesh and
 * halving-doubling at each level is a row here, named after its levels:
 * "hier(ring,hd)" runs ring inside nodes and halving-doubling across them,
 * "hier3(hd,ring,mesh)" adds a third level across pods. They serve
 * allreduce, reduce-scatter and allgather. They are never priced by the
 * default selection (the named rows are); a spec reaches them by name or
 * by its levels (HCCN_ALGO="level0:ring;level1:hd"), and a level the spec
 * leaves as NA is chosen by the cost model among the rows that match the
 * others (select.c).
 *
 * A row's builder and closed form are the named rows' own, given the
 * levels through args->levels (hccn_hier_build sets them), so a
 * combination builds exactly the steps, and costs exactly what, a named
 * row with those levels would.
 */
#include <string.h>

#include "device_sim/fail.h"
#include "hierarchy/algo_util.h"
#include "hierarchy/coll.h"
#include "hierarchy/cost_internal.h"

hccn_sched_t *hccn_hier_hier_build_levels(const hccn_coll_args_t *args);
hccn_sched_t *hccn_hier_hier3_build_levels(const hccn_coll_args_t *args);

typedef struct {
    hccn_algo_t row;
    hccn_level_choice_t lv;
} combo_t;

hccn_sched_t *hccn_hier_no_levels(void)
{
    hccn_sim_fail(HCCN_ERR_INTERNAL, "a composition row built without its "
                  "levels (hccn_hier_build gives them)");
    return NULL;
}

static hccn_sched_t *build(const hccn_coll_args_t *a)
{
    if (a->levels == NULL)
        return hccn_hier_no_levels();
    return a->levels->k == 2 ? hccn_hier_hier_build_levels(a)
                             : hccn_hier_hier3_build_levels(a);
}

static double cost(hccn_cm_t *m, const hccn_cm_team_t *t,
                   const hccn_coll_args_t *a)
{
    if (a->levels == NULL)
        return HCCN_COST_NONE;
    return a->levels->k == 2 ? hccn_hier_cm_hier_levels(m, t, a)
                             : hccn_hier_cm_hier3_levels(m, t, a);
}

#define COLLS (1u << HCCN_COLL_ALLREDUCE | 1u << HCCN_COLL_REDUCE_SCATTER | \
               1u << HCCN_COLL_ALLGATHER)
/* p: the collectives its first level (x) has a message between every
 * pair of a node's ranks for (hccn_algo_t.node_pairs): COLLS for mesh. */
#define ROW2(x, y, p)                                                       \
    {{"hier(" x "," y ")", x " inside nodes, " y " across", COLLS, build,  \
      0, cost, 1, p},                                                       \
     {"hier(" x "," y ")", 2, {x, y, NULL}}}
#define ROW3(x, y, z, p)                                                    \
    {{"hier3(" x "," y "," z ")",                                          \
      x " inside nodes, " y " inside pods, " z " across", COLLS, build, 0, \
      cost, 1, p},                                                          \
     {"hier3(" x "," y "," z ")", 3, {x, y, z}}}
#define ROW3_ANY(x, y, p)                                                   \
    ROW3(x, y, "ring", p), ROW3(x, y, "mesh", p), ROW3(x, y, "hd", p)

/* Every combination but those of the named rows (named[] below). */
static const combo_t combos[] = {
    ROW2("ring", "mesh", 0), ROW2("ring", "hd", 0),
    ROW2("mesh", "mesh", COLLS), ROW2("hd", "ring", 0),
    ROW2("hd", "mesh", 0), ROW2("hd", "hd", 0),
    ROW3("mesh", "ring", "mesh", COLLS), ROW3_ANY("mesh", "mesh", COLLS),
    ROW3_ANY("mesh", "hd", COLLS), ROW3_ANY("ring", "ring", 0),
    ROW3_ANY("ring", "mesh", 0), ROW3_ANY("ring", "hd", 0),
    ROW3_ANY("hd", "ring", 0), ROW3_ANY("hd", "mesh", 0),
    ROW3_ANY("hd", "hd", 0),
};

#define NCOMBOS (sizeof(combos) / sizeof(combos[0]))

/* The named rows' combinations. */
static const struct {
    const char *l[3];
    const char *row;
} named[] = {
    {{"mesh", "ring", ""}, "hier"},
    {{"ring", "ring", ""}, "hier_rr"},
    {{"mesh", "hd", ""}, "hier_mh"},
    {{"mesh", "ring", "ring"}, "hier3"},
    {{"mesh", "ring", "hd"}, "hier3_hd"},
};

static const char *const level_algos[] = {"ring", "mesh", "hd", NULL};

const char *const *hccn_hier_level_algos(void)
{
    return level_algos;
}

const hccn_level_choice_t *hccn_hier_algo_levels(const hccn_algo_t *algo)
{
    for (size_t i = 0; i < NCOMBOS; i++)
        if (algo == &combos[i].row)
            return &combos[i].lv;
    return NULL;
}

/* A combination row by name; NULL if none. */
const hccn_algo_t *hccn_hier_combo_find(const char *name)
{
    for (size_t i = 0; i < NCOMBOS; i++)
        if (strcmp(combos[i].row.name, name) == 0)
            return &combos[i].row;
    return NULL;
}

static int same(const char *x, const char *y)
{
    return strcmp(x != NULL ? x : "", y != NULL ? y : "") == 0;
}

const hccn_algo_t *hccn_hier_levels_row(const char *level0,
                                        const char *level1,
                                        const char *level2)
{
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
        if (same(level0, named[i].l[0]) && same(level1, named[i].l[1]) &&
            same(level2, named[i].l[2]))
            return hccn_hier_algo_find(named[i].row);
    for (size_t i = 0; i < NCOMBOS; i++) {
        const hccn_level_choice_t *lv = &combos[i].lv;
        if (same(level0, lv->algo[0]) && same(level1, lv->algo[1]) &&
            same(level2, lv->algo[2]))
            return &combos[i].row;
    }
    return NULL;
}
