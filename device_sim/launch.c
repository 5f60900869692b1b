/*
 * SPMD launch of NPU threads, host description, and doorbells.
 */
#include <errno.h>
#include <hwloc.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "device_sim/alloc.h"
#include "device_sim/launch.h"

/* The start line: threads wait at it until every thread exists (go 1) or
 * one could not be made (go -1: return without running fn). */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int go;
} launch_gate_t;

typedef struct {
    int rank;
    hccn_sim_thread_fn fn;
    void *arg;
    hwloc_topology_t topo;
    int ncores;
    launch_gate_t *gate;
} launch_arg_t;

static int gate_wait(launch_gate_t *g)
{
    pthread_mutex_lock(&g->lock);
    while (g->go == 0)
        pthread_cond_wait(&g->cond, &g->lock);
    int go = g->go;
    pthread_mutex_unlock(&g->lock);
    return go;
}

static void gate_open(launch_gate_t *g, int go)
{
    pthread_mutex_lock(&g->lock);
    g->go = go;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void *thread_main(void *p)
{
    launch_arg_t *la = p;
    if (gate_wait(la->gate) < 0)
        return NULL;
    if (la->topo != NULL && la->ncores > 0) {
        hwloc_obj_t core = hwloc_get_obj_by_type(la->topo, HWLOC_OBJ_CORE,
                                                 (unsigned)(la->rank % la->ncores));
        if (core != NULL)
            hwloc_set_cpubind(la->topo, core->cpuset, HWLOC_CPUBIND_THREAD);
    }
    la->fn(la->rank, la->arg);
    return NULL;
}

hccn_status_t hccn_sim_launch(int n, hccn_sim_thread_fn fn, void *arg,
                              int bind, char *why, size_t len)
{
    launch_gate_t gate = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                          0};
    hccn_status_t rc = HCCN_OK;
    pthread_t *th = hccn_sim_calloc((size_t)n, sizeof(*th));
    launch_arg_t *la = hccn_sim_calloc((size_t)n, sizeof(*la));
    hwloc_topology_t topo = NULL;
    int ncores = 0;
    if (th == NULL || la == NULL) {
        rc = HCCN_ERR_NOMEM;
        if (why != NULL && len > 0)
            snprintf(why, len, "%s", hccn_sim_fail_msg());
        goto out_free;
    }
    if (bind && hwloc_topology_init(&topo) == 0) {
        if (hwloc_topology_load(topo) == 0) {
            ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        } else {
            hwloc_topology_destroy(topo);
            topo = NULL;
        }
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1u << 20);
    int started = 0;
    for (; started < n; started++) {
        la[started] = (launch_arg_t){started, fn, arg, topo, ncores, &gate};
        int refused = hccn_sim_reserve(HCCN_RESOURCE_THREAD, 0, "an NPU") !=
                      HCCN_OK;
        int e = refused ? EAGAIN
                        : pthread_create(&th[started], &attr, thread_main,
                                         &la[started]);
        if (e != 0) {
            rc = HCCN_ERR_NOMEM;
            if (why != NULL && len > 0)
                snprintf(why, len, "thread %d of %d: %s%s", started, n,
                         refused ? hccn_sim_fail_msg()
                                 : "out of memory: no host thread: ",
                         refused ? "" : strerror(e));
            break;
        }
    }
    pthread_attr_destroy(&attr);
    gate_open(&gate, rc == HCCN_OK ? 1 : -1);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    if (topo != NULL)
        hwloc_topology_destroy(topo);
out_free:
    hccn_sim_free(th);
    hccn_sim_free(la);
    pthread_mutex_destroy(&gate.lock);
    pthread_cond_destroy(&gate.cond);
    return rc;
}

void hccn_sim_host_describe(hccn_sim_host_t *host)
{
    hwloc_topology_t topo;
    host->cores = host->pus = host->numa_nodes = 0;
    if (hwloc_topology_init(&topo) != 0)
        return;
    if (hwloc_topology_load(topo) == 0) {
        host->cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
        host->pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        host->numa_nodes = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    }
    hwloc_topology_destroy(topo);
}

uint32_t hccn_sim_bell_read(hccn_sim_bell_t *b)
{
    return atomic_load_explicit(&b->seq, memory_order_acquire);
}

void hccn_sim_bell_ring(hccn_sim_bell_t *b)
{
    atomic_fetch_add_explicit(&b->seq, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&b->sleepers, memory_order_seq_cst) > 0)
        syscall(SYS_futex, &b->seq, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL,
                NULL, 0);
}

void hccn_sim_bell_wait(hccn_sim_bell_t *b, uint32_t seen, int timeout_ms)
{
    struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    atomic_fetch_add_explicit(&b->sleepers, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&b->seq, memory_order_seq_cst) == seen)
        syscall(SYS_futex, &b->seq, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    atomic_fetch_sub_explicit(&b->sleepers, 1, memory_order_seq_cst);
}
