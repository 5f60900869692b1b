/*
 * Sub-communicators: hccn_comm_split and hccn_comm_create, destruction, and
 * per-communicator options.
 *
 * A split is a collective on the parent: a barrier (in simulated time and
 * with the fingerprint "comm_split", so a rank that splits while another
 * calls a collective gets HCCN_ERR_MISMATCH), then a rendezvous where each
 * rank leaves its (color, key); the last to arrive builds the new
 * communicators. Communicators made during a run are freed when the run
 * ends, if their ranks have not destroyed them before.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hierarchy/select.h"
#include "runtime/proc.h"
#include "runtime/rt.h"

/* Resolves the caller's handle *comm and checks its communicator. */
static hccn_status_t check_handle(const char *name, hccn_comm_t **comm)
{
    hccn_status_t rc = hccn_rt_comm_resolve(name, comm);
    if (rc != HCCN_OK)
        return rc;
    return hccn_rt_comm_check(name, *comm);
}

/* The barrier that opens a split, fingerprinted with tag. */
static hccn_status_t split_barrier(hccn_comm_t *comm, uint64_t tag)
{
    hccn_coll_args_t a = {.coll = HCCN_COLL_BARRIER, .nranks = comm->sh->size,
                          .esize = 1, .view = &comm->sh->view};
    rt_coll_call_t call = {.dtype = HCCN_UINT8, .op = HCCN_SUM,
                           .fp_kind = RT_FP_SPLIT, .fp_extra = tag,
                           .blocking = 1};
    rt_op_t *op;
    hccn_status_t rc = hccn_rt_coll_post(comm, &a, hccn_hier_algo_find("mesh"),
                                         &call, &op);
    if (rc != HCCN_OK)
        return rc;
    rc = hccn_rt_op_wait(op);
    hccn_rt_op_free(op);
    return rc;
}

static void sort_members(int *m, int n, const int *key)
{
    for (int i = 1; i < n; i++) {
        int v = m[i], j = i;
        while (j > 0 && (key[m[j - 1]] > key[v] ||
                         (key[m[j - 1]] == key[v] && m[j - 1] > v))) {
            m[j] = m[j - 1];
            j--;
        }
        m[j] = v;
    }
}

/* Builds every new communicator of a split (lock held, all arrived). */
static hccn_status_t split_build(rt_comm_t *c, rt_split_t *rec)
{
    hccn_cluster_t *cl = c->cl;
    int *members = malloc((size_t)c->size * sizeof(int));
    int *world = malloc((size_t)c->size * sizeof(int));
    hccn_status_t rc = HCCN_OK;
    if (members == NULL || world == NULL) {
        rc = HCCN_ERR_NOMEM;
        goto out;
    }
    for (int r = 0; r < c->size; r++)
        rec->result[r] = NULL;
    for (int r = 0; r < c->size; r++) {
        if (rec->color[r] < 0 || rec->result[r] != NULL)
            continue;
        int m = 0;
        for (int q = 0; q < c->size; q++)
            if (rec->color[q] == rec->color[r])
                members[m++] = q;
        sort_members(members, m, rec->key);
        for (int i = 0; i < m; i++)
            world[i] = c->world[members[i]];
        rt_comm_t *nc = hccn_rt_comm_new(cl, m, world);
        if (nc == NULL) {
            rc = HCCN_ERR_NOMEM;
            break;
        }
        nc->live_handles = m;
        pthread_mutex_lock(&cl->comms_lock);
        nc->next_sub = cl->subcomms;
        cl->subcomms = nc;
        pthread_mutex_unlock(&cl->comms_lock);
        for (int i = 0; i < m; i++)
            rec->result[members[i]] = nc;
    }
out:
    free(members);
    free(world);
    return rc;
}

typedef struct {
    rt_comm_t *c;
    rt_split_t *rec;
    uint64_t seq;
} split_wait_t;

static int locked_read(rt_comm_t *c, const int *flag)
{
    pthread_mutex_lock(&c->lock);
    int v = *flag;
    pthread_mutex_unlock(&c->lock);
    return v;
}

static int split_free(void *arg)
{
    split_wait_t *w = arg;
    pthread_mutex_lock(&w->c->lock);
    int ok = !w->rec->in_use || w->rec->seq == w->seq;
    pthread_mutex_unlock(&w->c->lock);
    return ok;
}

static int split_built(void *arg)
{
    split_wait_t *w = arg;
    return locked_read(w->c, &w->rec->built);
}

static hccn_status_t do_split(const char *name, hccn_comm_t *comm, int color,
                              int key, uint64_t tag, hccn_comm_t **out)
{
    hccn_status_t rc;
    rt_comm_t *c = comm->sh;
    int r = comm->rank;
    if ((rc = split_barrier(comm, tag)) != HCCN_OK)
        return rc;
    uint64_t seq = comm->split_seq++;
    rt_split_t *rec = &c->splits[seq % RT_SPLITS];

    /* Wait for the record to be free of the split RT_SPLITS before. */
    split_wait_t w = {c, rec, seq};
    if ((rc = hccn_rt_block(comm->ctx, c, split_free, NULL, &w, name)) != HCCN_OK)
        return rc;
    pthread_mutex_lock(&c->lock);
    rec->in_use = 1;
    rec->seq = seq;
    rec->color[r] = color;
    rec->key[r] = key;
    int last = ++rec->arrived == c->size;
    if (last) {
        rec->status = split_build(c, rec);
        rec->built = 1;
    }
    pthread_mutex_unlock(&c->lock);
    hccn_rt_progressed(comm->ctx);
    for (int q = 0; q < c->size; q++)
        hccn_sim_bell_ring(&c->cl->ctxs[c->world[q]].bell);
    if ((rc = hccn_rt_block(comm->ctx, c, split_built, NULL, &w, name)) != HCCN_OK)
        return rc;

    pthread_mutex_lock(&c->lock);
    rc = rec->status;
    rt_comm_t *nc = rec->result[r];
    *out = NULL;
    if (rc == HCCN_OK && nc != NULL)
        for (int i = 0; i < nc->size; i++)
            if (nc->world[i] == c->world[r])
                *out = nc->handles[i]->token;
    if (++rec->picked == c->size) {
        rec->in_use = 0;
        rec->arrived = rec->picked = rec->built = 0;
    }
    pthread_mutex_unlock(&c->lock);
    for (int q = 0; q < c->size; q++)
        hccn_sim_bell_ring(&c->cl->ctxs[c->world[q]].bell);
    if (rc != HCCN_OK)
        return hccn_rt_error(rc, "%s: rank %d: out of memory", name,
                             comm->ctx->rank);
    return HCCN_OK;
}

hccn_status_t hccn_comm_split(hccn_comm_t *comm, int color, int key,
                              hccn_comm_t **out)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_new(RT_FWD_SPLIT, comm, color, key, NULL, out);
    hccn_status_t rc = check_handle("hccn_comm_split", &comm);
    if (rc != HCCN_OK)
        return rc;
    if (out == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_comm_split: rank %d: out is NULL",
                             comm->ctx->rank);
    if (color < 0 && color != HCCN_SPLIT_NOCOLOR)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_comm_split: rank %d: color %d must be >= 0 "
                             "or HCCN_SPLIT_NOCOLOR",
                             comm->ctx->rank, color);
    return do_split("hccn_comm_split", comm, color, key, 0, out);
}

hccn_status_t hccn_comm_create(hccn_comm_t *comm, const int *ranks, int n,
                               hccn_comm_t **out)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_new(RT_FWD_CREATE, comm, n, 0, ranks, out);
    hccn_status_t rc = check_handle("hccn_comm_create", &comm);
    if (rc != HCCN_OK)
        return rc;
    int me = comm->ctx->rank, size = comm->sh->size;
    if (out == NULL || ranks == NULL)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_comm_create: rank %d: %s is NULL", me,
                             out == NULL ? "out" : "ranks");
    if (n <= 0 || n > size)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_comm_create: rank %d: n = %d must be in "
                             "[1, %d]",
                             me, n, size);
    int pos = -1;
    uint64_t tag = 1469598103934665603ULL;
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size)
            return hccn_rt_error(HCCN_ERR_INVALID,
                                 "hccn_comm_create: rank %d: ranks[%d] = %d "
                                 "is out of range [0, %d)",
                                 me, i, ranks[i], size);
        for (int j = 0; j < i; j++)
            if (ranks[j] == ranks[i])
                return hccn_rt_error(HCCN_ERR_INVALID,
                                     "hccn_comm_create: rank %d: rank %d is "
                                     "listed twice",
                                     me, ranks[i]);
        if (ranks[i] == comm->rank)
            pos = i;
        tag = (tag ^ (uint64_t)ranks[i]) * 1099511628211ULL;
    }
    /* The list's hash goes into the fingerprint: different lists on
     * different ranks are a mismatch, not two half-made communicators. */
    return do_split("hccn_comm_create", comm,
                    pos >= 0 ? 0 : HCCN_SPLIT_NOCOLOR, pos, tag | 1, out);
}

hccn_status_t hccn_comm_destroy(hccn_comm_t *comm)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_set(RT_FWD_DESTROY, comm, 0, NULL);
    if (comm == NULL)
        return HCCN_OK;
    void *token = comm;
    hccn_status_t rc = hccn_rt_comm_resolve("hccn_comm_destroy", &comm);
    if (rc != HCCN_OK)
        return rc;
    rt_comm_t *c = comm->sh;
    int me = comm->ctx->rank;
    if (c == comm->ctx->cl->world)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_comm_destroy: rank %d: the world "
                             "communicator belongs to the cluster",
                             me);
    if (comm->destroyed)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_comm_destroy: rank %d: already destroyed",
                             me);
    if (comm->pending > 0)
        return hccn_rt_error(HCCN_ERR_INPROGRESS,
                             "hccn_comm_destroy: rank %d: %d operation(s) of "
                             "this communicator not yet waited for",
                             me, comm->pending);
    /* The memory stays until the run ends (hccn_rt_free_subcomms): other
     * members may still use the communicator. The token ends now, so a
     * later use of it says it was destroyed. */
    comm->destroyed = 1;
    hccn_rt_handle_free(token, RT_GONE_DESTROYED);
    pthread_mutex_lock(&c->lock);
    c->live_handles--;
    pthread_mutex_unlock(&c->lock);
    return HCCN_OK;
}

void hccn_rt_free_subcomms(hccn_cluster_t *cl)
{
    pthread_mutex_lock(&cl->comms_lock);
    rt_comm_t *c = cl->subcomms;
    cl->subcomms = NULL;
    pthread_mutex_unlock(&cl->comms_lock);
    while (c != NULL) {
        rt_comm_t *next = c->next_sub;
        hccn_rt_comm_free(c);
        c = next;
    }
}

hccn_status_t hccn_comm_set_algo(hccn_comm_t *comm, const char *spec)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_set(RT_FWD_SET_ALGO, comm, 0, spec);
    hccn_status_t rc = check_handle("hccn_comm_set_algo", &comm);
    if (rc != HCCN_OK)
        return rc;
    char *copy = NULL;
    if (spec != NULL && (copy = strdup(spec)) == NULL)
        return hccn_rt_error(HCCN_ERR_NOMEM, "hccn_comm_set_algo: out of memory");
    free(comm->algo_spec);
    comm->algo_spec = copy;
    return HCCN_OK;
}

hccn_status_t hccn_comm_set_compression(hccn_comm_t *comm, int compress)
{
    if (hccn_rt_proc_fwd())
        return hccn_rt_fwd_comm_set(RT_FWD_SET_COMPRESSION, comm, compress,
                                    NULL);
    hccn_status_t rc = check_handle("hccn_comm_set_compression", &comm);
    if (rc != HCCN_OK)
        return rc;
    if (compress != HCCN_COMPRESS_NONE && compress != HCCN_COMPRESS_FP16 &&
        compress != HCCN_COMPRESS_BF16)
        return hccn_rt_error(HCCN_ERR_INVALID,
                             "hccn_comm_set_compression: rank %d: invalid "
                             "compression %d",
                             comm->ctx->rank, compress);
    comm->compress = compress;
    return HCCN_OK;
}
