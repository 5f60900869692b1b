/*
 * The simulation API's view of a topology's software model
 * (include/hccn/hccn_sim.h, hccn_topo_software; device_sim/software.h):
 * what hccn-calibrate starts its fit from, in the file's units.
 */
#include <string.h>

#include "device_sim/software.h"
#include "hccn/hccn_sim.h"
#include "runtime/rt.h"

const char *hccn_proto_name(int proto)
{
    return hccn_sim_proto_name(proto);
}

static void copy_model(const hccn_sim_sw_t *sw, hccn_software_t *out)
{
    memcpy(out->stack, sw->stack, sizeof(out->stack));
    out->stack[sizeof(out->stack) - 1] = '\0';
    out->launch_us = sw->launch_s * 1e6;
    for (int p = 0; p < HCCN_NPROTO; p++) {
        out->enabled[p] = sw->proto[p].on;
        for (int c = 0; c < HCCN_NCLASS; c++) {
            out->step_us[p][c] = sw->proto[p].step_s[c] * 1e6;
            out->efficiency[p][c] = sw->proto[p].eff[c];
            out->max_bytes[p][c] = sw->proto[p].max_bytes[c];
        }
    }
}

hccn_status_t hccn_topo_software(const hccn_topo_t *topo,
                                 hccn_software_t *out)
{
    if (topo == NULL || out == NULL ||
        out->struct_size != sizeof(hccn_software_t))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_topo_software: %s",
                             topo == NULL ? "topo is NULL"
                             : out == NULL ? "out is NULL"
                                           : "out->struct_size is not "
                                             "sizeof(hccn_software_t)");
    size_t size = out->struct_size;
    memset(out, 0, sizeof(*out));
    out->struct_size = size;
    if (topo->sw == NULL) {
        for (int p = 0; p < HCCN_NPROTO; p++)
            for (int c = 0; c < HCCN_NCLASS; c++)
                out->efficiency[p][c] = 1.0;
        out->enabled[HCCN_PROTO_SIMPLE] = 1;
        return HCCN_OK;
    }
    out->present = 1;
    copy_model(topo->sw, out);
    return HCCN_OK;
}
