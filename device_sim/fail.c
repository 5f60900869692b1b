/*
 * The calling thread's failure record (device_sim/fail.h).
 */
#include <stdio.h>

#include "device_sim/fail.h"

static _Thread_local char fail_msg[HCCN_SIM_FAIL_MAX];
static _Thread_local hccn_status_t fail_status = HCCN_OK;

hccn_status_t hccn_sim_vfail(hccn_status_t status, const char *fmt, va_list ap)
{
    vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
    /* What came from a file or a caller (a path, a link name) may hold
     * control characters: a terminal must not act on them. The report's
     * own line breaks and indents stay. */
    for (char *c = fail_msg; *c != '\0'; c++)
        if (((unsigned char)*c < 0x20 && *c != '\n') || *c == 0x7f)
            *c = '?';
    fail_status = status;
    return status;
}

hccn_status_t hccn_sim_fail(hccn_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    hccn_sim_vfail(status, fmt, ap);
    va_end(ap);
    return status;
}

hccn_status_t hccn_sim_failed(const char *where)
{
    if (fail_status != HCCN_OK)
        return fail_status;
    return hccn_sim_fail(HCCN_ERR_INTERNAL, "%s: failed without a recorded "
                         "cause (a bug: please report it)", where);
}

hccn_status_t hccn_sim_fail_status(void)
{
    return fail_status;
}

const char *hccn_sim_nomem_msg(void)
{
    return fail_status == HCCN_ERR_NOMEM ? fail_msg : "out of memory";
}

const char *hccn_sim_fail_msg(void)
{
    return fail_msg;
}

void hccn_sim_fail_clear(void)
{
    fail_msg[0] = '\0';
    fail_status = HCCN_OK;
}

hccn_status_t hccn_sim_fail_context(const char *fmt, ...)
{
    char ctx[HCCN_SIM_FAIL_MAX], cause[HCCN_SIM_FAIL_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof(ctx), fmt, ap);
    va_end(ap);
    if (fail_status == HCCN_OK)
        return hccn_sim_failed(ctx);
    snprintf(cause, sizeof(cause), "%s", fail_msg);
    return hccn_sim_fail(fail_status, "%s: %s", ctx, cause);
}
