/*
 * The YAML subset ASTRA-sim network files use: a mapping of top-level keys
 * to a plain scalar, a one-line flow list "[a, b, c]" or a block list of
 * "- x" lines; comments and blank lines; an optional "---" first. Anything
 * else (nesting, anchors, quotes, multi-line flows, tabs, duplicate keys) is
 * rejected with "FILE:LINE: what".
 */
#ifndef HCCN_TOOLS_YAML_H
#define HCCN_TOOLS_YAML_H

#include <stddef.h>

typedef struct {
    char *key;
    int line;
    int is_list;
    char *scalar;       /* !is_list */
    char **items;       /* is_list */
    int *item_lines;
    int nitems;
} hccn_yaml_entry_t;

typedef struct {
    hccn_yaml_entry_t *e;
    int n;
} hccn_yaml_doc_t;

/* Parses text[0..len-1] into doc; -1 with the message in err. */
int hccn_yaml_parse(const char *text, size_t len, const char *file,
                    hccn_yaml_doc_t *doc, char *err);
/* Frees what doc holds. */
void hccn_yaml_free(hccn_yaml_doc_t *doc);
/* The entry called key, or NULL. */
const hccn_yaml_entry_t *hccn_yaml_get(const hccn_yaml_doc_t *doc,
                                       const char *key);

#endif
