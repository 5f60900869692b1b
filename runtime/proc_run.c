/*
 * Runs of a multi-process cluster (proc.h).
 *
 * A client runs fn on a thread per rank of its own, each with its line to
 * the host (its calls are forwarded, proc_client.c); when fn returns, the
 * rank's status and message go to the host, whose thread for that rank
 * returns them as its own. The host's run ends as in one process; it then
 * sends every client the run's status, every rank's status and the
 * message, which the client's hccn_cluster_run returns.
 *
 * While a run lasts, a watcher thread on the host polls the clients'
 * control lines, on which a client sends nothing: any event is a process
 * that exited or was killed. Its ranks are then lost: every pending and
 * later operation of the others fails with HCCN_ERR_REMOTE, naming the
 * process, its ranks and what each was doing.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device_sim/alloc.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

static _Thread_local rt_fwd_self_t *self;

rt_fwd_self_t *hccn_rt_fwd_self(void)
{
    return self;
}

/* ------------------------------------------------------ who runs what */

int hccn_rt_proc_owner(const rt_proc_t *p, int rank)
{
    int q = 0;
    while (q + 1 < p->world && p->first[q + 1] <= rank)
        q++;
    return q;
}

int hccn_rt_proc_local(const rt_proc_t *p, int rank)
{
    return p == NULL || (rank >= p->first[p->rank] &&
                         rank < p->first[p->rank + 1]);
}

int hccn_rt_proc_is_client(const rt_proc_t *p)
{
    return p != NULL && p->rank > 0;
}

int hccn_rt_proc_rank(const rt_proc_t *p)
{
    return p != NULL ? p->rank : 0;
}

int hccn_rt_proc_world(const rt_proc_t *p)
{
    return p != NULL ? p->world : 1;
}

int hccn_cluster_proc_rank(const hccn_cluster_t *cl)
{
    if (hccn_rt_cluster_check("hccn_cluster_proc_rank", cl) != HCCN_OK)
        return -1;
    return hccn_rt_proc_rank(cl->proc);
}

int hccn_cluster_proc_world(const hccn_cluster_t *cl)
{
    if (hccn_rt_cluster_check("hccn_cluster_proc_world", cl) != HCCN_OK)
        return 0;
    return hccn_rt_proc_world(cl->proc);
}

int hccn_cluster_rank_local(const hccn_cluster_t *cl, int rank)
{
    if (hccn_rt_cluster_check("hccn_cluster_rank_local", cl) != HCCN_OK)
        return 0;
    return rank >= 0 && rank < cl->nranks && hccn_rt_proc_local(cl->proc, rank);
}

/* ---------------------------------------------------------------- client */

typedef struct {
    hccn_cluster_t *cl;
    hccn_rank_fn fn;
    void *arg;
    rt_fwd_self_t *selves;        /* per local rank */
} client_job_t;

static void client_rank(int i, void *arg)
{
    client_job_t *job = arg;
    rt_fwd_self_t *s = &job->selves[i];
    self = s;
    hccn_rt_error_clear();
    hccn_status_t st = job->fn(&job->cl->ctxs[s->rank], job->arg);
    /* The host ends the rank's thread with this status and message. */
    hccn_rt_wire_reset(&s->req);
    hccn_rt_wire_u64(&s->req, RT_FWD_END);
    hccn_rt_wire_u64(&s->req, (uint64_t)(int64_t)st);
    hccn_rt_wire_str(&s->req, st != HCCN_OK ? hccn_last_error() : "");
    if (!s->dead)
        hccn_rt_wire_send(s->fd, &s->req);
    hccn_rt_wire_free(&s->req);
    hccn_rt_wire_free(&s->rep);
    self = NULL;
}

/* The host's result of the run: status, every rank's, the message. */
static hccn_status_t client_result(hccn_cluster_t *cl, hccn_status_t *st)
{
    rt_proc_t *p = cl->proc;
    rt_wire_t m = {0};
    if (hccn_rt_wire_recv(p->ctrl[0], &m) != 0) {
        hccn_rt_wire_free(&m);
        for (int r = 0; r < cl->nranks; r++)
            st[r] = HCCN_ERR_REMOTE;
        return hccn_rt_error(HCCN_ERR_REMOTE, "hccn_cluster_run: process %d "
                             "of %d: the host process (process 0) was lost "
                             "(its connection closed)", p->rank, p->world);
    }
    hccn_status_t rc = (hccn_status_t)(int64_t)hccn_rt_wire_get_u64(&m);
    for (int r = 0; r < cl->nranks; r++)
        st[r] = (hccn_status_t)(int64_t)hccn_rt_wire_get_u64(&m);
    const char *msg = hccn_rt_wire_get_str(&m);
    hccn_rt_error_clear();
    if (rc != HCCN_OK)
        hccn_rt_error(rc, "%s", msg != NULL ? msg : "");
    hccn_rt_wire_free(&m);
    return rc;
}

hccn_status_t hccn_rt_proc_client_run(hccn_cluster_t *cl, hccn_rank_fn fn,
                                      void *arg, hccn_status_t *rank_status)
{
    rt_proc_t *p = cl->proc;
    int first = p->first[p->rank], n = p->first[p->rank + 1] - first;
    int idle = 0;
    if (!atomic_compare_exchange_strong(&cl->running, &idle, 1))
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_cluster_run: the cluster is already running");
    client_job_t job = {cl, fn, arg, hccn_sim_calloc((size_t)n, sizeof(rt_fwd_self_t))};
    hccn_status_t *st = hccn_sim_calloc((size_t)cl->nranks, sizeof(*st));
    hccn_status_t rc = HCCN_ERR_NOMEM;
    if (job.selves == NULL || st == NULL) {
        rc = hccn_sim_fail_context("hccn_cluster_run");
        goto out;
    }
    for (int i = 0; i < n; i++)
        job.selves[i] = (rt_fwd_self_t){.p = p, .cl = cl, .rank = first + i,
                                        .fd = p->rank_fd[first + i]};
    char why[160] = "";
    rc = hccn_sim_launch(n, client_rank, &job, cl->bind_threads, why,
                         sizeof(why));
    if (rc != HCCN_OK) {
        /* The host's threads for these ranks wait for calls that will not
         * come: closing the lines ends them (as a lost process). */
        for (int i = 0; i < n; i++)
            shutdown(p->rank_fd[first + i], SHUT_RDWR);
        hccn_rt_error(rc, "hccn_cluster_run: process %d: cannot start the "
                      "threads of its %d ranks (%s)", p->rank, n, why);
        goto out;
    }
    rc = client_result(cl, st);
    if (rank_status != NULL)
        memcpy(rank_status, st, (size_t)cl->nranks * sizeof(*st));
out:
    hccn_sim_free(job.selves);
    hccn_sim_free(st);
    atomic_store(&cl->running, 0);
    return rc;
}

/* ------------------------------------------------------------------ host */

const char *hccn_rt_proc_lost(const hccn_cluster_t *cl)
{
    rt_proc_t *p = cl->proc;
    return p != NULL && atomic_load(&p->lost) ? p->lost_msg : NULL;
}

/* What a lost rank was doing: the operation its thread waits in, else
 * that it was between calls. */
static void lost_state(hccn_ctx_t *x, char *buf, size_t len)
{
    pthread_mutex_lock(&x->cur_lock);
    if (atomic_load(&x->finished)) {
        snprintf(buf, len, "had returned from its function");
    } else if (x->cur != NULL) {
        size_t k = (size_t)snprintf(buf, len, "in ");
        hccn_rt_op_describe(x->cur, buf + k, len - k);
    } else {
        snprintf(buf, len, "between calls");
    }
    pthread_mutex_unlock(&x->cur_lock);
}

/* Writes the lost message of process q: its ranks and what each was in,
 * ranks alike in a row named once ("ranks 8-15 in allreduce #1 ..."). */
static void lost_message(rt_proc_t *p, int q, const char *why)
{
    hccn_cluster_t *cl = p->cl;
    size_t len = sizeof(p->lost_msg), k;
    int a = p->first[q], b = p->first[q + 1] - 1;
    k = (size_t)snprintf(p->lost_msg, len, "process %d (ranks %d-%d) was "
                         "lost (%s: it exited or was killed):", q, a, b, why);
    char cur[160], next[160];
    lost_state(&cl->ctxs[a], cur, sizeof(cur));
    for (int r = a, from = a; r <= b && k + 1 < len; r++) {
        if (r < b)
            lost_state(&cl->ctxs[r + 1], next, sizeof(next));
        if (r < b && strcmp(next, cur) == 0)
            continue;
        k += (size_t)(from == r
                          ? snprintf(p->lost_msg + k, len - k, " rank %d %s%s",
                                     r, cur, r < b ? ";" : "")
                          : snprintf(p->lost_msg + k, len - k,
                                     " ranks %d-%d %s%s", from, r, cur,
                                     r < b ? ";" : ""));
        from = r + 1;
        memcpy(cur, next, sizeof(cur));
    }
}

/* Breaks every communicator with the lost message and wakes every rank. */
static void lose(rt_proc_t *p, int q, const char *why)
{
    hccn_cluster_t *cl = p->cl;
    if (atomic_load(&p->lost))
        return;   /* the first loss is the cause; the rest follow from it */
    lost_message(p, q, why);
    atomic_store(&p->lost, 1);
    /* A communicator's lock is taken before comms_lock elsewhere (split):
     * the list is copied first. Sub-communicators live until the run
     * ends, after this thread is joined. */
    hccn_rt_comm_break(cl->world, HCCN_ERR_REMOTE, p->lost_msg);
    pthread_mutex_lock(&cl->comms_lock);
    size_t n = 0;
    for (rt_comm_t *c = cl->subcomms; c != NULL; c = c->next_sub)
        n++;
    rt_comm_t **subs = hccn_sim_malloc((n ? n : 1) * sizeof(*subs));
    n = 0;
    for (rt_comm_t *c = cl->subcomms; subs != NULL && c != NULL;
         c = c->next_sub)
        subs[n++] = c;
    pthread_mutex_unlock(&cl->comms_lock);
    for (size_t i = 0; i < n; i++)
        hccn_rt_comm_break(subs[i], HCCN_ERR_REMOTE, p->lost_msg);
    hccn_sim_free(subs);
    atomic_fetch_add(&cl->epoch, 1);
    for (int r = 0; r < cl->nranks; r++)
        hccn_sim_bell_ring(&cl->ctxs[r].bell);
}

/* 1 if q's control line closes within a second: a data line that
 * failed is, in all likelihood, a process that died, whose every line
 * the kernel closes at once. */
static int ctrl_closed(const rt_proc_t *p, int q)
{
    struct pollfd pf = {.fd = q > 0 ? p->ctrl[q] : -1, .events = POLLIN};
    return q > 0 && poll(&pf, 1, 1000) == 1;
}

static void *watch(void *arg)
{
    rt_proc_t *p = arg;
    struct pollfd *pf = hccn_sim_calloc((size_t)p->world + 1, sizeof(*pf));
    if (pf == NULL)
        return NULL;
    pf[0] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
    for (int q = 1; q < p->world; q++)
        pf[q] = (struct pollfd){.fd = p->ctrl[q], .events = POLLIN};
    /* pf[world]: a data line failed (proc_data.c): its process is lost
     * too, even before its control line says so. */
    pf[p->world] = (struct pollfd){.fd = p->fail_pipe[0], .events = POLLIN};
    while (poll(pf, (nfds_t)p->world + 1, -1) >= 0 && pf[0].revents == 0) {
        for (int q = 1; q < p->world; q++) {
            if (pf[q].revents == 0)
                continue;
            pf[q].fd = -1;    /* seen once */
            lose(p, q, "its connection closed");
        }
        int d = atomic_load(&p->data_lost);
        if (pf[p->world].revents != 0) {
            pf[p->world].fd = -1;
            if (d > 0)
                lose(p, d - 1, ctrl_closed(p, d - 1)
                                   ? "its connection closed"
                                   : "a data line to it failed");
        }
    }
    hccn_sim_free(pf);
    return NULL;
}

void hccn_rt_proc_run_begin(hccn_cluster_t *cl)
{
    rt_proc_t *p = cl->proc;
    atomic_store(&p->lost, 0);
    p->lost_msg[0] = '\0';
    /* A data line lost before this run (none is used between runs) is
     * forgotten with its byte in the pipe. */
    char c;
    if (atomic_exchange(&p->data_lost, 0) != 0 &&
        read(p->fail_pipe[0], &c, 1) != 1)
        hccn_rt_log(HCCN_LOG_WARN, "process 0: a data line's failure was "
                    "not read");
    p->watching = pipe(p->wake) == 0 &&
                  pthread_create(&p->watcher, NULL, watch, p) == 0;
}

void hccn_rt_proc_run_end(hccn_cluster_t *cl, hccn_status_t rc,
                          const hccn_status_t *st)
{
    rt_proc_t *p = cl->proc;
    if (p->watching) {
        char c = 0;
        if (write(p->wake[1], &c, 1) == 1)
            pthread_join(p->watcher, NULL);
        p->watching = 0;
    }
    if (p->wake[0] >= 0) {
        close(p->wake[0]);
        close(p->wake[1]);
        p->wake[0] = p->wake[1] = -1;
    }
    rt_wire_t m = {0};
    hccn_rt_wire_u64(&m, (uint64_t)(int64_t)rc);
    for (int r = 0; r < cl->nranks; r++)
        hccn_rt_wire_u64(&m, (uint64_t)(int64_t)st[r]);
    hccn_rt_wire_str(&m, rc != HCCN_OK ? hccn_last_error() : "");
    for (int q = 1; q < p->world; q++)
        hccn_rt_wire_send(p->ctrl[q], &m);   /* a lost one: nothing to do */
    hccn_rt_wire_free(&m);
}
