/*
 * A pool of large, reused chunks for memory that is taken in big pieces
 * and given back in waves: the tasks of lean (timing-only) engines. Not
 * installed. Thread-safe.
 */
#ifndef HCCN_DEVICE_SIM_POOL_H
#define HCCN_DEVICE_SIM_POOL_H

#include <stddef.h>

typedef struct hccn_sim_pool hccn_sim_pool_t;

hccn_sim_pool_t *hccn_sim_pool_create(void);
/* Unmaps every chunk: every piece is gone with it. */
void hccn_sim_pool_destroy(hccn_sim_pool_t *p);
/* n bytes, 64-byte aligned, not cleared; NULL on no memory. */
void *hccn_sim_pool_alloc(hccn_sim_pool_t *p, size_t n);
/* Gives back a piece of p (NULL: nothing). */
void hccn_sim_pool_free(hccn_sim_pool_t *p, void *ptr);
/* Bytes mapped for p's chunks (they are kept until p is destroyed). */
size_t hccn_sim_pool_mapped(hccn_sim_pool_t *p);

#endif /* HCCN_DEVICE_SIM_POOL_H */
