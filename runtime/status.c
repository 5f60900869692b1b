/*
 * Status codes, their names and messages, and the per-thread last error
 * (kept by device_sim/fail.c, where every layer records its failures).
 */
#include <stdio.h>

#include "device_sim/fail.h"
#include "runtime/rt.h"

const char *hccn_status_name(hccn_status_t status)
{
    switch (status) {
#define HCCN_STATUS_NAME(name, value, msg)                                    \
    case name:                                                                \
        return #name;
        HCCN_STATUS_MAP(HCCN_STATUS_NAME)
#undef HCCN_STATUS_NAME
    }
    return "HCCN_ERR_UNKNOWN";
}

const char *hccn_strerror(hccn_status_t status)
{
    switch (status) {
#define HCCN_STATUS_MSG(name, value, msg)                                     \
    case name:                                                                \
        return msg;
        HCCN_STATUS_MAP(HCCN_STATUS_MSG)
#undef HCCN_STATUS_MSG
    }
    return "unknown status";
}

const char *hccn_last_error(void)
{
    return hccn_sim_fail_msg();
}


void hccn_rt_error_clear(void)
{
    hccn_sim_fail_clear();
}
