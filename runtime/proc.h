/*
 * One simulated cluster across several processes, on one host or several
 * (docs/processes.md).
 *
 * The process of process rank 0 is the host: it creates the cluster as in
 * one process and runs every rank's executor thread (the control plane and
 * the timing engine). The others are clients: they run their ranks'
 * functions on their own threads, and every ctx/comm/future call of such a
 * rank is forwarded over a line (a Unix-domain or TCP socket, proc_net.c)
 * to the host, where that rank's
 * thread makes the real call. The same engine computes every time, so
 * times are those of one process.
 *
 * Data is partitioned: every process reserves the same layout of all
 * arenas (and of a scratch window per rank) but backs only its own ranks'
 * slices; the rest stays PROT_NONE. A move whose operands are not all
 * local runs in the process owning its destination, which fetches the
 * other operands from their owners' data servers (proc_data.c), in the
 * same order and with the same kernels, so the bits are those of one
 * process too.
 *
 * Wire: every message is a frame of 64-bit words and length-prefixed byte
 * strings (proc_wire.c); pointers into arenas travel as offsets into the
 * layout.
 */
#ifndef HCCN_RUNTIME_PROC_H
#define HCCN_RUNTIME_PROC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hccn/hccn.h"
#include "device_sim/topo.h"
#include "hccn/hccn_sim.h"
#include "runtime/rt.h"

typedef struct rt_proc rt_proc_t;

#define RT_PROC_DIR_MAX 200

/* A socket address (proc_net.c); len 0: none. */
typedef struct {
    struct sockaddr_storage sa;
    socklen_t len;
} rt_net_addr_t;

/* Where this process stands: from the options, else the environment. */
typedef struct {
    int rank, world;              /* world <= 1: one process */
    char dir[RT_PROC_DIR_MAX];    /* rendezvous directory, or tcp:HOST:PORT */
    int made_dir;                 /* agreed through MPI: removed at the end */
    int tcp;                      /* the lines are TCP (proc_net.c) */
    rt_net_addr_t host;           /* TCP: the host process's address */
    rt_net_addr_t self;           /* TCP: HCCN_ADDR, or none */
    int listen_fd;                /* TCP under MPI: process 0's listening
                                     socket, made to learn its port; -1 */
} rt_proc_cfg_t;

/* ------------------------------------------------------------------ wire */

typedef struct {
    uint8_t *buf;
    size_t len, cap, pos;
    int bad;                      /* a read ran past the end */
} rt_wire_t;

void hccn_rt_wire_reset(rt_wire_t *m);
void hccn_rt_wire_free(rt_wire_t *m);
void hccn_rt_wire_u64(rt_wire_t *m, uint64_t v);
void hccn_rt_wire_f64(rt_wire_t *m, double v);
/* n bytes, length first; p may be NULL for n == 0. */
void hccn_rt_wire_bytes(rt_wire_t *m, const void *p, size_t n);
/* A string; NULL travels as such. */
void hccn_rt_wire_str(rt_wire_t *m, const char *s);
uint64_t hccn_rt_wire_get_u64(rt_wire_t *m);
double hccn_rt_wire_get_f64(rt_wire_t *m);
/* Points into m (valid until m changes); *n its length. */
const void *hccn_rt_wire_get_bytes(rt_wire_t *m, size_t *n);
const char *hccn_rt_wire_get_str(rt_wire_t *m);
/* Appends tail's bytes to m (a reply's fields after its status). */
void hccn_rt_wire_append(rt_wire_t *m, const rt_wire_t *tail);
/* Reads (out 0) or writes (out 1) all n bytes on fd: 0, or -1 when the
 * line failed or the peer left. */
int hccn_rt_wire_io(int fd, void *buf, size_t n, int out);
/* Sends m as one frame / receives one frame into m: 0, or -1 when the
 * peer is gone (EOF, reset) or the frame is malformed. */
int hccn_rt_wire_send(int fd, const rt_wire_t *m);
int hccn_rt_wire_recv(int fd, rt_wire_t *m);

/* ---------------------------------------------------------- the set-up */

/* Reads the process layout from opts (fields proc_rank, proc_world,
 * rendezvous) or the environment (HCCN_PROC_RANK, HCCN_PROC_WORLD,
 * HCCN_RENDEZVOUS; Open MPI's OMPI_COMM_WORLD_RANK/SIZE). An error names
 * what is wrong. */
hccn_status_t hccn_rt_proc_config(const hccn_cluster_opts_t *opts,
                                  rt_proc_cfg_t *cfg);

/* Agrees on a rendezvous directory through MPI when cfg has none and the
 * process runs under Open MPI (proc_mpi.c); an error when that is needed
 * and the library was built without MPI, or MPI's thread level is short. */
hccn_status_t hccn_rt_proc_mpi_dir(rt_proc_cfg_t *cfg);

/* ------------------------------------- sockets (proc_net.c) */

/* Reads cfg->dir when it is "tcp:HOST:PORT" (what: where it came from,
 * for errors) and HCCN_ADDR: sets cfg->tcp, host, self. An error names the
 * variable and its value. */
hccn_status_t hccn_rt_net_config(rt_proc_cfg_t *cfg, const char *what);
/* Resolves HOST (numeric or a name) with port into *a: 0, or -1. */
int hccn_rt_net_resolve(const char *host, int port, rt_net_addr_t *a);
/* Formats a as "HOST:PORT" (numeric) into buf. */
void hccn_rt_net_name(const rt_net_addr_t *a, char *buf, size_t len);
/* A listening stream socket on a (port 0: an ephemeral one, then *a gets
 * it): the fd, or -1 (errno). */
int hccn_rt_net_listen_on(rt_net_addr_t *a);
/* The host's control socket / this process's data server socket: the fd,
 * or -1 (errno; ENAMETOOLONG: the directory's path is too long). TCP: the
 * data server listens on HCCN_ADDR or on ctrl_fd's local address (the
 * host: its control address), an ephemeral port, written to
 * p->data_addr[p->rank]. */
int hccn_rt_net_listen_ctrl(rt_proc_t *p);
int hccn_rt_net_listen_data(rt_proc_t *p, int ctrl_fd);
/* One attempt to connect to the host's control socket / to process q's
 * data server: the fd, or -1. TCP lines get TCP_NODELAY. */
int hccn_rt_net_connect_ctrl(const rt_proc_t *p);
int hccn_rt_net_connect_data(const rt_proc_t *p, int q);
/* accept4 on a listening socket, with TCP_NODELAY on a TCP line. */
int hccn_rt_net_accept(int lfd);
/* Process 0 under MPI over TCP: listens on an ephemeral port of HCCN_ADDR,
 * else of 127.0.0.1 (one host) or of the first address of an interface
 * that is up and not loopback (several hosts), and writes "tcp:ADDR:PORT"
 * into buf: the fd, or -1 and buf "". */
int hccn_rt_proc_mpi_listen(char *buf, size_t len, int hosts);
/* An address on the wire (NULL: none) / read back (len 0: none). */
void hccn_rt_net_put_addr(rt_wire_t *m, const rt_net_addr_t *a);
void hccn_rt_net_get_addr(rt_wire_t *m, rt_net_addr_t *a);
/* Removes the socket files of the control / data socket (Unix only). */
void hccn_rt_net_unlink_ctrl(const rt_proc_t *p);
void hccn_rt_net_unlink_data(const rt_proc_t *p);

/* First step of a multi-process cluster on topo: every process reserves
 * the arena layout, backs its own ranks' slices and starts its data
 * server; the host listens, a client connects. *region receives the
 * layout (region_len bytes: every arena, in rank order, each rounded to
 * whole pages; the scratch windows follow). */
hccn_status_t hccn_rt_proc_open(const rt_proc_cfg_t *cfg,
                                const hccn_sim_topo_t *topo, double timeout_s,
                                rt_proc_t **out, char **region);

/* Second step, once the cluster is built: the host accepts every client's
 * ranks; a client connects one socket per rank it runs. */
hccn_status_t hccn_rt_proc_join(hccn_cluster_t *cl);

/* Closes the connections and unmaps the arenas (the last step of
 * hccn_cluster_destroy). NULL is a no-op. */
void hccn_rt_proc_close(rt_proc_t *p);

/* 1 if rank runs its function in this process. */
int hccn_rt_proc_local(const rt_proc_t *p, int rank);
/* 1 in a client process. */
int hccn_rt_proc_is_client(const rt_proc_t *p);
/* This process's rank and the process count (0 and 1 without p). */
int hccn_rt_proc_rank(const rt_proc_t *p);
int hccn_rt_proc_world(const rt_proc_t *p);

/* ------------------------------------------------------------ the runs */

/* hccn_cluster_run in a client: runs fn for the process's ranks and
 * returns what the host's run returned (rank_status: every rank's). */
hccn_status_t hccn_rt_proc_client_run(hccn_cluster_t *cl, hccn_rank_fn fn,
                                      void *arg, hccn_status_t *rank_status);

/* On the host, the function of a client's rank: makes the calls the
 * client forwards on this thread, until the client's function returns;
 * returns its status, with its message as the last error. */
hccn_status_t hccn_rt_proc_serve(hccn_ctx_t *ctx);

/* Host: watches the clients during a run (begin) and, after it, sends
 * each the run's result (end). A lost client ends every pending and later
 * operation with HCCN_ERR_REMOTE naming its ranks. */
void hccn_rt_proc_run_begin(hccn_cluster_t *cl);
void hccn_rt_proc_run_end(hccn_cluster_t *cl, hccn_status_t rc,
                          const hccn_status_t *st);

/* The message of a lost process, or NULL (read by waits, diag.c). */
const char *hccn_rt_proc_lost(const hccn_cluster_t *cl);

/* ------------------------------------------------ forwarding (clients) */

/* 1 on a client's rank thread: every call is forwarded to the host. */
int hccn_rt_proc_fwd(void);

enum {
    RT_FWD_END = 1, RT_FWD_MALLOC, RT_FWD_FREE, RT_FWD_MEM_INFO,
    RT_FWD_TIME, RT_FWD_LAST_DURATION, RT_FWD_COMPUTE, RT_FWD_FLOPS,
    RT_FWD_FLOPS_DTYPE, RT_FWD_WORLD, RT_FWD_COMM_RANK, RT_FWD_COMM_SIZE,
    RT_FWD_SPLIT, RT_FWD_CREATE, RT_FWD_DESTROY, RT_FWD_ABORT,
    RT_FWD_SET_ALGO, RT_FWD_SET_COMPRESSION, RT_FWD_P2P, RT_FWD_WAIT,
    RT_FWD_TEST, RT_FWD_TIMES, RT_FWD_FUT_FREE, RT_FWD_GROUP_START,
    RT_FWD_GROUP_END, RT_FWD_COLL, RT_FWD_VCOLL, RT_FWD_LAST_CHOICE,
    RT_FWD_MARK, RT_FWD_SUMMARY_MARK, RT_FWD_SUMMARY, RT_FWD_COUNT
};

/* The three shapes of a collective call (runtime/coll.c). */
enum { RT_FORM_BLOCK, RT_FORM_POST, RT_FORM_OPTS };

/* A collective call as it travels (coll.c, coll_v.c fill it). */
typedef struct {
    int form;                     /* RT_FORM_* */
    int coll;                     /* hccn_coll_t */
    const void *sendbuf;
    void *recvbuf;
    size_t count;                 /* count, recvcount or sendcount */
    hccn_dtype_t dtype;
    hccn_redop_t op;
    int root;
    const hccn_coll_opts_t *opts; /* RT_FORM_OPTS */
    /* v-forms: arrays of comm size entries, or NULL */
    const size_t *v[4];           /* sendcounts, sdispls, recvcounts,
                                     rdispls (displs for allgatherv) */
} rt_fwd_coll_t;

/* Client stubs: the same arguments and results as the public calls. */
hccn_status_t hccn_rt_fwd_coll(hccn_comm_t *comm, const rt_fwd_coll_t *c,
                               hccn_future_t **fut);
hccn_status_t hccn_rt_fwd_p2p(hccn_comm_t *comm, int is_send, int blocking,
                              const void *buf, size_t count,
                              hccn_dtype_t dtype, int peer,
                              hccn_future_t **fut);
hccn_status_t hccn_rt_fwd_ctx(int fn, hccn_ctx_t *ctx, double x, int i);
hccn_status_t hccn_rt_fwd_malloc(hccn_ctx_t *ctx, size_t bytes, void **ptr);
hccn_status_t hccn_rt_fwd_free(hccn_ctx_t *ctx, void *ptr);
hccn_status_t hccn_rt_fwd_mem_info(hccn_ctx_t *ctx, hccn_mem_info_t *info);
double hccn_rt_fwd_clock(int fn, hccn_ctx_t *ctx);
hccn_comm_t *hccn_rt_fwd_world(hccn_ctx_t *ctx);
int hccn_rt_fwd_comm_int(int fn, const hccn_comm_t *comm);
hccn_status_t hccn_rt_fwd_comm_new(int fn, hccn_comm_t *comm, int a, int b,
                                   const int *ranks, hccn_comm_t **out);
hccn_status_t hccn_rt_fwd_comm_set(int fn, hccn_comm_t *comm, int i,
                                   const char *s);
hccn_status_t hccn_rt_fwd_future(int fn, const hccn_future_t *fut, int *done,
                                 double *start, double *end);
hccn_status_t hccn_rt_fwd_last_choice(hccn_comm_t *comm, hccn_choice_t *out);
hccn_status_t hccn_rt_fwd_summary(hccn_ctx_t *ctx, const hccn_comm_t *comm,
                                  int kind, hccn_comm_summary_t *out);

/* ------------------------------------- shared by the proc_*.c files */

struct rt_proc {
    int rank, world;              /* this process; the process count */
    int nranks;
    char dir[RT_PROC_DIR_MAX];    /* or tcp:HOST:PORT */
    int made_dir;                 /* remove dir at the end (host) */
    int tcp;                      /* TCP lines (proc_net.c) */
    rt_net_addr_t host, self;     /* as in rt_proc_cfg_t */
    rt_net_addr_t *data_addr;     /* TCP: per process, its data server's
                                     address (the host hands them out) */
    int gen;                      /* the process's n-th such cluster */
    int *first;                   /* per process: its first rank;
                                     first[world] = nranks */
    char *region;                 /* every arena, then every scratch
                                     window; backed for own ranks only */
    size_t region_len;            /* the arenas' part */
    size_t *arena_off;            /* per rank + 1: where its arena starts
                                     (its window: region_len further) */
    hccn_sim_arena_t *scratch;    /* per rank: its scratch window */
    /* the data plane between processes (proc_data.c) */
    int data_fd;                  /* listens for other processes' lines */
    pthread_t data_thr;
    int data_on;
    int data_wake[2];
    pthread_mutex_t data_lock;    /* the two lists below */
    struct rt_data_conn *conns;   /* lines served, each by a thread */
    struct rt_data_pool *pool;    /* per process: idle lines to it */
    _Atomic uint64_t sync;        /* orders bytes across sockets for
                                     race detectors (proc_data.c) */
    _Atomic uint64_t fetched, served, remote_moves;   /* served: bytes
                                     the data server sent or received */
    _Atomic int data_lost;        /* 1 + a process a data line lost */
    int fail_pipe[2];             /* tells the watcher of data_lost */
    int listen_fd;                /* host: until every client joined */
    int *ctrl;                    /* host: per process (-1 for itself);
                                     client: ctrl[0], its line to the host */
    int *rank_fd;                 /* per rank: the line of a rank that runs
                                     in a client (host: to it; client:
                                     from it), else -1 */
    double timeout_s;
    /* host, during a run: the watcher of the clients' lines */
    pthread_t watcher;
    int watching;
    int wake[2];                  /* a pipe that stops the watcher */
    _Atomic int lost;             /* a client was lost */
    char lost_msg[1024];
    hccn_cluster_t *cl;
};

/* A client's rank thread: its line and buffers (proc_run.c sets it). */
typedef struct {
    rt_proc_t *p;
    hccn_cluster_t *cl;
    int rank;
    int fd;
    int dead;                     /* the host is gone */
    rt_wire_t req, rep;
} rt_fwd_self_t;

/* The calling thread's, or NULL off a client's rank thread. */
rt_fwd_self_t *hccn_rt_fwd_self(void);

/* Names of the forwarded calls, by RT_FWD_* ("hccn_malloc"). */
const char *hccn_rt_fwd_name(int fn);

/* Pointers on the wire: NULL, an offset into the arenas, or a raw value
 * (a host pointer, which no arena holds). */
void hccn_rt_wire_ptr(rt_wire_t *m, const rt_proc_t *p, const void *ptr);
void *hccn_rt_wire_get_ptr(rt_wire_t *m, const rt_proc_t *p);

/* Bytes of rank r's arena in the shared mapping (a whole number of
 * pages); the arenas follow each other in rank order. */
size_t hccn_rt_proc_arena_span(const hccn_sim_topo_t *topo, int r);

/* The process running rank. */
int hccn_rt_proc_owner(const rt_proc_t *p, int rank);

/* ------------------- the data plane (proc_data.c, proc_dserve.c) */

/* Starts / stops this process's data server (DIR/hccn.G.d.Q.sock, or a
 * TCP port: hccn_rt_net_listen_data, given a client's control line),
 * which answers other processes' reads, writes and moves on its ranks'
 * bytes. */
hccn_status_t hccn_rt_proc_data_open(rt_proc_t *p, int ctrl_fd);
void hccn_rt_proc_data_close(rt_proc_t *p);
/* 1 if ptr (NULL too) is memory this process may touch. */
int hccn_rt_proc_ptr_local(const rt_proc_t *p, const void *ptr);
/* 1 if every operand of m is. */
int hccn_rt_proc_move_local(const rt_proc_t *p, const rt_move_t *m);
/* Runs m where its destination lives, fetching remote operands; waits
 * for it. A failed line marks its process lost (the run then ends with
 * HCCN_ERR_REMOTE naming its ranks). */
void hccn_rt_proc_move(rt_proc_t *p, const rt_move_t *m, hccn_dtype_t dt,
                       hccn_redop_t op);
/* n bytes between device memory dev of another process and host memory
 * buf: put (buf -> dev) or get (dev -> buf). */
hccn_status_t hccn_rt_proc_xfer(rt_proc_t *p, void *dev, void *buf, size_t n,
                                int put);
/* Release before a message that hands bytes on; acquire after one. */
void hccn_rt_proc_sync_release(rt_proc_t *p);
void hccn_rt_proc_sync_acquire(rt_proc_t *p);

#endif /* HCCN_RUNTIME_PROC_H */
