/*
 * Point-to-point state of a communicator, per (source, destination) pair
 * that has exchanged a message: the next send and receive sequence numbers
 * and the pair's mailbox. Kept in a hash table that grows with the pairs
 * used, so that a communicator costs O(size) memory when it is made, not
 * O(size^2) (a world communicator of thousands of ranks).
 *
 * Threads: the table is read and changed under the communicator's lock.
 * A mailbox, once made, stays where it is until the communicator is reset
 * or freed, so an operation keeps a pointer to its entry without the lock.
 */
#include <stdlib.h>
#include <string.h>

#include "device_sim/alloc.h"
#include "runtime/rt.h"

struct rt_pair {
    uint64_t key;                 /* pair_key(src, dst); 0: empty */
    uint64_t send_seq, recv_seq;
    rt_box_ent_t *box;            /* RT_BOX_DEPTH entries, made on first use */
};

static uint64_t pair_key(int src, int dst)
{
    return (((uint64_t)(uint32_t)src << 32) | (uint32_t)dst) + 1;
}

static size_t pair_hash(uint64_t key, size_t mask)
{
    uint64_t h = key * 0x9e3779b97f4a7c15ull;
    return (size_t)(h ^ (h >> 31)) & mask;
}

/* The slot of key in a table of cap (a power of two) slots: its own, or
 * the empty one where it would go. */
static rt_pair_t *pair_slot(rt_pair_t *tab, size_t cap, uint64_t key)
{
    size_t i = pair_hash(key, cap - 1);
    while (tab[i].key != 0 && tab[i].key != key)
        i = (i + 1) & (cap - 1);
    return &tab[i];
}

/* Doubles the table (16 slots at first). Returns -1 on no memory, the
 * table unchanged. */
static int pairs_grow(rt_comm_t *c)
{
    size_t cap = c->cappairs ? 2 * c->cappairs : 16;
    rt_pair_t *tab = hccn_sim_calloc(cap, sizeof(*tab));
    if (tab == NULL)
        return -1;
    for (size_t i = 0; i < c->cappairs; i++)
        if (c->pairs[i].key != 0)
            *pair_slot(tab, cap, c->pairs[i].key) = c->pairs[i];
    hccn_sim_free(c->pairs);
    c->pairs = tab;
    c->cappairs = cap;
    return 0;
}

/* The pair src -> dst, made (with its mailbox) if new; NULL on no memory.
 * Called with the lock held. */
static rt_pair_t *pair_get(rt_comm_t *c, int src, int dst)
{
    uint64_t key = pair_key(src, dst);
    rt_pair_t *p = c->cappairs ? pair_slot(c->pairs, c->cappairs, key) : NULL;
    if (p != NULL && p->key == key)
        return p;
    /* At most half full, so that probes stay short. */
    if (2 * (c->npairs + 1) > c->cappairs) {
        if (pairs_grow(c) != 0)
            return NULL;
    }
    rt_box_ent_t *box = hccn_sim_calloc(RT_BOX_DEPTH, sizeof(*box));
    if (box == NULL)
        return NULL;
    p = pair_slot(c->pairs, c->cappairs, key);
    *p = (rt_pair_t){.key = key, .box = box};
    c->npairs++;
    return p;
}

rt_box_ent_t *hccn_rt_pair_next(rt_comm_t *c, int src, int dst, int is_send,
                                uint64_t *seq)
{
    rt_box_ent_t *e = NULL;
    pthread_mutex_lock(&c->lock);
    rt_pair_t *p = pair_get(c, src, dst);
    if (p != NULL) {
        *seq = is_send ? p->send_seq++ : p->recv_seq++;
        e = &p->box[*seq % RT_BOX_DEPTH];
    }
    pthread_mutex_unlock(&c->lock);
    return e;
}

void hccn_rt_pairs_clear(rt_comm_t *c)
{
    for (size_t i = 0; i < c->cappairs; i++)
        hccn_sim_free(c->pairs[i].box);
    hccn_sim_free(c->pairs);
    c->pairs = NULL;
    c->cappairs = c->npairs = 0;
}
