#!/usr/bin/env python3
"""What-if studies: busbw vs size curves from hccn-perf, plotted to PNG.

Requires Debian's python3-matplotlib (apt-get install python3-matplotlib);
nothing from pip. Runs hccn-perf (in place, which gives the same simulated
time as out of place for these collectives and moves half the bytes) and
draws one curve per series. A series is one of:

  - a config:          --configs configs/hgx-a100.json,configs/hgx-h100.json
  - a value of a field: --sweep 'node_types[0].nics.bw_GBps=24.5,49'
  - an algorithm:       --algos ring,mesh

Examples (docs/whatif.md walks through one study end to end):

  scripts/whatif.py allreduce -t configs/ascend-910b.json \\
      --set 'node_types[0].count=4' \\
      --sweep 'node_types[0].nics.bw_GBps=24.5,49' -b 1M -e 256M \\
      -o docs/img/whatif-910b-nic.png

It also prints the numbers as a Markdown table (--table FILE writes it).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_perf(args, config, extra, tmp):
    """Runs hccn-perf once; returns its records."""
    out = os.path.join(tmp, "whatif.json")
    cmd = [os.path.join(args.build, "hccn-perf"), args.collective, "-t",
           config, "-b", args.minbytes, "-e", args.maxbytes, "-f",
           str(args.factor), "-n", "1", "-w", "0", "--inplace"]
    for s in args.set or []:
        cmd += ["--set", s]
    cmd += extra
    print("+ hccn-perf " + " ".join(cmd[1:]), file=sys.stderr, flush=True)
    cmd += ["--json", out]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)["records"]


def collect(args):
    """{series label: [(size, busbw, time_us), ...]} in the order asked."""
    series = {}
    with tempfile.TemporaryDirectory() as tmp:
        if args.configs:
            for c in args.configs.split(","):
                recs = run_perf(args, c, [], tmp)
                series[os.path.basename(c)] = recs
        elif args.algos:
            for a in args.algos.split(","):
                series["algorithm " + a] = run_perf(args, args.topo,
                                                    ["--algo", a], tmp)
        else:
            extra = ["--sweep", args.sweep] if args.sweep else []
            for r in run_perf(args, args.topo, extra, tmp):
                key = ("%s=%s" % (r["sweep_path"], r["sweep_value"])
                       if r["sweep_path"] else os.path.basename(args.topo))
                series.setdefault(key, []).append(r)
    return {k: [(r["size"], r["busbw_GBps"], r["time_us"]) for r in v]
            for k, v in series.items()}


def human(n):
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return "%d%s" % (n >> k, unit)
    return str(n)


def table(series):
    names = list(series)
    sizes = sorted({s for v in series.values() for s, _, _ in v})
    lines = ["| size | " + " | ".join("%s busbw (GB/s)" % n for n in names) +
             (" | ratio |" if len(names) == 2 else " |"),
             "|---:|" + "---:|" * len(names) + ("---:|" if len(names) == 2
                                                else "")]
    for size in sizes:
        vals = [dict((s, b) for s, b, _ in series[n]).get(size) for n in
                names]
        row = "| %s | " % human(size) + " | ".join(
            "%.2f" % v if v is not None else "-" for v in vals)
        if len(names) == 2 and vals[0] and vals[1]:
            row += " | %.2fx" % (vals[1] / vals[0])
        lines.append(row + " |")
    return "\n".join(lines) + "\n"


def plot(series, args):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, pts in series.items():
        ax.semilogx([p[0] for p in pts], [p[1] for p in pts], "o-",
                    label=name)
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (GB/s, simulated)")
    ax.set_title(args.title or "%s on %s" % (args.collective,
                                             os.path.basename(args.topo)))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.output, dpi=90)


def main():
    ap = argparse.ArgumentParser(
        description="busbw vs size per config, sweep value or algorithm")
    ap.add_argument("collective")
    ap.add_argument("-t", "--topo", default=os.path.join(
        ROOT, "configs", "default.json"))
    ap.add_argument("--configs", help="comma-separated configs, one curve each")
    ap.add_argument("--sweep", help="PATH=V1,V2,...: one curve per value")
    ap.add_argument("--algos", help="comma-separated algorithms, one curve each")
    ap.add_argument("--set", action="append", help="PATH=VALUE for every run")
    ap.add_argument("-b", "--minbytes", default="1M")
    ap.add_argument("-e", "--maxbytes", default="64M")
    ap.add_argument("-f", "--factor", type=float, default=4)
    ap.add_argument("-o", "--output", default="whatif.png")
    ap.add_argument("--title")
    ap.add_argument("--table", help="also write the Markdown table here")
    ap.add_argument("--build", default=os.environ.get(
        "HCCN_BINARY_DIR", os.path.join(ROOT, "build")))
    args = ap.parse_args()
    if sum(bool(x) for x in (args.configs, args.sweep, args.algos)) > 1:
        ap.error("give one of --configs, --sweep, --algos")
    series = collect(args)
    text = table(series)
    print(text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    plot(series, args)
    print("wrote " + args.output)


if __name__ == "__main__":
    main()
