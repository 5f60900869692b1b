/*
 * NPU threads: SPMD launch with optional placement on host cores (hwloc),
 * and doorbells, the sleep/wake primitive the data plane waits on.
 */
#ifndef HCCN_DEVICE_SIM_LAUNCH_H
#define HCCN_DEVICE_SIM_LAUNCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "hccn/hccn.h"

typedef void (*hccn_sim_thread_fn)(int rank, void *arg);

/* Runs fn(rank, arg) for rank 0..n-1, one thread each, and returns when all
 * have returned. With bind, thread i is bound to host core i % cores.
 * No fn starts before every thread exists: if one cannot be created, none
 * runs fn (a rank never waits for a peer that was never started), the
 * threads made are joined, why (len bytes; may be NULL) says which thread
 * and the system's reason, and the result is HCCN_ERR_NOMEM. */
hccn_status_t hccn_sim_launch(int n, hccn_sim_thread_fn fn, void *arg,
                              int bind, char *why, size_t len);

typedef struct {
    int cores, pus, numa_nodes;
} hccn_sim_host_t;

/* Describes the host through hwloc; zeros when hwloc fails. */
void hccn_sim_host_describe(hccn_sim_host_t *host);

/* A doorbell: a counter that waiters sleep on until it changes.
 * Usage: v = hccn_sim_bell_read(b); check the condition; if not met,
 * hccn_sim_bell_wait(b, v, ...). Ringers change state first, then ring. */
typedef struct {
    _Atomic uint32_t seq;
    _Atomic uint32_t sleepers;
} hccn_sim_bell_t;

uint32_t hccn_sim_bell_read(hccn_sim_bell_t *b);
void hccn_sim_bell_ring(hccn_sim_bell_t *b);
/* Sleeps until the counter differs from seen or timeout_ms passes. */
void hccn_sim_bell_wait(hccn_sim_bell_t *b, uint32_t seen, int timeout_ms);

#endif
