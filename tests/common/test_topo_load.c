/* Loading topology text in unit tests (test_topo_load.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "test_topo_load.h"

hccn_sim_topo_t *test_topo_load(const char *json, const char *name)
{
    char err[512];
    hccn_sim_topo_t *t = NULL;
    if (hccn_sim_topo_load_string(json, name, &t, err, sizeof(err)) != 0)
        fail_msg("%s", err);
    return t;
}

void test_topo_refused(const char *json, const char *name, const char *msg)
{
    char err[512];
    hccn_sim_topo_t *t = NULL;
    assert_int_equal(hccn_sim_topo_load_string(json, name, &t, err,
                                               sizeof(err)),
                     HCCN_ERR_TOPOLOGY);
    assert_null(t);
    if (strstr(err, msg) == NULL)
        fail_msg("error \"%s\" does not contain \"%s\"", err, msg);
}
