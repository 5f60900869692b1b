/*
 * The simulation API's traces (include/hccn/hccn_sim.h) over the engine's
 * (device_sim/trace.h), and HCCN_TRACE=FILE: one trace for the whole
 * process, attached to each cluster when it is created (if no other
 * cluster has it) and written to FILE whenever its cluster is destroyed,
 * so the file holds every traced run of the program so far. A trace the
 * program attaches itself takes the place of the process's one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device_sim/trace.h"
#include "hccn/hccn_sim.h"
#include "device_sim/fail.h"
#include "runtime/rt.h"

static pthread_mutex_t env_lock = PTHREAD_MUTEX_INITIALIZER;
static hccn_sim_trace_t *env_trace;   /* created at the first cluster */
static hccn_cluster_t *env_owner;     /* the cluster it follows, or NULL */

hccn_status_t hccn_trace_create(hccn_trace_t **out)
{
    if (out == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_trace_create: out is "
                             "NULL");
    *out = hccn_sim_trace_create();
    return *out != NULL ? HCCN_OK
                        : hccn_sim_fail_context("hccn_trace_create");
}

void hccn_trace_destroy(hccn_trace_t *tr)
{
    hccn_sim_trace_destroy(tr);
}

/* Writes tr to path; 0, or -1 with the cause recorded (HCCN_ERR_IO naming
 * the path and the system's reason). */
static int write_file(hccn_sim_trace_t *tr, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        hccn_rt_error(HCCN_ERR_IO, "cannot write %s: %s", path,
                      strerror(errno));
        return -1;
    }
    int rc = hccn_sim_trace_write(tr, f);
    errno = 0;
    if (fclose(f) == 0 && rc == 0)
        return 0;
    hccn_rt_error(HCCN_ERR_IO, "cannot write %s: %s", path,
                  errno != 0 ? strerror(errno) : "write error");
    return -1;
}

hccn_status_t hccn_trace_write(hccn_trace_t *tr, const char *path)
{
    if (tr == NULL || path == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_trace_write: %s is NULL",
                             tr == NULL ? "trace" : "path");
    return write_file(tr, path) == 0
               ? HCCN_OK
               : hccn_sim_fail_context("hccn_trace_write");
}

hccn_status_t hccn_trace_attach(hccn_cluster_t *cl, hccn_trace_t *tr)
{
    hccn_status_t rc0 = hccn_rt_cluster_check("hccn_trace_attach", cl);
    if (rc0 != HCCN_OK)
        return rc0;
    if (atomic_load(&cl->running))
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_trace_attach: the "
                             "cluster is running");
    hccn_rt_env_trace_detach(cl);
    if (hccn_sim_engine_set_trace(cl->eng, tr) != 0)
        return hccn_rt_error(HCCN_ERR_INVALID, "hccn_trace_attach: the trace "
                             "follows another cluster (attach NULL to it "
                             "first), or no memory");
    return HCCN_OK;
}

void hccn_rt_env_trace_attach(hccn_cluster_t *cl)
{
    const char *path = getenv("HCCN_TRACE");
    if (path == NULL || *path == '\0')
        return;
    pthread_mutex_lock(&env_lock);
    if (env_trace == NULL)
        env_trace = hccn_sim_trace_create();
    if (env_trace != NULL && env_owner == NULL &&
        hccn_sim_engine_trace(cl->eng) == NULL &&
        hccn_sim_engine_set_trace(cl->eng, env_trace) == 0)
        env_owner = cl;
    else if (env_trace == NULL || env_owner != NULL)
        hccn_rt_log(HCCN_LOG_WARN, "HCCN_TRACE: %s: a cluster made while "
                    "another is traced is not traced", path);
    pthread_mutex_unlock(&env_lock);
}

void hccn_rt_env_trace_detach(hccn_cluster_t *cl)
{
    pthread_mutex_lock(&env_lock);
    if (env_owner == cl) {
        const char *path = getenv("HCCN_TRACE");
        hccn_sim_engine_set_trace(cl->eng, NULL);
        env_owner = NULL;
        if (path != NULL && *path != '\0' && write_file(env_trace, path) != 0)
            fprintf(stderr, "hccn: HCCN_TRACE: %s\n", hccn_sim_fail_msg());
    }
    pthread_mutex_unlock(&env_lock);
}
