/*
 * Internal state of a trace, shared by trace.c (recording) and
 * trace_write.c (the Chrome trace writer). Not installed.
 */
#ifndef HCCN_DEVICE_SIM_TRACE_INTERNAL_H
#define HCCN_DEVICE_SIM_TRACE_INTERNAL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "device_sim/topo.h"
#include "device_sim/trace.h"

#define PID_DEVICES 1
#define PID_LINKS 2
#define TID_LANE HCCN_SIM_TRACE_LANE
#define LINK_NAME_MAX (2 * HCCN_SIM_NAME_MAX + 2)

typedef struct {
    int dev, depth, idx, parent, lane;
    uint64_t group;             /* the device's operation number */
    uint64_t rec;               /* record order, the last tie-break */
    double begin, end;          /* seconds on the trace's timeline */
    int64_t b_ps, e_ps;         /* the same in whole picoseconds */
    char *name, *args;
} slice_t;

typedef struct {
    char name[LINK_NAME_MAX];   /* "SRC->DST" by device names */
    int level;
    int nsegs;
} ltrack_t;

typedef struct {
    int track;
    double t0, t1;              /* seconds on the trace's timeline */
    double rate, bw;            /* bytes/s: total, and the link's nominal */
} seg_t;

struct hccn_sim_trace {
    pthread_mutex_t lock;       /* slices, groups, names (record) */
    double offset;              /* timeline time of the current run's 0 */
    uint64_t nrec;
    long dropped;               /* groups lost to no memory */

    slice_t *slices;
    size_t nslices, capslices;
    uint64_t *next_op;          /* per device */
    char (*devname)[HCCN_SIM_NAME_MAX];
    int ndevs;

    ltrack_t *tracks;
    int ntracks, captracks;
    seg_t *segs;
    size_t nsegs, capsegs;

    /* The attached engine's links (engine lock). */
    int nlinks;
    int *track_of;              /* link -> track */
    double *bw;                 /* nominal bandwidth, bytes/s */
    double *rate, *since;       /* open segment: total rate and start */
    double *sum;                /* scratch: rate being summed */
    int *listed;                /* scratch: link is in `touched` */
    int *touched;               /* scratch: links being summed */
};

/* Grows the array p of *cap elements of size bytes to hold need; returns
 * the (maybe moved) array, or NULL on no memory (p is then unchanged). */
void *hccn_sim_trace_grow(void *p, size_t *cap, size_t need, size_t size);

#endif /* HCCN_DEVICE_SIM_TRACE_INTERNAL_H */
