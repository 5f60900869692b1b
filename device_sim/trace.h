/*
 * Timelines of simulated runs, written as Chrome trace events (the JSON
 * object format that ui.perfetto.dev and chrome://tracing open).
 *
 * A trace holds two kinds of records, all in simulated time:
 *  - slices of a device: an operation, its phases and its steps (or a
 *    stretch of compute), recorded by the rank's thread once the times are
 *    known (hccn_sim_trace_record);
 *  - rate segments of a directed link: the link's total rate is constant
 *    between two rate recomputations of the engine (docs/timing.md), and
 *    each such stretch is recorded, with adjacent stretches of the same
 *    rate merged.
 *
 * Runs follow each other on the trace's timeline: every engine reset (the
 * start of a run) and every detach moves the timeline on by the length of
 * the run that ended (its latest device clock), so one trace can follow
 * many runs and many clusters.
 *
 * Only simulated times are recorded and the writer sorts everything by a
 * total order, so the same program writes the same file byte for byte.
 *
 * Threads: hccn_sim_trace_record may be called by any rank thread; the
 * engine hooks run under the engine's lock; create, attach, write and
 * destroy only with no run in progress.
 */
#ifndef HCCN_DEVICE_SIM_TRACE_H
#define HCCN_DEVICE_SIM_TRACE_H

#include <stdio.h>

#include "device_sim/engine.h"

typedef struct hccn_sim_trace hccn_sim_trace_t;

/* Thread ids: NPU r's slices go on lanes (trace.c says why); lane k is
 * thread k * HCCN_SIM_TRACE_LANE + r of the "devices" process (pid 1).
 * Link tracks are threads 1, 2, ... of the "links" process (pid 2). */
#define HCCN_SIM_TRACE_LANE 1000000

/* Depth of a slice in its group: an operation holds phases, a phase holds
 * steps. */
enum { HCCN_SIM_TRACE_OP, HCCN_SIM_TRACE_PHASE, HCCN_SIM_TRACE_STEP };

typedef struct {
    int depth;              /* HCCN_SIM_TRACE_* */
    int parent;             /* index of the enclosing slice in the group,
                               -1 for the operation */
    double begin, end;      /* seconds since the start of the run */
    const char *name;       /* copied */
    const char *args;       /* JSON object members without the braces
                               ("\"bytes\":8,\"peer\":3"), or NULL; copied */
} hccn_sim_trace_slice_t;

/* A new empty trace, or NULL on no memory. */
hccn_sim_trace_t *hccn_sim_trace_create(void);
void hccn_sim_trace_destroy(hccn_sim_trace_t *tr);

/* Attaches tr to eng (NULL detaches): eng records its links' rate
 * segments into tr and tr learns the names of eng's NPUs and links. A
 * trace follows one engine at a time; destroying the engine detaches it.
 * Detaching ends the current run on tr's timeline. Only between runs.
 * Returns 0, or -1 on no memory or when tr is attached to another engine
 * (eng then has no trace). */
int hccn_sim_engine_set_trace(hccn_sim_engine_t *eng, hccn_sim_trace_t *tr);

/* The trace attached to eng, or NULL (read without the lock: attach only
 * changes between runs). */
hccn_sim_trace_t *hccn_sim_engine_trace(const hccn_sim_engine_t *eng);

/* Records one group of n slices of NPU dev (slices[0] is the operation,
 * the others point to their parents). The group gets the device's next
 * operation number, written as "op" in every slice's args. Returns 0, or
 * -1 on no memory (the group is dropped and the trace says so). */
int hccn_sim_trace_record(hccn_sim_trace_t *tr, int dev,
                          const hccn_sim_trace_slice_t *slices, int n);

/* Writes the trace as {"traceEvents": [...], "displayTimeUnit": "ns"}
 * with timestamps in simulated microseconds. Returns 0, or -1 on an I/O
 * error or no memory. */
int hccn_sim_trace_write(hccn_sim_trace_t *tr, FILE *out);

/* ---- engine hooks (engine.c and flow.c only; engine lock held) ---------- */

struct hccn_sim_flow;

/* The rates of flows[0..n) (in canonical order) were recomputed at
 * eng->now. They are all the flows on links[0..nlinks), the links whose
 * total rate may have changed; links NULL: every link may have. */
void hccn_sim_trace_rates(hccn_sim_engine_t *eng,
                          struct hccn_sim_flow *const *flows, int n,
                          const int *links, int nlinks);

/* The run is over (the engine is being reset): closes the open segments
 * and moves the timeline on by the run's length. */
void hccn_sim_trace_run_end(hccn_sim_engine_t *eng);

#endif /* HCCN_DEVICE_SIM_TRACE_H */
