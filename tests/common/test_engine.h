/* Timing a schedule in the timing engine, for the hierarchy tests. */
#ifndef HCCN_TEST_ENGINE_H
#define HCCN_TEST_ENGINE_H

#include "device_sim/engine.h"
#include "device_sim/topo.h"
#include "hierarchy/sched.h"

/* Times s in a fresh engine on topo, rank r on NPU world[r] (world NULL:
 * NPU r): every rank posts all its steps as one batch while every device
 * is at 0, then every device finishes, as a timing-only run would (copies
 * charged as out of place).
 * Returns the last batch's end in seconds; the engine is handed back
 * through *keep (to read link statistics; the caller destroys it) or
 * destroyed when keep is NULL. Fails the test on any engine error. */
double test_engine_time(const hccn_sim_topo_t *topo, const hccn_sched_t *s,
                        const int *world, hccn_sim_engine_t **keep);

/* Fails the test, naming what, unless got is within tol (relative) of
 * want: a time against its closed form or hand formula. */
void test_assert_rel(double got, double want, double tol, const char *what);

#endif
