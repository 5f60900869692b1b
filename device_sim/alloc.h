/*
 * Every heap allocation of the library goes through these wrappers, which
 * call the allocator set by hccn_set_allocator (libc's by default). A
 * failure records HCCN_ERR_NOMEM and a message naming the bytes and the
 * function that wanted them (device_sim/fail.h), so callers only pass the
 * status up. Device-memory mappings and host threads are not heap memory
 * but ask hccn_sim_reserve first, so that an allocator can refuse them too.
 * Not installed.
 */
#ifndef HCCN_DEVICE_SIM_ALLOC_H
#define HCCN_DEVICE_SIM_ALLOC_H

#include <stddef.h>

#include "device_sim/fail.h"
#include "hccn/hccn.h"

#define hccn_sim_malloc(n) hccn_sim_malloc_in((n), __func__)
#define hccn_sim_calloc(n, size) hccn_sim_calloc_in((n), (size), __func__)
#define hccn_sim_realloc(p, n) hccn_sim_realloc_in((p), (n), __func__)
#define hccn_sim_strdup(s) hccn_sim_strdup_in((s), __func__)

/* n bytes (0 counts as 1), or NULL with the failure recorded; what names
 * the function that asked. */
void *hccn_sim_malloc_in(size_t n, const char *what);
/* n x size zeroed bytes, or NULL with the failure recorded (also when the
 * product overflows). */
void *hccn_sim_calloc_in(size_t n, size_t size, const char *what);
/* p resized to n bytes, or NULL with the failure recorded and p unchanged. */
void *hccn_sim_realloc_in(void *p, size_t n, const char *what);
/* A copy of s, or NULL with the failure recorded. */
char *hccn_sim_strdup_in(const char *s, const char *what);
/* Frees what the wrappers above returned (NULL: nothing). */
void hccn_sim_free(void *p);

/* HCCN_OK if the allocator grants kind (bytes of device memory, or a host
 * thread) for what, else HCCN_ERR_NOMEM with the failure recorded. */
hccn_status_t hccn_sim_reserve(hccn_resource_t kind, size_t bytes,
                               const char *what);

/* p (from the wrappers) stays for the process's lifetime and is never
 * freed: it no longer counts as live, so the allocator may change. */
void hccn_sim_alloc_keep(void *p);

/* Memory a module keeps for reuse rather than freeing it (the task pool,
 * ended flows) is poisoned under AddressSanitizer while it is not in
 * use: a read of it is caught as it would be after free(). */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define HCCN_SIM_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define HCCN_SIM_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define HCCN_SIM_POISON(p, n) ((void)(p), (void)(n))
#define HCCN_SIM_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Blocks the wrappers have handed out and not yet freed. */
long hccn_sim_alloc_live(void);

#endif /* HCCN_DEVICE_SIM_ALLOC_H */
