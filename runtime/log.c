/*
 * Logging: HCCN_DEBUG=WARN|INFO|TRACE, one line per decision, on stderr.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "runtime/rt.h"

static int log_level(void)
{
    static _Atomic int level = -1;
    int l = atomic_load(&level);
    if (l >= 0)
        return l;
    const char *s = getenv("HCCN_DEBUG");
    l = 0;
    if (s != NULL) {
        if (strcasecmp(s, "WARN") == 0)
            l = HCCN_LOG_WARN;
        else if (strcasecmp(s, "INFO") == 0)
            l = HCCN_LOG_INFO;
        else if (strcasecmp(s, "TRACE") == 0)
            l = HCCN_LOG_TRACE;
    }
    atomic_store(&level, l);
    return l;
}

int hccn_rt_log_on(int level)
{
    return level <= log_level();
}

void hccn_rt_log(int level, const char *fmt, ...)
{
    static const char *names[] = {"", "WARN", "INFO", "TRACE"};
    if (!hccn_rt_log_on(level))
        return;
    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "hccn %s %s\n", names[level], line);
}
