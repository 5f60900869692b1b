/*
 * The imported cluster in memory: node types, NICs, sources and notes, and
 * the helpers every importer shares (errors, reading files, rounding).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "imp.h"

int hccn_imp_fail(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, HCCN_IMP_ERRLEN, fmt, ap);
    va_end(ap);
    return -1;
}

static char *vformat(const char *fmt, va_list ap)
{
    va_list cp;
    va_copy(cp, ap);
    int n = vsnprintf(NULL, 0, fmt, cp);
    va_end(cp);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s != NULL)
        vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

int hccn_imp_note(hccn_imp_topo_t *t, const char *fmt, ...)
{
    char **grown = realloc(t->notes, (size_t)(t->nnotes + 1) * sizeof(*grown));
    if (grown == NULL)
        return -1;
    t->notes = grown;
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    if (s == NULL)
        return -1;
    t->notes[t->nnotes++] = s;
    return 0;
}

int hccn_imp_source(hccn_imp_topo_t *t, const char *key, const char *fmt, ...)
{
    /* A key given twice keeps its first text: the first importer step to
     * explain a figure is the one that set it. */
    for (int i = 0; i < t->nsources; i++)
        if (!strcmp(t->sources[i].key, key))
            return 0;
    hccn_imp_source_t *grown =
        realloc(t->sources, (size_t)(t->nsources + 1) * sizeof(*grown));
    if (grown == NULL)
        return -1;
    t->sources = grown;
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(fmt, ap);
    va_end(ap);
    char *k = strdup(key);
    if (s == NULL || k == NULL) {
        free(s);
        free(k);
        return -1;
    }
    t->sources[t->nsources].key = k;
    t->sources[t->nsources++].text = s;
    return 0;
}

hccn_imp_node_t *hccn_imp_add_type(hccn_imp_topo_t *t, const char *name,
                                   int nnpus)
{
    hccn_imp_node_t *grown =
        realloc(t->types, (size_t)(t->ntypes + 1) * sizeof(*grown));
    if (grown == NULL)
        return NULL;
    t->types = grown;
    hccn_imp_node_t *n = &t->types[t->ntypes];
    memset(n, 0, sizeof(*n));
    n->name = strdup(name);
    if (n->name == NULL)
        return NULL;
    n->count = 1;
    n->nnpus = nnpus;
    n->p2p = 1;
    t->ntypes++;
    return n;
}

int hccn_imp_add_nic(hccn_imp_node_t *n, const int *npus, int nnpus,
                     double bw, double lat)
{
    hccn_imp_nic_t *grown =
        realloc(n->nics, (size_t)(n->nnics + 1) * sizeof(*grown));
    if (grown == NULL)
        return -1;
    n->nics = grown;
    hccn_imp_nic_t *k = &n->nics[n->nnics];
    k->npus = malloc((size_t)nnpus * sizeof(int));
    if (k->npus == NULL)
        return -1;
    memcpy(k->npus, npus, (size_t)nnpus * sizeof(int));
    k->nnpus = nnpus;
    k->bw = bw;
    k->lat = lat;
    n->nnics++;
    return 0;
}

void hccn_imp_set_npu(hccn_imp_topo_t *t, hccn_imp_node_t *n,
                      const hccn_imp_preset_t *p)
{
    n->arena_mib = p->arena_mib;
    n->mem_bw = hccn_imp_round(p->mem_GBps / 2);
    n->reduce_bw = hccn_imp_round(p->mem_GBps / 3);
    n->peak_tflops = p->peak_tflops;
    hccn_imp_source(t, "npu", "preset %s (%s): %ld MiB, memory %g GB/s -> "
                    "copy %g GB/s (read + write), reduce %g GB/s (two reads, "
                    "one write)%s; %s", p->name, p->what, p->arena_mib,
                    p->mem_GBps, n->mem_bw, n->reduce_bw,
                    p->peak_tflops > 0 ? ", peak from the datasheet" : "",
                    p->source);
}

static void free_type(hccn_imp_node_t *n)
{
    for (int k = 0; k < n->nnics; k++)
        free(n->nics[k].npus);
    free(n->nics);
    free(n->group_of);
    free(n->name);
}

void hccn_imp_free(hccn_imp_topo_t *t)
{
    for (int i = 0; i < t->ntypes; i++)
        free_type(&t->types[i]);
    for (int i = 0; i < t->nsources; i++) {
        free(t->sources[i].key);
        free(t->sources[i].text);
    }
    for (int i = 0; i < t->nnotes; i++)
        free(t->notes[i]);
    free(t->types);
    free(t->sources);
    free(t->notes);
    free(t->name);
    free(t->description);
    memset(t, 0, sizeof(*t));
}

double hccn_imp_round(double x)
{
    if (!isfinite(x) || x == 0)
        return x;
    char buf[32];
    snprintf(buf, sizeof(buf), "%.12g", x);
    return strtod(buf, NULL);
}

char *hccn_imp_read_file(const char *path, size_t *len, char *err)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        hccn_imp_fail(err, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 65536 * 2;
            char *grown = realloc(buf, cap);
            if (grown == NULL) {
                hccn_imp_fail(err, "%s: out of memory", path);
                goto fail;
            }
            buf = grown;
        }
        size_t got = fread(buf + n, 1, 65536, f);
        n += got;
        if ((long)n > HCCN_IMP_MAX_FILE) {
            hccn_imp_fail(err, "%s: larger than %ld bytes", path,
                          HCCN_IMP_MAX_FILE);
            goto fail;
        }
        if (got < 65536)
            break;
    }
    if (ferror(f)) {
        hccn_imp_fail(err, "%s: read error", path);
        goto fail;
    }
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}

int hccn_imp_hosts(const char *const *files, int nfiles, hccn_imp_text_fn *read,
                   const char *what, const hccn_imp_opts_t *o,
                   hccn_imp_topo_t *t, char *err)
{
    for (int i = 0; i < nfiles; i++) {
        size_t len;
        char *text = hccn_imp_read_file(files[i], &len, err);
        if (text == NULL)
            return -1;
        int rc = read(text, len, files[i], o, t, err);
        free(text);
        if (rc)
            return -1;
    }
    if ((t->description = malloc(256)) != NULL)
        snprintf(t->description, 256, "Imported from %s %s%s", what, files[0],
                 nfiles > 1 ? " and others (one host per file)" : "");
    return 0;
}
