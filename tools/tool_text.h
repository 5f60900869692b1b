/* Text from a file or the command line (a topology's name, its path, a
 * device name), made safe to print by the programs in tools/: a control
 * character (an ANSI escape, a carriage return) is shown as \xHH instead
 * of being sent to the terminal. */
#ifndef HCCN_TOOLS_TOOL_TEXT_H
#define HCCN_TOOLS_TOOL_TEXT_H

#include <stddef.h>
#include <stdio.h>

/* s with its control characters escaped, in buf (n bytes; cut short to
 * fit, always NUL-terminated); returns buf. */
static inline const char *tool_safe(const char *s, char *buf, size_t n)
{
    size_t k = 0;
    for (; s != NULL && *s != '\0' && k + 5 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch < 0x20 || ch == 0x7f)
            k += (size_t)snprintf(buf + k, n - k, "\\x%02x", ch);
        else
            buf[k++] = (char)ch;
    }
    buf[k] = '\0';
    return buf;
}

#endif
