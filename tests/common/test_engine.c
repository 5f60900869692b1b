/* Timing a schedule in the timing engine (test_engine.h). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "hierarchy/coll.h"
#include "test_engine.h"

/* One rank's steps as engine tasks, as the runtime makes them
 * (hccn_sched_step_task: routes through a relay, reductions in a
 * switch). */
static hccn_sim_task_t *tasks_of(const hccn_sched_rank_t *rk,
                                 const hccn_sim_npu_t *npu, const int *world,
                                 const int *ident)
{
    hccn_sim_task_t *tk = calloc(rk->nsteps + 1, sizeof(*tk));
    assert_non_null(tk);
    for (uint32_t i = 0; i < rk->nsteps; i++) {
        hccn_sched_step_task(&rk->steps[i], npu,
                             world != NULL ? world : ident, &tk[i]);
        tk[i].key = (hccn_sim_key_t){1, 1, rk->steps[i].xfer};
    }
    return tk;
}

double test_engine_time(const hccn_sim_topo_t *topo, const hccn_sched_t *s,
                        const int *world, hccn_sim_engine_t **keep)
{
    hccn_sim_engine_t *eng = hccn_sim_engine_create(topo, 60.0);
    hccn_sim_batch_t **batch = calloc((size_t)s->nranks, sizeof(*batch));
    int *ident = calloc((size_t)s->nranks, sizeof(*ident));
    assert_non_null(eng);
    assert_non_null(batch);
    assert_non_null(ident);
    for (int r = 0; r < s->nranks; r++)
        ident[r] = r;
    for (int r = 0; r < s->nranks; r++) {
        int npu = world != NULL ? world[r] : r;
        hccn_sim_task_t *tk = tasks_of(&s->ranks[r], &topo->npus[npu], world,
                                       ident);
        /* As the runtime posts a schedule: with what the software model
         * needs to know of the call (its launch, its protocols). */
        hccn_sim_call_t call = hccn_hier_sched_call(s);
        batch[r] = hccn_sim_post_hinted(eng, npu, tk,
                                        (int)s->ranks[r].nsteps,
                                        s->ranks[r].deps, NULL,
                                        (hccn_sim_key_t){0, 0, 0}, s->nranks, 0,
                                        NULL, &call);
        assert_non_null(batch[r]);
        free(tk);
    }
    for (int d = 0; d < topo->nnpus; d++)
        hccn_sim_finish(eng, d);
    hccn_sim_settle(eng);
    double end = 0;
    for (int r = 0; r < s->nranks; r++) {
        assert_true(hccn_sim_batch_done(eng, batch[r]));
        end = fmax(end, hccn_sim_batch_end(batch[r]));
    }
    free(batch);
    free(ident);
    if (keep != NULL)
        *keep = eng;
    else
        hccn_sim_engine_destroy(eng);
    return end;
}

void test_assert_rel(double got, double want, double tol, const char *what)
{
    if (!(fabs(got - want) <= tol * fabs(want)))
        fail_msg("%s: %.17g, want %.17g", what, got, want);
}
