/*
 * Topology loading: read a file or take a string, tokenize it with json-c
 * (strict mode, line:column on syntax errors), validate it (topo_parse.c),
 * build the graph (topo_build.c). A file argument goes through
 * topo_find.c first (config names). Also the error formatter and the free.
 */
#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hccn_sim_topo_errf(char *err, size_t errlen, const char *prefix,
                        const char *fmt, ...)
{
    if (err == NULL || errlen == 0)
        return;
    int n = snprintf(err, errlen, "%s: ", prefix);
    if (n >= 0 && (size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    for (char *s = err; *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

char *hccn_sim_topo_strndup(const char *s, size_t n)
{
    char *d = hccn_sim_malloc(n + 1);
    if (d != NULL) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* The file's base name without ".json": the default topology name. */
static char *base_name(const char *source)
{
    const char *s = strrchr(source, '/');
    s = s != NULL && s[1] != '\0' ? s + 1 : source;
    size_t n = strlen(s);
    if (n > 5 && strcmp(s + n - 5, ".json") == 0)
        n -= 5;
    return hccn_sim_topo_strndup(s, n);
}

/* Reports a JSON syntax error at byte offset off of text. */
static hccn_status_t syntax_error(const char *text, size_t off,
                                  const char *source, const char *what,
                                  char *err, size_t errlen)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off; i++) {
        col++;
        if (text[i] == '\n') {
            line++;
            col = 1;
        }
    }
    char prefix[1024];
    snprintf(prefix, sizeof(prefix), "%s:%zu:%zu", source, line, col);
    hccn_sim_topo_errf(err, errlen, prefix, "JSON syntax error: %s", what);
    return HCCN_ERR_TOPOLOGY;
}

static int is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Length of a UTF-8 byte-order mark at the start of text (editors on some
 * systems write one; RFC 8259 lets a parser ignore it): 3 or 0. */
static size_t bom_len(const char *text, size_t len)
{
    return len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
}

/* Parses text[0..len) (text[len] must be '\0') into *doc (NULL for "null").
 * A leading byte-order mark is skipped; positions in errors still count
 * the file's bytes. */
static hccn_status_t tokenize(const char *text, size_t len, const char *source,
                              json_object **doc, char *err, size_t errlen)
{
    const char *nul = memchr(text, '\0', len);
    size_t i = bom_len(text, len), bom = i;
    *doc = NULL;
    if (nul != NULL)
        return syntax_error(text, (size_t)(nul - text), source,
                            "NUL byte in the input", err, errlen);
    while (i < len && is_space(text[i]))
        i++;
    if (i == len)
        return syntax_error(text, len, source, "empty document", err, errlen);
    json_tokener *tok = json_tokener_new();
    if (tok == NULL) {
        hccn_sim_topo_errf(err, errlen, source, "out of memory");
        return HCCN_ERR_NOMEM;
    }
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT |
                                JSON_TOKENER_VALIDATE_UTF8);
    /* Passing the terminating NUL too tells json-c the input has ended, so
     * a number at the very end is complete. */
    *doc = json_tokener_parse_ex(tok, text + bom, (int)(len - bom) + 1);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t end = bom + json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (end > len)
        end = len;
    for (i = end; e == json_tokener_success && i < len; i++)
        if (!is_space(text[i])) {
            json_object_put(*doc);
            *doc = NULL;
            return syntax_error(text, i, source, "text after the document",
                                err, errlen);
        }
    if (e == json_tokener_success)
        return HCCN_OK;
    json_object_put(*doc);
    *doc = NULL;
    return syntax_error(text, end, source,
                        e == json_tokener_continue ? "unexpected end of data"
                                                   : json_tokener_error_desc(e),
                        err, errlen);
}

static hccn_status_t load_text(const char *text, size_t len,
                               const char *source, hccn_sim_topo_t **out,
                               char *err, size_t errlen)
{
    json_object *doc = NULL;
    if (len > HCCN_SIM_MAX_FILE_BYTES) {
        hccn_sim_topo_errf(err, errlen, source, "larger than the 64 MiB a "
                           "topology file may have");
        return HCCN_ERR_TOPOLOGY;
    }
    hccn_status_t st = tokenize(text, len, source, &doc, err, errlen);
    if (st == HCCN_OK)
        st = hccn_sim_topo_load_json(doc, source, out, err, errlen);
    json_object_put(doc);
    return st;
}

/* Reads a whole file into a malloc'ed NUL-terminated buffer. */
static hccn_status_t read_file(const char *path, char **text, size_t *len,
                               char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 0, n = 0;
    char *buf = NULL;
    int too_large = 0, nomem = 0;
    if (f == NULL) {
        hccn_sim_topo_errf(err, errlen, path, "cannot open: %s",
                           strerror(errno));
        return HCCN_ERR_IO;
    }
    for (;;) {
        if (n == cap) {
            char *nbuf = NULL;
            if (cap > HCCN_SIM_MAX_FILE_BYTES)
                too_large = 1;
            else if ((nbuf = hccn_sim_realloc(buf, (cap ? 2 * cap : 65536) + 1)) == NULL)
                nomem = 1;
            if (nbuf == NULL)
                break;
            buf = nbuf;
            cap = cap ? 2 * cap : 65536;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int failed = ferror(f), saved = errno;
    fclose(f);
    if (failed || too_large || nomem) {
        hccn_sim_free(buf);
        if (failed)
            hccn_sim_topo_errf(err, errlen, path, "cannot read: %s",
                               strerror(saved));
        else
            hccn_sim_topo_errf(err, errlen, path, "%s", too_large
                               ? "larger than the 64 MiB a topology file "
                                 "may have" : hccn_sim_nomem_msg());
        return failed ? HCCN_ERR_IO
               : too_large ? HCCN_ERR_TOPOLOGY : HCCN_ERR_NOMEM;
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return HCCN_OK;
}

static hccn_status_t bad_args(const char *fn, char *err, size_t errlen)
{
    hccn_sim_topo_errf(err, errlen, fn, "NULL argument");
    return HCCN_ERR_INVALID;
}

static void clear(hccn_sim_topo_t **out, char *err, size_t errlen)
{
    if (out != NULL)
        *out = NULL;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
}

hccn_status_t hccn_sim_topo_load_file(const char *path, hccn_sim_topo_t **out,
                                      char *err, size_t errlen)
{
    char *text = NULL, file[PATH_MAX];
    size_t len = 0;
    clear(out, err, errlen);
    if (path == NULL || out == NULL)
        return bad_args("hccn_sim_topo_load_file", err, errlen);
    hccn_status_t st = hccn_sim_topo_find(path, file, sizeof(file), err,
                                          errlen);
    if (st == HCCN_OK)
        st = read_file(file, &text, &len, err, errlen);
    if (st == HCCN_OK)
        st = load_text(text, len, file, out, err, errlen);
    hccn_sim_free(text);
    return st;
}

hccn_status_t hccn_sim_topo_load_string(const char *json, const char *source,
                                        hccn_sim_topo_t **out, char *err,
                                        size_t errlen)
{
    clear(out, err, errlen);
    if (json == NULL || out == NULL)
        return bad_args("hccn_sim_topo_load_string", err, errlen);
    return load_text(json, strlen(json), source ? source : "<string>", out,
                     err, errlen);
}

hccn_status_t hccn_sim_topo_load_json(json_object *doc, const char *source,
                                      hccn_sim_topo_t **out, char *err,
                                      size_t errlen)
{
    hccn_sim_spec_t spec;
    hccn_sim_topo_t *t = NULL;
    clear(out, err, errlen);
    if (out == NULL)
        return bad_args("hccn_sim_topo_load_json", err, errlen);
    if (source == NULL)
        source = "<json>";
    hccn_sim_sw_t *sw = NULL;
    hccn_status_t st = hccn_sim_sw_parse(doc, source, &sw, err, errlen);
    if (st != HCCN_OK)
        return st;
    st = hccn_sim_spec_parse(doc, source, sw != NULL ? sw->link_eff : NULL,
                             &spec, err, errlen);
    if (st != HCCN_OK) {
        hccn_sim_free(sw);
        return st;
    }
    st = hccn_sim_topo_build(&spec, &t);
    if (st == HCCN_OK) {
        t->name = spec.name != NULL ? spec.name : base_name(source);
        spec.name = NULL;
        t->source = hccn_sim_topo_strndup(source, strlen(source));
        if (t->name == NULL || t->source == NULL)
            st = HCCN_ERR_NOMEM;
    }
    hccn_sim_spec_free(&spec);
    if (st == HCCN_OK) {
        t->sw = sw;   /* the topology's from here */
        sw = NULL;
    }
    hccn_sim_free(sw);
    if (st == HCCN_OK &&
        (st = hccn_sim_topo_parse_faults(doc, source, t, err, errlen)) !=
            HCCN_OK) {
        hccn_sim_topo_free(t);
        return st;
    }
    if (st != HCCN_OK) {
        hccn_sim_topo_free(t);
        hccn_sim_topo_errf(err, errlen, source, "%s",
                           st == HCCN_ERR_NOMEM ? hccn_sim_nomem_msg()
                                                : hccn_sim_fail_msg());
        return st;
    }
    *out = t;
    return HCCN_OK;
}

void hccn_sim_topo_free(hccn_sim_topo_t *topo)
{
    if (topo == NULL)
        return;
    hccn_sim_topo_priv_t *p = topo->priv;
    if (p != NULL) {
        hccn_sim_free(p->npu);
        hccn_sim_free(p->nics);
        hccn_sim_free(p->node);
        hccn_sim_free(p->groups);
        hccn_sim_free(p->leaves);
        hccn_sim_free(p->upper);
        for (int i = 0; p->pairs != NULL && i < p->ntypes; i++)
            hccn_sim_free(p->pairs[i]);
        hccn_sim_free(p->pairs);
        hccn_sim_free(p);
    }
    hccn_sim_free(topo->nodes);
    hccn_sim_free(topo->npus);
    hccn_sim_free(topo->devs);
    hccn_sim_free(topo->links);
    hccn_sim_free(topo->name);
    hccn_sim_free(topo->source);
    hccn_sim_free(topo->faults);
    hccn_sim_free(topo->sw);
    hccn_sim_free(topo);
}
