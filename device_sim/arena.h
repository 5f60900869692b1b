/*
 * A device-memory arena: one contiguous mapping per NPU, carved into
 * 256-byte aligned allocations (first fit, neighbours merged on free).
 * Thread-safe; any thread may ask whether a pointer lies in the arena.
 */
#ifndef HCCN_DEVICE_SIM_ARENA_H
#define HCCN_DEVICE_SIM_ARENA_H

#include <pthread.h>
#include <stddef.h>

#include "hccn/hccn.h"

#define HCCN_SIM_ARENA_ALIGN 256

typedef struct {
    size_t off, len;
} hccn_sim_extent_t;

typedef struct {
    char *base;
    size_t size;
    pthread_mutex_t lock;
    hccn_sim_extent_t *free_list;   /* sorted by offset, disjoint, merged */
    size_t nfree, capfree;
    hccn_sim_extent_t *used;        /* sorted by offset */
    size_t nused, capused;
    size_t used_bytes;
    int borrowed;                   /* base is another's mapping */
} hccn_sim_arena_t;

/* Maps size bytes (reserved lazily; pages appear on first touch). */
hccn_status_t hccn_sim_arena_init(hccn_sim_arena_t *a, size_t size);
void hccn_sim_arena_fini(hccn_sim_arena_t *a);

/* As hccn_sim_arena_init on size bytes at base, a mapping the caller owns
 * (a shared one: runtime/proc.h); fini leaves it mapped. */
hccn_status_t hccn_sim_arena_init_at(hccn_sim_arena_t *a, char *base,
                                     size_t size);

/* Frees every allocation at once (between runs). */
void hccn_sim_arena_clear(hccn_sim_arena_t *a);

/* bytes == 0 gives a valid minimum-size allocation. HCCN_ERR_NOMEM when no
 * free extent is large enough; nothing changes then. */
hccn_status_t hccn_sim_arena_alloc(hccn_sim_arena_t *a, size_t bytes,
                                   void **ptr);

/* ptr must be a live allocation's start, else HCCN_ERR_INVALID. */
hccn_status_t hccn_sim_arena_free(hccn_sim_arena_t *a, void *ptr);

/* 1 if [ptr, ptr+len) lies inside the arena's mapping. */
int hccn_sim_arena_contains(const hccn_sim_arena_t *a, const void *ptr,
                            size_t len);

/* 1 if [ptr, ptr+len) lies inside one live allocation. */
int hccn_sim_arena_owns(hccn_sim_arena_t *a, const void *ptr, size_t len);

/* The live allocation holding ptr: 1 and its start and (rounded) length,
 * or 0 when ptr is in no live allocation. */
int hccn_sim_arena_find(hccn_sim_arena_t *a, const void *ptr, void **start,
                        size_t *len);

void hccn_sim_arena_info(hccn_sim_arena_t *a, hccn_mem_info_t *info);

/* The NUMA node (index among the host's nodes) whose memory should hold
 * the arena of rank, when the rank's thread runs on core rank % ncores and
 * core c belongs to node core_node[c]; -1 when there is no choice to make
 * (one node, no cores, a core without a node). */
int hccn_sim_numa_pick(int rank, int ncores, const int *core_node, int nnodes);

/* Binds arenas[r] to the NUMA node hccn_sim_numa_pick gives for rank r on
 * this host (through hwloc), before any page is touched; a no-op on a host
 * with one NUMA node. Returns how many arenas were bound. */
int hccn_sim_arena_place(hccn_sim_arena_t *arenas, int n);

#endif
