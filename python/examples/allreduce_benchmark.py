#!/usr/bin/python3
"""Simulated allreduce bandwidth per message size, on 2 and on 16 NPUs.

For each size (fp32, sum) every rank runs the allreduce `--iters` times;
the reported time is the slowest rank's mean simulated duration. Bandwidths
follow nccl-tests: algbw = bytes / time, busbw = algbw * 2 (n - 1) / n.
With matplotlib importable (Debian: python3-matplotlib), --plot FILE.png
draws busbw against size for both clusters.

    /usr/bin/python3 python/examples/allreduce_benchmark.py [--max-bytes N] [--plot busbw.png]

The 2-NPU cluster is one node of configs/default.json cut to two NPUs
(56 GB/s HCCS link); the 16-NPU one is configs/default.json (2 nodes x 8).
"""
import argparse
import importlib
import sys
import time

from _needs import hccn, numpy as np  # numpy and hccn, checked first

TWO_NPUS = {
    "version": 1,
    "name": "two-npus",
    "description": "One server of configs/default.json with two NPUs",
    "node_types": [{
        "name": "server", "count": 1,
        "npu": {"count": 2, "arena_MiB": 1024, "reduce_bw_GBps": 200},
        "fabric": {"type": "mesh", "bw_GBps": 56, "lat_us": 1.5},
    }],
}


def sizes(lo, hi, factor):
    s = lo
    while s <= hi:
        yield s
        s *= factor


def sweep(byte_sizes, iters, name):
    """Rank function: mean simulated duration per size. Rank 0 prints a
    progress line per size, with an estimate of the time left."""
    out = []
    t0 = time.monotonic()
    for k, nbytes in enumerate(byte_sizes):
        t = hccn.empty(max(nbytes // 4, 1), np.float32)
        total = 0.0
        for _ in range(iters):
            hccn.allreduce(t)
            total += hccn.last_duration()
        t.free()
        out.append(total / iters)
        if hccn.get_rank() == 0:
            spent = time.monotonic() - t0
            print("# %s: [%d/%d] %d B done (%.1f s, about %.0f s left)"
                  % (name, k + 1, len(byte_sizes), nbytes, spent,
                     spent / (k + 1) * (len(byte_sizes) - k - 1)),
                  file=sys.stderr, flush=True)
    return out


def bench(name, topology, byte_sizes, iters):
    per_rank = hccn.run(sweep, topology, args=(byte_sizes, iters, name))
    n = len(per_rank)
    rows = []
    print("# %s: fp32 sum allreduce, simulated time" % name)
    print("# %12s %12s %12s %12s %12s" % ("size(B)", "count", "time(us)",
                                          "algbw(GB/s)", "busbw(GB/s)"))
    for i, nbytes in enumerate(byte_sizes):
        t = max(r[i] for r in per_rank)
        algbw = nbytes / t / 1e9
        busbw = algbw * 2 * (n - 1) / n
        rows.append((nbytes, t, algbw, busbw))
        print("  %12d %12d %12.2f %12.3f %12.3f" %
              (nbytes, nbytes // 4, t * 1e6, algbw, busbw))
    return rows


def plot(results, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("# matplotlib is not installed: no plot (Debian: "
              "apt-get install python3-matplotlib)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, rows in results.items():
        ax.plot([r[0] for r in rows], [r[3] for r in rows], marker="o",
                label=name)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("busbw (GB/s, simulated)")
    ax.set_title("hccn allreduce, fp32 sum")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print("# plot written to %s" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-bytes", type=int, default=8)
    ap.add_argument("--max-bytes", type=int, default=64 << 20)
    ap.add_argument("--factor", type=int, default=4)
    ap.add_argument("--iters", type=int, default=2)
    ap.add_argument("--plot", metavar="FILE.png",
                    help="write a busbw plot (needs matplotlib)")
    args = ap.parse_args()
    if args.min_bytes < 4 or args.factor < 2 or args.max_bytes < args.min_bytes:
        ap.error("need 4 <= --min-bytes <= --max-bytes and --factor >= 2")
    if args.plot:       # before the sweep, not after it
        try:
            importlib.import_module("matplotlib")
        except ImportError:
            ap.error("--plot needs matplotlib, which this interpreter (%s) "
                     "cannot import: run Debian's /usr/bin/python3 after "
                     "apt-get install -y python3-matplotlib" % sys.executable)

    byte_sizes = list(sizes(args.min_bytes, args.max_bytes, args.factor))
    results = {}
    for name, topology in (("2 NPUs, 1 node", TWO_NPUS),
                           ("16 NPUs, 2 nodes x 8", "configs/default.json")):
        results[name] = bench(name, topology, byte_sizes, args.iters)
    if args.plot:
        plot(results, args.plot)


if __name__ == "__main__":
    main()
