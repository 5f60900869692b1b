/*
 * Status codes, their names and messages, and the per-thread last error.
 */
#include <stdarg.h>
#include <stdio.h>

#include "runtime/rt.h"

static _Thread_local char last_error[RT_ERR_MAX];

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
    return last_error;
}

hccn_status_t hccn_rt_error(hccn_status_t status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof(last_error), fmt, ap);
    va_end(ap);
    /* What came from a file or a caller (a path, a link name) may hold
     * control characters: a terminal must not act on them. The report's
     * own line breaks and indents stay. */
    for (char *c = last_error; *c != '\0'; c++)
        if (((unsigned char)*c < 0x20 && *c != '\n') || *c == 0x7f)
            *c = '?';
    return status;
}

void hccn_rt_error_clear(void)
{
    last_error[0] = '\0';
}
