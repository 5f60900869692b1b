/* Size arguments of the programs in tools/ ("64M" -> 67108864). */
#ifndef HCCN_TOOLS_TOOL_SIZE_H
#define HCCN_TOOLS_TOOL_SIZE_H

#include <stdint.h>
#include <stdlib.h>

/* K, M, G are powers of 1024; a trailing B is allowed. Returns 0, or -1
 * for anything else (negative, over 1e18 bytes, trailing text). */
static inline int tool_parse_size(const char *s, uint64_t *out)
{
    char *end;
    double v = strtod(s, &end), mul = 1.0;
    switch (*end) {
    case 'K': case 'k': mul = 1024.0; end++; break;
    case 'M': case 'm': mul = 1024.0 * 1024; end++; break;
    case 'G': case 'g': mul = 1024.0 * 1024 * 1024; end++; break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (end == s || *end != '\0' || !(v >= 0) || v * mul > 1e18)
        return -1;
    *out = (uint64_t)(v * mul);
    return 0;
}

#endif
