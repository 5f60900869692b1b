/*
 * The strict YAML subset reader (yaml.h), line by line.
 */
#include <stdlib.h>
#include <string.h>

#include "imp.h"
#include "yaml.h"

typedef struct {
    const char *file;
    char *err;
    hccn_yaml_doc_t *doc;
    hccn_yaml_entry_t *open;    /* the key whose block list may follow */
    int saw_content;
} ystate_t;

static int fail(ystate_t *y, int line, const char *what)
{
    return hccn_imp_fail(y->err, "%s:%d: %s", y->file, line, what);
}

static char *trim(char *s)
{
    while (*s == ' ')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* Cuts a comment: '#' at the start or after a space. */
static void cut_comment(char *s)
{
    for (char *p = s; *p; p++)
        if (*p == '#' && (p == s || p[-1] == ' ')) {
            *p = '\0';
            return;
        }
}

static int plain_scalar(ystate_t *y, int line, const char *s)
{
    if (*s == '\0')
        return fail(y, line, "empty value");
    if (strpbrk(s, "{}[]&*!|>'\"%@`:,") != NULL ||
        (s[0] == '-' && (s[1] == ' ' || s[1] == '\0')))
        return fail(y, line, "unsupported YAML (only plain scalars, "
                    "one-line [a, b] lists and '- x' block lists)");
    return 0;
}

static int add_item(ystate_t *y, hccn_yaml_entry_t *e, const char *s, int line)
{
    if (plain_scalar(y, line, s))
        return -1;
    char **gi = realloc(e->items, (size_t)(e->nitems + 1) * sizeof(*gi));
    if (gi == NULL)
        return fail(y, line, "out of memory");
    e->items = gi;
    int *gl = realloc(e->item_lines, (size_t)(e->nitems + 1) * sizeof(*gl));
    if (gl == NULL)
        return fail(y, line, "out of memory");
    e->item_lines = gl;
    if ((e->items[e->nitems] = strdup(s)) == NULL)
        return fail(y, line, "out of memory");
    e->item_lines[e->nitems++] = line;
    return 0;
}

static int flow_list(ystate_t *y, hccn_yaml_entry_t *e, char *v, int line)
{
    size_t n = strlen(v);
    if (v[n - 1] != ']')
        return fail(y, line, "a flow list must close with ']' on its line");
    v[n - 1] = '\0';
    e->is_list = 1;
    char *p = v + 1;
    if (*trim(p) == '\0')
        return 0;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (add_item(y, e, trim(p), line))
            return -1;
        if (!comma)
            return 0;
        p = comma + 1;
    }
}

static int key_line(ystate_t *y, char *s, int line)
{
    char *colon = strchr(s, ':');
    if (colon == NULL || colon == s)
        return fail(y, line, "expected 'key: value'");
    *colon = '\0';
    for (char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_' || *p == '-'))
            return fail(y, line, "a key must be letters, digits, '_' or '-'");
    if (colon[1] != '\0' && colon[1] != ' ')
        return fail(y, line, "expected a space after ':'");
    if (hccn_yaml_get(y->doc, s) != NULL)
        return fail(y, line, "duplicate key");
    hccn_yaml_entry_t *g =
        realloc(y->doc->e, (size_t)(y->doc->n + 1) * sizeof(*g));
    if (g == NULL)
        return fail(y, line, "out of memory");
    y->doc->e = g;
    hccn_yaml_entry_t *e = &g[y->doc->n++];
    memset(e, 0, sizeof(*e));
    e->line = line;
    if ((e->key = strdup(s)) == NULL)
        return fail(y, line, "out of memory");
    char *v = trim(colon + 1);
    y->open = NULL;
    if (*v == '\0') {
        e->is_list = 1;         /* a block list follows (or it is empty) */
        y->open = e;
        return 0;
    }
    if (*v == '[')
        return flow_list(y, e, v, line);
    if (plain_scalar(y, line, v))
        return -1;
    return (e->scalar = strdup(v)) ? 0 : fail(y, line, "out of memory");
}

static int one_line(ystate_t *y, char *s, int line)
{
    if (strchr(s, '\t'))
        return fail(y, line, "tabs are not allowed");
    cut_comment(s);
    char *t = trim(s);
    if (*t == '\0')
        return 0;
    if (!strcmp(t, "---") && s[0] == '-') {
        if (y->saw_content)
            return fail(y, line, "a second document ('---') is not supported");
        y->saw_content = 1;
        return 0;
    }
    y->saw_content = 1;
    if (s[0] != ' ')
        return key_line(y, s, line);
    if (t[0] == '-' && (t[1] == ' ' || t[1] == '\0')) {
        if (y->open == NULL)
            return fail(y, line, "a '- item' line must follow 'key:'");
        return add_item(y, y->open, trim(t + 1), line);
    }
    return fail(y, line, "unsupported YAML (nested mappings are not part "
                "of ASTRA-sim network files)");
}

int hccn_yaml_parse(const char *text, size_t len, const char *file,
                    hccn_yaml_doc_t *doc, char *err)
{
    ystate_t y = {file, err, doc, NULL, 0};
    memset(doc, 0, sizeof(*doc));
    if (memchr(text, '\0', len) != NULL)
        return hccn_imp_fail(err, "%s: NUL byte in a YAML file", file);
    int line = 1, rc = 0;
    for (size_t i = 0; i < len && rc == 0; line++) {
        const char *nl = memchr(text + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
        char *s = strndup(text + i, n);
        if (s == NULL)
            return hccn_imp_fail(err, "%s: out of memory", file);
        rc = one_line(&y, s, line);
        free(s);
        i += n + 1;
    }
    if (rc)
        hccn_yaml_free(doc);
    return rc;
}

void hccn_yaml_free(hccn_yaml_doc_t *doc)
{
    for (int i = 0; i < doc->n; i++) {
        hccn_yaml_entry_t *e = &doc->e[i];
        for (int k = 0; k < e->nitems; k++)
            free(e->items[k]);
        free(e->items);
        free(e->item_lines);
        free(e->scalar);
        free(e->key);
    }
    free(doc->e);
    memset(doc, 0, sizeof(*doc));
}

const hccn_yaml_entry_t *hccn_yaml_get(const hccn_yaml_doc_t *doc,
                                       const char *key)
{
    for (int i = 0; i < doc->n; i++)
        if (!strcmp(doc->e[i].key, key))
            return &doc->e[i];
    return NULL;
}
