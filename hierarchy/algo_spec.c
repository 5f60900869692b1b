/*
 * Algorithm overrides in HCCL's grammar (see algo_spec.h and
 * docs/selection.md):
 *
 *   spec    := entry ( "/" entry )*
 *   entry   := [ coll "=" ] body        at most one entry without coll
 *   body    := name | level ( ";" level )*
 *   level   := ( "level0" | "level1" | "level2" ) ":" name
 *
 * Names are table names or HCCL's (H-D_R, NHR, NB, pipeline, pairwise,
 * fullmesh); NA, auto or an absent level leave the choice to the cost
 * model. Matching ignores case and the spaces around every token.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "device_sim/alloc.h"
#include "hierarchy/algo_spec.h"

/* HCCL's names, and what each runs here: the first row of the list that
 * exists and implements the collective (docs/selection.md). */
static const struct {
    const char *alias;
    const char *names[3];
} aliases[] = {
    {"H-D_R", {"hd"}},
    {"RHD", {"hd"}},
    {"NHR", {"ring"}},
    {"NHR_V1", {"ring"}},
    {"NB", {"bruck", "hd"}},
    {"fullmesh", {"mesh"}},
    {"pipeline", {"hier"}},
};

/* Hierarchical rows by their level algorithms, in order of preference for
 * a level given as NA. level1 "pipeline" is HCCL's name for the pipelined
 * hierarchical algorithm; level2 "" is a row without a level 2. */
static const struct {
    const char *level0, *level1, *level2, *row;
} level_rows[] = {
    {"mesh", "ring", "", "hier"},
    {"mesh", "pipeline", "", "hier"},
    {"mesh", "hd", "", "hier_mh"},
    {"ring", "ring", "", "hier_rr"},
    {"mesh", "ring", "ring", "hier3"},
    {"mesh", "ring", "hd", "hier3_hd"},
};

/* HCCL's operation names and ours. */
static const struct {
    const char *name;
    hccn_coll_t coll;
} colls[] = {
    {"allreduce", HCCN_COLL_ALLREDUCE},
    {"reducescatter", HCCN_COLL_REDUCE_SCATTER},
    {"reduce_scatter", HCCN_COLL_REDUCE_SCATTER},
    {"allgather", HCCN_COLL_ALLGATHER},
    {"broadcast", HCCN_COLL_BROADCAST},
    {"reduce", HCCN_COLL_REDUCE},
    {"alltoall", HCCN_COLL_ALLTOALL},
    {"scatter", HCCN_COLL_SCATTER},
    {"gather", HCCN_COLL_GATHER},
    {"barrier", HCCN_COLL_BARRIER},
    {"alltoallv", HCCN_COLL_ALLTOALLV},
    {"allgatherv", HCCN_COLL_ALLGATHERV},
    {"reducescatterv", HCCN_COLL_REDUCE_SCATTERV},
    {"reduce_scatterv", HCCN_COLL_REDUCE_SCATTERV},
};

#define NELEM(x) (sizeof(x) / sizeof((x)[0]))

/* ------------------------------------------------------------- tokens --- */

/* A piece of the spec text: s[0..n), spaces trimmed. */
typedef struct {
    const char *s;
    size_t n;
} tok_t;

static tok_t trim(const char *s, size_t n)
{
    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    return (tok_t){s, n};
}

static int tok_is(tok_t t, const char *word)
{
    return strlen(word) == t.n && strncasecmp(t.s, word, t.n) == 0;
}

/* The token before the first c in t (all of t if none); *rest is after. */
static tok_t split(tok_t t, char c, tok_t *rest, int *found)
{
    const char *at = memchr(t.s, c, t.n);
    *found = at != NULL;
    if (at == NULL) {
        *rest = (tok_t){t.s + t.n, 0};
        return trim(t.s, t.n);
    }
    *rest = trim(at + 1, t.n - (size_t)(at + 1 - t.s));
    return trim(t.s, (size_t)(at - t.s));
}

static void copy_tok(char *dst, size_t cap, tok_t t)
{
    size_t n = t.n < cap - 1 ? t.n : cap - 1;
    memcpy(dst, t.s, n);
    dst[n] = '\0';
}

/* ------------------------------------------------------------- names --- */

static int is_auto(tok_t t)
{
    return tok_is(t, "NA") || tok_is(t, "auto");
}

/* The canonical name of t: a table name or an HCCL alias, spelled as in
 * the table or aliases[]; NULL when unknown. */
static const char *known_name(tok_t t)
{
    for (const hccn_algo_t *a = hccn_hier_algos(); a->name != NULL; a++)
        if (tok_is(t, a->name))
            return a->name;
    for (size_t i = 0; i < NELEM(aliases); i++)
        if (tok_is(t, aliases[i].alias))
            return aliases[i].alias;
    char name[HCCN_SPEC_NAME_MAX];   /* a composition row, "hier(ring,hd)" */
    if (t.n >= sizeof(name))
        return NULL;
    copy_tok(name, sizeof(name), t);
    for (char *c = name; *c; c++)
        *c = (char)tolower((unsigned char)*c);
    const hccn_algo_t *row = hccn_hier_algo_find(name);
    return row != NULL ? row->name : NULL;
}

/* One line listing every name a spec may use. */
static void list_names(char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = '\0';
    for (const hccn_algo_t *a = hccn_hier_algos(); a->name && n < len; a++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "",
                              a->name);
    for (size_t i = 0; i < NELEM(aliases) && n < len; i++)
        n += (size_t)snprintf(buf + n, len - n, ", %s", aliases[i].alias);
    if (n < len)
        snprintf(buf + n, len - n, ", hier(L0,L1), hier3(L0,L1,L2) "
                 "(L: ring, mesh, hd)");
}

/* The name of the level algorithm t: a table name, "pipeline", or "" for
 * NA; NULL when unknown. HCCL aliases resolve to their first name. */
static const char *level_name(tok_t t)
{
    if (is_auto(t))
        return "";
    if (tok_is(t, "pipeline"))
        return "pipeline";
    const char *name = known_name(t);
    for (size_t i = 0; name != NULL && i < NELEM(aliases); i++)
        if (strcmp(name, aliases[i].alias) == 0)
            return aliases[i].names[0];
    return name;
}

const hccn_algo_t *hccn_hier_spec_levels_row(const char *level0,
                                             const char *level1,
                                             const char *level2)
{
    for (size_t i = 0; i < NELEM(level_rows); i++) {
        if ((*level0 && strcmp(level0, level_rows[i].level0) != 0) ||
            (*level1 && strcmp(level1, level_rows[i].level1) != 0) ||
            (*level2 && strcmp(level2, level_rows[i].level2) != 0))
            continue;
        const hccn_algo_t *row = hccn_hier_algo_find(level_rows[i].row);
        if (row != NULL)
            return row;
    }
    /* Any other combination is a composition row (algo_levels.c); with
     * levels left as NA, the first that matches stands for all of them
     * (the cost model chooses among them: hccn_hier_spec_levels_next). */
    return hccn_hier_spec_levels_next(level0, level1, level2, NULL);
}

/* The flat names a level given as lv may run: lv itself, or every level
 * algorithm for NA. */
static const char *const *level_options(const char *lv, const char **one)
{
    one[0] = lv;
    one[1] = NULL;
    return *lv ? one : hccn_hier_level_algos();
}

const hccn_algo_t *hccn_hier_spec_levels_next(const char *level0,
                                              const char *level1,
                                              const char *level2,
                                              const hccn_algo_t *after)
{
    const char *b0[2], *b1[2], *b2[2];
    const char *const *o0 = level_options(level0, b0);
    const char *const *o1 = level_options(level1, b1);
    const char *const *o2 = *level2 ? level_options(level2, b2) : NULL;
    const char *none[2] = {"", NULL};
    int past = after == NULL;
    if (strcmp(level1, "pipeline") == 0)
        return NULL;   /* only hier runs it (level_rows) */
    for (const char *const *x = o0; *x; x++)
        for (const char *const *y = o1; *y; y++)
            for (const char *const *z = o2 ? o2 : none; *z; z++) {
                const hccn_algo_t *row = hccn_hier_levels_row(*x, *y, *z);
                if (row != NULL && past)
                    return row;
                past |= row == after;
            }
    return NULL;
}

/* ------------------------------------------------------------- parse --- */

typedef struct {
    const char *spec;
    char *why;
    size_t len;
} ctx_t;

/* A spec comes from the user (HCCN_ALGO, hccn_comm_set_algo): its control
 * characters (a newline too: the message is one line) are shown as '?'. */
static void one_line(char *s)
{
    for (; s != NULL && *s != '\0'; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

/* Writes "spec "<spec>": "<part>": <fmt>" (the part left out when it is
 * the whole spec) and returns -1. */
static int fail(const ctx_t *c, tok_t part, const char *fmt, const char *arg)
{
    char msg[768];
    tok_t whole = trim(c->spec, strlen(c->spec));
    snprintf(msg, sizeof(msg), fmt, arg);
    if (part.s == whole.s && part.n == whole.n)
        snprintf(c->why, c->len, "spec \"%s\": %s", c->spec, msg);
    else
        snprintf(c->why, c->len, "spec \"%s\": \"%.*s\": %s", c->spec,
                 (int)part.n, part.s, msg);
    one_line(c->why);
    return -1;
}

/* "level0:mesh;level1:ring" into ch. */
static int parse_levels(const ctx_t *c, tok_t body, hccn_spec_choice_t *ch)
{
    int seen[3] = {0, 0, 0}, found;
    tok_t rest = body;
    ch->kind = HCCN_SPEC_LEVELS;
    while (rest.n > 0) {
        tok_t item = split(rest, ';', &rest, &found);
        tok_t value, key = split(item, ':', &value, &found);
        int l = tok_is(key, "level0") ? 0 : tok_is(key, "level1") ? 1
                : tok_is(key, "level2")                          ? 2
                                                                 : -1;
        if (item.n == 0)
            continue;   /* "level0:mesh;" */
        if (l < 0 || !found)
            return fail(c, item, "%s", "expected level0:, level1: or level2: "
                                       "followed by an algorithm name");
        if (seen[l]++)
            return fail(c, item, "%s", "this level is given twice");
        const char *name = level_name(value);
        if (name == NULL) {
            char names[512];
            list_names(names, sizeof(names));
            return fail(c, item, "unknown algorithm (known: %s)", names);
        }
        snprintf(ch->level[l], sizeof(ch->level[l]), "%s", name);
    }
    if (!ch->level[0][0] && !ch->level[1][0] && !ch->level[2][0])
        ch->kind = HCCN_SPEC_AUTO;
    else if (hccn_hier_spec_levels_row(ch->level[0], ch->level[1],
                                       ch->level[2]) == NULL)
        return fail(c, body, "%s", "no hierarchical algorithm runs these "
                                   "levels (a level runs ring, mesh or hd; "
                                   "level1 pipeline needs level0 mesh; "
                                   "docs/selection.md)");
    return 0;
}

static int parse_body(const ctx_t *c, tok_t body, hccn_spec_choice_t *ch)
{
    memset(ch, 0, sizeof(*ch));
    copy_tok(ch->part, sizeof(ch->part), body);
    if (body.n == 0)
        return fail(c, body, "%s", "empty algorithm");
    if (memchr(body.s, ':', body.n) != NULL)
        return parse_levels(c, body, ch);
    if (is_auto(body))
        return 0;
    const char *name = known_name(body);
    if (name == NULL) {
        char names[512];
        list_names(names, sizeof(names));
        return fail(c, body, "unknown algorithm (known: %s)", names);
    }
    ch->kind = HCCN_SPEC_ALGO;
    snprintf(ch->algo, sizeof(ch->algo), "%s", name);
    return 0;
}

static int parse_entry(const ctx_t *c, tok_t entry, hccn_algo_spec_t *out,
                       int *have_dflt)
{
    int found;
    tok_t body, op = split(entry, '=', &body, &found);
    if (entry.n == 0)
        return fail(c, entry, "%s", "empty entry (two '/' in a row?)");
    if (!found) {
        if ((*have_dflt)++)
            return fail(c, entry, "%s", "a second entry without a "
                                        "collective (write coll=algo)");
        return parse_body(c, entry, &out->dflt);
    }
    for (size_t i = 0; i < NELEM(colls); i++) {
        if (!tok_is(op, colls[i].name))
            continue;
        unsigned bit = 1u << colls[i].coll;
        if (out->ops & bit)
            return fail(c, op, "%s", "this collective is given twice");
        out->ops |= bit;
        return parse_body(c, body, &out->op[colls[i].coll]);
    }
    return fail(c, op, "%s", "unknown collective (allreduce, reducescatter, "
                             "allgather, broadcast, reduce, alltoall, "
                             "scatter, gather, barrier, alltoallv, "
                             "allgatherv, reducescatterv)");
}

int hccn_hier_spec_parse(const char *spec, hccn_algo_spec_t *out, char *why,
                         size_t len)
{
    ctx_t c = {spec, why, len};
    int have_dflt = 0, found;
    memset(out, 0, sizeof(*out));
    if (spec == NULL)
        return 0;
    snprintf(out->text, sizeof(out->text), "%s", spec);
    tok_t rest = trim(spec, strlen(spec));
    if (rest.n == 0)
        return 0;
    do {
        tok_t entry = split(rest, '/', &rest, &found);
        if (parse_entry(&c, entry, out, &have_dflt) != 0)
            return -1;
    } while (found);
    return 0;
}

/* -------------------------------------------------------------- cache --- */

int hccn_hier_spec_get(hccn_spec_cache_t *cache, const char *spec,
                       hccn_algo_spec_t *out, char *why, size_t len)
{
    if (cache == NULL || spec == NULL || *spec == '\0')
        return hccn_hier_spec_parse(spec, out, why, len);
    int slot = -1;
    for (int i = 0; i < HCCN_SPEC_CACHE_SLOTS && slot < 0; i++)
        if (cache->slot[i].text != NULL &&
            strcmp(cache->slot[i].text, spec) == 0)
            slot = i;
    if (slot < 0) {
        char *text = hccn_sim_strdup(spec);
        if (text == NULL)   /* no memory: answer, but keep nothing */
            return hccn_hier_spec_parse(spec, out, why, len);
        slot = (int)(cache->next++ % HCCN_SPEC_CACHE_SLOTS);
        hccn_sim_free(cache->slot[slot].text);
        cache->slot[slot].text = text;
        cache->slot[slot].rc = hccn_hier_spec_parse(
            spec, &cache->slot[slot].spec, cache->slot[slot].why,
            sizeof(cache->slot[slot].why));
    }
    *out = cache->slot[slot].spec;
    if (cache->slot[slot].rc != 0)
        snprintf(why, len, "%s", cache->slot[slot].why);
    return cache->slot[slot].rc;
}

void hccn_hier_spec_cache_clear(hccn_spec_cache_t *cache)
{
    for (int i = 0; i < HCCN_SPEC_CACHE_SLOTS; i++)
        hccn_sim_free(cache->slot[i].text);
    memset(cache, 0, sizeof(*cache));
}

/* --------------------------------------------------------------- pick --- */

/* The row name stands for when running coll: a table row, or an alias's
 * first row that exists and implements coll (else its first that exists). */
static const hccn_algo_t *resolve(const char *name, hccn_coll_t coll)
{
    const hccn_algo_t *row = hccn_hier_algo_find(name), *any = NULL;
    for (size_t i = 0; row == NULL && i < NELEM(aliases); i++) {
        if (strcmp(aliases[i].alias, name) != 0)
            continue;
        for (int k = 0; k < 3 && aliases[i].names[k] && row == NULL; k++) {
            const hccn_algo_t *r = hccn_hier_algo_find(aliases[i].names[k]);
            if (r != NULL && (r->colls & 1u << coll))
                row = r;
            else if (any == NULL)
                any = r;
        }
    }
    return row != NULL ? row : any;
}

/* Writes "spec "<spec>": "<part>": <msg>" (no part when it is the whole
 * spec) and returns -1. */
static int pick_fail(const hccn_algo_spec_t *spec,
                     const hccn_spec_choice_t *ch, const char *msg,
                     char *why, size_t len)
{
    if (strcmp(ch->part, spec->text) == 0)
        snprintf(why, len, "spec \"%s\": %s", spec->text, msg);
    else
        snprintf(why, len, "spec \"%s\": \"%s\": %s", spec->text, ch->part,
                 msg);
    one_line(why);
    return -1;
}

int hccn_hier_spec_pick(const hccn_algo_spec_t *spec, hccn_coll_t coll,
                        const hccn_algo_t **algo, const char **part,
                        char *why, size_t len)
{
    const hccn_spec_choice_t *ch =
        spec->ops & 1u << coll ? &spec->op[coll] : &spec->dflt;
    const hccn_algo_t *row;
    char msg[160];
    *algo = NULL;
    if (part != NULL)
        *part = ch->part;
    if (ch->kind == HCCN_SPEC_AUTO)
        return 0;
    if (ch->kind == HCCN_SPEC_ALGO)
        row = resolve(ch->algo, coll);
    else
        row = hccn_hier_spec_levels_row(ch->level[0], ch->level[1],
                                        ch->level[2]);
    if (row != NULL && (row->colls & 1u << coll)) {
        *algo = row;
        return 0;
    }
    if (row == NULL)
        snprintf(msg, sizeof(msg), "'%s' stands for no algorithm of this "
                 "build", ch->algo);
    else
        snprintf(msg, sizeof(msg), "algorithm '%s' does not implement %s",
                 row->name, hccn_coll_name(coll));
    return pick_fail(spec, ch, msg, why, len);
}

int hccn_hier_spec_open_levels(const hccn_algo_spec_t *spec, hccn_coll_t coll,
                               const char *lv[3])
{
    const hccn_spec_choice_t *ch =
        spec->ops & 1u << coll ? &spec->op[coll] : &spec->dflt;
    if (ch->kind != HCCN_SPEC_LEVELS)
        return 0;
    for (int l = 0; l < 3; l++)
        lv[l] = ch->level[l];
    /* The named rows keep their order of preference for NA (level_rows). */
    const hccn_algo_t *row = hccn_hier_spec_levels_row(lv[0], lv[1], lv[2]);
    if (row == NULL || hccn_hier_algo_levels(row) == NULL)
        return 0;
    return !lv[0][0] || !lv[1][0];
}
