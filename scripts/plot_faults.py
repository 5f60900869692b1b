#!/usr/bin/python3
"""Bar chart of an hccn-perf --sweep-faults table: busbw with each single
failure, most harmful first, against the fault-free busbw.

    hccn-perf allreduce -e 64M --no-data --sweep-faults nic > nic.txt
    /usr/bin/python3 scripts/plot_faults.py nic.txt nic.png [--top N]

Needs matplotlib (Debian: python3-matplotlib); without it, it says so and
exits 0 after checking the table. Exit 1 for a file that is no such table.
"""
import argparse
import sys


def read_table(path):
    """(title, base busbw, [(name, busbw or None)]) of a sweep table."""
    title, base, rows = None, None, []
    with open(path) as f:
        for line in f:
            if line.startswith("# hccn-perf"):
                title = line[2:].strip()
                continue
            if line.startswith("#") or not line.strip():
                continue
            cols = line.split()
            busbw = None if cols[3] == "fails" else float(cols[3])
            if cols[0] == "-":
                base = busbw
            else:
                rows.append((cols[1], busbw))
    if title is None or base is None:
        raise ValueError("%s: not an hccn-perf --sweep-faults table" % path)
    return title, base, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("png")
    ap.add_argument("--top", type=int, default=32,
                    help="the N most harmful failures (default 32)")
    args = ap.parse_args()
    try:
        title, base, rows = read_table(args.table)
    except (OSError, ValueError, IndexError) as e:
        print("plot_faults: %s" % e, file=sys.stderr)
        return 1
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_faults: matplotlib is not installed: no plot (Debian: "
              "python3-matplotlib)")
        return 0
    rows = rows[:args.top]
    names = [r[0] for r in rows]
    values = [r[1] if r[1] is not None else 0.0 for r in rows]
    colors = ["tab:red" if r[1] is None else "tab:blue" for r in rows]
    fig, ax = plt.subplots(figsize=(8, 0.25 * len(rows) + 1.5))
    ax.barh(range(len(rows)), values, color=colors)
    ax.axvline(base, color="black", linestyle="--", label="no failure")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("busbw (GB/s); red: the collective fails")
    ax.set_title(title, fontsize=8)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.png, dpi=100)
    print("plot_faults: %d cases plotted in %s" % (len(rows), args.png))
    return 0


if __name__ == "__main__":
    sys.exit(main())
