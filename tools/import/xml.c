/*
 * The strict XML reader (xml.h). One pass over the text with a cursor that
 * counts lines; elements are built into a tree as their start tags are read.
 */
#include <stdlib.h>
#include <string.h>

#include "imp.h"
#include "xml.h"

#define MAX_DEPTH 64

typedef struct {
    const char *s, *end, *file;
    int line;
    char *err;
} cur_t;

static int fail(cur_t *c, const char *what, const char *detail)
{
    return hccn_imp_fail(c->err, "%s:%d: %s%s%s", c->file, c->line, what,
                         detail ? ": " : "", detail ? detail : "");
}

static int at(const cur_t *c, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(c->end - c->s) >= n && !memcmp(c->s, lit, n);
}

static void step(cur_t *c, size_t n)
{
    for (size_t i = 0; i < n && c->s < c->end; i++, c->s++)
        if (*c->s == '\n')
            c->line++;
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static void skip_space(cur_t *c)
{
    while (c->s < c->end && is_space(*c->s))
        step(c, 1);
}

static int name_char(char ch, int first)
{
    if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || ch == '_' ||
        ch == ':')
        return 1;
    return !first && ((ch >= '0' && ch <= '9') || ch == '-' || ch == '.');
}

/* Reads a name into a malloc'd string; NULL (error set) when none. */
static char *read_name(cur_t *c, const char *what)
{
    const char *p = c->s;
    while (p < c->end && name_char(*p, p == c->s))
        p++;
    if (p == c->s) {
        fail(c, what, "expected a name");
        return NULL;
    }
    char *n = strndup(c->s, (size_t)(p - c->s));
    step(c, (size_t)(p - c->s));
    if (n == NULL)
        fail(c, "out of memory", NULL);
    return n;
}

/* Skips to just after lit; -1 when the text ends first. */
static int skip_past(cur_t *c, const char *lit, const char *what)
{
    while (c->s < c->end && !at(c, lit))
        step(c, 1);
    if (c->s >= c->end)
        return fail(c, what, "not closed before the end of the file");
    step(c, strlen(lit));
    return 0;
}

static int comment(cur_t *c)
{
    step(c, 4);
    while (c->s < c->end && !at(c, "--"))
        step(c, 1);
    if (!at(c, "-->"))
        return fail(c, "comment", c->s >= c->end ? "not closed before the "
                    "end of the file" : "'--' inside a comment");
    step(c, 3);
    return 0;
}

/* <!DOCTYPE name SYSTEM "..."> or PUBLIC "..." "...": kept out, never read;
 * an internal subset ('[') would declare entities: rejected. */
static int doctype(cur_t *c)
{
    step(c, 9);
    while (c->s < c->end && *c->s != '>') {
        if (*c->s == '[')
            return fail(c, "DOCTYPE", "an internal DTD subset (entity "
                        "declarations) is not supported");
        if (*c->s == '"' || *c->s == '\'') {
            char q[2] = {*c->s, 0};
            step(c, 1);
            if (skip_past(c, q, "DOCTYPE"))
                return -1;
            continue;
        }
        step(c, 1);
    }
    if (c->s >= c->end)
        return fail(c, "DOCTYPE", "not closed before the end of the file");
    step(c, 1);
    return 0;
}

/* Decodes the five predefined entities and ASCII character references. */
static int decode(cur_t *c, const char *v, size_t n, char **out)
{
    static const char *const ents[] = {"lt;", "gt;", "amp;", "quot;",
                                       "apos;"};
    static const char chars[] = "<>&\"'";
    char *d = malloc(n + 1), *w = d;
    if (d == NULL)
        return fail(c, "out of memory", NULL);
    for (size_t i = 0; i < n; i++) {
        if (v[i] != '&') {
            *w++ = v[i];
            continue;
        }
        int k, done = 0;
        for (k = 0; k < 5 && !done; k++)
            if (!strncmp(v + i + 1, ents[k], strlen(ents[k])) &&
                i + 1 + strlen(ents[k]) <= n) {
                *w++ = chars[k];
                i += strlen(ents[k]);
                done = 1;
            }
        if (!done && i + 1 < n && v[i + 1] == '#') {
            char *e;
            int hex = i + 2 < n && v[i + 2] == 'x';
            long code = strtol(v + i + 2 + hex, &e, hex ? 16 : 10);
            if (e > v + i + 2 + hex && e < v + n && *e == ';' && code > 0 &&
                code < 128) {
                *w++ = (char)code;
                i = (size_t)(e - v);
                done = 1;
            }
        }
        if (!done) {
            free(d);
            return fail(c, "attribute value", "an entity other than &lt; "
                        "&gt; &amp; &quot; &apos; or an ASCII character "
                        "reference");
        }
    }
    *w = '\0';
    *out = d;
    return 0;
}

static int add_attr(cur_t *c, hccn_xml_el_t *e, char *name)
{
    for (int i = 0; i < e->nattrs; i++)
        if (!strcmp(e->attrs[i].name, name)) {
            free(name);
            return fail(c, e->name, "duplicate attribute");
        }
    hccn_xml_attr_t *g = realloc(e->attrs, (size_t)(e->nattrs + 1) * sizeof(*g));
    if (g == NULL) {
        free(name);
        return fail(c, "out of memory", NULL);
    }
    e->attrs = g;
    e->attrs[e->nattrs].name = name;
    e->attrs[e->nattrs++].value = NULL;
    skip_space(c);
    if (c->s >= c->end || *c->s != '=')
        return fail(c, e->name, "expected '=' after an attribute name");
    step(c, 1);
    skip_space(c);
    if (c->s >= c->end || (*c->s != '"' && *c->s != '\''))
        return fail(c, e->name, "an attribute value must be quoted");
    char q = *c->s;
    step(c, 1);
    const char *v = c->s;
    while (c->s < c->end && *c->s != q && *c->s != '<' && *c->s != '\0')
        step(c, 1);
    if (c->s >= c->end || *c->s != q)
        return fail(c, e->name, "unterminated attribute value");
    step(c, 1);
    return decode(c, v, (size_t)(c->s - 1 - v), &e->attrs[e->nattrs - 1].value);
}

static int add_kid(cur_t *c, hccn_xml_el_t *parent, hccn_xml_el_t *kid)
{
    hccn_xml_el_t **g =
        realloc(parent->kids, (size_t)(parent->nkids + 1) * sizeof(*g));
    if (g == NULL)
        return fail(c, "out of memory", NULL);
    parent->kids = g;
    parent->kids[parent->nkids++] = kid;
    kid->parent = parent;
    return 0;
}

/* Reads a start tag at '<'; *empty = 1 for "<x/>". */
static hccn_xml_el_t *start_tag(cur_t *c, int *empty)
{
    hccn_xml_el_t *e = calloc(1, sizeof(*e));
    if (e == NULL) {
        fail(c, "out of memory", NULL);
        return NULL;
    }
    e->line = c->line;
    step(c, 1);
    if ((e->name = read_name(c, "element")) == NULL)
        return e;
    for (;;) {
        const char *before = c->s;
        skip_space(c);
        if (c->s >= c->end) {
            fail(c, e->name, "start tag not closed before the end of the file");
            return e;
        }
        if (*c->s == '>' || at(c, "/>")) {
            *empty = *c->s == '/';
            step(c, *empty ? 2 : 1);
            return e;
        }
        if (before == c->s) {
            fail(c, e->name, "expected whitespace, '>' or '/>'");
            return e;
        }
        char *an = read_name(c, e->name);
        if (an == NULL || add_attr(c, e, an))
            return e;
    }
}

static int end_tag(cur_t *c, const hccn_xml_el_t *open)
{
    int line = c->line;
    step(c, 2);
    char *n = read_name(c, "end tag");
    if (n == NULL)
        return -1;
    skip_space(c);
    int ok = c->s < c->end && *c->s == '>' && !strcmp(n, open->name);
    if (ok)
        step(c, 1);
    else
        hccn_imp_fail(c->err, "%s:%d: </%s>: does not close <%s> of line %d",
                      c->file, line, n, open->name, open->line);
    free(n);
    return ok ? 0 : -1;
}

/* Comments, whitespace; text or a declaration elsewhere is an error. */
static int misc(cur_t *c, int in_prolog)
{
    for (;;) {
        skip_space(c);
        if (at(c, "<!--")) {
            if (comment(c))
                return -1;
        } else if (in_prolog && at(c, "<!DOCTYPE")) {
            if (doctype(c))
                return -1;
        } else if (at(c, "<?")) {
            return fail(c, "processing instruction", "only the XML "
                        "declaration, at the very start, is allowed");
        } else if (at(c, "<![CDATA[")) {
            return fail(c, "CDATA", "not supported");
        } else if (c->s < c->end && *c->s == '\0') {
            return fail(c, "NUL byte", "not allowed in XML");
        } else if (c->s < c->end && *c->s != '<') {
            return fail(c, "text", "text content is not supported "
                        "(only elements and attributes)");
        } else {
            return 0;
        }
    }
}

static int body(cur_t *c, hccn_xml_el_t *root)
{
    hccn_xml_el_t *open = root;
    int depth = 1;
    while (open != NULL) {
        if (misc(c, 0))
            return -1;
        if (c->s >= c->end)
            return hccn_imp_fail(c->err, "%s:%d: <%s> of line %d: not "
                                 "closed before the end of the file",
                                 c->file, c->line, open->name, open->line);
        if (at(c, "</")) {
            if (end_tag(c, open))
                return -1;
            open = open->parent;
            depth--;
            continue;
        }
        int empty = 0;
        hccn_xml_el_t *kid = start_tag(c, &empty);
        if (kid == NULL || add_kid(c, open, kid) || c->err[0])
            return -1;
        if (!empty) {
            if (++depth > MAX_DEPTH)
                return fail(c, kid->name, "nested deeper than 64 elements");
            open = kid;
        }
    }
    return 0;
}

hccn_xml_el_t *hccn_xml_parse(const char *text, size_t len, const char *file,
                              char *err)
{
    cur_t c = {text, text + len, file, 1, err};
    err[0] = '\0';
    if (at(&c, "<?xml") && skip_past(&c, "?>", "XML declaration"))
        return NULL;
    if (misc(&c, 1))
        return NULL;
    if (c.s >= c.end || *c.s != '<')
        return fail(&c, "document", "no root element"), NULL;
    int empty = 0;
    hccn_xml_el_t *root = start_tag(&c, &empty);
    if (root == NULL || err[0] || (!empty && body(&c, root)) || misc(&c, 0))
        goto fail;
    if (c.s < c.end) {
        fail(&c, "document", "a second root element");
        goto fail;
    }
    return root;
fail:
    hccn_xml_free(root);
    return NULL;
}

void hccn_xml_free(hccn_xml_el_t *e)
{
    if (e == NULL)
        return;
    for (int i = 0; i < e->nkids; i++)
        hccn_xml_free(e->kids[i]);
    for (int i = 0; i < e->nattrs; i++) {
        free(e->attrs[i].name);
        free(e->attrs[i].value);
    }
    free(e->attrs);
    free(e->kids);
    free(e->name);
    free(e);
}

const char *hccn_xml_get(const hccn_xml_el_t *e, const char *name)
{
    for (int i = 0; i < e->nattrs; i++)
        if (!strcmp(e->attrs[i].name, name))
            return e->attrs[i].value;
    return NULL;
}

int hccn_xml_allow(const hccn_xml_el_t *e, const char *const *allowed,
                   const char *file, char *err)
{
    for (int i = 0; i < e->nattrs; i++) {
        int ok = 0;
        for (int k = 0; allowed[k] && !ok; k++)
            ok = !strcmp(allowed[k], e->attrs[i].name);
        if (ok)
            continue;
        char list[512] = "";
        for (int k = 0; allowed[k]; k++) {
            size_t l = strlen(list);
            snprintf(list + l, sizeof(list) - l, "%s%s", k ? ", " : "",
                     allowed[k]);
        }
        return hccn_imp_fail(err, "%s:%d: <%s>: unknown attribute '%s' "
                             "(allowed: %s)", file, e->line, e->name,
                             e->attrs[i].name, list);
    }
    return 0;
}
