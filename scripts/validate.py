#!/usr/bin/python3
"""Compares hccn's simulated collectives with published benchmark runs.

For every run of the calibration file (measurements.json: published
nccl-tests and other results, each with its hardware) that a config of
configs/ describes (scripts/validate_runs.py, which also says why the
others are not simulated), this script runs hccn-perf on that config at
the run's sizes, with the config's software stack ("after") and with the
links alone ("before": the stack removed), and writes docs/validation.md:
per run and per size band (<= 64 KiB, 64 KiB..64 MiB, >= 64 MiB) the
signed and absolute busbw errors, a plot, and a leave-one-out table
(scripts/validate_loo.py: the stack's launch and per-step costs fitted
with hccn-calibrate on all runs of a family but one, the one left out
predicted). It also re-derives the NVLink efficiency of hgx-a100/hgx-h100
from the two runs it is calibrated on.

Runs with Debian's /usr/bin/python3; drawing docs/img/validation.png
needs python3-matplotlib (--no-plot: the page only). The binary, the
measurements file and matplotlib are checked before anything runs; each
hccn-perf run prints a progress line with an estimate of the time left.

    scripts/validate.py --build build \
        --measurements ../shared/data/calibration/measurements.json
    (--no-loo: without the leave-one-out table, which takes longest)

The runs are timing only (hccn-perf --no-data): the same simulated times
as runs that move the bytes, bit for bit (tests/coll/test_predict.c),
without the memory, so every published size is simulated. --max-bytes-8
and --max-bytes-16 cap the sizes (0, the default: no cap).
"""
import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from validate_runs import RUNS, skipped_reason, thread_sets  # noqa: E402
from validate_runs import gpus_per_thread  # noqa: E402
import validate_doc  # noqa: E402
import validate_loo  # noqa: E402

# The link efficiencies calibrated on published runs: for each link, the
# nominal per-direction bandwidth, the runs (two or more, never one), and
# the figure the stack presets carry as their link_efficiency (the mean of
# the runs' estimates, rounded; device_sim/software.c, docs/software.md),
# which every config of that stack takes where it gives no efficiency.
LINKS = [
    # NVLink 3 (A100), 4 (H100, H200) and 5 (B200, GB200) carry the same
    # protocol; each run is measured against its own generation's
    # nominal rate ("nominal_of").
    {"name": "NVLink (nccl-2.2x link_efficiency.fabric: every NVLink config)",
     "nominal": 300.0, "used": 0.80,
     "nominal_src": "per direction: A100 datasheet 600 GB/s total, H100 "
                    "900, GB200 1800",
     "nominal_of": {"together_1node_8xH100_nvswitch_allgather_ring": 450.0,
                    "azure_nd_gb200_v6_1node_4xGB200_nvlink5_allreduce_"
                    "ring_busbw": 900.0},
     "runs": ["thanos_1node_8xA100_80G_nvswitch_allreduce_g8",
              "azure_ndmv4_1node_8gpu_nccl_allgather",
              "together_1node_8xH100_nvswitch_allgather_ring",
              "azure_nd_gb200_v6_1node_4xGB200_nvlink5_allreduce_"
              "ring_busbw"]},
    {"name": "Infinity Fabric / xGMI (rccl-2.x link_efficiency.fabric: mi300x-8)", "nominal": 64.0,
     "used": 0.83, "nominal_src": "MI300X datasheet: 128 GB/s per link, "
                                  "both directions",
     "runs": ["amd_aac8_1node_8xMI300X_rccl_allreduce",
              "amd_aac11_1node_8xMI325X_ring_rccl_allreduce_large"]},
    # The 400 Gb/s RDMA NICs of the AMD clusters (one per GPU): each run
    # across nodes is bound by them at large sizes ("part": the NICs).
    {"name": "400 Gb/s RoCE NIC (rccl-2.x link_efficiency.nic: mi300x-8, across nodes)", "nominal": 50.0,
     "part": "nics", "used": 0.89,
     "nominal_src": "400 Gb/s per direction",
     "runs": ["amd_aac10_2node_16xMI300X_roce_rccl_allreduce",
              "amd_aac11_2node_16xMI325X_ring_rccl_allreduce_large",
              "amd_aac11_4node_32xMI325X_ring_rccl_allreduce_large",
              "amd_aac11_8node_64xMI325X_ring_rccl_allreduce_large",
              "amd_aac14_2node_16xMI355X_pollara400_rccl_allreduce"]},
    # No ratio here: the rate at which the NVSwitch reduces (NVLS) is
    # searched for, per run, as the one whose prediction meets the
    # measured peak (bisection between the bounds).
    {"name": "NVSwitch reduction rate (hgx-h100, NVLS)", "search":
     "node_types[0].fabric.reduce.bw_GBps", "bounds": (400.0, 3600.0),
     "used": 1930.0, "unit": "GB/s",
     "runs": ["aws_p5_1node_8xH100_nvswitch_allreduce",
              "azure_nd_h100_v5_1node_8xH100_nvls_allreduce_busbw",
              "azure_nd_h200_v5_1node_8xH200_nvls_allreduce_busbw"]},
    # Staged PCIe traffic without P2P (docs/topology.md): the configs use
    # the published p2pBandwidthLatencyTest class's defaults; the no-P2P
    # runs check them. The efficiency of a staged copy is searched on the
    # runs whose GPUs each send or receive only (2-GPU broadcast, reduce),
    # the duplex budget, at the efficiency used, on those whose GPUs send
    # and receive at once.
    {"name": "staged PCIe copy efficiency (pcie-8gpu, p2p false)",
     "search": "node_types[0].fabric.staged.efficiency",
     "bounds": (0.3, 1.0), "used": 0.8, "unit": "", "fmt": "%.3f",
     "what": "The efficiency",
     "note": "The configs keep the published p2pBandwidthLatencyTest "
             "class's 0.8 (docs/topology.md, \"Staged traffic without "
             "peer-to-peer\"); these runs say 0.77, within 4 % of it.",
     "runs": ["autodl_1node_2xRTX2080Ti_pcie_noP2P_broadcast",
              "autodl_1node_2xRTX2080Ti_pcie_noP2P_reduce"]},
    {"name": "staged PCIe duplex (pcie-8gpu, p2p false)",
     "search": "node_types[0].fabric.staged.duplex",
     "bounds": (1.0, 2.0), "used": 1.2, "unit": "", "fmt": "%.3f",
     "what": "The duplex (at the efficiency 0.8; 1.0, the least the model "
             "takes, means the run is slower than any duplex gives)",
     "note": "The configs keep the published class's 1.2. The 8-GPU RTX "
             "4090 run says 1.3; the three 2-GPU RTX 2080 Ti runs (both "
             "GPUs behind one PCIe 3.0 switch) move about 4 GB/s each way "
             "when both ways are busy, under half of their one-way 11.1 "
             "GB/s: slower than any duplex, which one budget per GPU does "
             "not explain (host memory or the switch's uplink contended; "
             "not modelled).",
     "runs": ["rtx4090_1node_8gpu_pcie_noP2P_allreduce",
              "autodl_1node_2xRTX2080Ti_pcie_noP2P_allreduce",
              "autodl_1node_2xRTX2080Ti_pcie_noP2P_allgather",
              "autodl_1node_2xRTX2080Ti_pcie_noP2P_alltoall"]},
]


# The host's issue of a call per GPU (nccl-2.2x's host_us): calibrated on
# the runs in which one thread drives 8 GPUs (nccl-tests -g 8), whose
# small calls take the host's time, not the GPUs': the least published
# time / GPUs per thread. (-g 2 runs are left out: their GPUs' side may be
# the longer.)
HOST = {"used": 4.6,
        "runs": ["thanos_1node_8xA100_80G_nvswitch_allreduce_g8",
                 "rtx4090_1node_8gpu_pcie_noP2P_allreduce",
                 "together_1node_8xH100_nvswitch_allgather_ring",
                 "together_1node_8xH100_nvswitch_reduce_scatter_ring"]}


def host_calibration(runs):
    """[(run, GPUs per thread, least time in us, its size, estimate)]."""
    out = []
    for rid in HOST["runs"]:
        g = gpus_per_thread(runs[rid])
        t, size = min((r[1], r[0]) for r in measured_rows(runs[rid]) if r[1])
        out.append((rid, g, t, size, t / g))
    return out


def bus_factor(coll, n):
    if coll == "allreduce":
        return 2.0 * (n - 1) / n
    if coll in ("reduce_scatter", "allgather", "alltoall"):
        return (n - 1) / n
    return 1.0


_PROGRESS = {"done": 0, "total": 1, "t0": time.monotonic()}


def progress(what):
    """A stderr line per hccn-perf run: its number, the command and the
    time left at the mean pace so far."""
    p = _PROGRESS
    spent = time.monotonic() - p["t0"]
    left = spent / p["done"] * (p["total"] - p["done"]) if p["done"] else 0
    p["done"] += 1
    print("validate: [%d/%d] %s (%.0f s so far, about %.0f s left)"
          % (p["done"], p["total"], what, spent, left), file=sys.stderr,
          flush=True)


def check_environment(args):
    """Stops at once, before any run, when the binary, the measurements or
    (unless --no-plot) matplotlib are missing."""
    perf_bin = os.path.join(args.build, "hccn-perf")
    if not os.access(perf_bin, os.X_OK):
        sys.exit("validate.py: no hccn-perf in %s: build it "
                 "(./scripts/setup.sh hccn-perf) or give --build DIR"
                 % args.build)
    if not os.path.isfile(args.measurements):
        sys.exit("validate.py: no measurements file %s: give "
                 "--measurements FILE (or HCCN_CALIBRATION)" % args.measurements)
    if args.no_plot:
        return
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        sys.exit("validate.py: drawing docs/img/validation.png needs "
                 "matplotlib, which this interpreter (%s) cannot import: run "
                 "Debian's /usr/bin/python3 after apt-get install -y "
                 "python3-matplotlib, or give --no-plot" % sys.executable)


def perf(build, config, coll, sets, lo, hi, tmp, algo=None, dtype=None):
    """Runs hccn-perf (in place, 1 iteration, no warm-up; algo: HCCN_ALGO,
    None for the default selection; dtype: its -d, None for float);
    returns its records by size."""
    out = os.path.join(tmp, "perf.json")
    cmd = [os.path.join(build, "hccn-perf"), coll, "-t",
           os.path.join(ROOT, config), "-b", str(lo), "-e", str(hi),
           "-f", "2", "-n", "1", "-w", "0", "--no-data", "--json", out]
    if dtype:
        cmd[-3:-3] = ["-d", dtype]
    if coll != "alltoall":      # no in-place form: out of place
        cmd.insert(cmd.index("--no-data"), "--inplace")
    for s in sets:
        cmd += ["--set", s]
    progress(" ".join(cmd[1:]))
    env = dict(os.environ)
    if algo:
        env["HCCN_ALGO"] = algo
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    with open(out) as f:
        recs = json.load(f)["records"]
    return {r["size"]: r for r in recs}, cmd


def measured_rows(run):
    """(size, time_us, busbw) of the in-place results of a run; busbw is
    recomputed from size and time where the time is given (the published
    column is rounded to 0.01 GB/s). alltoall, which has no in-place
    form in hccn-perf, is compared out of place. An OSU run's size is the
    bytes sent to each peer: its whole buffer, nccl-tests' size and
    hccn-perf's, is n times that."""
    n = run["hardware"]["ranks"]
    f = bus_factor(run["collective"], n)
    per_peer = run.get("size_convention") == "osu_per_peer_bytes"
    rows = []
    pre = "" if run["collective"] == "alltoall" else "inplace_"
    for r in run["rows"]:
        size = r["bytes"] * n if per_peer else r["bytes"]
        t = r.get(pre + "time_us", r.get("time_us"))
        bw = r.get(pre + "busbw_GBps", r.get("busbw_GBps"))
        if t:
            bw = size / (t * 1e-6) / 1e9 * f
        if bw:
            rows.append((size, t, bw))
    return rows


# Bisection steps of a searched calibration (bounds' width / 2^14).
SEARCH_STEPS = 14


def search(build, link, run, spec, size, meas, tmp):
    """The value of link["search"] (within its bounds) at which hccn's
    busbw for run at size meets the measured meas, by bisection (the
    prediction grows with it): (run, coll, size, measured, predicted at
    that value, the value)."""
    lo, hi = link["bounds"]
    pred = None
    for _ in range(SEARCH_STEPS):
        mid = (lo + hi) / 2
        sets = spec["sets"] + spec.get("thread_sets", []) + [
            "%s=%g" % (link["search"], mid)]
        recs, _ = perf(build, spec["config"], run["collective"], sets, size,
                       size, tmp, spec.get("algo"))
        pred = recs[size]["busbw_GBps"]
        lo, hi = (mid, hi) if pred < meas else (lo, mid)
    return (run["id"], run["collective"], size, meas, pred, (lo + hi) / 2)


def calibrate(build, runs, tmp):
    """For each calibrated link of LINKS, measured peak busbw / predicted
    busbw with the link at its nominal bandwidth (efficiency 1), for each
    run it is calibrated on: [(link, [(run, coll, size, measured,
    predicted, estimate)])]."""
    out = []
    for link in LINKS:
        est = []
        for rid in link["runs"]:
            run, spec = runs[rid], RUNS[rid]
            size, _, meas = max(measured_rows(run), key=lambda r: r[2])
            if "search" in link:
                est.append(search(build, link, run, spec, size, meas, tmp))
                continue
            nominal = link.get("nominal_of", {}).get(rid, link["nominal"])
            part = link.get("part", "fabric")
            config = os.path.join(ROOT, spec["config"])
            sets = spec["sets"] + thread_sets(config, run) + [
                "node_types[0].%s.bw_GBps=%g" % (part, nominal),
                "node_types[0].%s.efficiency=1" % part]
            recs, _ = perf(build, spec["config"], run["collective"], sets,
                           size, size, tmp, spec.get("algo"))
            pred = recs[size]["busbw_GBps"]
            est.append((rid, run["collective"], size, meas, pred,
                        meas / pred, nominal))
        out.append((link, est))
    return out



def compare(build, run, spec, config, cap, tmp, hi=None):
    """The run's rows against hccn-perf on config (spec's --set edits),
    up to cap (0: all) and hi bytes."""
    rows = [r for r in measured_rows(run) if (not cap or r[0] <= cap) and
            (hi is None or r[0] <= hi)]
    if not rows:
        return [], []
    lo, top = min(r[0] for r in rows), max(r[0] for r in rows)
    # GPUs per host thread, as config (the shipped, stripped or fitted
    # one) takes the edit
    sets = spec["sets"] + thread_sets(config, run)
    recs, cmd = perf(build, config, run["collective"], sets, lo, top, tmp,
                     spec.get("algo"), spec.get("dtype"))
    if spec.get("algo"):
        cmd = ["HCCN_ALGO=" + spec["algo"]] + cmd
    out = []
    for size, t, meas in rows:
        p = recs.get(size)
        if p is None:
            continue
        out.append({"size": size, "meas_t": t, "meas": meas,
                    "pred_t": p["time_us"], "pred": p["busbw_GBps"],
                    "err": (p["busbw_GBps"] - meas) / meas})
    return out, cmd


def run_all(args, runs, ids, tmp):
    """Per run: rows with the stack (after) and without (before)."""
    after, before, cmds = {}, {}, {}
    caps = {8: args.max_bytes_8, 16: args.max_bytes_16}
    for rid in ids:
        spec = RUNS[rid]
        cap = caps[16] if runs[rid]["hardware"]["ranks"] > 8 else caps[8]
        config = os.path.join(ROOT, spec["config"])
        after[rid], cmds[rid] = compare(args.build, runs[rid], spec, config,
                                        cap, tmp)
        bare = validate_loo.strip_software(config, tmp)
        # without the stack: a run's own "stack=" edit goes too
        plain = dict(spec, sets=[s for s in spec["sets"]
                                 if not s.startswith("stack=")])
        before[rid], _ = compare(args.build, runs[rid], plain, bare, cap, tmp)
    return after, before, cmds


def loo(args, runs, tmp):
    def rows_of(rid):
        return measured_rows(runs[rid])

    def factor_of(rid):
        r = runs[rid]
        return bus_factor(r["collective"], r["hardware"]["ranks"])

    def predict(rid, topo, hi):
        return compare(args.build, runs[rid], RUNS[rid], topo, 0, tmp, hi)[0]

    present = {rid: runs[rid] for rid in RUNS if rid in runs}
    return validate_loo.leave_one_out(args.build, RUNS, present, rows_of,
                                      factor_of, predict, tmp, progress)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.environ.get(
        "HCCN_BINARY_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--measurements", default=os.environ.get(
        "HCCN_CALIBRATION", os.path.join(
            ROOT, "..", "shared", "data", "calibration",
            "measurements.json")))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs",
                                                  "validation.md"))
    ap.add_argument("--max-bytes-8", type=int, default=0)
    ap.add_argument("--max-bytes-16", type=int, default=0)
    ap.add_argument("--only", help="comma-separated run ids")
    ap.add_argument("--no-loo", action="store_true",
                    help="leave the leave-one-out table out")
    ap.add_argument("--no-plot", action="store_true",
                    help="write the page without docs/img/validation.png")
    ap.add_argument("--heavy", action="store_true",
                    help="also simulate the runs marked heavy in "
                         "validate_runs.py (each needs many GB and minutes)")
    args = ap.parse_args()
    check_environment(args)
    with open(args.measurements) as f:
        allruns = json.load(f)
    runs = {r["id"]: r for r in allruns}
    for rid, spec in RUNS.items():   # GPUs per host thread, from -g
        if rid in runs:
            spec["thread_sets"] = thread_sets(
                os.path.join(ROOT, spec["config"]), runs[rid])
    ids = [rid for rid in (args.only.split(",") if args.only else RUNS)
           if rid in runs and (args.heavy or args.only or
                               "heavy" not in RUNS[rid])]
    skipped = [(r["id"], skipped_reason(r["id"], r)) for r in allruns
               if r["id"] not in RUNS]
    skipped += [(rid, "heavy (run with --heavy): " + RUNS[rid]["heavy"])
                for rid in RUNS if rid in runs and rid not in ids and
                "heavy" in RUNS[rid] and not args.only]
    nloo = 0 if args.no_loo else sum(
        len(v) for v in validate_loo.families(
            RUNS, runs, lambda rid: measured_rows(runs[rid])).values()
        if len(v) >= 3)
    steps = [SEARCH_STEPS if "search" in k else 1 for k in LINKS]
    _PROGRESS["total"] = (sum(len(k["runs"]) * n
                              for k, n in zip(LINKS, steps)) +
                          2 * len(ids) + 2 * nloo)
    with tempfile.TemporaryDirectory() as tmp:
        cal = calibrate(args.build, runs, tmp)
        after, before, cmds = run_all(args, runs, ids, tmp)
        table = [] if args.no_loo else loo(args, runs, tmp)
    img = os.path.join(os.path.dirname(args.out), "img", "validation.png")
    os.makedirs(os.path.dirname(img), exist_ok=True)
    has_plot = not args.no_plot and validate_doc.plot(ids, after, before,
                                                      img)
    validate_doc.write_doc(args.out, {
        "runs": runs, "ids": ids, "after": after, "before": before,
        "cmds": cmds, "cal": cal, "host": host_calibration(runs),
        "host_used": HOST["used"], "skipped": skipped, "loo": table,
        "has_plot": has_plot, "algo": os.environ.get("HCCN_ALGO", "auto"),
        "root": ROOT, "caps": (args.max_bytes_8, args.max_bytes_16)})
    print("wrote %s%s" % (args.out, " and " + img if has_plot else ""))


if __name__ == "__main__":
    main()
