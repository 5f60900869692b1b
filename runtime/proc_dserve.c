/*
 * The data server of a process of a multi-process cluster (proc.h,
 * proc_data.h): it listens on DIR/hccn.G.d.Q.sock and answers, each line
 * on its own thread, other processes' reads and writes of its ranks'
 * bytes and the moves whose destination it holds.
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

/* Sends n bytes of the arenas at src. The reader may go on as soon as the
 * bytes arrive, before send returns here: a race detector, which sees
 * the reads in send but not the socket's order, is shown them first, as
 * copies made before a release (a build without one sends in place). */
static int send_arena(rt_proc_t *p, int fd, const char *src, size_t n)
{
#ifdef __SANITIZE_THREAD__
    char *buf = hccn_sim_malloc(n < RT_DATA_CHUNK ? n : RT_DATA_CHUNK);
    int rc = buf != NULL || n == 0 ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i += RT_DATA_CHUNK) {
        size_t k = n - i < RT_DATA_CHUNK ? n - i : RT_DATA_CHUNK;
        memcpy(buf, src + i, k);
        hccn_rt_proc_sync_release(p);
        rc = hccn_rt_wire_io(fd, buf, k, 1);
    }
    hccn_sim_free(buf);
    return rc;
#else
    (void)p;
    return hccn_rt_wire_io(fd, (void *)src, n, 1);
#endif
}

/* A move with one operand's bytes after the request (at most a piece). */
static int serve_inline(rt_proc_t *p, int fd, const dreq_t *req)
{
    rt_move_t m = {.kind = (int)req->mkind, .n = req->n};
    size_t es = hccn_rt_move_esize(&m, (hccn_dtype_t)req->dt);
    size_t bytes = req->n * es;
    char *buf = bytes <= RT_DATA_CHUNK ? hccn_sim_malloc(bytes ? bytes : 1)
                                       : NULL;
    if (buf == NULL || hccn_rt_wire_io(fd, buf, bytes, 0) != 0) {
        hccn_sim_free(buf);
        return -1;   /* the line is out of step: ended */
    }
    drep_t rep = {HCCN_ERR_INVALID, -1};
    atomic_fetch_add_explicit(&p->served, bytes, memory_order_relaxed);
    if (hccn_rt_pdata_own(p, req->dst, 1))
        rep = hccn_rt_pdata_exec(p, req, req->inl == INL_A ? buf : NULL,
                        req->inl == INL_B ? buf : NULL);
    hccn_sim_free(buf);
    hccn_rt_proc_sync_release(p);
    return hccn_rt_wire_io(fd, &rep, sizeof(rep), 1);
}

/* Answers one request on fd; -1 ends the line. */
static int serve_one(rt_proc_t *p, int fd, const dreq_t *req)
{
    drep_t rep = {HCCN_ERR_INVALID, -1};
    hccn_rt_proc_sync_acquire(p);
    if (req->kind == DREQ_READ || req->kind == DREQ_WRITE) {
        if (!hccn_rt_pdata_own(p, req->dst, req->n))
            return req->kind == DREQ_WRITE
                       ? -1
                       : hccn_rt_wire_io(fd, &rep, sizeof(rep), 1);
        rep.status = HCCN_OK;
        if (req->kind == DREQ_WRITE &&
            hccn_rt_wire_io(fd, p->region + req->dst, req->n, 0) != 0)
            return -1;
        hccn_rt_proc_sync_release(p);
        if (hccn_rt_wire_io(fd, &rep, sizeof(rep), 1) != 0 ||
            (req->kind == DREQ_READ &&
             send_arena(p, fd, p->region + req->dst, req->n) != 0))
            return -1;
        atomic_fetch_add_explicit(&p->served, req->n, memory_order_relaxed);
        return 0;
    }
    if (req->kind == DREQ_MOVE && req->inl != 0)
        return serve_inline(p, fd, req);
    if (req->kind == DREQ_MOVE && hccn_rt_pdata_own(p, req->dst, 1))
        rep = hccn_rt_pdata_exec(p, req, NULL, NULL);
    hccn_rt_proc_sync_release(p);
    return hccn_rt_wire_io(fd, &rep, sizeof(rep), 1);
}

static void *serve_line(void *arg)
{
    struct rt_data_conn *c = arg;
    dreq_t req;
    while (hccn_rt_wire_io(c->fd, &req, sizeof(req), 0) == 0 &&
           serve_one(c->p, c->fd, &req) == 0)
        ;
    return NULL;
}

static void *accept_lines(void *arg)
{
    rt_proc_t *p = arg;
    struct pollfd pf[2] = {{.fd = p->data_fd, .events = POLLIN},
                           {.fd = p->data_wake[0], .events = POLLIN}};
    while (poll(pf, 2, -1) >= 0 && pf[1].revents == 0) {
        if (pf[0].revents == 0)
            continue;
        int fd = hccn_rt_net_accept(p->data_fd);
        struct rt_data_conn *c = fd >= 0 ? hccn_sim_calloc(1, sizeof(*c)) : NULL;
        if (c == NULL) {
            if (fd >= 0)
                close(fd);
            continue;
        }
        *c = (struct rt_data_conn){fd, 0, p, NULL};
        pthread_mutex_lock(&p->data_lock);
        if (pthread_create(&c->thr, NULL, serve_line, c) == 0) {
            c->next = p->conns;
            p->conns = c;
            c = NULL;
        }
        pthread_mutex_unlock(&p->data_lock);
        if (c != NULL) {
            close(fd);
            hccn_sim_free(c);
        }
    }
    return NULL;
}

hccn_status_t hccn_rt_proc_data_open(rt_proc_t *p, int ctrl_fd)
{
    p->pool = hccn_sim_calloc((size_t)p->world, sizeof(*p->pool));
    if (p->pool == NULL)
        return hccn_sim_fail_context("hccn_cluster_create");
    p->data_fd = hccn_rt_net_listen_data(p, ctrl_fd);
    if (p->data_fd < 0 && errno == ENAMETOOLONG)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: the "
                             "rendezvous directory's path is too long for "
                             "a socket: %s", p->dir);
    if (p->data_fd < 0 || pipe(p->data_wake) != 0 ||
        pipe(p->fail_pipe) != 0 ||
        pthread_create(&p->data_thr, NULL, accept_lines, p) != 0)
        return hccn_rt_error(HCCN_ERR_IO, "hccn_cluster_create: process %d "
                             "of %d: cannot start its data server (rendezvous "
                             "%s): %s", p->rank, p->world, p->dir,
                             strerror(errno));
    p->data_on = 1;
    return HCCN_OK;
}

static void close_pair(int fd[2])
{
    for (int i = 0; i < 2; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    fd[0] = fd[1] = -1;
}

void hccn_rt_proc_data_close(rt_proc_t *p)
{
    char c = 0;
    unsigned long long served = atomic_load(&p->served);
    unsigned long long fetched = atomic_load(&p->fetched);
    if (p->data_on)
        hccn_rt_log(HCCN_LOG_INFO, "process %d: data plane: %llu bytes "
                    "carried by its data server (read from it or sent to it "
                    "by other processes), %llu fetched from them, %llu moves "
                    "across processes", p->rank, served, fetched,
                    (unsigned long long)atomic_load(&p->remote_moves));
    if (p->data_on && write(p->data_wake[1], &c, 1) == 1)
        pthread_join(p->data_thr, NULL);
    p->data_on = 0;
    /* Every served line is shut, so its thread ends. */
    for (struct rt_data_conn *l = p->conns; l != NULL; l = l->next)
        shutdown(l->fd, SHUT_RDWR);
    while (p->conns != NULL) {
        struct rt_data_conn *l = p->conns;
        p->conns = l->next;
        pthread_join(l->thr, NULL);
        close(l->fd);
        hccn_sim_free(l);
    }
    for (int q = 0; p->pool != NULL && q < p->world; q++) {
        for (int i = 0; i < p->pool[q].n; i++)
            close(p->pool[q].fd[i]);
        hccn_sim_free(p->pool[q].fd);
    }
    hccn_sim_free(p->pool);
    p->pool = NULL;
    if (p->data_fd >= 0)
        hccn_rt_net_unlink_data(p);
    if (p->data_fd >= 0)
        close(p->data_fd);
    p->data_fd = -1;
    close_pair(p->data_wake);
    close_pair(p->fail_pipe);
}
