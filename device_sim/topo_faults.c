/*
 * The optional "faults" section of a topology file (docs/topology.md):
 *
 *   "faults": [
 *     {"kind": "link_down", "link": "node0.npu0->node0.npu1", "at_us": 100},
 *     {"kind": "link_slow", "link": "node0.nic0->net", "factor": 0.25},
 *     {"kind": "npu_slow", "npu": 3, "factor": 2},
 *     {"kind": "npu_fail", "npu": 5, "at_us": 500}
 *   ]
 *
 * Links are named "SRC->DST" by device names (hccn-topo -v lists them);
 * at_us defaults to 0. Parsed after the graph is built, since names and NPU
 * indices are checked against it.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/topo_internal.h"

static const struct {
    const char *name;
    hccn_sim_fault_kind_t kind;
} kinds[] = {{"link_down", HCCN_SIM_FAULT_LINK_DOWN},
             {"link_slow", HCCN_SIM_FAULT_LINK_SLOW},
             {"npu_slow", HCCN_SIM_FAULT_NPU_SLOW},
             {"npu_fail", HCCN_SIM_FAULT_NPU_FAIL}};

/* Splits "SRC->DST" at its arrow; NULL when there is none. */
static const char *link_arrow(const char *name)
{
    return name != NULL ? strstr(name, "->") : NULL;
}

int hccn_sim_topo_find_link(const hccn_sim_topo_t *topo, const char *name)
{
    const char *arrow = link_arrow(name);
    if (arrow == NULL)
        return -1;
    size_t n = (size_t)(arrow - name);
    for (int l = 0; l < topo->nlinks; l++) {
        const char *s = topo->devs[topo->links[l].src].name;
        const char *d = topo->devs[topo->links[l].dst].name;
        if (strlen(s) == n && strncmp(s, name, n) == 0 && strcmp(d, arrow + 2) == 0)
            return l;
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* A name index for a plan of many link faults: devices sorted by name and
 * links by (source, destination), so that each name costs O(log n), not a
 * scan of every link (10^5 faults on a cluster of 10^5 links).            */

typedef struct {
    const char *name;
    int dev;
} dev_ent_t;

typedef struct {
    int src, dst, link;
} link_ent_t;

struct hccn_sim_link_index {
    const hccn_sim_topo_t *topo;
    dev_ent_t *devs;             /* by name */
    link_ent_t *links;           /* by (src, dst, link index) */
};
typedef hccn_sim_link_index_t name_index_t;

static int dev_cmp(const void *a, const void *b)
{
    return strcmp(((const dev_ent_t *)a)->name, ((const dev_ent_t *)b)->name);
}

static int link_cmp(const void *a, const void *b)
{
    const link_ent_t *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst)
        return x->dst < y->dst ? -1 : 1;
    return x->link < y->link ? -1 : x->link > y->link;
}

/* Builds the index; -1 on no memory (index_free frees what was made). */
static int index_build(name_index_t *ix, const hccn_sim_topo_t *topo)
{
    ix->topo = topo;
    ix->devs = hccn_sim_malloc((size_t)topo->ndevs * sizeof(*ix->devs));
    ix->links = hccn_sim_malloc((size_t)(topo->nlinks > 0 ? topo->nlinks : 1) *
                       sizeof(*ix->links));
    if (ix->devs == NULL || ix->links == NULL)
        return -1;
    for (int d = 0; d < topo->ndevs; d++)
        ix->devs[d] = (dev_ent_t){topo->devs[d].name, d};
    for (int l = 0; l < topo->nlinks; l++)
        ix->links[l] = (link_ent_t){topo->links[l].src, topo->links[l].dst, l};
    qsort(ix->devs, (size_t)topo->ndevs, sizeof(*ix->devs), dev_cmp);
    qsort(ix->links, (size_t)topo->nlinks, sizeof(*ix->links), link_cmp);
    return 0;
}

static void index_free(name_index_t *ix)
{
    hccn_sim_free(ix->devs);
    hccn_sim_free(ix->links);
}

/* The device named by the n bytes at name, or -1. */
static int index_dev(const name_index_t *ix, const char *name, size_t n)
{
    int lo = 0, hi = ix->topo->ndevs;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const char *s = ix->devs[mid].name;
        int c = strncmp(s, name, n);
        if (c == 0 && s[n] != '\0')
            c = 1;                /* s is longer: it sorts after */
        if (c == 0)
            return ix->devs[mid].dev;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* The first link from src to dst (as hccn_sim_topo_find_link), or -1. */
static int index_link(const name_index_t *ix, const char *name)
{
    const char *arrow = link_arrow(name);
    if (arrow == NULL)
        return -1;
    int src = index_dev(ix, name, (size_t)(arrow - name));
    int dst = index_dev(ix, arrow + 2, strlen(arrow + 2));
    if (src < 0 || dst < 0)
        return -1;
    int lo = 0, hi = ix->topo->nlinks;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        const link_ent_t *l = &ix->links[mid];
        if (l->src < src || (l->src == src && l->dst < dst))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == ix->topo->nlinks)
        return -1;
    const link_ent_t *l = &ix->links[lo];
    return l->src == src && l->dst == dst ? l->link : -1;
}

hccn_sim_link_index_t *hccn_sim_link_index_new(const hccn_sim_topo_t *topo)
{
    name_index_t *ix = hccn_sim_calloc(1, sizeof(*ix));
    if (ix != NULL && index_build(ix, topo) != 0) {
        hccn_sim_link_index_free(ix);
        return NULL;
    }
    return ix;
}

int hccn_sim_link_index_find(const hccn_sim_link_index_t *ix, const char *name)
{
    return index_link(ix, name);
}

void hccn_sim_link_index_free(hccn_sim_link_index_t *ix)
{
    if (ix == NULL)
        return;
    index_free(ix);
    hccn_sim_free(ix);
}

static hccn_status_t parse_fault(hccn_sim_jctx_t *c, json_object *v,
                                 const name_index_t *ix,
                                 hccn_sim_fault_t *f)
{
    const hccn_sim_topo_t *topo = ix->topo;
    static const char *const keys[] = {"kind", "link", "npu", "at_us",
                                       "factor", NULL};
    const char *kind, *link;
    long long npu;
    int has;
    hccn_status_t st;
    hccn_sim_jgot_t got;
    if (!json_object_is_type(v, json_type_object))
        return hccn_sim_jfail(c, "must be an object (got %s)",
                              hccn_sim_jgot(v, &got));
    if ((st = hccn_sim_jkeys(c, v, keys)) ||
        (st = hccn_sim_jstring(c, v, "kind", &kind, NULL)))
        return st;
    size_t k = 0;
    while (k < sizeof(kinds) / sizeof(kinds[0]) && strcmp(kinds[k].name, kind))
        k++;
    if (k == sizeof(kinds) / sizeof(kinds[0]))
        return hccn_sim_jfail_key(c, "kind", "must be link_down, link_slow, "
                                  "npu_slow or npu_fail (got \"%s\")", kind);
    f->kind = kinds[k].kind;
    f->at = 0.0;
    f->factor = 1.0;
    f->link = f->npu = -1;
    if ((st = hccn_sim_jnum(c, v, "at_us", 0.0, 0, 1e15, &f->at, &has)))
        return st;
    f->at *= 1e-6;
    int is_link = f->kind == HCCN_SIM_FAULT_LINK_DOWN ||
                  f->kind == HCCN_SIM_FAULT_LINK_SLOW;
    if (is_link) {
        if ((st = hccn_sim_jforbid(c, v, "npu", "for NPU faults")) ||
            (st = hccn_sim_jstring(c, v, "link", &link, NULL)))
            return st;
        if ((f->link = index_link(ix, link)) < 0)
            return hccn_sim_jfail_key(c, "link", "no link \"%s\" (name it "
                                      "SRC->DST by device names; hccn-topo -v "
                                      "lists them)", link);
    } else {
        if ((st = hccn_sim_jforbid(c, v, "link", "for link faults")) ||
            (st = hccn_sim_jint(c, v, "npu", 0, topo->nnpus - 1, &npu, NULL)))
            return st;
        f->npu = (int)npu;
    }
    int slow = f->kind == HCCN_SIM_FAULT_LINK_SLOW ||
               f->kind == HCCN_SIM_FAULT_NPU_SLOW;
    if (!slow)
        return hccn_sim_jforbid(c, v, "factor", "for *_slow faults");
    /* Links get a bandwidth factor in (0, 1]; NPUs a slowdown >= 1. */
    if (f->kind == HCCN_SIM_FAULT_LINK_SLOW)
        return hccn_sim_jnum_floor(c, v, "factor", 0.0, 1, HCCN_SIM_MIN_FACTOR,
                                   1.0, &f->factor, NULL);
    return hccn_sim_jnum(c, v, "factor", 1.0, 0, 1e6, &f->factor, NULL);
}

hccn_status_t hccn_sim_topo_parse_faults(json_object *doc, const char *source,
                                         hccn_sim_topo_t *topo, char *err,
                                         size_t errlen)
{
    hccn_sim_jctx_t c = {.source = source, .err = err, .errlen = errlen};
    json_object *arr;
    int has;
    hccn_status_t st = hccn_sim_jtyped(&c, doc, "faults", json_type_array,
                                       "an array", &arr, &has);
    if (st != HCCN_OK || !has)
        return st;
    size_t n = json_object_array_length(arr);
    if (n == 0)
        return HCCN_OK;
    name_index_t ix = {0};
    topo->faults = hccn_sim_calloc(n, sizeof(*topo->faults));
    if (topo->faults == NULL || index_build(&ix, topo) != 0) {
        index_free(&ix);
        return hccn_sim_jnomem(&c);
    }
    size_t old = hccn_sim_jkey(&c, "faults");
    for (size_t i = 0; i < n && st == HCCN_OK; i++) {
        size_t o2 = hccn_sim_jindex(&c, i);
        st = parse_fault(&c, json_object_array_get_idx(arr, i), &ix,
                         &topo->faults[i]);
        hccn_sim_jpop(&c, o2);
    }
    hccn_sim_jpop(&c, old);
    index_free(&ix);
    topo->nfaults = st == HCCN_OK ? (int)n : 0;
    return st;
}
