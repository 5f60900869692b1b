/*
 * import auto: which format a file is, from its content.
 */
#include <string.h>

#include "imp.h"

static int has(const char *text, size_t len, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i + n <= len; i++)
        if (!memcmp(text + i, word, n))
            return 1;
    return 0;
}

const char *hccn_imp_sniff(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' ||
                       text[i] == '\r'))
        i++;
    if (i < len && text[i] == '<') {
        if (has(text, len, "<system"))
            return "nccl-xml";
        if (has(text, len, "<platform"))
            return "simgrid";
        return NULL;
    }
    if (i < len && text[i] == '{')
        return has(text, len, "server_list") ? "hccl-ranktable" : NULL;
    if (has(text, len, "GPU0") && has(text, len, "\t"))
        return "nvidia-smi";
    if (has(text, len, "topology:") && has(text, len, "npus_count"))
        return "astrasim";
    return NULL;
}
