/*
 * A pool of large chunks for the tasks of lean engines (see pool.h).
 *
 * A timing-only run posts a whole collective before it runs: millions of
 * tasks, written once into fresh memory, then freed together when the
 * collective ends. Taken from malloc, every call's tasks land on pages the
 * kernel must map and clear one 4 KiB page at a time, and are handed back
 * when freed. Here they are carved from chunks of CHUNK bytes, and a
 * chunk whose pieces are all freed is kept for the next call, already
 * mapped. The chunks do not ask for transparent huge pages (madvise): the
 * kernel's default defrag policy compacts memory on the fault of such a
 * page, and on a host whose memory is fragmented the faults then cost
 * more than the 4 KiB ones they save (docs/performance.md, round 17).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "device_sim/alloc.h"
#include "device_sim/fail.h"
#include "device_sim/pool.h"

/* A freed piece, and the part of a chunk not handed out, are poisoned
 * (alloc.h): a read of a task after its batch freed it is caught as it
 * would be with malloc. */
#define POISON HCCN_SIM_POISON
#define UNPOISON HCCN_SIM_UNPOISON

#define CHUNK ((size_t)32 << 20)
#define ALIGN ((size_t)64)

typedef struct chunk chunk_t;
struct chunk {
    size_t size, used;          /* bytes mapped, bytes handed out */
    size_t live;                /* pieces not yet freed */
    chunk_t *spare_next;        /* empty chunks, kept for reuse */
    chunk_t *all_next;          /* every chunk, for unmapping */
};

/* Each piece starts with its chunk and size, ALIGN bytes before what it
 * returns. */
typedef struct {
    chunk_t *chunk;
    size_t n;
} piece_t;

struct hccn_sim_pool {
    pthread_mutex_t lock;
    chunk_t *cur;               /* pieces are carved from this one */
    chunk_t *spare;
    chunk_t *all;
    size_t mapped;              /* bytes of every chunk */
};

static size_t round_up(size_t n)
{
    return (n + ALIGN - 1) & ~(ALIGN - 1);
}

hccn_sim_pool_t *hccn_sim_pool_create(void)
{
    hccn_sim_pool_t *p = hccn_sim_calloc(1, sizeof(*p));
    if (p != NULL)
        pthread_mutex_init(&p->lock, NULL);
    return p;
}

void hccn_sim_pool_destroy(hccn_sim_pool_t *p)
{
    if (p == NULL)
        return;
    while (p->all != NULL) {
        chunk_t *c = p->all;
        p->all = c->all_next;
        /* The shadow outlives the mapping: a later mapping at the same
         * address must not find it poisoned. */
        UNPOISON(c, c->size);
        munmap(c, c->size);
    }
    pthread_mutex_destroy(&p->lock);
    hccn_sim_free(p);
}

/* A chunk with room for need bytes past its header: a spare one, else a
 * new mapping. Lock held. */
static chunk_t *chunk_get(hccn_sim_pool_t *p, size_t need)
{
    for (chunk_t **pp = &p->spare; *pp != NULL; pp = &(*pp)->spare_next)
        if ((*pp)->size - round_up(sizeof(chunk_t)) >= need) {
            chunk_t *c = *pp;
            *pp = c->spare_next;
            return c;
        }
    size_t size = round_up(sizeof(chunk_t)) + need;
    size = size < CHUNK ? CHUNK : (size + CHUNK - 1) / CHUNK * CHUNK;
    if (hccn_sim_reserve(HCCN_RESOURCE_MAPPING, size, "a chunk of the "
                         "engine's task pool") != HCCN_OK)
        return NULL;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        hccn_sim_fail(HCCN_ERR_NOMEM, "out of memory: cannot map %zu bytes "
                      "for a chunk of the engine's task pool: %s", size,
                      strerror(errno));
        return NULL;
    }
    chunk_t *c = m;
    *c = (chunk_t){.size = size, .all_next = p->all};
    POISON((char *)c + round_up(sizeof(chunk_t)),
           size - round_up(sizeof(chunk_t)));
    p->all = c;
    p->mapped += size;
    return c;
}

void *hccn_sim_pool_alloc(hccn_sim_pool_t *p, size_t n)
{
    size_t need = ALIGN + round_up(n > 0 ? n : 1);
    pthread_mutex_lock(&p->lock);
    chunk_t *c = p->cur;
    if (c == NULL || c->size - c->used < need) {
        chunk_t *fresh = chunk_get(p, need);
        if (fresh == NULL) {
            pthread_mutex_unlock(&p->lock);
            return NULL;
        }
        /* The old chunk goes spare when its last piece is freed. */
        if (c != NULL && c->live == 0) {
            c->spare_next = p->spare;
            p->spare = c;
        }
        fresh->used = round_up(sizeof(chunk_t));
        fresh->live = 0;
        p->cur = c = fresh;
    }
    piece_t *pc = (piece_t *)((char *)c + c->used);
    UNPOISON(pc, sizeof(*pc));
    pc->chunk = c;
    pc->n = n;
    c->used += need;
    c->live++;
    pthread_mutex_unlock(&p->lock);
    UNPOISON((char *)pc + ALIGN, n);
    return (char *)pc + ALIGN;
}

void hccn_sim_pool_free(hccn_sim_pool_t *p, void *ptr)
{
    if (ptr == NULL)
        return;
    const piece_t *pc = (const piece_t *)((char *)ptr - ALIGN);
    chunk_t *c = pc->chunk;
    POISON(ptr, pc->n);
    pthread_mutex_lock(&p->lock);
    if (--c->live == 0) {
        if (c == p->cur) {
            c->used = round_up(sizeof(chunk_t));
        } else {
            c->spare_next = p->spare;
            p->spare = c;
        }
    }
    pthread_mutex_unlock(&p->lock);
}

size_t hccn_sim_pool_mapped(hccn_sim_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    size_t n = p->mapped;
    pthread_mutex_unlock(&p->lock);
    return n;
}
