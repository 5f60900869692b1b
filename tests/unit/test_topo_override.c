/*
 * Topology overrides (hccn_sim_topo_override): paths with keys and indexes
 * reach the named field and only it; VALUE is JSON when it parses as one
 * value, else a string; a missing container or index is an error naming the
 * path and leaves the document unchanged; a key the format does not know is
 * added, then rejected by the loader with its path; PATH=null removes an
 * object's key (its default applies).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "device_sim/software.h"
#include "device_sim/topo.h"
#include "test_util.h"

static json_object *load_default(void)
{
    json_object *doc = json_object_from_file(test_path("configs/default.json"));
    assert_non_null(doc);
    return doc;
}

static void set_ok(json_object *doc, const char *assignment)
{
    char err[512] = "";
    hccn_status_t rc = hccn_sim_topo_override(doc, assignment, err,
                                              sizeof(err));
    if (rc != HCCN_OK)
        print_error("%s: %s\n", assignment, err);
    assert_int_equal(rc, HCCN_OK);
}

/* The assignment fails with rc, err contains want, doc is unchanged. */
static void set_fails(json_object *doc, const char *assignment,
                      hccn_status_t rc, const char *want)
{
    char err[512] = "";
    char *before = strdup(json_object_to_json_string(doc));
    assert_int_equal(hccn_sim_topo_override(doc, assignment, err,
                                            sizeof(err)), rc);
    if (strstr(err, want) == NULL)
        print_error("'%s': error '%s' does not contain '%s'\n", assignment,
                    err, want);
    assert_non_null(strstr(err, want));
    assert_string_equal(before, json_object_to_json_string(doc));
    free(before);
}

static json_object *at(json_object *o, const char *key)
{
    json_object *v = NULL;
    assert_true(json_object_object_get_ex(o, key, &v));
    return v;
}

static json_object *nics0(json_object *doc)
{
    return at(json_object_array_get_idx(at(doc, "node_types"), 0), "nics");
}

static hccn_sim_topo_t *load(json_object *doc)
{
    char err[512];
    hccn_sim_topo_t *t = NULL;
    hccn_status_t rc = hccn_sim_topo_load_json(doc, "edited.json", &t, err,
                                               sizeof(err));
    if (rc != HCCN_OK)
        print_error("%s\n", err);
    assert_int_equal(rc, HCCN_OK);
    return t;
}

/* doc does not load, with a message that contains msg. */
static void load_fails(json_object *doc, const char *msg)
{
    char err[512];
    hccn_sim_topo_t *t = NULL;
    assert_int_equal(hccn_sim_topo_load_json(doc, "edited.json", &t, err,
                                             sizeof(err)),
                     HCCN_ERR_TOPOLOGY);
    assert_null(t);
    if (strstr(err, msg) == NULL)
        fail_msg("got '%s', want '%s'", err, msg);
}

static void test_number_through_index(void **state)
{
    (void)state;
    json_object *doc = load_default();
    set_ok(doc, "node_types[0].nics.bw_GBps=50");
    json_object *bw = at(nics0(doc), "bw_GBps");
    assert_true(json_object_is_type(bw, json_type_int));
    assert_int_equal(json_object_get_int(bw), 50);
    /* Only that field changed: the NIC latency and count are as before. */
    assert_int_equal(json_object_get_int(at(nics0(doc), "count")), 8);
    assert_true(json_object_get_double(at(nics0(doc), "lat_us")) == 2.0);
    hccn_sim_topo_t *t = load(doc);
    hccn_sim_topo_summary_t s;
    hccn_sim_topo_summarize(t, &s);
    assert_true(s.bw_per_level[HCCN_SIM_LEVEL_NIC] == 50e9);
    assert_true(s.bw_per_level[HCCN_SIM_LEVEL_INTRA] == 56e9);
    hccn_sim_topo_free(t);
    json_object_put(doc);
}

static void test_nested_object_and_count(void **state)
{
    (void)state;
    json_object *doc = load_default();
    set_ok(doc, "network.lat_us=2.5");
    set_ok(doc, "$.node_types[0].count=4");
    assert_true(json_object_get_double(at(at(doc, "network"), "lat_us")) ==
                2.5);
    hccn_sim_topo_t *t = load(doc);
    assert_int_equal(t->nnodes, 4);
    assert_int_equal(t->nnpus, 32);
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    hccn_sim_topo_route(t, 0, 8, links, &lat);
    assert_true(fabs(lat - 4.5e-6) < 1e-15);   /* NIC 2 us + switch 2.5 us */
    hccn_sim_topo_free(t);
    json_object_put(doc);
}

static void test_value_kinds(void **state)
{
    (void)state;
    json_object *doc = load_default();
    set_ok(doc, "node_types[0].fabric.type=switch");   /* not JSON: string */
    json_object *ty = at(at(json_object_array_get_idx(at(doc, "node_types"),
                                                      0), "fabric"), "type");
    assert_string_equal(json_object_get_string(ty), "switch");
    set_ok(doc, "name=\"quoted\"");
    assert_string_equal(json_object_get_string(at(doc, "name")), "quoted");
    set_ok(doc, "description=50abc");
    assert_string_equal(json_object_get_string(at(doc, "description")),
                        "50abc");
    set_ok(doc, "network={\"type\": \"switch\", \"lat_us\": 3}");
    assert_true(json_object_is_type(at(doc, "network"), json_type_object));
    assert_int_equal(json_object_get_int(at(at(doc, "network"), "lat_us")), 3);
    hccn_sim_topo_t *t = load(doc);
    assert_int_equal(t->nodes[0].fabric, HCCN_SIM_FABRIC_SWITCH);
    hccn_sim_topo_free(t);
    json_object_put(doc);
}

/* key=null removes the key, and the loader then uses its default; an
 * array element set to null stays (the loader names it). */
static void test_null_removes_key(void **state)
{
    (void)state;
    json_object *doc = load_default();
    json_object *fabric =
        at(json_object_array_get_idx(at(doc, "node_types"), 0), "fabric");
    json_object *v = NULL;
    hccn_sim_topo_summary_t s;
    set_ok(doc, "node_types[0].fabric.efficiency=0.5");
    hccn_sim_topo_t *t = load(doc);
    hccn_sim_topo_summarize(t, &s);
    assert_true(s.bw_per_level[HCCN_SIM_LEVEL_INTRA] == 28e9);
    hccn_sim_topo_free(t);
    set_ok(doc, "node_types[0].fabric.efficiency=null");
    assert_false(json_object_object_get_ex(fabric, "efficiency", &v));
    assert_true(json_object_get_double(at(fabric, "bw_GBps")) == 56.0);
    set_ok(doc, "node_types[0].fabric.no_such_key=null");   /* nothing */
    t = load(doc);
    hccn_sim_topo_summarize(t, &s);   /* efficiency back to its default 1 */
    assert_true(s.bw_per_level[HCCN_SIM_LEVEL_INTRA] == 56e9);
    hccn_sim_topo_free(t);
    set_ok(doc, "node_types[0]=null");   /* an element stays, as null */
    assert_true(json_object_array_get_idx(at(doc, "node_types"), 0) == NULL);
    assert_int_equal(json_object_array_length(at(doc, "node_types")), 1);
    json_object_put(doc);
}

static void test_missing_paths(void **state)
{
    (void)state;
    json_object *doc = load_default();
    set_fails(doc, "node_types[3].count=1", HCCN_ERR_TOPOLOGY,
              "node_types[3]: index out of range");
    /* The array is named as it is, not with the index that missed. */
    set_fails(doc, "node_types[3].count=1", HCCN_ERR_TOPOLOGY,
              "(node_types has 1 element)");
    set_fails(doc, "node_types[18446744073709551616].count=1",
              HCCN_ERR_INVALID, "bad path at column 11");
    /* A missing object is made where only keys follow (the loader then
     * names a key it does not know), not where an index does. */
    set_fails(doc, "nodes[0].count=1", HCCN_ERR_TOPOLOGY,
              "nodes: no such key");
    set_fails(doc, "node_types[0].nic.rails[0]=1", HCCN_ERR_TOPOLOGY,
              "node_types[0].nic: no such key");
    assert_false(json_object_object_get_ex(
        json_object_array_get_idx(at(doc, "node_types"), 0), "nic", NULL));
    set_ok(doc, "node_types[0].nic.bw_GBps=1");
    load_fails(doc, "edited.json: node_types[0].nic: unknown key");
    hccn_sim_topo_t *t;
    set_ok(doc, "node_types[0].nic=null");
    set_ok(doc, "software.link_efficiency.fabric=0.5");   /* made: loads */
    t = load(doc);
    assert_true(t->sw != NULL && t->sw->link_eff[0] == 0.5);
    hccn_sim_topo_free(t);
    set_ok(doc, "software=null");
    set_ok(doc, "nothing.here=null");   /* nothing to take away */
    assert_false(json_object_object_get_ex(doc, "nothing", NULL));
    set_fails(doc, "node_types[0].count.x=1", HCCN_ERR_TOPOLOGY,
              "node_types[0].count is a number, not an object");
    set_fails(doc, "network[0]=1", HCCN_ERR_TOPOLOGY,
              "network is an object, not an array");
    json_object_put(doc);
}

static void test_malformed(void **state)
{
    (void)state;
    json_object *doc = load_default();
    set_fails(doc, "network.lat_us", HCCN_ERR_INVALID, "expected PATH=VALUE");
    set_fails(doc, "=5", HCCN_ERR_INVALID, "bad path");
    set_fails(doc, "network..lat_us=1", HCCN_ERR_INVALID, "column 9");
    set_fails(doc, "node_types[x].count=1", HCCN_ERR_INVALID, "bad path");
    set_fails(doc, "node_types[0.count=1", HCCN_ERR_INVALID, "bad path");
    json_object_put(doc);
}

static void test_unknown_leaf_fails_in_loader(void **state)
{
    (void)state;
    json_object *doc = load_default();
    set_ok(doc, "node_types[0].npu.speed=3");
    load_fails(doc, "edited.json: node_types[0].npu.speed: unknown key");
    json_object_put(doc);
}

static void test_wrong_type_fails_in_loader(void **state)
{
    (void)state;
    json_object *doc = load_default();
    set_ok(doc, "node_types[0].count=2.5");
    load_fails(doc, "node_types[0].count: must be an integer");
    json_object_put(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_number_through_index),
        cmocka_unit_test(test_nested_object_and_count),
        cmocka_unit_test(test_value_kinds),
        cmocka_unit_test(test_null_removes_key),
        cmocka_unit_test(test_missing_paths),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_unknown_leaf_fails_in_loader),
        cmocka_unit_test(test_wrong_type_fails_in_loader),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
