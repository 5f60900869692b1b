/*
 * The NPU faults of a fault plan, indexed by NPU (fault_plan.h): what the
 * engine asks at every piece of local work (the slowdown at time t) and
 * what the runtime asks before compute and allocation (when the NPU
 * fails) cost O(log n) and O(1) instead of a scan of the whole plan.
 */
#include <math.h>
#include <stdlib.h>

#include "device_sim/alloc.h"
#include "device_sim/fault_plan.h"

typedef struct {
    int npu;
    int order;                  /* place in the plan: a later one wins ties */
    double at, factor;
} slow_t;

static int slow_cmp(const void *a, const void *b)
{
    const slow_t *x = a, *y = b;
    if (x->npu != y->npu)
        return x->npu < y->npu ? -1 : 1;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

void hccn_sim_fplan_free(hccn_sim_fplan_t *fp)
{
    hccn_sim_free(fp->fail_at);
    hccn_sim_free(fp->first);
    hccn_sim_free(fp->at);
    hccn_sim_free(fp->factor);
    *fp = (hccn_sim_fplan_t){0};
}

/* Fills fp->first, at and factor from the plan's npu_slow faults. */
static int index_slow(hccn_sim_fplan_t *fp, const hccn_sim_fault_t *f, int n)
{
    int nslow = 0;
    for (int i = 0; i < n; i++)
        nslow += f[i].kind == HCCN_SIM_FAULT_NPU_SLOW;
    slow_t *s = hccn_sim_malloc((size_t)(nslow > 0 ? nslow : 1) * sizeof(*s));
    fp->first = hccn_sim_calloc((size_t)fp->ndev + 1, sizeof(int));
    fp->at = hccn_sim_malloc((size_t)(nslow > 0 ? nslow : 1) * sizeof(double));
    fp->factor = hccn_sim_malloc((size_t)(nslow > 0 ? nslow : 1) * sizeof(double));
    if (s == NULL || fp->first == NULL || fp->at == NULL || fp->factor == NULL) {
        hccn_sim_free(s);
        return -1;
    }
    int k = 0;
    for (int i = 0; i < n; i++)
        if (f[i].kind == HCCN_SIM_FAULT_NPU_SLOW)
            s[k++] = (slow_t){f[i].npu, i, f[i].at, f[i].factor};
    qsort(s, (size_t)nslow, sizeof(*s), slow_cmp);
    for (int i = 0; i < nslow; i++) {
        fp->first[s[i].npu + 1]++;
        fp->at[i] = s[i].at;
        fp->factor[i] = s[i].factor;
    }
    for (int d = 0; d < fp->ndev; d++)
        fp->first[d + 1] += fp->first[d];
    hccn_sim_free(s);
    return 0;
}

int hccn_sim_fplan_build(hccn_sim_fplan_t *fp, const hccn_sim_fault_t *f,
                         int n, int ndev)
{
    *fp = (hccn_sim_fplan_t){.ndev = ndev};
    fp->fail_at = hccn_sim_malloc((size_t)(ndev > 0 ? ndev : 1) * sizeof(double));
    if (fp->fail_at == NULL || index_slow(fp, f, n) != 0) {
        hccn_sim_fplan_free(fp);
        return -1;
    }
    for (int d = 0; d < ndev; d++)
        fp->fail_at[d] = INFINITY;
    for (int i = 0; i < n; i++)
        if (f[i].kind == HCCN_SIM_FAULT_NPU_FAIL && f[i].npu >= 0 &&
            f[i].npu < ndev && f[i].at < fp->fail_at[f[i].npu])
            fp->fail_at[f[i].npu] = f[i].at;
    return 0;
}

double hccn_sim_fplan_slowdown(const hccn_sim_fplan_t *fp, int dev, double t)
{
    if (fp->first == NULL || dev < 0 || dev >= fp->ndev)
        return 1.0;
    /* The last entry of dev with at <= t: sorted by (at, plan order), so
     * it is the latest to have begun, the later in the plan on a tie. */
    int lo = fp->first[dev], hi = fp->first[dev + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (fp->at[mid] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > fp->first[dev] ? fp->factor[lo - 1] : 1.0;
}

double hccn_sim_fplan_fail_at(const hccn_sim_fplan_t *fp, int dev)
{
    if (fp->fail_at == NULL || dev < 0 || dev >= fp->ndev)
        return INFINITY;
    return fp->fail_at[dev];
}
