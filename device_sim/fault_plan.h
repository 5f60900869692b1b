/*
 * The NPU faults of a fault plan (topo.h, hccn_sim_fault_t), indexed by
 * NPU, so that the questions asked of the plan while a run goes on cost
 * O(log n) or O(1) in the number of faults, and building the index
 * O(n log n). Not thread-safe; built between runs.
 */
#ifndef HCCN_DEVICE_SIM_FAULT_PLAN_H
#define HCCN_DEVICE_SIM_FAULT_PLAN_H

#include "device_sim/topo.h"

typedef struct {
    int ndev;
    double *fail_at;            /* per device: its first npu_fail; INFINITY */
    int *first;                 /* ndev + 1: device d's npu_slow faults are
                                   at/factor[first[d] .. first[d+1]) */
    double *at, *factor;        /* sorted by (time, place in the plan) */
} hccn_sim_fplan_t;

/* Indexes the n faults of f for devices 0..ndev-1 (fp zeroed first).
 * Returns 0, or -1 on no memory with fp empty (every question answered as
 * for no fault). */
int hccn_sim_fplan_build(hccn_sim_fplan_t *fp, const hccn_sim_fault_t *f,
                         int n, int ndev);
void hccn_sim_fplan_free(hccn_sim_fplan_t *fp);

/* The time factor of dev's local work at time t: the factor of the plan's
 * latest npu_slow for dev that has begun by t (the later in the plan on a
 * tie), else 1. */
double hccn_sim_fplan_slowdown(const hccn_sim_fplan_t *fp, int dev, double t);

/* The simulated time at which dev fails (its earliest npu_fail), or
 * INFINITY when the plan never fails it. */
double hccn_sim_fplan_fail_at(const hccn_sim_fplan_t *fp, int dev);

#endif /* HCCN_DEVICE_SIM_FAULT_PLAN_H */
