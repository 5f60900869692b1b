"""Leave-one-out for scripts/validate.py: for each family of runs (one
config, one stack; validate_runs.py), fit the stack's launch and per-step
costs with hccn-calibrate on every run of the family but one, then predict
the one left out with the fitted topology and compare it with the
measurement. A family of fewer than three runs is not used (a fit on a
single run is never made).
"""
import json
import os
import subprocess

from validate_runs import gpus_per_thread

# The parameters fitted: what the software model adds per call and per
# step; efficiencies and the hardware's bandwidths stay the preset's and
# the config's.
FIT_INTRA = ["launch_us", "ll.step_us.intra", "simple.step_us.intra"]
FIT_NET = ["ll.step_us.net", "simple.step_us.net"]
# Rows the fit uses: up to 4 MiB (launch and steps decide these sizes),
# every third one, to keep the fit's predictions few.
FIT_MAX = 4 << 20
PREDICT_MAX = 64 << 20


def write_nccl_text(path, run, rows, factor):
    """rows (size, time_us or None, busbw) in nccl-tests' layout, with a
    '#  Rank' line per rank, for hccn-calibrate."""
    n = run["hardware"]["ranks"]
    with open(path, "w") as f:
        f.write("# nThread 1 nGpus %d minBytes %d maxBytes %d (from "
                "measurements.json: %s)\n#\n" % (gpus_per_thread(run),
                                                 rows[0][0], rows[-1][0],
                                                 run["id"]))
        for r in range(n):
            f.write("#  Rank %2d Group  0 Pid %d on host device %d\n"
                    % (r, 1000 + r, r % 8))
        f.write("#       size         count      type   redop    root     "
                "time   algbw   busbw #wrong\n")
        for size, t, bw in rows:
            if not t:
                t = size * factor / (bw * 1e9) * 1e6
            f.write("%12d %12d %9s %7s %7d %8.2f %7.2f %7.2f %6d\n"
                    % (size, size // 4, "float", "sum", -1, t,
                       size / (t * 1e-6) / 1e9, bw, 0))


def fit_family(build, config, members, runs, rows_of, sets_of, factor_of,
               tmp, tag):
    """Fits on members (run ids) and returns the fitted topology's path."""
    args = [os.path.join(build, "hccn-calibrate"), "-t", config,
            "--sweeps", "3", "-o", os.path.join(tmp, tag + ".json")]
    multi = any(runs[m]["hardware"]["nodes"] > 1 for m in members)
    args += ["--fit", ",".join(FIT_INTRA + (FIT_NET if multi else []))]
    for m in members:
        rows = [r for r in rows_of(m) if r[0] <= FIT_MAX][::3]
        path = os.path.join(tmp, "%s-%s.txt" % (tag, m))
        write_nccl_text(path, runs[m], rows, factor_of(m))
        args.append("%s:%s%s" % (runs[m]["collective"], path,
                                 "".join("@" + s for s in sets_of(m))))
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("hccn-calibrate failed: %s"
                           % out.stderr.strip()[-300:])
    fitted = {}
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[3] == "->":
            fitted[parts[1]] = float(parts[4])
    return os.path.join(tmp, tag + ".json"), fitted


def families(specs, present, rows_of=None):
    """family -> its run ids (those in the measurements; with rows_of,
    those with sizes the fit uses: a run that published only large sizes
    says nothing of launch and per-step costs)."""
    fam = {}
    for rid, spec in specs.items():
        if rid in present and (rows_of is None or
                               any(r[0] <= FIT_MAX for r in rows_of(rid))):
            fam.setdefault(spec["family"], []).append(rid)
    return fam


def leave_one_out(build, specs, runs, rows_of, factor_of, predict, tmp,
                  progress):
    sets_of = lambda rid: (specs[rid]["sets"] +  # noqa: E731
                           specs[rid].get("thread_sets", []))
    """One row per left-out run: (family, run, the fitted parameters, its
    rows predicted with the fit)."""
    out = []
    for fam, ids in sorted(families(specs, runs, rows_of).items()):
        if len(ids) < 3:
            continue
        for left in ids:
            members = [m for m in ids if m != left]
            progress("leave-one-out %s: fit without %s" % (fam, left))
            topo, fitted = fit_family(build, specs[left]["config"], members,
                                      runs, rows_of, sets_of, factor_of,
                                      tmp, "loo-" + left)
            rows = predict(left, topo, PREDICT_MAX)
            out.append((fam, left, fitted, rows))
    return out


def strip_software(config, tmp):
    """A copy of config without "stack" and with "software" emptied (a
    model of no cost, bit for bit no model's, kept so that a run's
    software.ranks_per_thread edit has its object): the links alone, as
    before the software model."""
    with open(config) as f:
        doc = json.load(f)
    doc.pop("stack", None)
    if "software" in doc:
        doc["software"] = {}
    path = os.path.join(tmp, "nosw-" + os.path.basename(config))
    with open(path, "w") as f:
        json.dump(doc, f)
    return path
