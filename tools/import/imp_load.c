/*
 * The one place the importers reach hccn's topology loader: what is written
 * or exported must load. Kept alone so that moving to another loader entry
 * point (a public one) touches this file only.
 */
#include "device_sim/topo.h"
#include "imp.h"

int hccn_imp_check_json(const char *json, const char *name, char *err)
{
    char msg[HCCN_IMP_ERRLEN - 64];
    hccn_sim_topo_t *topo = NULL;
    if (hccn_sim_topo_load_string(json, name, &topo, msg, sizeof(msg)) !=
        HCCN_OK)
        return hccn_imp_fail(err, "the imported topology is not valid: %s",
                             msg);
    hccn_sim_topo_free(topo);
    return 0;
}

int hccn_imp_check_file(const char *path, char *err)
{
    char msg[HCCN_IMP_ERRLEN - 64];
    hccn_sim_topo_t *topo = NULL;
    if (hccn_sim_topo_load_file(path, &topo, msg, sizeof(msg)) != HCCN_OK)
        return hccn_imp_fail(err, "%s", msg);
    hccn_sim_topo_free(topo);
    return 0;
}
