/*
 * The software model (software.h): the presets a topology names with
 * "stack" (docs/software.md has the same figures with their sources), and
 * the choice of a transfer's protocol. Each figure is taken from the
 * library's published tuning model, the cost model the library itself
 * uses to choose its protocol; none is fitted to a measurement.
 *
 * nccl-2.2x: NVIDIA NCCL 2.2x, src/graph/tuning.cc (ring algorithm):
 *   baseLat[Ring]       LL 6.6, LL128 14.0, Simple 8.4 us
 *                       -> <protocol>.launch_us (launch_us: LL's)
 *   hwLat[NVLINK][Ring] LL 0.6, LL128 1.9, Simple 3.4 us  -> step_us.intra
 *   hwLat[NET][Ring]    LL 2.7, LL128 4.0, Simple 14.0 us -> step_us.net
 *   ring LL bus bandwidth x .5                     -> ll efficiency 0.5
 *   ring LL128 bus bandwidth x 0.92 ("120.0/128.0") -> ll128 efficiency
 *   hwLat[NVLINK][NVLS] Simple 25 us, the whole latency of an NVLS call
 *   (its baseLat is 0)                 -> nvls_launch_us
 *   and so no cost per step of an NVLS call inside a node
 *   (latencies = intraLat, not times nsteps) -> nvls_step_us 0
 *   NVLS runs Simple only (its LL and LL128 rows are not enabled)
 *                                      -> nvls_simple
 *   hwLat[NET][NVLSTree] Simple 20.9 us -> nvls_net_step_us
 *   llMaxBw across nodes (Intel hosts): 39 (two nodes), 20.4 GB/s (more)
 *                                      -> ll.max_GBps
 *   a ring across nodes' network overhead: max(hwLat, 1 us; 3 us
 *   Simple) for its steps inside a node -> <protocol>.ring_step_us
 *   hwLat[NVLINK][Tree] / [NET][Tree] LL 0.6 / 5.0, LL128 1.25 / 8.5,
 *   Simple 4.0 / 14 us                 -> <protocol>.tree_step_us
 *   (the PCI row, 1.0 / 2.5 / 5.7 us, is for configs/pcie-8gpu.json,
 *   which sets it as its step_us.intra)
 * rccl-2.x: AMD RCCL, src/graph/tuning.cc (ROCm/rccl, the tuning model
 * carried over from NCCL 2.x with AMD's figures):
 *   baseLat[Ring]       LL 12.0, LL128 12.0, Simple 17.0 us
 *                       -> <protocol>.launch_us (launch_us: LL's)
 *   hwLat[NVLINK (xGMI)][Ring] LL 2.3, Simple 2.7 us -> step_us.intra
 *   hwLat[NET][Ring]    LL 2.0, Simple 4.5 us -> step_us.net
 *   ring LL bus bandwidth x 1/5                    -> ll efficiency 0.2
 *   LL128 enabled by default only on NVIDIA Volta/Ampere -> ll128 off
 *   MSCCL, on by default on MI300X (rccl-usage-tips; src/graph/
 *   rome_models.cc "mscclEnabled=1"), runs allreduce on 8 GPUs of one
 *   node with its all-pairs schedules from 0 to 16 MiB
 *   (tools/msccl-algorithms/allreduce-allpairs-8n-*.xml, maxBytes
 *   16777216)                          -> allpairs_max_bytes 16 MiB
 * Both libraries keep NCCL_STEPS = 8 slots of a connection in flight
 * (src/include/device.h, the same constant in RCCL's): slots 8.
 * mpi: Open MPI 5 (ob1 with the sm BTL inside a node), which has no
 * tuning model: its protocols are MPI's per-message ones, eager (the ll
 * slot: copy-in/copy-out through a shared buffer, every byte copied
 * twice: efficiency 0.5 inside a node) up to the BTL's eager limit, then
 * rendezvous (the simple slot: a control message before the data, moved
 * by one copy):
 *   opal/mca/btl/sm/btl_sm_component.c btl_eager_limit 4 KiB
 *                                      -> ll.max_bytes.intra 4096
 *   opal/mca/btl/tcp/btl_tcp_component.c eager_limit 64 KiB
 *                                      -> ll.max_bytes.net 65536
 *   the per-message latencies are assumptions (docs/software.md: 0.3 /
 *   1 us eager, 1 / 3 us rendezvous, 1 us a call), the library's
 *   collectives implement most of hccn's algorithms (all_algorithms),
 *   one message in flight per peer (slots 1).
 *   The host's time per message (LogGP's o), which a rank's messages pay
 *   one after another, is Netgauge's published LogGP measurement of MPI
 *   at 1 byte (its loggp pattern's documented run: o_s 0.266 us, o_r
 *   0.547 us)                          -> send_s, recv_s
 *   nccl-2.2x and rccl-2.x post from the GPU's kernel: none.
 *
 * link_eff, the share of a link's wire rate the library's bulk transfers
 * reach, is what a topology file's fabric and NICs take when the file
 * gives no "efficiency" of its own (so that a file can give the data
 * sheet's rates alone). It is the one figure not in a tuning model; each
 * is a packet format's payload share or the mean of several published
 * runs' estimates, never one run's (docs/validation.md, Calibration):
 *   nccl-2.2x fabric 0.80: NVLink, two A100, one H100 and one GB200 run
 *             (0.77, 0.85, 0.81, 0.76)
 *   rccl-2.x  fabric 0.83: xGMI, one MI300X and one MI325X run (0.823,
 *             0.832)
 *   both      pcie 256 / 280: the transaction layer's payload share with
 *             256-byte payloads (24 bytes of header, sequence number,
 *             LCRC and framing each)
 *   nccl-2.2x nic 0.99: InfiniBand with a 4096-byte MTU carries 4096 of
 *             every 4138 bytes
 *   rccl-2.x  nic 0.89: five RoCE runs across 2 to 8 MI300X, MI325X and
 *             MI355X nodes (0.89, 0.88, 0.88, 0.88, 0.92)
 *   mpi       none: no run calibrates it.
 *
 * host_us, the host's issue of a call per NPU its thread drives, is not
 * in a tuning model (the libraries price the NPUs' side only): nccl-2.2x
 * carries 4.6 us, calibrated on the four published nccl-tests runs in
 * which one thread drives 8 GPUs (-g 8: A100, RTX 4090, two H100 runs;
 * 4.83, 4.82, 4.32, 4.27 us, leave-one-out within 8 %; docs/software.md,
 * docs/validation.md), in line with CUDA's published per-launch host
 * overhead of a few microseconds. No RCCL run drives several GPUs from one
 * thread: rccl-2.x carries none.
 */
#include <math.h>
#include <string.h>

#include "device_sim/software.h"

#define CLS(a, b) {a, b}
#define US(a, b) {(a) * 1e-6, (b) * 1e-6}

static const hccn_sim_sw_t presets[] = {
    /* No cost: a file's stack taken away (--set stack=none). */
    {.stack = "none",
     .per_thread = 1,
     .slots = 1,
     .link_eff = {1.0, 1.0, 1.0},
     .proto = {
         {.on = 0, .eff = CLS(1.0, 1.0)},
         {.on = 0, .eff = CLS(1.0, 1.0)},
         {.on = 1, .eff = CLS(1.0, 1.0)},
     }},
    {.stack = "nccl-2.2x",
     .launch_s = 6.6e-6,
     .nvls_launch_s = 25e-6,
     .nvls_step_on = 1,
     .nvls_net_step_s = 20.9e-6,
     .nvls_simple = 1,
     .host_s = 4.6e-6,
     .per_thread = 1,
     .slots = 8,
     .ring_plateau = 1.4,
     .link_eff = {0.80, 256.0 / 280.0, 0.99},
     .proto = {
         {.on = 1, .step_s = US(0.6, 2.7), .eff = CLS(0.5, 0.5),
          .launch_s = 6.6e-6, .ring_step_s = 1.0e-6,
          .tree_step_s = US(0.6, 5.0), .tree_on = 1,
          .tree_bw = {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5,
                      .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
          .max_bw = {39.0e9, 20.4e9}},
         {.on = 1, .step_s = US(1.9, 4.0), .eff = CLS(0.92, 0.92),
          .launch_s = 14.0e-6, .ring_step_s = 1.0e-6,
          .tree_step_s = US(1.25, 8.5), .tree_on = 1,
          .tree_bw = {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6,
                      .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0}},
         {.on = 1, .step_s = US(3.4, 14.0), .eff = CLS(1.0, 1.0),
          .launch_s = 8.4e-6, .ring_step_s = 3.0e-6,
          .tree_step_s = US(4.0, 14.0), .tree_on = 1,
          .tree_bw = {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5,
                      .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}},
     }},
    {.stack = "rccl-2.x",
     .launch_s = 12e-6,
     .per_thread = 1,
     .allpairs_max_bytes = 16777216.0,
     .slots = 8,
     .link_eff = {0.83, 256.0 / 280.0, 0.89},
     .proto = {
         {.on = 1, .step_s = US(2.3, 2.0), .eff = CLS(0.2, 0.2),
          .launch_s = 12.0e-6},
         {.on = 0, .step_s = US(2.3, 2.0), .eff = CLS(0.92, 0.92),
          .launch_s = 12.0e-6},
         {.on = 1, .step_s = US(2.7, 4.5), .eff = CLS(1.0, 1.0),
          .launch_s = 17.0e-6},
     }},
    {.stack = "mpi",
     .launch_s = 1e-6,
     .send_s = 0.266e-6,
     .recv_s = 0.547e-6,
     .per_thread = 1,
     .all_algorithms = 1,
     .slots = 1,
     .link_eff = {1.0, 1.0, 1.0},
     .proto = {
         {.on = 1, .step_s = US(0.3, 1.0), .eff = CLS(0.5, 1.0),
          .max_bytes = CLS(4096.0, 65536.0)},
         {.on = 0, .eff = CLS(1.0, 1.0)},
         {.on = 1, .step_s = US(1.0, 3.0), .eff = CLS(1.0, 1.0)},
     }},
};

static const char *const names[] = {"none", "nccl-2.2x", "rccl-2.x", "mpi",
                                    NULL};

const hccn_sim_sw_t *hccn_sim_sw_preset(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof(presets) / sizeof(*presets);
         i++)
        if (strcmp(presets[i].stack, name) == 0)
            return &presets[i];
    return NULL;
}

const char *const *hccn_sim_sw_presets(void)
{
    return names;
}

/* ------------------------------------------------------------ the model --- */

int hccn_sim_sw_route_pick(const hccn_sim_topo_t *topo, int src, int dst,
                           uint64_t bytes, int *cls)
{
    int links[HCCN_SIM_ROUTE_MAX];
    double lat;
    if (topo->sw == NULL)
        return -1;
    int n = hccn_sim_topo_route(topo, src, dst, links, &lat);
    return hccn_sim_sw_links_pick(topo, src, links, n, bytes, cls);
}

int hccn_sim_sw_links_pick(const hccn_sim_topo_t *topo, int src,
                           const int *links, int n, uint64_t bytes, int *cls)
{
    double bw = INFINITY;
    if (topo->sw == NULL)
        return -1;
    for (int k = 0; k < n; k++)
        if (topo->links[links[k]].bw < bw)
            bw = topo->links[links[k]].bw;
    int c = hccn_sim_sw_class(topo, links, n);
    if (cls != NULL)
        *cls = c;
    return hccn_sim_sw_pick_at(topo, src, bytes, c, bw);
}

int hccn_sim_sw_call_proto(const hccn_sim_sw_t *sw, int nvswitch)
{
    return nvswitch && sw->nvls_simple && sw->proto[HCCN_SIM_PROTO_SIMPLE].on
               ? HCCN_SIM_PROTO_SIMPLE
               : -1;
}

double hccn_sim_sw_proto_launch(const hccn_sim_sw_t *sw, int p)
{
    return sw->proto[p].launch_s > 0.0 ? sw->proto[p].launch_s
                                       : sw->launch_s;
}

double hccn_sim_sw_launch(const hccn_sim_sw_t *sw, unsigned protos,
                          int nvswitch)
{
    if (nvswitch && sw->nvls_launch_s > 0.0)
        return sw->nvls_launch_s;
    double l = protos ? 0.0 : sw->launch_s;
    for (int p = 0; p < HCCN_SIM_NPROTO; p++)
        if (protos & 1u << p && hccn_sim_sw_proto_launch(sw, p) > l)
            l = hccn_sim_sw_proto_launch(sw, p);
    return l;
}

int hccn_sim_sw_launch_uniform(const hccn_sim_sw_t *sw)
{
    for (int p = 0; p < HCCN_SIM_NPROTO; p++)
        if (sw->proto[p].on &&
            hccn_sim_sw_proto_launch(sw, p) != sw->launch_s)
            return 0;
    return 1;
}

double hccn_sim_sw_tasks_launch(const hccn_sim_topo_t *topo, int dev,
                                const hccn_sim_task_t *tasks, int n,
                                const hccn_sim_call_t *call)
{
    const hccn_sim_sw_t *sw = topo->sw;
    int nvswitch = call != NULL && call->nvswitch;
    uint64_t scale = call != NULL && call->proto_scale > 1
                         ? call->proto_scale : 1;
    int forced = hccn_sim_sw_call_proto(sw, nvswitch);
    if ((nvswitch && sw->nvls_launch_s > 0.0) ||
        hccn_sim_sw_launch_uniform(sw))
        return hccn_sim_sw_launch(sw, 0, nvswitch);
    if (forced >= 0)
        return hccn_sim_sw_launch(sw, 1u << forced, nvswitch);
    unsigned protos = 0, all = 0;
    for (int p = 0; p < HCCN_SIM_NPROTO; p++)
        if (sw->proto[p].on)
            all |= 1u << p;
    double most = hccn_sim_sw_launch(sw, all, 0);
    int last_src = -1, last_dst = -1;
    uint64_t last_bytes = 0;
    /* Until a transfer runs the protocol of the largest launch. */
    for (int i = 0; i < n && (protos == 0 ||
                              hccn_sim_sw_launch(sw, protos, 0) < most);
         i++) {
        const hccn_sim_task_t *t = &tasks[i];
        if (t->kind == HCCN_SIM_TASK_LOCAL)
            continue;
        int src = t->kind == HCCN_SIM_TASK_SEND ? dev : t->peer;
        int dst = t->kind == HCCN_SIM_TASK_SEND ? t->peer : dev;
        if (src == last_src && dst == last_dst && t->bytes == last_bytes)
            continue;   /* a chunk of the one before: the same pick */
        last_src = src;
        last_dst = dst;
        last_bytes = t->bytes;
        protos |= 1u << hccn_sim_sw_route_pick(topo, src, dst,
                                               t->bytes * scale, NULL);
    }
    return hccn_sim_sw_launch(sw, protos, nvswitch);
}

double hccn_sim_sw_floor(const hccn_sim_sw_t *sw, double launch)
{
    return sw->host_s * (double)sw->per_thread - launch;
}

int hccn_sim_sw_host_order(const hccn_sim_sw_t *sw)
{
    return sw != NULL && (sw->send_s > 0.0 || sw->recv_s > 0.0);
}

const char *hccn_sim_proto_name(int p)
{
    static const char *const names[HCCN_SIM_NPROTO] = {"ll", "ll128",
                                                       "simple"};
    return p >= 0 && p < HCCN_SIM_NPROTO ? names[p] : "?";
}

int hccn_sim_sw_class(const hccn_sim_topo_t *topo, const int *links, int n)
{
    for (int k = 0; k < n; k++)
        if (topo->links[links[k]].level != HCCN_SIM_LEVEL_INTRA)
            return HCCN_SIM_CLS_NET;
    return HCCN_SIM_CLS_INTRA;
}

/* By threshold: the first protocol on whose max_bytes admits bytes; -1
 * when the protocols on give no threshold for cls. */
static int pick_by_size(const hccn_sim_sw_t *sw, uint64_t bytes, int cls)
{
    int last = -1, any = 0;
    for (int p = 0; p < HCCN_SIM_NPROTO; p++) {
        const hccn_sim_proto_t *q = &sw->proto[p];
        if (!q->on)
            continue;
        last = p;
        any |= q->max_bytes[cls] > 0.0;
        if (q->max_bytes[cls] > 0.0 && (double)bytes <= q->max_bytes[cls])
            return p;
    }
    return any ? last : -1;
}

/* The protocol of least step + bytes / (eff[q] x bw), by threshold
 * first. */
static int pick(const hccn_sim_sw_t *sw, uint64_t bytes, int cls, double bw,
                const double *eff)
{
    int p = pick_by_size(sw, bytes, cls);
    if (p >= 0)
        return p;
    double best = INFINITY;
    for (int q = 0; q < HCCN_SIM_NPROTO; q++) {
        const hccn_sim_proto_t *r = &sw->proto[q];
        if (!r->on)
            continue;
        double t = r->step_s[cls] +
                   (isfinite(bw) ? (double)bytes / (eff[q] * bw) : 0.0);
        if (p < 0 || t < best) {
            best = t;
            p = q;
        }
    }
    return p;
}

int hccn_sim_sw_pick(const hccn_sim_sw_t *sw, uint64_t bytes, int cls,
                     double bw)
{
    double eff[HCCN_SIM_NPROTO];
    for (int q = 0; q < HCCN_SIM_NPROTO; q++)
        eff[q] = sw->proto[q].eff[cls];
    return pick(sw, bytes, cls, bw, eff);
}

double hccn_sim_sw_step(const hccn_sim_sw_t *sw, int p, int cls, int family)
{
    const hccn_sim_proto_t *q = &sw->proto[p];
    if (family == HCCN_SIM_FAM_NVLS && cls == HCCN_SIM_CLS_NET &&
        sw->nvls_net_step_s > 0.0)
        return sw->nvls_net_step_s;
    if (family == HCCN_SIM_FAM_NVLS && cls == HCCN_SIM_CLS_INTRA &&
        sw->nvls_step_on)
        return sw->nvls_step_s;
    if (family == HCCN_SIM_FAM_TREE && q->tree_on)
        return q->tree_step_s[cls];
    double step = q->step_s[cls];
    if (family != HCCN_SIM_FAM_NET_RING)
        return step;
    if (cls == HCCN_SIM_CLS_INTRA && q->ring_step_s > step)
        step = q->ring_step_s;
    if (p == HCCN_SIM_PROTO_SIMPLE && sw->ring_plateau > 1.0)
        step *= sw->ring_plateau;
    return step;
}

double hccn_sim_sw_hop_lat(double lat, double step, uint64_t tree_bytes)
{
    if (tree_bytes == 0)
        return lat + step;
    return step > lat ? step : lat;
}

double hccn_sim_sw_tree_bw(const hccn_sim_sw_t *sw, int p, uint64_t bytes)
{
    int col = 0;
    if (bytes == 0)
        return 1.0;
    for (uint64_t v = bytes >> 6; v > 1; v >>= 1)
        col++;
    double f = col < HCCN_SIM_TREE_SIZES ? sw->proto[p].tree_bw[col] : 0.0;
    return f > 0.0 ? f : 1.0;
}

double hccn_sim_sw_eff(const hccn_sim_topo_t *topo, int p, int cls, int src)
{
    const hccn_sim_proto_t *q = &topo->sw->proto[p];
    double e = q->eff[cls];
    if (cls != HCCN_SIM_CLS_NET || topo->nnodes < 2)
        return e;
    double cap = q->max_bw[topo->nnodes == 2 ? HCCN_SIM_SPAN_TWO
                                             : HCCN_SIM_SPAN_MORE];
    double nics = topo->nodes[topo->npus[src].node].nic_bw;
    if (cap <= 0.0 || !(nics > 0.0) || cap >= e * nics)
        return e;
    return cap / nics > 1e-3 ? cap / nics : 1e-3;
}

int hccn_sim_sw_pick_at(const hccn_sim_topo_t *topo, int src, uint64_t bytes,
                        int cls, double bw)
{
    double eff[HCCN_SIM_NPROTO];
    for (int q = 0; q < HCCN_SIM_NPROTO; q++)
        eff[q] = hccn_sim_sw_eff(topo, q, cls, src);
    return pick(topo->sw, bytes, cls, bw, eff);
}

double hccn_sim_sw_post_launch(const hccn_sim_topo_t *topo, int dev,
                               const hccn_sim_task_t *tasks, int n,
                               hccn_sim_replay_hint_t *hint,
                               const hccn_sim_call_t *call)
{
    if (tasks == NULL)
        return hint != NULL ? hint->launch
                            : hccn_sim_sw_launch(topo->sw, 0,
                                                 call != NULL &&
                                                     call->nvswitch);
    double l = hccn_sim_sw_tasks_launch(topo, dev, tasks, n, call);
    if (hint != NULL)
        hint->launch = l;
    return l;
}
