/*
 * Join steps of schedule composition (hierarchy/compose.h) against the
 * full fan-in they stand for.
 *
 * Random compositions on 16 ranks: phases of flat algorithms (mesh, ring,
 * pairwise, halving-doubling) on random groups of random sizes, each phase
 * after the last, so that some phases' roots wait for many sinks (joins)
 * and others for few (none). Each schedule is expanded here into the one
 * composition made before joins existed: every join dropped, and every
 * step that waited for it waiting for the join's own dependencies instead.
 * Both are timed by the engine (tasks as the runtime makes them) on two
 * topologies where many transfers share links and start at one instant;
 * every step's end and every rank's end must be the same bits (==), and a
 * join must end the instant its last dependency does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "device_sim/engine.h"
#include "device_sim/topo.h"
#include "hierarchy/coll.h"
#include "hierarchy/compose.h"
#include "hierarchy/sched.h"

#define NR 16

static const char *const topos[2] = {
    "{\"version\": 1, \"node_types\": [{\"count\": 2,"
    " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 3,"
    " \"mem_bw_GBps\": 20},"
    " \"fabric\": {\"type\": \"switch\", \"bw_GBps\": 1, \"lat_us\": 1},"
    " \"nics\": {\"count\": 2, \"bw_GBps\": 0.75, \"lat_us\": 2}}],"
    " \"network\": {\"type\": \"switch\", \"lat_us\": 0.5}}",
    "{\"version\": 1, \"node_types\": [{\"count\": 2,"
    " \"npu\": {\"count\": 8, \"arena_MiB\": 16, \"reduce_bw_GBps\": 3},"
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 1, \"lat_us\": 1},"
    " \"nics\": {\"count\": 8, \"bw_GBps\": 0.5, \"lat_us\": 2}}],"
    " \"network\": {\"type\": \"switch\", \"lat_us\": 0.5}}",
};

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A join as compose appends it: a COPY of no bytes from SEND to RECV at
 * offset 0 (no flat algorithm here makes one). */
static int is_join(const hccn_step_t *st)
{
    return st->kind == HCCN_STEP_COPY && st->bytes == 0 &&
           st->src_buf == HCCN_BUF_SEND && st->dst_buf == HCCN_BUF_RECV &&
           st->src_off == 0 && st->dst_off == 0;
}

typedef struct {
    const char *algo;
    hccn_coll_t coll;
} phase_kind_t;

static const phase_kind_t kinds[] = {
    {"mesh", HCCN_COLL_ALLGATHER},     {"mesh", HCCN_COLL_REDUCE_SCATTER},
    {"mesh", HCCN_COLL_ALLREDUCE},     {"ring", HCCN_COLL_ALLREDUCE},
    {"pairwise", HCCN_COLL_ALLTOALL},  {"hd", HCCN_COLL_ALLGATHER},
};

/* A random composition of 3 to 7 phases on NR ranks. */
static hccn_sched_t *random_sched(uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 11;
    hccn_sched_t *dst = hccn_sched_new(NR, "joined");
    hccn_frontier_t *f = hccn_frontier_new(NR);
    assert_non_null(dst);
    assert_non_null(f);
    int nphases = 3 + (int)(rng_next(&s) % 5);
    for (int ph = 0; ph < nphases; ph++) {
        int grp[NR];
        for (int r = 0; r < NR; r++)
            grp[r] = r;
        for (int r = NR - 1; r > 0; r--) {
            int k = (int)(rng_next(&s) % (uint64_t)(r + 1)), t = grp[r];
            grp[r] = grp[k];
            grp[k] = t;
        }
        int g = rng_next(&s) % 2 ? NR : 2 + (int)(rng_next(&s) % (NR - 1));
        const phase_kind_t *k =
            &kinds[rng_next(&s) % (sizeof(kinds) / sizeof(kinds[0]))];
        hccn_coll_args_t a = {.coll = k->coll, .nranks = g, .esize = 4,
                              .count = (uint64_t)g * 4096 *
                                       (1 + rng_next(&s) % 4)};
        hccn_sched_t *sub = hccn_hier_algo_find(k->algo)->build(&a);
        assert_non_null(sub);
        hccn_compose_t how = hccn_compose_identity();
        how.ranks = grp;
        how.after = f;
        how.phase = ph + 1;
        assert_int_equal(hccn_sched_compose(dst, sub, &how, f), 0);
        hccn_sched_free(sub);
    }
    hccn_frontier_free(f);
    char why[256];
    if (hccn_sched_validate(dst, why, sizeof(why)) != 0)
        fail_msg("seed %llu: %s", (unsigned long long)seed, why);
    return dst;
}

/* Appends to out (n entries, at most cap) the expanded form of dependency
 * d of rank rk: d itself mapped through map, or, for a join, what it
 * waited for; each step once. */
static void expand_dep(const hccn_sched_rank_t *rk, const uint32_t *map,
                       uint32_t d, uint32_t *out, uint32_t *n)
{
    const hccn_step_t *st = &rk->steps[d];
    if (is_join(st)) {
        for (uint32_t k = 0; k < st->ndeps; k++)
            expand_dep(rk, map, rk->deps[st->dep_off + k], out, n);
        return;
    }
    for (uint32_t k = 0; k < *n; k++)
        if (out[k] == map[d])
            return;
    out[(*n)++] = map[d];
}

/* s without its joins: the full fan-in. map[r][i] is step i's index in
 * the result (UINT32_MAX for a join). */
static hccn_sched_t *expand(const hccn_sched_t *s, uint32_t **map)
{
    hccn_sched_t *e = hccn_sched_new(s->nranks, "expanded");
    assert_non_null(e);
    for (int r = 0; r < s->nranks; r++) {
        const hccn_sched_rank_t *rk = &s->ranks[r];
        map[r] = calloc(rk->nsteps + 1, sizeof(uint32_t));
        uint32_t *deps = calloc(rk->nsteps + 1, sizeof(uint32_t));
        assert_non_null(map[r]);
        assert_non_null(deps);
        for (uint32_t i = 0; i < rk->nsteps; i++) {
            const hccn_step_t *st = &rk->steps[i];
            map[r][i] = UINT32_MAX;
            if (is_join(st))
                continue;
            uint32_t n = 0;
            for (uint32_t k = 0; k < st->ndeps; k++)
                expand_dep(rk, map[r], rk->deps[st->dep_off + k], deps, &n);
            map[r][i] = hccn_sched_add(e, r, st, deps, n);
            assert_false(e->failed);
        }
        free(deps);
    }
    return e;
}

/* Times s on topo, every rank's steps posted at 0 as the runtime makes
 * their tasks; each step's end into ends[r][i], each rank's into last. */
static void run(const hccn_sim_topo_t *topo, const hccn_sched_t *s,
                double **ends, double *last)
{
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 0.0);
    assert_non_null(eng);
    hccn_sim_batch_t *b[NR];
    int world[NR];
    for (int r = 0; r < NR; r++)
        world[r] = r;
    for (int r = 0; r < NR; r++) {
        const hccn_sched_rank_t *rk = &s->ranks[r];
        hccn_sim_task_t *t = calloc(rk->nsteps + 1, sizeof(*t));
        assert_non_null(t);
        for (uint32_t i = 0; i < rk->nsteps; i++) {
            hccn_sched_step_task(&rk->steps[i], &topo->npus[r], world, &t[i]);
            t[i].key = (hccn_sim_key_t){3, 1, rk->steps[i].xfer};
        }
        b[r] = hccn_sim_post(eng, r, t, (int)rk->nsteps, rk->deps, NULL);
        assert_non_null(b[r]);
        free(t);
    }
    hccn_sim_finish_all(eng);
    for (int r = 0; r < NR; r++) {
        assert_true(hccn_sim_batch_done(eng, b[r]));
        ends[r] = calloc(s->ranks[r].nsteps + 1, sizeof(double));
        assert_non_null(ends[r]);
        for (uint32_t i = 0; i < s->ranks[r].nsteps; i++)
            ends[r][i] = hccn_sim_task_end(b[r], (int)i);
        last[r] = hccn_sim_batch_end(b[r]);
    }
    hccn_sim_engine_destroy(eng);
}

/* The joins' checks on one timed pair; counts joins and entries. */
static void compare(const char *name, uint64_t seed, const hccn_sched_t *s,
                    uint32_t **map, double **js, double **es,
                    const double *jl, const double *el, long *joins)
{
    for (int r = 0; r < NR; r++) {
        const hccn_sched_rank_t *rk = &s->ranks[r];
        if (!(jl[r] == el[r]))
            fail_msg("%s, seed %llu: rank %d ends at %.17g s, %.17g s with "
                     "the full fan-in", name, (unsigned long long)seed, r,
                     jl[r], el[r]);
        for (uint32_t i = 0; i < rk->nsteps; i++) {
            const hccn_step_t *st = &rk->steps[i];
            if (!is_join(st)) {
                if (!(js[r][i] == es[r][map[r][i]]))
                    fail_msg("%s, seed %llu: rank %d step %u ends at %.17g "
                             "s, %.17g s with the full fan-in", name,
                             (unsigned long long)seed, r, i, js[r][i],
                             es[r][map[r][i]]);
                continue;
            }
            double want = 0.0;
            for (uint32_t k = 0; k < st->ndeps; k++) {
                double d = js[r][rk->deps[st->dep_off + k]];
                want = d > want ? d : want;
            }
            assert_true(st->ndeps >= 2);
            if (!(js[r][i] == want))
                fail_msg("%s, seed %llu: rank %d join %u ends at %.17g s, "
                         "its last dependency at %.17g s", name,
                         (unsigned long long)seed, r, i, js[r][i], want);
            (*joins)++;
        }
    }
}

static void free_rows(double **rows, uint32_t **map)
{
    for (int r = 0; r < NR; r++) {
        free(rows[r]);
        if (map != NULL)
            free(map[r]);
    }
}

static void test_join_equals_fan_in(void **state)
{
    (void)state;
    long joins = 0, saved = 0;
    for (int t = 0; t < 2; t++) {
        char err[512];
        hccn_sim_topo_t *topo = NULL;
        if (hccn_sim_topo_load_string(topos[t], "join", &topo, err,
                                      sizeof(err)) != 0)
            fail_msg("%s", err);
        for (uint64_t seed = 1; seed <= 40; seed++) {
            hccn_sched_t *s = random_sched(seed);
            uint32_t *map[NR];
            hccn_sched_t *e = expand(s, map);
            double *js[NR], *es[NR], jl[NR], el[NR];
            run(topo, s, js, jl);
            run(topo, e, es, el);
            compare(t ? "mesh" : "switch", seed, s, map, js, es, jl, el,
                    &joins);
            for (int r = 0; r < NR; r++)
                saved += (long)e->ranks[r].ndeps - (long)s->ranks[r].ndeps;
            free_rows(js, map);
            free_rows(es, NULL);
            hccn_sched_free(e);
            hccn_sched_free(s);
        }
        hccn_sim_topo_free(topo);
    }
    print_message("%ld joins, %ld dependency entries saved\n", joins, saved);
    /* Joins were made, many times, and each saved entries. */
    if (joins < 200 || saved <= joins * 64)
        fail_msg("joins barely exercised: %ld joins, %ld entries saved",
                 joins, saved);
}

/* Few roots after few sinks: no join, the schedule as before (every root
 * waits for every sink). */
static void test_no_join_when_small(void **state)
{
    (void)state;
    const int grp[4] = {0, 1, 2, 3};
    hccn_sched_t *dst = hccn_sched_new(4, "small");
    hccn_frontier_t *f = hccn_frontier_new(4);
    assert_non_null(dst);
    assert_non_null(f);
    hccn_coll_args_t a = {.coll = HCCN_COLL_ALLGATHER, .nranks = 4,
                          .count = 64, .esize = 4};
    hccn_compose_t how = hccn_compose_identity();
    how.ranks = grp;
    how.after = f;
    for (int ph = 0; ph < 2; ph++) {
        hccn_sched_t *sub = hccn_hier_algo_find("mesh")->build(&a);
        assert_non_null(sub);
        assert_int_equal(hccn_sched_compose(dst, sub, &how, f), 0);
        hccn_sched_free(sub);
    }
    for (int r = 0; r < 4; r++)
        for (uint32_t i = 0; i < dst->ranks[r].nsteps; i++)
            assert_false(is_join(&dst->ranks[r].steps[i]));
    hccn_frontier_free(f);
    hccn_sched_free(dst);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join_equals_fan_in),
        cmocka_unit_test(test_no_join_when_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
