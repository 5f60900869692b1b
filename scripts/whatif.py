#!/usr/bin/python3
"""What-if studies: busbw vs size curves from hccn-perf, plotted to PNG.

Runs with Debian's /usr/bin/python3; plotting needs python3-matplotlib
(apt-get install -y python3-matplotlib); nothing from pip. Both, and the
hccn-perf binary, are checked before anything runs. It runs hccn-perf
timing only (--no-data: the same simulated times as runs that move the
bytes, bit for bit, in a fraction of the wall time; --data moves them), in
place, and draws one curve per series. A series is one of:

  - a config:          --configs hgx-a100,hgx-h100
  - a value of a field: --sweep 'node_types[0].nics.bw_GBps=24.5,49'
  - an algorithm:       --algos ring,hier

Every point prints a progress line (with an estimate of the time left) on
stderr; the busbw table goes to stdout as Markdown (--table FILE writes it
too). Example (docs/whatif.md walks through it):

  scripts/whatif.py allreduce -t ascend-910b \\
      --set 'node_types[0].count=4' \\
      --sweep 'node_types[0].nics.bw_GBps=24.5,49' -b 1M -e 256M \\
      -o docs/img/whatif-910b-nic.png
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
UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def die(msg):
    sys.exit("whatif.py: " + msg)


def check_environment(args):
    """Fails at once, before any run, when something the study needs is
    missing: the hccn-perf binary, or matplotlib for the plot."""
    perf = os.path.join(args.build, "hccn-perf")
    if not os.access(perf, os.X_OK):
        die("no hccn-perf in %s: build it (./scripts/setup.sh hccn-perf) "
            "or give --build DIR" % args.build)
    if args.output is None:
        return
    try:
        importlib.import_module("matplotlib")
    except ImportError:
        die("plotting needs matplotlib, which this interpreter (%s) cannot "
            "import: run the script with Debian's /usr/bin/python3 after "
            "apt-get install -y python3-matplotlib, or leave out -o for "
            "the table only" % sys.executable)


def parse_size(text):
    """'64M' -> 67108864 (K, M, G: powers of 1024)."""
    unit = UNITS.get(text[-1:].upper(), 1)
    return int(float(text[:-1] if unit > 1 else text) * unit)


def count_sizes(args):
    lo, hi, n = parse_size(args.minbytes), parse_size(args.maxbytes), 0
    while lo <= hi:
        n += 1
        lo = int(lo * args.factor)
    return max(n, 1)


def human(n):
    for unit, k in (("G", 30), ("M", 20), ("K", 10)):
        if n >= 1 << k and n % (1 << k) == 0:
            return "%d%s" % (n >> k, unit)
    return str(n)


class Progress:
    """One stderr line per point: its number, what it is, and the time
    left at the mean pace so far."""

    def __init__(self, total):
        self.total, self.done, self.t0 = total, 0, time.monotonic()

    def point(self, what):
        self.done += 1
        spent = time.monotonic() - self.t0
        left = spent / self.done * max(self.total - self.done, 0)
        print("whatif: [%d/%d] %s (%.1f s, about %.0f s left)"
              % (self.done, self.total, what, spent, left),
              file=sys.stderr, flush=True)


def describe_row(line, extra):
    """'[PATH=VALUE ]SIZE: busbw X GB/s' for one row of hccn-perf's table
    (in place: ... time algbw busbw #wrong wall), or the row itself."""
    cols = line.split()
    sweep = extra[:1] == ["--sweep"]
    try:
        size = human(int(cols[1] if sweep else cols[0]))
        what = "%s=%s %s" % (extra[1].split("=")[0], cols[0], size) \
            if sweep else size
        return "%s: busbw %s GB/s" % (what, cols[-3])
    except (IndexError, ValueError):
        return line.strip()


def run_perf(args, config, extra, label, progress):
    """Runs hccn-perf once, a progress line per row; returns its records."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "whatif.json")
        cmd = [os.path.join(args.build, "hccn-perf"), args.collective, "-t",
               config, "-b", args.minbytes, "-e", args.maxbytes, "-f",
               str(args.factor), "-n", "1", "-w", "0", "--inplace"]
        if not args.data:
            cmd.append("--no-data")
        for s in args.set or []:
            cmd += ["--set", s]
        cmd += extra + ["--json", out]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        for line in proc.stdout:
            if line.strip() and not line.startswith("#"):
                progress.point(label + describe_row(line, extra))
        if proc.wait() != 0:
            die("hccn-perf failed (exit %d): %s" % (proc.returncode,
                                                     " ".join(cmd)))
        with open(out) as f:
            return json.load(f)["records"]


def collect(args):
    """{series label: [(size, busbw, time_us), ...]} in the order asked."""
    series = {}
    sizes = count_sizes(args)
    if args.configs:
        names = args.configs.split(",")
        progress = Progress(sizes * len(names))
        for c in names:
            label = os.path.basename(c)
            series[label] = run_perf(args, c, [], label + " ", progress)
    elif args.algos:
        algos = args.algos.split(",")
        progress = Progress(sizes * len(algos))
        for a in algos:
            label = "algorithm " + a
            series[label] = run_perf(args, args.topo, ["--algo", a],
                                     label + " ", progress)
    else:
        extra = ["--sweep", args.sweep] if args.sweep else []
        nvalues = len(args.sweep.split("=", 1)[1].split(",")) \
            if args.sweep else 1
        progress = Progress(sizes * nvalues)
        for r in run_perf(args, args.topo, extra, "", progress):
            key = ("%s=%s" % (r["sweep_path"], r["sweep_value"])
                   if r["sweep_path"] else os.path.basename(args.topo))
            series.setdefault(key, []).append(r)
    return {k: [(r["size"], r["busbw_GBps"], r["time_us"]) for r in v]
            for k, v in series.items()}


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
    ap.add_argument("-t", "--topo", default="default",
                    help="a config file or name (default: default)")
    ap.add_argument("--configs", help="comma-separated configs, one curve each")
    ap.add_argument("--sweep", help="PATH=V1,V2,...: one curve per value")
    ap.add_argument("--algos", help="comma-separated algorithms, one curve each")
    ap.add_argument("--set", action="append", help="PATH=VALUE for every run")
    ap.add_argument("-b", "--minbytes", default="1M")
    ap.add_argument("-e", "--maxbytes", default="64M")
    ap.add_argument("-f", "--factor", type=float, default=4)
    ap.add_argument("-o", "--output",
                    help="the plot (PNG); without it, the table only")
    ap.add_argument("--title")
    ap.add_argument("--table", help="also write the Markdown table here")
    ap.add_argument("--data", action="store_true",
                    help="move the bytes (default: timing only, same times)")
    ap.add_argument("--build", default=os.environ.get(
        "HCCN_BINARY_DIR", os.environ.get("BUILD_DIR",
                                          os.path.join(ROOT, "build"))))
    args = ap.parse_args()
    if sum(bool(x) for x in (args.configs, args.sweep, args.algos)) > 1:
        ap.error("give one of --configs, --sweep, --algos")
    if args.factor <= 1:
        ap.error("-f must be > 1")
    check_environment(args)
    series = collect(args)
    text = table(series)
    print(text)
    if args.table:
        with open(args.table, "w") as f:
            f.write(text)
    if args.output:
        plot(series, args)
        print("wrote " + args.output)


if __name__ == "__main__":
    main()
