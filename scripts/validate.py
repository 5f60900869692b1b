#!/usr/bin/python3
"""Compares hccn's simulated collectives with published nccl-tests runs.

For every run of the calibration file (measurements.json: published
nccl-tests results, each with its hardware), this script runs hccn-perf on
the config of configs/ that describes that hardware, at the run's sizes,
and writes docs/validation.md: measured vs predicted bus bandwidth per size,
the relative error, and a summary per run. It also re-derives the one
calibrated parameter (the NVLink efficiency of hgx-a100/hgx-h100) from the
runs it is calibrated on.

Runs with Debian's /usr/bin/python3; drawing docs/img/validation.png
needs python3-matplotlib (--no-plot: the page only). The binary, the
measurements file and matplotlib are checked before anything runs; each
hccn-perf run prints a progress line with an estimate of the time left.

    scripts/validate.py --build build \
        --measurements ../shared/data/calibration/measurements.json

The runs are timing only (hccn-perf --no-data): the same simulated times
as runs that move the bytes, bit for bit (tests/coll/test_predict.c),
without the memory, so every published size is simulated. --max-bytes-8
and --max-bytes-16 cap the sizes (0, the default: no cap).
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Calibration run -> the config that describes its hardware, the --set
# edits that make it that cluster, and what the model leaves out.
RUNS = {
    "aws_p5_1node_8xH100_nvswitch_allreduce": {
        "config": "configs/hgx-h100.json",
        "sets": ["node_types[0].count=1"],
        "note": "The run very probably used NVLink SHARP (the measurement "
                "file infers it from its ~480 GB/s busbw, more than the "
                "450 GB/s per-direction NVLink bandwidth): the switch adds "
                "the contributions, so each GPU sends and receives its data "
                "about once instead of 2(n-1)/n times. hccn has no in-switch "
                "reduction, so it cannot exceed the link bandwidth here.",
    },
    "thanos_1node_8xA100_80G_nvswitch_allreduce_g8": {
        "config": "configs/hgx-a100.json",
        "sets": ["node_types[0].count=1"],
        "note": "One of the two runs the NVLink efficiency is calibrated "
                "on. Small messages: this run was made from one process "
                "driving 8 GPUs (-g 8), which costs ~40 us per call in "
                "launch overhead; the model has no software overhead.",
    },
    "rtx4090_1node_8gpu_pcie_noP2P_allreduce": {
        "config": "configs/pcie-8gpu.json",
        "sets": [],
        "note": "Without peer-to-peer the library copies every message "
                "through host memory, across the CPU sockets' links and "
                "NUMA nodes of a 2-socket host; the model only has the "
                "GPUs' PCIe links (the host bridge is not a bandwidth "
                "resource), so it is too fast. The run's own "
                "p2pBandwidthLatencyTest figure, ~20 GB/s instead of "
                "28.8, shows where the rest goes; it is not used here "
                "since efficiencies are never fitted to a single run.",
    },
    "crusoe_2node_16xA100_80G_ib_allreduce": {
        "config": "configs/hgx-a100.json",
        "sets": [],
        "note": "Two nodes: the measured busbw (~194 GB/s) needs all 8 "
                "NICs of a node at once (NCCL runs 8+ rings, one per NIC). "
                "hccn's default on more than one node is the hierarchical "
                "allreduce (mesh inside the nodes, one ring across them "
                "per local index; docs/algorithms.md), which also keeps "
                "all 8 NICs busy; its plateau (~225 GB/s) is ~16% above "
                "the measured peak: NCCL's protocol overhead is not in "
                "the model.",
    },
    "gcp_a3mega_2node_16xH100_tcpxo_allreduce": {
        "config": "configs/hgx-h100.json",
        "sets": ["node_types[0].nics.bw_GBps=24.5"],
        "note": "A3 Mega's GPU NICs are 8 x 200 Gb/s Ethernet with "
                "GPUDirect-TCPXO, not NDR InfiniBand: the NIC bandwidth is "
                "set to 200 Gb/s x 0.98 (the frame efficiency used for "
                "RoCE); the ~120 us software latency of TCPXO is not in "
                "the model, so sizes up to 1G are predicted too fast "
                "(+11% at 1G, +56% at 256M). The hierarchical default uses "
                "all 8 NICs, as NCCL does; its plateau (~332 GB/s) meets "
                "the measured curve from 2G on (+4% at 2G, -1% at 8G, "
                "the measured peak of 337 GB/s).",
    },
    "azure_ndmv4_1node_8gpu_nccl_allgather": {
        "config": "configs/hgx-a100.json",
        "sets": ["node_types[0].count=1"],
        "note": "The second run the NVLink efficiency is calibrated on "
                "(allgather has no reduction, so it measures the links "
                "alone). Only two sizes were published.",
    },
}

# The runs the NVLink efficiency is calibrated on, and the nominal
# per-direction NVLink3 bandwidth (A100 datasheet: 600 GB/s total).
NVLINK_RUNS = ["thanos_1node_8xA100_80G_nvswitch_allreduce_g8",
               "azure_ndmv4_1node_8gpu_nccl_allgather"]
NVLINK3_NOMINAL = 300.0


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


def perf(build, config, coll, sets, lo, hi, tmp):
    """Runs hccn-perf (in place, 1 iteration, no warm-up); returns its
    records by size."""
    out = os.path.join(tmp, "perf.json")
    cmd = [os.path.join(build, "hccn-perf"), coll, "-t",
           os.path.join(ROOT, config), "-b", str(lo), "-e", str(hi),
           "-f", "2", "-n", "1", "-w", "0", "--inplace", "--no-data",
           "--json", out]
    for s in sets:
        cmd += ["--set", s]
    progress(" ".join(cmd[1:]))
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        recs = json.load(f)["records"]
    return {r["size"]: r for r in recs}, cmd


def measured_rows(run):
    """(size, time_us, busbw) of the in-place results of a run; busbw is
    recomputed from size and time where the time is given (the published
    column is rounded to 0.01 GB/s)."""
    n = run["hardware"]["ranks"]
    f = bus_factor(run["collective"], n)
    rows = []
    for r in run["rows"]:
        t = r.get("inplace_time_us", r.get("time_us"))
        bw = r.get("inplace_busbw_GBps", r.get("busbw_GBps"))
        if t:
            bw = r["bytes"] / (t * 1e-6) / 1e9 * f
        if bw:
            rows.append((r["bytes"], t, bw))
    return rows


def calibrate(build, runs, tmp):
    """Measured peak busbw / predicted busbw with the nominal NVLink
    bandwidth, for each run the efficiency is calibrated on."""
    est = []
    for rid in NVLINK_RUNS:
        run, spec = runs[rid], RUNS[rid]
        size, _, meas = max(measured_rows(run), key=lambda r: r[2])
        sets = spec["sets"] + ["node_types[0].fabric.bw_GBps=%g" %
                               NVLINK3_NOMINAL]
        recs, _ = perf(build, spec["config"], run["collective"], sets, size,
                       size, tmp)
        pred = recs[size]["busbw_GBps"]
        est.append((rid, run["collective"], size, meas, pred, meas / pred))
    return est


def compare(build, run, spec, cap, tmp):
    rows = [r for r in measured_rows(run) if not cap or r[0] <= cap]
    lo, hi = min(r[0] for r in rows), max(r[0] for r in rows)
    recs, cmd = perf(build, spec["config"], run["collective"], spec["sets"],
                     lo, hi, tmp)
    out = []
    for size, t, meas in rows:
        p = recs.get(size)
        if p is None:
            continue
        out.append({"size": size, "meas_t": t, "meas": meas,
                    "pred_t": p["time_us"], "pred": p["busbw_GBps"],
                    "err": (p["busbw_GBps"] - meas) / meas})
    return out, cmd


def human(n):
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return "%d%s" % (n >> k, unit)
    return str(n)


def summary(rows):
    def med(sel):
        e = [abs(r["err"]) for r in rows if sel(r)]
        return "%.0f%%" % (100 * statistics.median(e)) if e else "-"
    signed = statistics.median(r["err"] for r in rows)
    return (med(lambda r: r["size"] <= 64 << 10),
            med(lambda r: 64 << 10 < r["size"] < 64 << 20),
            med(lambda r: r["size"] >= 64 << 20),
            med(lambda r: True), "%+.0f%%" % (100 * signed))


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    for ax, (rid, rows) in zip(axes.flat, results):
        x = [r["size"] for r in rows]
        ax.loglog(x, [r["meas"] for r in rows], "o-", label="measured")
        ax.loglog(x, [r["pred"] for r in rows], "s--", label="hccn")
        ax.set_title(rid, fontsize=8)
        ax.set_xlabel("size (bytes)")
        ax.set_ylabel("busbw (GB/s)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    return True


def write_doc(path, runs, results, cmds, cal, caps, has_plot, algo):
    L = []
    w = L.append
    w("# Validation: hccn against published nccl-tests runs\n")
    w("Generated by `scripts/validate.py`; do not edit by hand. Each "
      "published run of the calibration file (`measurements.json`, "
      "nccl-tests output with its source and hardware) is compared with "
      "hccn-perf on the config of `configs/` that describes the same "
      "hardware (`docs/configs.md`).\n")
    w("## Method\n")
    w("- **Parameters come from specifications.** Every figure of a config "
      "is a datasheet value (bandwidth, memory) or a stated assumption "
      "(latencies, which datasheets rarely give), each cited in the "
      "config's `sources`. Network links use nominal rate x the protocol "
      "efficiency of their frame format (headers per MTU).")
    w("- **One parameter is calibrated, on two runs, never one:** the "
      "NVLink efficiency (achievable / nominal per-direction bandwidth) of "
      "`hgx-a100` and `hgx-h100`. For each run below, the measured peak "
      "busbw is divided by hccn's busbw at the same size with "
      "the nominal 300 GB/s; the configs use the mean of the two "
      "estimates, rounded (0.89). Nothing else is fitted; the remaining "
      "runs only check the model's shape.")
    w("- **What is compared:** bus bandwidth per size, in place (the "
      "published in-place columns), one iteration after no warm-up "
      "(simulated time is deterministic). Measured busbw is recomputed "
      "from size and time where the time is published (the busbw column "
      "is rounded to 0.01 GB/s). Relative error = (hccn - measured) / "
      "measured.")
    if caps[8] or caps[16]:
        w("- **Sizes are capped** at %s (8 ranks) and %s (16 ranks)."
          % (human(caps[8]) if caps[8] else "none",
             human(caps[16]) if caps[16] else "none"))
    else:
        w("- **Every published size is simulated**, timing only "
          "(`hccn-perf --no-data`): the simulated times of a run that "
          "moves the bytes, bit for bit (`tests/coll/test_predict.c`), "
          "without the bytes, so 8G on 16 ranks fits in memory.")
    w("- **Algorithm:** hccn's default selection (`%s`) at the time of "
      "generation; the selection, not the topology, decides several of "
      "the results below.\n" % algo)
    w("## Calibration of the NVLink efficiency\n")
    w("| run | collective | measured peak busbw (size) | hccn, nominal "
      "300 GB/s | estimate |")
    w("|---|---|---|---|---|")
    for rid, coll, size, meas, pred, ratio in cal:
        w("| `%s` | %s | %.1f GB/s (%s) | %.1f GB/s | %.3f |" %
          (rid, coll, meas, human(size), pred, ratio))
    mean = statistics.mean(c[5] for c in cal)
    w("\nMean: **%.3f** (configs use 0.89: 300 x 0.89 = 267 GB/s for "
      "NVLink3, 450 x 0.89 = 400 GB/s for NVLink4, the same signalling "
      "and protocol).\n" % mean)
    w("## Summary\n")
    w("Median |relative error| of busbw per size range; the last column "
      "is the median signed error (negative: hccn is slower).\n")
    w("| run | config (+ --set) | sizes | <= 64K | 64K..64M | >= 64M | "
      "all | signed | measured peak busbw |")
    w("|---|---|---|---|---|---|---|---|---|")
    for rid, rows in results:
        spec = RUNS[rid]
        peak = max(measured_rows(runs[rid]), key=lambda r: r[2])
        s = summary(rows)
        w("| `%s` | `%s`%s | %d | %s | %s | %s | %s | %s | %.0f GB/s at %s |"
          % (rid, os.path.basename(spec["config"]),
             "".join(" `%s`" % x for x in spec["sets"]), len(rows), *s,
             peak[2], human(peak[0])))
    if has_plot:
        w("\n![measured vs hccn busbw](img/validation.png)\n")
    w("\n## Per run\n")
    for rid, rows in results:
        run, spec = runs[rid], RUNS[rid]
        hw = run["hardware"]
        w("### `%s`\n" % rid)
        w("%s, %d ranks on %d node(s), %s. Source: %s\n" %
          (hw.get("gpu", "?"), hw["ranks"], hw["nodes"], run["collective"],
           run["source"]))
        shown = cmds[rid][1:cmds[rid].index("--json")] + \
            cmds[rid][cmds[rid].index("--json") + 2:]
        w("hccn: `hccn-perf %s`\n" % " ".join(
            "'%s'" % a if "[" in a else a for a in shown).replace(
                ROOT + "/", ""))
        w("Where the model is off, and why: %s\n" % spec["note"])
        w("| size | measured time (us) | hccn time (us) | measured busbw "
          "(GB/s) | hccn busbw (GB/s) | error |")
        w("|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            w("| %s | %s | %.2f | %.3f | %.3f | %+.0f%% |" %
              (human(r["size"]),
               "%.2f" % r["meas_t"] if r["meas_t"] else "-",
               r["pred_t"], r["meas"], r["pred"], 100 * r["err"]))
        w("")
    w("## What the model leaves out\n")
    w("- **Software latency.** The published small-message times (13-40 "
      "us on one node, 28-135 us on two) are dominated by kernel launch, "
      "protocol handshakes and, for TCPXO, the host network stack. hccn's "
      "latencies are the links' and switches' (a few us per step), so "
      "small messages are predicted several times too fast.")
    w("- **Fused reduction.** NCCL adds incoming data while it forwards "
      "it; hccn reduces a step's data after it has arrived (`docs/"
      "timing.md`), which costs n/R per ring step on top of the transfer. "
      "This is part of why the allreduce estimate of the NVLink efficiency "
      "is higher than the allgather one.")
    w("- **Multiple channels** and **in-switch reduction** (NVLink SHARP) "
      "exist in NCCL and not in hccn. Across nodes hccn's default is the "
      "hierarchical allreduce, which, like NCCL's rings, uses every NIC "
      "of a node.")
    w("- **Host memory and CPU interconnect** are not resources in the "
      "topology format, which matters for GPUs without peer-to-peer.")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


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
    ap.add_argument("--no-plot", action="store_true",
                    help="write the page without docs/img/validation.png")
    args = ap.parse_args()
    check_environment(args)
    with open(args.measurements) as f:
        runs = {r["id"]: r for r in json.load(f)}
    caps = {8: args.max_bytes_8, 16: args.max_bytes_16}
    only = args.only.split(",") if args.only else list(RUNS)
    _PROGRESS["total"] = len(NVLINK_RUNS) + len(only)
    results, cmds = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        cal = calibrate(args.build, runs, tmp)
        for rid in only:
            if rid not in runs:
                print("validate: run %s not in %s" % (rid, args.measurements),
                      file=sys.stderr)
                continue
            cap = RUNS[rid].get("cap") or (
                caps[16] if runs[rid]["hardware"]["ranks"] > 8 else caps[8])
            rows, cmds[rid] = compare(args.build, runs[rid], RUNS[rid], cap,
                                      tmp)
            results.append((rid, rows))
    img = os.path.join(os.path.dirname(args.out), "img", "validation.png")
    os.makedirs(os.path.dirname(img), exist_ok=True)
    has_plot = not args.no_plot and plot(results, img)
    write_doc(args.out, runs, results, cmds, cal, caps, has_plot,
              os.environ.get("HCCN_ALGO", "auto"))
    print("wrote %s%s" % (args.out, " and " + img if has_plot else ""))


if __name__ == "__main__":
    main()
