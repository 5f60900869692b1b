/*
 * The library's allocator and its wrappers (device_sim/alloc.h).
 *
 * Threads: the allocator is set only while the library holds no memory
 * (no cluster exists, so no NPU thread runs); the wrappers read it without
 * a lock. The count of live blocks is atomic.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"

static void *libc_malloc(size_t n, void *user)
{
    (void)user;
    return malloc(n);
}

static void *libc_calloc(size_t n, size_t size, void *user)
{
    (void)user;
    return calloc(n, size);
}

static void *libc_realloc(void *p, size_t n, void *user)
{
    (void)user;
    return realloc(p, n);
}

static void libc_free(void *p, void *user)
{
    (void)user;
    free(p);
}

static const hccn_allocator_t libc_alloc = {
    sizeof(hccn_allocator_t), libc_malloc, libc_calloc, libc_realloc,
    libc_free, NULL, NULL};
static hccn_allocator_t cur = {
    sizeof(hccn_allocator_t), libc_malloc, libc_calloc, libc_realloc,
    libc_free, NULL, NULL};
static atomic_long live;

static void *nomem(size_t n, const char *what)
{
    hccn_sim_fail(HCCN_ERR_NOMEM, "out of memory: %zu bytes for %s", n, what);
    return NULL;
}

void *hccn_sim_malloc_in(size_t n, const char *what)
{
    void *p = cur.malloc_fn(n > 0 ? n : 1, cur.user);
    if (p == NULL)
        return nomem(n, what);
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return p;
}

void *hccn_sim_calloc_in(size_t n, size_t size, const char *what)
{
    if (size != 0 && n > SIZE_MAX / size)
        return nomem(SIZE_MAX, what);
    void *p = n > 0 && size > 0 ? cur.calloc_fn(n, size, cur.user)
                                : cur.calloc_fn(1, 1, cur.user);
    if (p == NULL)
        return nomem(n * size, what);
    atomic_fetch_add_explicit(&live, 1, memory_order_relaxed);
    return p;
}

void *hccn_sim_realloc_in(void *p, size_t n, const char *what)
{
    if (p == NULL)
        return hccn_sim_malloc_in(n, what);
    void *q = cur.realloc_fn(p, n > 0 ? n : 1, cur.user);
    return q != NULL ? q : nomem(n, what);
}

char *hccn_sim_strdup_in(const char *s, const char *what)
{
    size_t n = strlen(s) + 1;
    char *d = hccn_sim_malloc_in(n, what);
    if (d != NULL)
        memcpy(d, s, n);
    return d;
}

void hccn_sim_free(void *p)
{
    if (p == NULL)
        return;
    atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
    cur.free_fn(p, cur.user);
}

hccn_status_t hccn_sim_reserve(hccn_resource_t kind, size_t bytes,
                               const char *what)
{
    if (cur.reserve_fn == NULL || cur.reserve_fn(kind, bytes, cur.user) == 0)
        return HCCN_OK;
    if (kind == HCCN_RESOURCE_THREAD)
        return hccn_sim_fail(HCCN_ERR_NOMEM, "out of resources: the "
                             "allocator refused a host thread for %s", what);
    return hccn_sim_fail(HCCN_ERR_NOMEM, "out of memory: the allocator "
                         "refused a mapping of %zu bytes for %s", bytes, what);
}

void hccn_sim_alloc_keep(void *p)
{
    if (p != NULL)
        atomic_fetch_sub_explicit(&live, 1, memory_order_relaxed);
}

long hccn_sim_alloc_live(void)
{
    return atomic_load(&live);
}

hccn_status_t hccn_set_allocator(const hccn_allocator_t *a)
{
    if (a != NULL && (a->struct_size < sizeof(*a) || a->malloc_fn == NULL ||
                      a->calloc_fn == NULL || a->realloc_fn == NULL ||
                      a->free_fn == NULL))
        return hccn_sim_fail(HCCN_ERR_INVALID, "hccn_set_allocator: struct_size "
                             "must be sizeof(hccn_allocator_t) and malloc_fn, "
                             "calloc_fn, realloc_fn and free_fn all set");
    long n = hccn_sim_alloc_live();
    if (n != 0)
        return hccn_sim_fail(HCCN_ERR_INVALID, "hccn_set_allocator: the "
                             "library holds %ld blocks of the current "
                             "allocator (a cluster, topology, trace or "
                             "prediction is alive): destroy them first", n);
    cur = a != NULL ? *a : libc_alloc;
    hccn_sim_fail_clear();
    return HCCN_OK;
}
