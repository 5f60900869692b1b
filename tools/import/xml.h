/*
 * A small strict XML reader for the NCCL topology and SimGrid platform
 * files: elements, attributes, comments, the XML declaration and a DOCTYPE
 * without internal subset. Rejected with "FILE:LINE: what": an internal DTD
 * subset, entities other than the five predefined ones (and ASCII character
 * references), CDATA, processing instructions, text content, mismatched or
 * unclosed tags, duplicate attributes, NUL bytes, nesting deeper than 64.
 */
#ifndef HCCN_TOOLS_XML_H
#define HCCN_TOOLS_XML_H

#include <stddef.h>

typedef struct {
    char *name, *value;     /* value with entities replaced */
} hccn_xml_attr_t;

typedef struct hccn_xml_el {
    char *name;
    int line;               /* of the start tag's '<' */
    hccn_xml_attr_t *attrs;
    int nattrs;
    struct hccn_xml_el **kids;
    int nkids;
    struct hccn_xml_el *parent;
} hccn_xml_el_t;

/* Parses text[0..len-1]; the root element, or NULL with the message in err
 * (HCCN_IMP_ERRLEN bytes). file names the input in messages. */
hccn_xml_el_t *hccn_xml_parse(const char *text, size_t len, const char *file,
                              char *err);
/* Frees the tree under root (NULL is fine). */
void hccn_xml_free(hccn_xml_el_t *root);
/* The value of attribute name of e, or NULL. */
const char *hccn_xml_get(const hccn_xml_el_t *e, const char *name);
/* -1 with "FILE:LINE: <el>: unknown attribute 'x' (allowed: ...)" when e has
 * an attribute not in the NULL-terminated allowed list. */
int hccn_xml_allow(const hccn_xml_el_t *e, const char *const *allowed,
                   const char *file, char *err);

#endif
