/*
 * Device-memory arenas (see arena.h). Extents are kept in two sorted arrays;
 * allocation is first fit over the free list.
 */
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "device_sim/arena.h"

static size_t round_up(size_t n)
{
    return (n + HCCN_SIM_ARENA_ALIGN - 1) & ~(size_t)(HCCN_SIM_ARENA_ALIGN - 1);
}

static int ext_insert(hccn_sim_extent_t **arr, size_t *n, size_t *cap,
                      size_t pos, hccn_sim_extent_t e)
{
    if (*n == *cap) {
        size_t nc = *cap ? 2 * *cap : 16;
        hccn_sim_extent_t *p = realloc(*arr, nc * sizeof(*p));
        if (p == NULL)
            return -1;
        *arr = p;
        *cap = nc;
    }
    memmove(*arr + pos + 1, *arr + pos, (*n - pos) * sizeof(**arr));
    (*arr)[pos] = e;
    (*n)++;
    return 0;
}

static void ext_remove(hccn_sim_extent_t *arr, size_t *n, size_t pos)
{
    memmove(arr + pos, arr + pos + 1, (*n - pos - 1) * sizeof(*arr));
    (*n)--;
}

/* Index of the first extent whose offset is >= off. */
static size_t ext_lower(const hccn_sim_extent_t *arr, size_t n, size_t off)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (arr[mid].off < off)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

hccn_status_t hccn_sim_arena_init(hccn_sim_arena_t *a, size_t size)
{
    memset(a, 0, sizeof(*a));
    size = round_up(size);
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        return HCCN_ERR_NOMEM;
    a->base = p;
    a->size = size;
    pthread_mutex_init(&a->lock, NULL);
    hccn_sim_arena_clear(a);
    return a->nfree == 1 ? HCCN_OK : HCCN_ERR_NOMEM;
}

hccn_status_t hccn_sim_arena_init_at(hccn_sim_arena_t *a, char *base,
                                     size_t size)
{
    memset(a, 0, sizeof(*a));
    a->base = base;
    a->size = round_up(size);
    a->borrowed = 1;
    pthread_mutex_init(&a->lock, NULL);
    hccn_sim_arena_clear(a);
    return a->nfree == 1 ? HCCN_OK : HCCN_ERR_NOMEM;
}

void hccn_sim_arena_fini(hccn_sim_arena_t *a)
{
    if (a->base == NULL)
        return;
    if (!a->borrowed)
        munmap(a->base, a->size);
    free(a->free_list);
    free(a->used);
    pthread_mutex_destroy(&a->lock);
    memset(a, 0, sizeof(*a));
}

void hccn_sim_arena_clear(hccn_sim_arena_t *a)
{
    pthread_mutex_lock(&a->lock);
    a->nfree = 0;
    a->nused = 0;
    a->used_bytes = 0;
    hccn_sim_extent_t all = {0, a->size};
    ext_insert(&a->free_list, &a->nfree, &a->capfree, 0, all);
    pthread_mutex_unlock(&a->lock);
}

hccn_status_t hccn_sim_arena_alloc(hccn_sim_arena_t *a, size_t bytes,
                                   void **ptr)
{
    if (bytes > a->size)
        return HCCN_ERR_NOMEM;
    size_t len = round_up(bytes > 0 ? bytes : 1);
    hccn_status_t rc = HCCN_ERR_NOMEM;
    pthread_mutex_lock(&a->lock);
    for (size_t i = 0; i < a->nfree; i++) {
        hccn_sim_extent_t *f = &a->free_list[i];
        if (f->len < len)
            continue;
        hccn_sim_extent_t u = {f->off, len};
        size_t pos = ext_lower(a->used, a->nused, u.off);
        if (ext_insert(&a->used, &a->nused, &a->capused, pos, u) != 0)
            break;
        f->off += len;
        f->len -= len;
        if (f->len == 0)
            ext_remove(a->free_list, &a->nfree, i);
        a->used_bytes += len;
        *ptr = a->base + u.off;
        rc = HCCN_OK;
        break;
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

hccn_status_t hccn_sim_arena_free(hccn_sim_arena_t *a, void *ptr)
{
    if (!hccn_sim_arena_contains(a, ptr, 1))
        return HCCN_ERR_INVALID;
    size_t off = (size_t)((char *)ptr - a->base);
    hccn_status_t rc = HCCN_ERR_INVALID;
    pthread_mutex_lock(&a->lock);
    size_t pos = ext_lower(a->used, a->nused, off);
    if (pos < a->nused && a->used[pos].off == off) {
        hccn_sim_extent_t e = a->used[pos];
        size_t fp = ext_lower(a->free_list, a->nfree, off);
        /* Merge with the free neighbours, or insert a new free extent. */
        int left = fp > 0 && a->free_list[fp - 1].off +
                                     a->free_list[fp - 1].len == e.off;
        int right = fp < a->nfree && e.off + e.len == a->free_list[fp].off;
        int ok = 1;
        if (left && right) {
            a->free_list[fp - 1].len += e.len + a->free_list[fp].len;
            ext_remove(a->free_list, &a->nfree, fp);
        } else if (left) {
            a->free_list[fp - 1].len += e.len;
        } else if (right) {
            a->free_list[fp].off = e.off;
            a->free_list[fp].len += e.len;
        } else {
            ok = ext_insert(&a->free_list, &a->nfree, &a->capfree, fp, e) == 0;
        }
        if (ok) {
            ext_remove(a->used, &a->nused, pos);
            a->used_bytes -= e.len;
            rc = HCCN_OK;
        } else {
            rc = HCCN_ERR_NOMEM;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return rc;
}

int hccn_sim_arena_contains(const hccn_sim_arena_t *a, const void *ptr,
                            size_t len)
{
    uintptr_t p = (uintptr_t)ptr, b = (uintptr_t)a->base;
    if (a->base == NULL || p < b || p - b >= a->size)
        return 0;
    return len <= a->size - (p - b);
}

int hccn_sim_arena_find(hccn_sim_arena_t *a, const void *ptr, void **start,
                        size_t *len)
{
    if (!hccn_sim_arena_contains(a, ptr, 1))
        return 0;
    size_t off = (size_t)((const char *)ptr - a->base);
    int found = 0;
    pthread_mutex_lock(&a->lock);
    size_t pos = ext_lower(a->used, a->nused, off + 1);
    if (pos > 0) {
        const hccn_sim_extent_t *u = &a->used[pos - 1];
        if (off - u->off < u->len) {
            *start = a->base + u->off;
            *len = u->len;
            found = 1;
        }
    }
    pthread_mutex_unlock(&a->lock);
    return found;
}

int hccn_sim_arena_owns(hccn_sim_arena_t *a, const void *ptr, size_t len)
{
    void *start;
    size_t n;
    if (!hccn_sim_arena_find(a, ptr, &start, &n))
        return 0;
    size_t off = (size_t)((const char *)ptr - (char *)start);
    return len <= n - off;
}

void hccn_sim_arena_info(hccn_sim_arena_t *a, hccn_mem_info_t *info)
{
    pthread_mutex_lock(&a->lock);
    info->total = a->size;
    info->used = a->used_bytes;
    info->allocations = a->nused;
    info->largest_free = 0;
    for (size_t i = 0; i < a->nfree; i++)
        if (a->free_list[i].len > info->largest_free)
            info->largest_free = a->free_list[i].len;
    pthread_mutex_unlock(&a->lock);
}
