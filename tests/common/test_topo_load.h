/* Loading topology text in unit tests: the fixture that must load, and
 * the one that must fail with a given message. */
#ifndef HCCN_TEST_TOPO_LOAD_H
#define HCCN_TEST_TOPO_LOAD_H

#include "device_sim/topo.h"

/* The body (no braces) of a topology of two nodes of two NPUs: a 100
 * GB/s, 1 us mesh inside, 10 GB/s NICs (2 us) on a 1 us switch. */
#define TEST_TOPO_2X2                                                       \
    "\"version\": 1, \"node_types\": [{\"count\": 2,"                       \
    " \"npu\": {\"count\": 2, \"arena_MiB\": 16, \"reduce_bw_GBps\": 100},"  \
    " \"fabric\": {\"type\": \"mesh\", \"bw_GBps\": 100, \"lat_us\": 1},"    \
    " \"nics\": {\"count\": 2, \"bw_GBps\": 10, \"lat_us\": 2}}],"           \
    " \"network\": {\"type\": \"switch\", \"lat_us\": 1}"

/* The topology of json, named name in messages; fails the test with the
 * loader's message when it does not load. */
hccn_sim_topo_t *test_topo_load(const char *json, const char *name);

/* Fails the test unless json, named name, is refused as a bad topology
 * (HCCN_ERR_TOPOLOGY, nothing returned) with a message containing msg. */
void test_topo_refused(const char *json, const char *name, const char *msg);

#endif
