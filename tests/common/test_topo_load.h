/* Loading topology text in unit tests: the fixture that must load, and
 * the one that must fail with a given message. */
#ifndef HCCN_TEST_TOPO_LOAD_H
#define HCCN_TEST_TOPO_LOAD_H

#include "device_sim/topo.h"

/* The topology of json, named name in messages; fails the test with the
 * loader's message when it does not load. */
hccn_sim_topo_t *test_topo_load(const char *json, const char *name);

/* Fails the test unless json, named name, is refused as a bad topology
 * (HCCN_ERR_TOPOLOGY, nothing returned) with a message containing msg. */
void test_topo_refused(const char *json, const char *name, const char *msg);

#endif
