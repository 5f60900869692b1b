"""docs/validation.md and docs/img/validation.png for scripts/validate.py."""
import math
import os
import statistics

from validate_runs import RUNS

BANDS = (("<= 64K", lambda b: b <= 64 << 10),
         ("64K..64M", lambda b: 64 << 10 < b < 64 << 20),
         (">= 64M", lambda b: b >= 64 << 20))


def human(n):
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return "%d%s" % (n >> k, unit)
    return str(n)


def med(rows, sel=lambda b: True, signed=False):
    e = [r["err"] if signed else abs(r["err"]) for r in rows
         if sel(r["size"])]
    if not e:
        return "-"
    return ("%+.0f%%" if signed else "%.0f%%") % (100 * statistics.median(e))


def bands(rows):
    return [med(rows, sel) for _, sel in BANDS]


def plot(ids, after, before, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    cols = 4
    nrow = max(1, math.ceil(len(ids) / cols))
    fig, axes = plt.subplots(nrow, cols, figsize=(4.2 * cols, 3.3 * nrow),
                             squeeze=False)
    for ax in axes.flat[len(ids):]:
        ax.axis("off")
    for ax, rid in zip(axes.flat, ids):
        a, b = after[rid], before[rid]
        if not a:
            continue
        x = [r["size"] for r in a]
        ax.loglog(x, [r["meas"] for r in a], "o-", ms=3, label="measured")
        ax.loglog(x, [r["pred"] for r in a], "s-", ms=3, label="hccn")
        ax.loglog([r["size"] for r in b], [r["pred"] for r in b], ":",
                  label="links alone")
        ax.set_title(rid, fontsize=6)
        ax.set_xlabel("size (bytes)", fontsize=7)
        ax.set_ylabel("busbw (GB/s)", fontsize=7)
        ax.tick_params(labelsize=6)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=72)
    return True


def method(w, d):
    w("## Method\n")
    w("- **Parameters come from specifications and published tuning "
      "models.** Every hardware figure of a config is a datasheet value or "
      "a stated assumption, cited in its `sources`; the software stack "
      "(`docs/software.md`) is the library's own published tuning model "
      "(NCCL's `tuning.cc`): launch cost, per-step cost and efficiency of "
      "each protocol. Nothing is fitted to these runs but the link "
      "efficiencies, the NVSwitch reduction rate and the host's issue of "
      "a call below (each on two runs or more, never one).")
    w("- **Before / after.** *Before*: the configs with their `stack` and "
      "`software` keys removed, the links alone at the data sheets' rates "
      "(hccn before the software model, on files written from "
      "specification sheets: a link's efficiency is now the stack's "
      "`link_efficiency`, so without a stack it is 1). *After*: the "
      "configs as shipped, with their stack.")
    w("- **What is compared:** bus bandwidth per size, in place (alltoall, "
      "which has no in-place form in hccn-perf: out of place), one "
      "iteration (simulated time is deterministic); measured busbw is "
      "recomputed from size and time where the time is published. Error "
      "= (hccn - measured) / measured: negative when hccn is slower.")
    w("- **GPUs per host thread** come from each run's command (nccl-tests "
      "`-g N`: `software.ranks_per_thread`, shown among the run's edits).")
    caps = d["caps"]
    if caps[0] or caps[1]:
        w("- **Sizes are capped** at %s (8 ranks) and %s (16 ranks)."
          % (human(caps[0]) if caps[0] else "none",
             human(caps[1]) if caps[1] else "none"))
    else:
        w("- **Every published size is simulated**, timing only "
          "(`hccn-perf --no-data`, the bits of a run with data).")
    w("- **Algorithm:** hccn's default selection (`%s`), which under a "
      "stack keeps to the library's own algorithms (its multi-channel ring "
      "`rings`, its tree, the in-switch rows: docs/software.md), except "
      "where the run forced NCCL's algorithm (`NCCL_ALGO=Ring`): hccn then "
      "runs the same (`HCCN_ALGO`, shown in the run's command). NCCL's own "
      "choice among them (its tuning model) is not reproduced: hccn takes "
      "the cheapest by its own model.\n"
      % d["algo"])


def host(w, d):
    w("## Calibration of the host's issue of a call (nccl-2.2x `host_us`)\n")
    w("In the runs where one thread drives 8 GPUs (nccl-tests `-g 8`) a "
      "small call takes the thread's issue of its 8 launches, not the "
      "GPUs' time (it is flat up to 128K-2M). Estimate: the least "
      "published time / GPUs per thread.\n")
    w("| run | collective | GPUs per thread | least time (size) | "
      "estimate |")
    w("|---|---|---:|---|---:|")
    for rid, g, t, size, est in d["host"]:
        w("| `%s` | %s | %d | %.2f us (%s) | %.2f us |"
          % (rid, d["runs"][rid]["collective"], g, t, human(size), est))
    vals = [h[4] for h in d["host"]]
    w("\nMean: **%.2f us** (the preset uses %.1f); leave-one-out, each "
      "run's estimate against the mean of the others: %s.\n"
      % (statistics.mean(vals), d["host_used"],
         ", ".join("%+.0f%%" % (100 * (v / statistics.mean(
             vals[:i] + vals[i + 1:]) - 1)) for i, v in enumerate(vals))))


def summary(w, d):
    ids, after, before = d["ids"], d["after"], d["before"]
    pool_a = [r for rid in ids for r in after[rid]]
    pool_b = [r for rid in ids for r in before[rid]]
    w("## Summary: the calibration set\n")
    w("%d runs simulated (%d rows), %d not (below, with the reason). "
      "Median over every row of the band:\n" % (len(ids), len(pool_a),
                                                 len(d["skipped"])))
    w("| size band | rows | before: median abs error | after: median "
      "abs error | after: median signed error |")
    w("|---|---:|---:|---:|---:|")
    for name, sel in BANDS + (("all", lambda b: True),):
        n = sum(1 for r in pool_a if sel(r["size"]))
        w("| %s | %d | %s | %s | %s |" % (name, n, med(pool_b, sel),
                                          med(pool_a, sel),
                                          med(pool_a, sel, True)))
    w("\nPer run, median absolute error per band before and after, and "
      "the signed median after:\n")
    w("| run | config (+ --set) | sizes | before <= 64K | 64K..64M | "
      ">= 64M | after <= 64K | 64K..64M | >= 64M | after signed |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for rid in ids:
        spec = RUNS[rid]
        w("| `%s` | `%s`%s | %d | %s | %s | %s | %s | %s | %s | %s |"
          % (rid, os.path.basename(spec["config"]),
             "".join(" `%s`" % x for x in spec["sets"] +
                     spec.get("thread_sets", [])), len(after[rid]),
             *bands(before[rid]), *bands(after[rid]),
             med(after[rid], signed=True)))
    if d["has_plot"]:
        w("\n![measured vs hccn busbw, with and without the software "
          "model](img/validation.png)\n")


def loo(w, d):
    if not d["loo"]:
        return
    w("## Leave-one-out\n")
    w("For each family of runs (one system: one config, one stack, the "
      "same network and GPUs; three runs or more with sizes up to 4 MiB), "
      "`hccn-calibrate` fits the stack's launch and per-step costs "
      "(`launch_us`, `ll` and `simple` `step_us`, `net` ones where the "
      "family has several nodes; efficiencies and bandwidths stay) on all "
      "runs of the family but one, on sizes up to 4 MiB (every third; "
      "three sweeps, its default prior toward the preset: "
      "docs/calibrate.md), "
      "and the run left out is predicted with the fit, up to 64 MiB. The "
      "preset's errors on the same sizes are beside it.\n")
    w("| family | left out | fitted | preset <= 64K | 64K..64M | "
      "fit <= 64K | 64K..64M |")
    w("|---|---|---|---:|---:|---:|---:|")
    for fam, rid, fitted, rows in d["loo"]:
        preset = [r for r in d["after"].get(rid, []) if r["size"] <= 64 << 20]
        w("| %s | `%s` | %s | %s | %s | %s | %s |"
          % (fam, rid, ", ".join("%s %.3g" % kv for kv in fitted.items()),
             *bands(preset)[:2], *bands(rows)[:2]))
    w("")


def details(w, d):
    w("## Runs not simulated\n")
    w("| run | why |")
    w("|---|---|")
    for rid, why in d["skipped"]:
        w("| `%s` | %s |" % (rid, why))
    w("\n## Per run\n")
    root = d["root"] + "/"
    for rid in d["ids"]:
        run, spec, cmd = d["runs"][rid], RUNS[rid], d["cmds"][rid]
        hw = run["hardware"]
        w("### `%s`\n" % rid)
        w("%s, %d ranks on %d node(s), %s. Source: %s\n" %
          (hw.get("gpu", "?"), hw["ranks"], hw["nodes"], run["collective"],
           run["source"]))
        if cmd:
            shown = cmd[:cmd.index("--json")] + cmd[cmd.index("--json") + 2:]
            shown = [os.path.basename(a) if a.endswith("hccn-perf") else a
                     for a in shown]
            w("hccn: `%s`\n" % " ".join(
                "'%s'" % a if "[" in a else a for a in shown).replace(
                    root, ""))
        w("Note: %s\n" % spec["note"])
        w("| size | measured time (us) | before (us) | after (us) | "
          "measured busbw | after busbw | after error |")
        w("|---:|---:|---:|---:|---:|---:|---:|")
        bt = {r["size"]: r["pred_t"] for r in d["before"][rid]}
        for r in d["after"][rid]:
            w("| %s | %s | %.2f | %.2f | %.3f | %.3f | %+.0f%% |" %
              (human(r["size"]),
               "%.2f" % r["meas_t"] if r["meas_t"] else "-",
               bt.get(r["size"], float("nan")), r["pred_t"], r["meas"],
               r["pred"], 100 * r["err"]))
        w("")


def write_doc(path, d):
    L = []
    w = L.append
    w("# Validation: hccn against published benchmark runs\n")
    w("Generated by `scripts/validate.py`; do not edit by hand. Every run "
      "of the calibration file (`measurements.json`: published "
      "nccl-tests, rccl-tests, OSU and other runs, each with its source "
      "and hardware) that a config of `configs/` describes is compared "
      "with hccn-perf on that config (`scripts/validate_runs.py` maps "
      "them, and says why the others are not simulated).\n")
    method(w, d)
    for link, est in d["cal"]:
        if "search" in link:
            w("## Calibration of the %s\n" % link["name"])
            fmt = link.get("fmt", "%.0f")
            unit = " " + link["unit"] if link["unit"] else ""
            w("%s at which each run's prediction meets its measured "
              "peak (`%s`, bisection):\n" % (link.get("what", "The rate"),
                                             link["search"]))
            w("| run | collective | measured peak busbw (size) | hccn at "
              "the estimate | estimate |")
            w("|---|---|---|---|---|")
            for rid, coll, size, meas, pred, val in est:
                w(("| `%s` | %s | %.1f GB/s (%s) | %.1f GB/s | " + fmt +
                   "%s |") % (rid, coll, meas, human(size), pred, val,
                             unit))
            vals = [c[5] for c in est]
            w(("\nMean: **" + fmt + "%s** (the configs use " + fmt + "); "
               "leave-one-out, each run's estimate against the mean of the "
               "others: %s.\n")
              % (statistics.mean(vals), unit, link["used"],
                 ", ".join("%+.0f%%" % (100 * (v / statistics.mean(
                     vals[:i] + vals[i + 1:]) - 1))
                     for i, v in enumerate(vals))))
            if link.get("note"):
                w(link["note"] + "\n")
            continue
        w("## Calibration of the %s efficiency\n" % link["name"])
        w("| run | collective | measured peak busbw (size) | nominal link "
          "(%s) | hccn at the nominal | estimate |" % link["nominal_src"])
        w("|---|---|---|---:|---|---|")
        for rid, coll, size, meas, pred, ratio, nominal in est:
            w("| `%s` | %s | %.1f GB/s (%s) | %g GB/s | %.1f GB/s | %.3f |" %
              (rid, coll, meas, human(size), nominal, pred, ratio))
        vals = [c[5] for c in est]
        w("\nMean: **%.3f** (the stack preset carries %.2f as its "
          "`link_efficiency`); leave-one-out, each run's estimate against "
          "the mean of the others: %s.\n"
          % (statistics.mean(vals), link["used"],
             ", ".join("%+.0f%%" % (100 * (v / statistics.mean(
                 vals[:i] + vals[i + 1:]) - 1)) for i, v in enumerate(vals))))
    host(w, d)
    summary(w, d)
    loo(w, d)
    details(w, d)
    w("## What the model leaves out\n")
    w("- **The library's channels inside a node.** `rings` runs one "
      "channel per NIC across nodes and one per link-disjoint cycle of a "
      "mesh, but one on an NVSwitch node, where NCCL runs many (its logs "
      "show 24 on 8-GPU nodes), each paying its own steps: one hgx-a100 "
      "node, 8 MiB allreduce, measured 162 us, `rings` 88 "
      "(docs/software.md). Tried with `software.channels` 8, 16, 24 and "
      "32 on the four single-node NVLink runs, the 1-256 MiB errors swung "
      "from +60 % to -39 % size by size (each size's blocks change "
      "protocol at a different channel count), with no setting better on "
      "all four; the configs keep one channel.")
    w("- **NCCL's cap on the low-latency protocol's bandwidth** (`llMaxBws` "
      "in `tuning.cc`: 87.7 GB/s on one A100 node, 141 on H100) is per "
      "GPU, not per transfer; tried on the two A100 runs as a "
      "per-transfer efficiency (87.7 / 267 = 0.33 for `ll` inside a node, "
      "at the NVLink rate of then) "
      "it moved their 64K..64M predictions by -25% to +24% size by size, "
      "through the algorithm choice, in no consistent direction.")
    w("- **Host memory and CPU interconnect** are not resources in the "
      "topology format, which matters for GPUs without peer-to-peer.")
    w("- **Transports other than NCCL's InfiniBand** (TCPXO, EFA, "
      "sockets): the preset carries NCCL's network figures; their own "
      "per-step costs are for `software` overrides or `hccn-calibrate`.")
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")
