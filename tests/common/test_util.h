/* Helpers shared by the test programs. */
#ifndef HCCN_TEST_UTIL_H
#define HCCN_TEST_UTIL_H

#include <stddef.h>

/* Absolute path of a file in the source tree ("configs/default.json"),
 * in a static buffer that the next call overwrites. */
const char *test_path(const char *rel);

/* Reads a whole file into a malloc'ed NUL-terminated string; NULL on error. */
char *test_read_file(const char *path);

/* Relative difference |a-b| / max(|a|,|b|) (0 when both are 0). */
double test_rel_diff(double a, double b);

/* Deterministic pseudo-random numbers (splitmix64). */
unsigned long long test_rand_next(unsigned long long *state);

/* A pseudo-random value for (seed, rank, element index): test inputs that
 * any rank can recompute for any other. */
unsigned long long test_rand_at(unsigned long long seed, int rank,
                                unsigned long long idx);

#endif
