/*
 * The one place the importers reach hccn's topology loader, through the
 * public API (hccn_sim.h): what is written or exported must load.
 */
#include "hccn/hccn_sim.h"
#include "imp.h"

int hccn_imp_check_json(const char *json, const char *name, char *err)
{
    hccn_topo_t *topo = NULL;
    if (hccn_topo_load_json(json, name, &topo) != HCCN_OK)
        return hccn_imp_fail(err, "the imported topology is not valid: %s",
                             hccn_last_error());
    hccn_topo_free(topo);
    return 0;
}

int hccn_imp_check_file(const char *path, char *err, double *link_eff)
{
    hccn_topo_t *topo = NULL;
    if (hccn_topo_load(path, NULL, 0, &topo) != HCCN_OK)
        return hccn_imp_fail(err, "%s", hccn_last_error());
    hccn_software_t sw = {.struct_size = sizeof(sw)};
    int rc = hccn_topo_software(topo, &sw) == HCCN_OK
                 ? 0
                 : hccn_imp_fail(err, "%s", hccn_last_error());
    for (int k = 0; link_eff != NULL && k < HCCN_NLINK; k++)
        link_eff[k] = sw.link_efficiency[k];
    hccn_topo_free(topo);
    return rc;
}
