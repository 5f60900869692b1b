/*
 * The data plane between the processes of a cluster (proc.h): each
 * process backs only its own ranks' arenas and scratch windows, and runs
 * a data server (proc_dserve.c) on DIR/hccn.G.d.Q.sock that answers
 * three requests about them: read N bytes at layout offset O, write N
 * bytes there, and run a move whose destination is there (fetching the operands it does not
 * hold from their owners' servers, in pieces of RT_DATA_CHUNK bytes, so
 * no staging buffer grows with the data).
 *
 * A move is split into pieces only when an operand is remote, and a
 * remote operand is in another rank's arena, so it never overlaps the
 * destination: every element sees the same kernel and operands in the
 * same order as in one process, and the bits are the same. Each served
 * line has its own thread (a move being served may itself wait on a
 * read from a third process; reads never wait on anything). The lines a
 * process opens are kept in a pool per peer and reused.
 *
 * Sockets order the bytes between processes, but race detectors do not
 * see through them: every request and reply also releases or acquires
 * p->sync, the order the socket already gives.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device_sim/alloc.h"
#include "runtime/proc_data.h"
#include "runtime/rt.h"

void hccn_rt_proc_sync_release(rt_proc_t *p)
{
    atomic_fetch_add_explicit(&p->sync, 1, memory_order_release);
}

void hccn_rt_proc_sync_acquire(rt_proc_t *p)
{
    (void)atomic_load_explicit(&p->sync, memory_order_acquire);
}

/* ------------------------------------------------------------ layout */

/* The process owning layout offset off (arenas, then scratch windows). */
static int off_owner(const rt_proc_t *p, uint64_t off)
{
    if (off >= p->region_len)
        off -= p->region_len;
    int lo = 0, hi = p->nranks - 1;
    while (lo < hi) {   /* the last rank whose arena starts at or before */
        int mid = (lo + hi + 1) / 2;
        if (p->arena_off[mid] <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    return hccn_rt_proc_owner(p, lo);
}

/* ptr's offset in the layout, or RT_DATA_NONE (NULL, or not in it). */
static uint64_t ptr_off(const rt_proc_t *p, const void *ptr)
{
    uintptr_t a = (uintptr_t)ptr, b = (uintptr_t)p->region;
    if (ptr == NULL || a < b || a - b >= 2 * p->region_len)
        return RT_DATA_NONE;
    return a - b;
}

int hccn_rt_proc_ptr_local(const rt_proc_t *p, const void *ptr)
{
    uint64_t off = ptr_off(p, ptr);
    return off == RT_DATA_NONE || off_owner(p, off) == p->rank;
}

int hccn_rt_proc_move_local(const rt_proc_t *p, const rt_move_t *m)
{
    return hccn_rt_proc_ptr_local(p, m->dst) &&
           hccn_rt_proc_ptr_local(p, m->a) && hccn_rt_proc_ptr_local(p, m->b);
}

/* 1 if [off, off + n) is this process's own memory. */
int hccn_rt_pdata_own(const rt_proc_t *p, uint64_t off, uint64_t n)
{
    return off < 2 * p->region_len && n <= 2 * p->region_len - off &&
           off_owner(p, off) == p->rank &&
           (n == 0 || off_owner(p, off + n - 1) == p->rank);
}

/* --------------------------------------------------------------- lines */

/* An idle line to process q, or a new one; -1 if q cannot be reached. */
static int pool_get(rt_proc_t *p, int q)
{
    int fd = -1;
    pthread_mutex_lock(&p->data_lock);
    if (p->pool != NULL && p->pool[q].n > 0)
        fd = p->pool[q].fd[--p->pool[q].n];
    pthread_mutex_unlock(&p->data_lock);
    return fd >= 0 ? fd : hccn_rt_net_connect_data(p, q);
}

static void pool_put(rt_proc_t *p, int q, int fd)
{
    pthread_mutex_lock(&p->data_lock);
    struct rt_data_pool *l = p->pool != NULL ? &p->pool[q] : NULL;
    if (l != NULL && l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 8;
        int *n = hccn_sim_realloc(l->fd, (size_t)cap * sizeof(int));
        if (n != NULL) {
            l->fd = n;
            l->cap = cap;
        }
    }
    if (l != NULL && l->n < l->cap) {
        l->fd[l->n++] = fd;
        fd = -1;
    }
    pthread_mutex_unlock(&p->data_lock);
    if (fd >= 0)
        close(fd);
}

/* One request to process q: out (n_out bytes) follows the request, in
 * (n_in bytes) the reply when it succeeds. A failed line gives
 * HCCN_ERR_REMOTE with lost = q. */
static drep_t request(rt_proc_t *p, int q, const dreq_t *req,
                      const void *out, size_t n_out, void *in, size_t n_in)
{
    drep_t rep = {HCCN_ERR_REMOTE, q};
    int fd = pool_get(p, q);
    if (fd < 0)
        return rep;
    hccn_rt_proc_sync_release(p);
    if (hccn_rt_wire_io(fd, (void *)req, sizeof(*req), 1) != 0 ||
        (n_out > 0 && hccn_rt_wire_io(fd, (void *)out, n_out, 1) != 0) ||
        hccn_rt_wire_io(fd, &rep, sizeof(rep), 0) != 0 ||
        (rep.status == HCCN_OK && n_in > 0 &&
         hccn_rt_wire_io(fd, in, n_in, 0) != 0)) {
        close(fd);
        return (drep_t){HCCN_ERR_REMOTE, q};
    }
    hccn_rt_proc_sync_acquire(p);
    pool_put(p, q, fd);
    return rep;
}

/* n bytes at layout offset off, from their owner, into buf. */
static drep_t fetch(rt_proc_t *p, uint64_t off, size_t n, void *buf)
{
    dreq_t req = {.kind = DREQ_READ, .dst = off, .n = n};
    drep_t rep = request(p, off_owner(p, off), &req, NULL, 0, buf, n);
    if (rep.status == HCCN_OK)
        atomic_fetch_add_explicit(&p->fetched, n, memory_order_relaxed);
    return rep;
}

/* ------------------------------------------------------------ the moves */

/* An operand of a piece: a local pointer, or the bytes fetched into buf. */
static const char *operand(rt_proc_t *p, uint64_t off, size_t at, size_t n,
                           char *buf, drep_t *rep)
{
    if (off == RT_DATA_NONE)
        return NULL;
    if (off_owner(p, off) == p->rank)
        return p->region + off + at;
    if (rep->status == HCCN_OK)
        *rep = fetch(p, off + at, n, buf);
    return buf;
}

/* Where an operand at off is here: in the arenas, or ia (its bytes sent
 * with the request); NULL if remote (or absent). */
static const char *here(const rt_proc_t *p, uint64_t off, const char *ia)
{
    if (ia != NULL)
        return ia;
    if (off == RT_DATA_NONE || off_owner(p, off) != p->rank)
        return NULL;
    return p->region + off;
}

drep_t hccn_rt_pdata_exec(rt_proc_t *p, const dreq_t *req, const char *ia,
                          const char *ib)
{
    drep_t rep = {HCCN_OK, -1};
    rt_move_t m = {.kind = (int)req->mkind, .dst = p->region + req->dst,
                   .n = req->n, .aux = (int)req->aux};
    hccn_dtype_t dt = (hccn_dtype_t)req->dt;
    size_t es = hccn_rt_move_esize(&m, dt);
    int la = req->a == RT_DATA_NONE || here(p, req->a, ia) != NULL;
    int lb = req->b == RT_DATA_NONE || here(p, req->b, ib) != NULL;
    if (es == 0)
        return (drep_t){HCCN_ERR_INVALID, -1};
    if (la && lb) {
        m.a = here(p, req->a, ia);
        m.b = here(p, req->b, ib);
        hccn_rt_move_apply(&m, dt, (hccn_redop_t)req->op);
        return rep;
    }
    if (m.kind == RT_MOVE_COPY)   /* straight into the destination */
        return fetch(p, req->a, m.n, m.dst);
    size_t per = RT_DATA_CHUNK / es;
    char *sa = la ? NULL : hccn_sim_malloc(RT_DATA_CHUNK);
    char *sb = lb ? NULL : hccn_sim_malloc(RT_DATA_CHUNK);
    if ((!la && sa == NULL) || (!lb && sb == NULL))
        rep = (drep_t){HCCN_ERR_NOMEM, -1};
    for (size_t i = 0; i < m.n && rep.status == HCCN_OK; i += per) {
        rt_move_t piece = m;
        piece.n = m.n - i < per ? m.n - i : per;
        piece.dst = m.dst + i * es;
        piece.a = operand(p, req->a, i * es, piece.n * es, sa, &rep);
        piece.b = operand(p, req->b, i * es, piece.n * es, sb, &rep);
        if (rep.status == HCCN_OK)
            hccn_rt_move_apply(&piece, dt, (hccn_redop_t)req->op);
    }
    hccn_sim_free(sa);
    hccn_sim_free(sb);
    return rep;
}

/* Host: a line to process q failed; the watcher loses q (proc_run.c). */
static void data_lost(rt_proc_t *p, int q)
{
    int none = 0;
    if (q >= 0 && atomic_compare_exchange_strong(&p->data_lost, &none, q + 1)) {
        char c = 0;
        if (p->fail_pipe[1] < 0 || write(p->fail_pipe[1], &c, 1) != 1)
            hccn_rt_log(HCCN_LOG_WARN, "process %d: a data line to process "
                        "%d failed", p->rank, q);
    }
}

void hccn_rt_proc_move(rt_proc_t *p, const rt_move_t *m, hccn_dtype_t dt,
                       hccn_redop_t op)
{
    dreq_t req = {.kind = DREQ_MOVE, .mkind = (uint64_t)m->kind,
                  .dst = ptr_off(p, m->dst), .a = ptr_off(p, m->a),
                  .b = ptr_off(p, m->b), .n = m->n, .dt = (uint64_t)dt,
                  .op = (uint64_t)op, .aux = (uint64_t)(int64_t)m->aux};
    int q = off_owner(p, req.dst);
    atomic_fetch_add_explicit(&p->remote_moves, 1, memory_order_relaxed);
    drep_t rep;
    if (q == p->rank) {
        rep = hccn_rt_pdata_exec(p, &req, NULL, NULL);
    } else {
        /* Small operands of this process go with the request: the owner
         * of the destination need not come back for them. */
        size_t bytes = m->n * hccn_rt_move_esize(m, dt), len = 0;
        const void *out = NULL;
        if (bytes <= RT_DATA_CHUNK && req.a != RT_DATA_NONE &&
            off_owner(p, req.a) == p->rank && req.b == RT_DATA_NONE) {
            req.inl = INL_A;
            out = m->a;
            len = bytes;
        } else if (bytes <= RT_DATA_CHUNK && req.b != RT_DATA_NONE &&
                   off_owner(p, req.b) == p->rank &&
                   (req.a == RT_DATA_NONE || off_owner(p, req.a) == q)) {
            req.inl = INL_B;
            out = m->b;
            len = bytes;
        }
        rep = request(p, q, &req, out, len, NULL, 0);
    }
    if (rep.status != HCCN_OK)
        data_lost(p, (int)rep.lost);
}

hccn_status_t hccn_rt_proc_xfer(rt_proc_t *p, void *dev, void *buf, size_t n,
                                int put)
{
    uint64_t off = ptr_off(p, dev);
    int q = off_owner(p, off);
    dreq_t req = {.kind = put ? DREQ_WRITE : DREQ_READ, .dst = off, .n = n};
    drep_t rep = request(p, q, &req, put ? buf : NULL, put ? n : 0,
                         put ? NULL : buf, put ? 0 : n);
    if (rep.status == HCCN_OK)
        return HCCN_OK;
    data_lost(p, (int)rep.lost);
    return hccn_rt_error(HCCN_ERR_REMOTE, "process %d: cannot %s %zu bytes "
                         "of process %d's device memory: its data line "
                         "failed (it exited or was killed)", p->rank,
                         put ? "write" : "read", n, q);
}
