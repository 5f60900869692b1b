/*
 * The data plane between processes (proc.h), shared by its two halves:
 * proc_data.c, which runs moves and asks other processes for bytes, and
 * proc_dserve.c, the server that answers them. Internal to those files.
 */
#ifndef HCCN_RUNTIME_PROC_DATA_H
#define HCCN_RUNTIME_PROC_DATA_H

#include "runtime/proc.h"

#define RT_DATA_CHUNK ((size_t)1 << 20)
#define RT_DATA_NONE UINT64_MAX
enum { DREQ_READ = 1, DREQ_WRITE, DREQ_MOVE };

typedef struct {
    uint64_t kind;                /* DREQ_* */
    uint64_t mkind, dst, a, b;    /* a move: RT_MOVE_*, layout offsets */
    uint64_t n, dt, op, aux;      /* READ/WRITE: dst and n bytes */
    uint64_t inl;                 /* a move: INL_A, INL_B: that operand's
                                     bytes follow the request */
} dreq_t;
enum { INL_A = 1, INL_B = 2 };

typedef struct {
    int64_t status;
    int64_t lost;                 /* the process a line failed to, or -1 */
} drep_t;

struct rt_data_conn {
    int fd;
    pthread_t thr;
    rt_proc_t *p;
    struct rt_data_conn *next;
};

struct rt_data_pool {
    int *fd;
    int n, cap;
};

/* 1 if [off, off + n) of the layout is this process's own memory. */
int hccn_rt_pdata_own(const rt_proc_t *p, uint64_t off, uint64_t n);
/* Runs the move req here, where its destination lives; ia, ib: operands
 * that came with the request, or NULL. Fetches the others. */
drep_t hccn_rt_pdata_exec(rt_proc_t *p, const dreq_t *req, const char *ia,
                          const char *ib);

#endif /* HCCN_RUNTIME_PROC_DATA_H */
