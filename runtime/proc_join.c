/*
 * Setting up a multi-process cluster (proc.h): who is who, the shared
 * arena mapping, the rendezvous socket and the handshake.
 *
 * Every process reserves the layout of every arena and scratch window and
 * backs its own ranks' slices (the others stay PROT_NONE: a stray access
 * faults), and starts its data server (proc_data.c). The host (process 0)
 * listens on DIR/hccn.N.sock (its N-th such cluster) or a TCP address
 * (proc_net.c; hellos carry the data servers' addresses). A client connects a
 * control line, says who it is and what it loaded (process rank and count,
 * NPUs, arena bytes), and gets the host's word; once its cluster is built
 * it connects one line per rank it runs. hccn_cluster_create returns, in every process, when
 * every client has joined, or fails after the timeout naming who did not
 * (or at once when a process dies while the others join).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "device_sim/alloc.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

#define PROC_MAGIC 0x6863636e70726f63ull   /* "hccnproc" */
#define PAGE 4096u
enum { HELLO_CTRL = 1, HELLO_RANK = 2 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

size_t hccn_rt_proc_arena_span(const hccn_sim_topo_t *topo, int r)
{
    return (topo->npus[r].arena_bytes + PAGE - 1) & ~(size_t)(PAGE - 1);
}

/* Where each rank's arena starts in the layout (nranks + 1 entries). */
static size_t *arena_offsets(const hccn_sim_topo_t *topo)
{
    size_t *off = hccn_sim_malloc(((size_t)topo->nnpus + 1) * sizeof(*off));
    if (off == NULL)
        return NULL;
    off[0] = 0;
    for (int i = 0; i < topo->nnpus; i++)
        off[i + 1] = off[i] + hccn_rt_proc_arena_span(topo, i);
    return off;
}

/* The default split: whole nodes in contiguous blocks when there are at
 * least as many nodes as processes, else contiguous blocks of ranks (one
 * rank each when the counts are equal). */
static hccn_status_t split_ranks(rt_proc_t *p, const hccn_sim_topo_t *topo)
{
    int n = topo->nnpus, w = p->world, nodes = topo->nnodes;
    if (w > n)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "%s: %d processes for %d NPUs: each process "
                             "needs at least one rank", topo->source, w, n);
    p->first = hccn_sim_calloc((size_t)w + 1, sizeof(int));
    if (p->first == NULL)
        return hccn_sim_fail_context("hccn_cluster_create");
    for (int q = 0; q <= w; q++) {
        if (w <= nodes) {
            int node = (int)((long long)q * nodes / w), r = 0;
            while (r < n && topo->npus[r].node < node)
                r++;
            p->first[q] = r;
        } else {
            p->first[q] = (int)((long long)q * n / w);
        }
    }
    return HCCN_OK;
}

/* The n-th multi-process cluster a process makes listens on (host) or
 * joins (client) DIR/hccn.n.sock: a program that makes several, as every
 * process makes them in the same order, never joins an earlier one. */
static _Atomic int generations;

static hccn_status_t sys_error(const rt_proc_t *p, const char *what)
{
    return hccn_rt_error(HCCN_ERR_IO, "hccn_cluster_create: process %d of "
                         "%d: %s (rendezvous %s): %s", p->rank, p->world,
                         what, p->dir, strerror(errno));
}

/* The layout: arenas, then scratch windows, all PROT_NONE but this
 * process's ranks' arenas and windows, and the scratch allocators. */
static hccn_status_t reserve(rt_proc_t *p)
{
    size_t len = 2 * p->region_len;
    void *m = mmap(NULL, len ? len : PAGE, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return sys_error(p, "cannot reserve the arenas' address range");
    p->region = m;
    int a = p->first[p->rank], b = p->first[p->rank + 1];
    size_t off = p->arena_off[a], n = p->arena_off[b] - off;
    if (n > 0 && (mprotect(p->region + off, n, PROT_READ | PROT_WRITE) != 0 ||
                  mprotect(p->region + p->region_len + off, n,
                           PROT_READ | PROT_WRITE) != 0))
        return sys_error(p, "cannot map its ranks' arenas");
    p->scratch = hccn_sim_calloc((size_t)p->nranks, sizeof(*p->scratch));
    if (p->scratch == NULL)
        return hccn_sim_fail_context("hccn_cluster_create");
    for (int r = 0; r < p->nranks; r++)
        if (hccn_sim_arena_init_at(&p->scratch[r],
                                   p->region + p->region_len + p->arena_off[r],
                                   p->arena_off[r + 1] - p->arena_off[r]) !=
            HCCN_OK)
            return hccn_sim_fail_context("hccn_cluster_create");
    return HCCN_OK;
}

/* Host: the listening socket (under MPI over TCP, already made). */
static hccn_status_t host_open(rt_proc_t *p)
{
    if (p->listen_fd >= 0)
        return HCCN_OK;
    if (!p->tcp && mkdir(p->dir, 0700) != 0 && errno != EEXIST)
        return sys_error(p, "cannot make the rendezvous directory");
    p->listen_fd = hccn_rt_net_listen_ctrl(p);
    if (p->listen_fd < 0 && errno == ENAMETOOLONG)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: the "
                             "rendezvous directory's path is too long for "
                             "a socket (about 90 bytes at most): %s", p->dir);
    if (p->listen_fd < 0)
        return sys_error(p, "cannot listen on its control socket");
    return HCCN_OK;
}

/* Client: a line to the host, retried until the host listens. */
static int connect_host(const rt_proc_t *p)
{
    double end = now_s() + p->timeout_s;
    do {
        int fd = hccn_rt_net_connect_ctrl(p);
        if (fd >= 0)
            return fd;
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    } while (now_s() < end);
    return -1;
}

static int wait_readable(int fd, double timeout_s)
{
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int ms = timeout_s > 2e6 ? 2000000000 : (int)(timeout_s * 1000.0) + 1;
    return poll(&pf, 1, ms) == 1 ? 0 : -1;
}

static void hello(rt_wire_t *m, const rt_proc_t *p, int kind, int rank)
{
    hccn_rt_wire_reset(m);
    hccn_rt_wire_u64(m, PROC_MAGIC);
    hccn_rt_wire_u64(m, (uint64_t)kind);
    hccn_rt_wire_u64(m, (uint64_t)p->rank);
    hccn_rt_wire_u64(m, (uint64_t)p->world);
    hccn_rt_wire_u64(m, (uint64_t)p->nranks);
    hccn_rt_wire_u64(m, (uint64_t)p->region_len);
    hccn_rt_wire_u64(m, (uint64_t)rank);
    /* Over TCP, a control line's hello carries its data server's address */
    hccn_rt_net_put_addr(m, p->tcp && kind == HELLO_CTRL
                                ? &p->data_addr[p->rank] : NULL);
}

/* Client: the control line's handshake. */
static hccn_status_t client_open(rt_proc_t *p)
{
    rt_wire_t m = {0};
    int fd = connect_host(p);
    if (fd < 0) {
        hccn_status_t rc = sys_error(p, "no host process to connect to");
        return rc;
    }
    p->ctrl[0] = fd;
    hccn_status_t rc = hccn_rt_proc_data_open(p, fd);
    if (rc != HCCN_OK)
        return rc;
    hello(&m, p, HELLO_CTRL, -1);
    if (hccn_rt_wire_send(fd, &m) != 0 || wait_readable(fd, p->timeout_s) ||
        hccn_rt_wire_recv(fd, &m) != 0) {
        hccn_rt_wire_free(&m);
        return hccn_rt_error(HCCN_ERR_IO, "hccn_cluster_create: process %d "
                             "of %d: the host process (rendezvous %s) did "
                             "not answer within %.0f s", p->rank, p->world,
                             p->dir, p->timeout_s);
    }
    rc = (hccn_status_t)(int64_t)hccn_rt_wire_get_u64(&m);
    const char *msg = hccn_rt_wire_get_str(&m);
    if (rc != HCCN_OK)
        rc = hccn_rt_error(rc, "%s", msg != NULL ? msg : "");
    hccn_rt_wire_free(&m);
    return rc;
}

hccn_status_t hccn_rt_proc_open(const rt_proc_cfg_t *cfg,
                                const hccn_sim_topo_t *topo, double timeout_s,
                                rt_proc_t **out, char **region)
{
    *out = NULL;
    rt_proc_t *p = hccn_sim_calloc(1, sizeof(*p));
    if (p == NULL)
        return hccn_sim_fail_context("hccn_cluster_create");
    p->rank = cfg->rank;
    p->world = cfg->world;
    p->nranks = topo->nnpus;
    p->made_dir = cfg->made_dir;
    p->gen = atomic_fetch_add(&generations, 1);
    p->timeout_s = timeout_s;
    p->listen_fd = p->wake[0] = p->wake[1] = -1;
    p->data_fd = p->data_wake[0] = p->data_wake[1] = -1;
    p->fail_pipe[0] = p->fail_pipe[1] = -1;
    pthread_mutex_init(&p->data_lock, NULL);
    snprintf(p->dir, sizeof(p->dir), "%s", cfg->dir);
    p->tcp = cfg->tcp;
    p->host = cfg->host;
    p->self = cfg->self;
    p->listen_fd = cfg->listen_fd;
    p->data_addr = hccn_sim_calloc((size_t)p->world, sizeof(*p->data_addr));
    p->arena_off = arena_offsets(topo);
    p->region_len = p->arena_off != NULL ? p->arena_off[topo->nnpus] : 0;
    p->ctrl = hccn_sim_malloc((size_t)p->world * sizeof(int));
    p->rank_fd = hccn_sim_malloc((size_t)p->nranks * sizeof(int));
    hccn_status_t rc = HCCN_ERR_NOMEM;
    if (p->ctrl == NULL || p->rank_fd == NULL || p->arena_off == NULL ||
        p->data_addr == NULL) {
        rc = hccn_sim_fail_context("hccn_cluster_create");
        goto fail;
    }
    for (int q = 0; q < p->world; q++)
        p->ctrl[q] = -1;
    for (int r = 0; r < p->nranks; r++)
        p->rank_fd[r] = -1;
    if ((rc = split_ranks(p, topo)) != HCCN_OK ||
        (rc = reserve(p)) != HCCN_OK)
        goto fail;
    /* The host listens first (its data server on its address); a client
     * connects first (its data server on its control line's address). */
    if (p->rank == 0 && (rc = host_open(p)) == HCCN_OK)
        rc = hccn_rt_proc_data_open(p, -1);
    else if (p->rank != 0)
        rc = client_open(p);
    if (rc != HCCN_OK)
        goto fail;
    *out = p;
    *region = p->region;
    return HCCN_OK;
fail:
    hccn_rt_proc_close(p);
    return rc;
}

/* Host: answers a client's control line. */
static hccn_status_t host_answer(rt_proc_t *p, int fd, rt_wire_t *m, int q,
                                 uint64_t world, uint64_t nranks,
                                 uint64_t len, const rt_net_addr_t *da)
{
    char msg[512] = "";
    if (world != (uint64_t)p->world || q <= 0 || q >= p->world)
        snprintf(msg, sizeof(msg), "hccn_cluster_create: a process says it "
                 "is process %d of %llu; the host runs %d processes", q,
                 (unsigned long long)world, p->world);
    else if (p->ctrl[q] >= 0)
        snprintf(msg, sizeof(msg), "hccn_cluster_create: two processes say "
                 "they are process %d", q);
    else if (nranks != (uint64_t)p->nranks || len != p->region_len)
        snprintf(msg, sizeof(msg), "hccn_cluster_create: process %d loaded "
                 "another topology than the host's (%llu NPUs and %llu "
                 "arena bytes; the host: %d and %zu)", q,
                 (unsigned long long)nranks, (unsigned long long)len,
                 p->nranks, p->region_len);
    else if (p->tcp && da->len == 0)
        snprintf(msg, sizeof(msg), "hccn_cluster_create: process %d sent "
                 "no data server address (is it on the rendezvous %s?)", q,
                 p->dir);
    hccn_status_t rc = msg[0] ? HCCN_ERR_INVALID : HCCN_OK;
    hccn_rt_wire_reset(m);
    hccn_rt_wire_u64(m, (uint64_t)(int64_t)rc);
    hccn_rt_wire_str(m, msg);
    if (hccn_rt_wire_send(fd, m) != 0)
        return hccn_rt_error(HCCN_ERR_IO, "hccn_cluster_create: process %d "
                             "went away while joining", q);
    if (rc != HCCN_OK)
        return hccn_rt_error(rc, "%s", msg);
    p->ctrl[q] = fd;
    p->data_addr[q] = *da;
    return HCCN_OK;
}

/* Host: one new line; *joined counts the lines expected that came. */
static hccn_status_t host_accept(rt_proc_t *p, rt_wire_t *m, int *joined)
{
    int fd = hccn_rt_net_accept(p->listen_fd);
    if (fd < 0)
        return HCCN_OK;
    if (wait_readable(fd, p->timeout_s) != 0 || hccn_rt_wire_recv(fd, m) != 0 ||
        hccn_rt_wire_get_u64(m) != PROC_MAGIC) {
        close(fd);   /* not one of ours: ignored */
        return HCCN_OK;
    }
    uint64_t kind = hccn_rt_wire_get_u64(m);
    int q = (int)hccn_rt_wire_get_u64(m);
    uint64_t world = hccn_rt_wire_get_u64(m), nranks = hccn_rt_wire_get_u64(m);
    uint64_t len = hccn_rt_wire_get_u64(m);
    int rank = (int)hccn_rt_wire_get_u64(m);
    rt_net_addr_t da;
    hccn_rt_net_get_addr(m, &da);
    if (kind == HELLO_CTRL) {
        hccn_status_t rc = host_answer(p, fd, m, q, world, nranks, len, &da);
        if (rc != HCCN_OK)
            close(fd);
        else
            (*joined)++;
        return rc;
    }
    if (rank < 0 || rank >= p->nranks || q <= 0 || q >= p->world ||
        hccn_rt_proc_owner(p, rank) != q || p->rank_fd[rank] >= 0) {
        close(fd);
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_cluster_create: "
                             "process %d asks to run rank %d, which is not "
                             "its own", q, rank);
    }
    p->rank_fd[rank] = fd;
    (*joined)++;
    return HCCN_OK;
}

/* The processes that have not joined, for a timeout's message. */
static void missing(const rt_proc_t *p, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int q = 1; q < p->world && k + 16 < len; q++) {
        int in = p->ctrl[q] >= 0;
        for (int r = p->first[q]; in && r < p->first[q + 1]; r++)
            in = p->rank_fd[r] >= 0;
        if (!in)
            k += (size_t)snprintf(buf + k, len - k, "%s%d", k ? ", " : "", q);
    }
}

/* Waits up to left seconds for a new line (0), or for a client that has
 * joined its control line to go away (1, *gone its process; it sends
 * nothing there); -1 on timeout. */
static int wait_join(const rt_proc_t *p, double left, int *gone)
{
    struct pollfd *pf = hccn_sim_calloc((size_t)p->world, sizeof(*pf));
    if (pf == NULL)
        return wait_readable(p->listen_fd, left);
    pf[0] = (struct pollfd){.fd = p->listen_fd, .events = POLLIN};
    for (int q = 1; q < p->world; q++)
        pf[q] = (struct pollfd){.fd = p->ctrl[q], .events = POLLIN};
    int ms = left > 2e6 ? 2000000000 : (int)(left * 1000.0) + 1;
    int k = poll(pf, (nfds_t)p->world, ms), rc = k > 0 ? 0 : -1;
    for (int q = 1; q < p->world && k > 0; q++)
        if (pf[q].revents != 0) {
            *gone = q;
            rc = 1;
            break;
        }
    hccn_sim_free(pf);
    return rc;
}

static hccn_status_t host_join(rt_proc_t *p)
{
    rt_wire_t m = {0};
    int want = (p->world - 1) + (p->nranks - p->first[1]), joined = 0;
    double end = now_s() + p->timeout_s;
    hccn_status_t rc = HCCN_OK;
    while (joined < want && rc == HCCN_OK) {
        double left = end - now_s();
        int gone = 0, w = left > 0 ? wait_join(p, left, &gone) : -1;
        if (w == 1) {
            rc = hccn_rt_error(HCCN_ERR_REMOTE, "hccn_cluster_create: "
                               "process %d of %d went away while joining "
                               "(it exited or was killed)", gone, p->world);
            break;
        }
        if (w != 0) {
            char who[256];
            missing(p, who, sizeof(who));
            rc = hccn_rt_error(HCCN_ERR_TIMEOUT, "hccn_cluster_create: "
                               "process(es) %s of %d did not join within "
                               "%.0f s (rendezvous %s)", who, p->world,
                               p->timeout_s, p->dir);
            break;
        }
        rc = host_accept(p, &m, &joined);
    }
    /* The listening socket closes first: a client's next cluster cannot
     * reach it (over TCP the next one may listen on the same port). */
    hccn_rt_net_unlink_ctrl(p);
    close(p->listen_fd);
    p->listen_fd = -1;
    /* Every client learns how the join went: its create returns when the
     * cluster is whole (so a control line that closes while others join
     * is a process that died), or fails with the host's message; with it
     * comes every process's data server address (TCP). */
    hccn_rt_wire_reset(&m);
    hccn_rt_wire_u64(&m, (uint64_t)(int64_t)rc);
    hccn_rt_wire_str(&m, rc != HCCN_OK ? hccn_last_error() : "");
    for (int q = 0; q < p->world; q++)
        hccn_rt_net_put_addr(&m, &p->data_addr[q]);
    for (int q = 1; q < p->world; q++)
        hccn_rt_wire_send(p->ctrl[q], &m);   /* -1 (not joined): nothing */
    hccn_rt_wire_free(&m);
    return rc;
}

static hccn_status_t client_join(rt_proc_t *p)
{
    rt_wire_t m = {0};
    hccn_status_t rc = HCCN_OK;
    for (int r = p->first[p->rank]; r < p->first[p->rank + 1]; r++) {
        int fd = connect_host(p);
        hello(&m, p, HELLO_RANK, r);
        if (fd < 0 || hccn_rt_wire_send(fd, &m) != 0) {
            if (fd >= 0)
                close(fd);
            rc = sys_error(p, "cannot connect a rank's line to the host");
            break;
        }
        p->rank_fd[r] = fd;
    }
    /* The host's word that every process joined (host_join). */
    if (rc == HCCN_OK) {
        if (wait_readable(p->ctrl[0], p->timeout_s) != 0 ||
            hccn_rt_wire_recv(p->ctrl[0], &m) != 0) {
            rc = hccn_rt_error(HCCN_ERR_TIMEOUT, "hccn_cluster_create: "
                               "process %d of %d: the host process did not "
                               "say within %.0f s that every process joined "
                               "(rendezvous %s)", p->rank, p->world,
                               p->timeout_s, p->dir);
        } else {
            rc = (hccn_status_t)(int64_t)hccn_rt_wire_get_u64(&m);
            const char *msg = hccn_rt_wire_get_str(&m);
            if (rc != HCCN_OK)
                hccn_rt_error(rc, "%s", msg != NULL ? msg : "");
            for (int q = 0; rc == HCCN_OK && q < p->world; q++)
                hccn_rt_net_get_addr(&m, &p->data_addr[q]);
        }
    }
    hccn_rt_wire_free(&m);
    return rc;
}

hccn_status_t hccn_rt_proc_join(hccn_cluster_t *cl)
{
    rt_proc_t *p = cl->proc;
    p->cl = cl;
    hccn_status_t rc = p->rank == 0 ? host_join(p) : client_join(p);
    if (rc == HCCN_OK)
        hccn_rt_log(HCCN_LOG_INFO, "process %d of %d joined over %s "
                    "(rendezvous %s)", p->rank, p->world,
                    p->tcp ? "TCP" : "Unix-domain sockets", p->dir);
    return rc;
}

void hccn_rt_proc_close(rt_proc_t *p)
{
    if (p == NULL)
        return;
    hccn_rt_proc_data_close(p);
    for (int q = 0; p->ctrl != NULL && q < p->world; q++)
        if (p->ctrl[q] >= 0)
            close(p->ctrl[q]);
    for (int r = 0; p->rank_fd != NULL && r < p->nranks; r++)
        if (p->rank_fd[r] >= 0)
            close(p->rank_fd[r]);
    if (p->listen_fd >= 0)
        close(p->listen_fd);
    for (int r = 0; p->scratch != NULL && r < p->nranks; r++)
        hccn_sim_arena_fini(&p->scratch[r]);
    if (p->region != NULL)
        munmap(p->region, p->region_len > 0 ? 2 * p->region_len : PAGE);
    pthread_mutex_destroy(&p->data_lock);
    if (p->made_dir)
        rmdir(p->dir);
    hccn_sim_free(p->ctrl);
    hccn_sim_free(p->rank_fd);
    hccn_sim_free(p->data_addr);
    hccn_sim_free(p->first);
    hccn_sim_free(p->arena_off);
    hccn_sim_free(p->scratch);
    hccn_sim_free(p);
}
