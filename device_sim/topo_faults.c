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

#include "device_sim/topo_internal.h"

static const struct {
    const char *name;
    hccn_sim_fault_kind_t kind;
} kinds[] = {{"link_down", HCCN_SIM_FAULT_LINK_DOWN},
             {"link_slow", HCCN_SIM_FAULT_LINK_SLOW},
             {"npu_slow", HCCN_SIM_FAULT_NPU_SLOW},
             {"npu_fail", HCCN_SIM_FAULT_NPU_FAIL}};

int hccn_sim_topo_find_link(const hccn_sim_topo_t *topo, const char *name)
{
    const char *arrow = name != NULL ? strstr(name, "->") : NULL;
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

static hccn_status_t parse_fault(hccn_sim_jctx_t *c, json_object *v,
                                 const hccn_sim_topo_t *topo,
                                 hccn_sim_fault_t *f)
{
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
        if ((f->link = hccn_sim_topo_find_link(topo, link)) < 0)
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
        return hccn_sim_jnum(c, v, "factor", 0.0, 1, 1.0, &f->factor, NULL);
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
    topo->faults = calloc(n, sizeof(*topo->faults));
    if (topo->faults == NULL)
        return hccn_sim_jnomem(&c);
    size_t old = hccn_sim_jkey(&c, "faults");
    for (size_t i = 0; i < n && st == HCCN_OK; i++) {
        size_t o2 = hccn_sim_jindex(&c, i);
        st = parse_fault(&c, json_object_array_get_idx(arr, i), topo,
                         &topo->faults[i]);
        hccn_sim_jpop(&c, o2);
    }
    hccn_sim_jpop(&c, old);
    topo->nfaults = st == HCCN_OK ? (int)n : 0;
    return st;
}
