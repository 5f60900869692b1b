#!/usr/bin/python3
"""Checks a trace written by hccn-perf --trace (used by test_hccn_trace.sh).

    trace_check.py TRACE PERF_JSON PERF_STDOUT [--ring S P] [--phases A,B,..]

Always: the file is Chrome trace JSON; slices on one thread nest properly;
every phase lies inside its operation and every step inside its phase; per
link, the segments' bytes add up to dur x rate and to the link totals of
--json and of the printed summary. --ring S P: every allreduce of S bytes
(forced ring on a P-NPU ring) moves exactly 2(P-1)/P S bytes over each
link NPU i -> NPU i+1 at full rate and nothing over any other link.
--phases: the phases of the S-byte operations, in order of their numbers.
"""
import json
import sys

LANE = 1000000


def ps(us):
    """Microseconds as written (six decimals) -> whole picoseconds."""
    return round(us * 1e6)


def close(got, want, rel, abs_tol=0.0):
    return abs(got - want) <= rel * abs(want) + abs_tol


def load(path):
    doc = json.load(open(path))
    assert doc["displayTimeUnit"] == "ns", doc.get("displayTimeUnit")
    ev = doc["traceEvents"]
    assert doc["otherData"]["dropped"] == 0, doc["otherData"]
    procs = {e["pid"]: e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "process_name"}
    assert procs == {1: "devices", 2: "links"}, procs
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev
             if e["ph"] == "M" and e["name"] == "thread_name"}
    xs = [e for e in ev if e["ph"] == "X"]
    for e in xs:
        e["b"] = ps(e["ts"])
        e["e"] = e["b"] + ps(e["dur"])
        assert e["dur"] >= 0 and (e["pid"], e["tid"]) in names, e
    return xs, names


def check_nesting(xs):
    """Slices of one thread are disjoint or nested (what viewers draw)."""
    by_tid = {}
    for e in xs:
        by_tid.setdefault((e["pid"], e["tid"]), []).append(e)
    for key, evs in by_tid.items():
        evs.sort(key=lambda e: (e["b"], -e["e"]))
        stack = []
        for e in evs:
            while stack and stack[-1]["e"] <= e["b"] and stack[-1]["e"] < e["e"]:
                stack.pop()
            assert not stack or e["e"] <= stack[-1]["e"], (key, stack[-1], e)
            stack.append(e)


def groups(xs):
    """{(rank, op number): [slices]} of the devices process."""
    g = {}
    for e in xs:
        if e["pid"] == 1:
            g.setdefault((e["tid"] % LANE, e["args"]["op"]), []).append(e)
    return g


def check_containment(g):
    for key, evs in g.items():
        ops = [e for e in evs if e["cat"] in ("op",)]
        assert len(ops) == 1, (key, ops)
        op = ops[0]
        phases = {e["args"]["phase"]: e for e in evs if e["cat"] == "phase"}
        assert len(phases) == sum(e["cat"] == "phase" for e in evs), key
        for p in phases.values():
            assert op["b"] <= p["b"] and p["e"] <= op["e"], (key, op, p)
        for s in (e for e in evs if e["cat"] == "step"):
            outer = phases.get(s["args"]["phase"], op)
            assert outer["b"] <= s["b"] and s["e"] <= outer["e"], (key, outer, s)
            assert outer is op or s["args"]["phase"] != 0, s


def link_totals(xs):
    """{link name: (bytes, sum dur x rate, busy us)} from the links process."""
    tot = {}
    for e in xs:
        if e["pid"] != 2:
            continue
        name = e["name_link"]
        b, r, d = tot.get(name, (0.0, 0.0, 0.0))
        a = e["args"]
        tot[name] = (b + a["bytes"], r + e["dur"] * a["rate_GBps"] * 1e3,
                     d + e["dur"])
    return tot


def summaries(path):
    """The printed summaries, one per collective: [{link: (bytes, busy us,
    active us)}]."""
    blocks, on = [], False
    for line in open(path):
        if line.startswith("# Link utilisation"):
            blocks.append({})
            on = True
            continue
        f = line[1:].split()
        if on and line.startswith("#   ") and f[0] != "link":
            blocks[-1][f[0]] = (float(f[2]), float(f[4]), float(f[5]))
        elif on and not line.startswith("#   "):
            on = False
    return blocks


def check_links(xs, names, perf_json, out):
    for e in xs:
        if e["pid"] == 2:
            e["name_link"] = names[(2, e["tid"])]
    tot = link_totals(xs)
    assert tot, "no link carried bytes"
    for name, (b, r, _) in tot.items():
        assert close(r, b, 1e-6, 1e-3), (name, r, b)
    doc = json.load(open(perf_json))
    want = {}
    for blk in doc["links"]:
        for l in blk["links"]:
            w = want.setdefault(l["link"], [0.0, 0.0])
            w[0] += l["bytes"]
            w[1] += l["active_us"]
    assert set(want) == set(tot), set(want) ^ set(tot)
    for name, (b, _, d) in tot.items():
        assert close(b, want[name][0], 1e-9), (name, b, want[name])
        assert close(d, want[name][1], 1e-9, 1e-5), (name, d, want[name])
    blocks = summaries(out)
    assert blocks and all(blocks), "no summary rows"
    # With one table, its summary covers the whole trace.
    printed = blocks[0] if len(blocks) == 1 else {}
    for name, (b, busy, active) in printed.items():
        assert close(b, tot[name][0], 1e-12, 0.5), (name, b, tot[name])
        assert close(active, tot[name][2], 0, 1.5e-3), (name, active, tot[name])
    check_printed(doc, blocks)
    if len(blocks) == 1:
        end = max(e["e"] for e in xs)
        assert end <= ps(doc["links"][0]["span_us"]) + 1, (end, doc["links"])
    return tot


def check_printed(doc, blocks):
    """Each printed summary shows its collective's busiest links, with the
    figures of --json; busy = bytes / bandwidth, util = busy / span."""
    assert len(blocks) == len(doc["links"]), (len(blocks), len(doc["links"]))
    for blk, rows in zip(doc["links"], blocks):
        by = {l["link"]: l for l in blk["links"]}
        busiest = sorted(by.values(), key=lambda l: (-l["busy_us"], l["link"]))
        assert list(rows) == [l["link"] for l in busiest[:len(rows)]], rows
        assert len(rows) == min(8, len(by)), (len(rows), len(by))
        for name, (b, busy, active) in rows.items():
            l = by[name]
            assert close(b, l["bytes"], 0, 0.5), (name, b, l)
            assert close(busy, l["busy_us"], 0, 1.5e-3), (name, busy, l)
            assert close(active, l["active_us"], 0, 1.5e-3), (name, active, l)
        for l in by.values():
            assert close(l["busy_us"], l["bytes"] / (l["bw_GBps"] * 1e3),
                         1e-9), l
            assert close(l["util"], l["busy_us"] / blk["span_us"], 1e-9), l


def ring_windows(g, size):
    """Per S-byte allreduce: its window [first start, last end] (ps)."""
    win = {}
    for evs in g.values():
        op = next(e for e in evs if e["cat"] == "op")
        if op["name"] == "allreduce" and op["args"]["bytes"] == size:
            w = win.setdefault(op["b"], [op["b"], op["e"]])
            w[1] = max(w[1], op["e"])
    return sorted(win.values())


def check_ring(xs, names, g, size, p):
    wins = ring_windows(g, size)
    assert len(wins) >= 2, wins
    want = 2 * (p - 1) / p * size
    for w0, w1 in wins:
        moved = {}
        for e in xs:
            if e["pid"] != 2 or e["e"] <= w0 or e["b"] >= w1:
                continue
            assert w0 <= e["b"] and e["e"] <= w1, ("straddles", e, w0, w1)
            a = e["args"]
            m = moved.setdefault(e["name_link"], [0.0, 0.0])
            m[0] += a["bytes"]
            m[1] += e["dur"]
            assert abs(a["util"] - 1.0) < 1e-9, ("not saturated", e)
        ring = {"node0.npu%d->node0.npu%d" % (i, (i + 1) % p) for i in range(p)}
        assert set(moved) == ring, sorted(moved)
        for name, (b, busy_us) in moved.items():
            assert close(b, want, 1e-9), (name, b, want)
            bw = next(e["args"]["rate_GBps"] for e in xs
                      if e["pid"] == 2 and e["name_link"] == name) * 1e9
            assert close(busy_us * 1e-6 * bw, b, 1e-6), (name, busy_us, b)
    # Each rank sends 2(P-1) blocks of S/P bytes per operation.
    for evs in g.values():
        op = next(e for e in evs if e["cat"] == "op")
        if op["args"]["bytes"] != size:
            continue
        sent = [e["args"]["bytes"] for e in evs if e["name"] == "send"]
        assert len(sent) == 2 * (p - 1) and sum(sent) == want, (op, sent)
        rank = op["tid"] % LANE
        assert all(e["args"]["peer"] == (rank + 1) % p
                   for e in evs if e["name"] == "send"), op


def check_phases(g, size, phases):
    n = 0
    for evs in g.values():
        op = next(e for e in evs if e["cat"] == "op")
        if op["args"]["bytes"] != size:
            continue
        got = [e["name"] for e in sorted((e for e in evs if e["cat"] == "phase"),
                                         key=lambda e: e["args"]["phase"])]
        assert got == phases, (op, got, phases)
        n += 1
    assert n > 0, "no operation of %d bytes" % size


def main(argv):
    trace, perf_json, out = argv[1:4]
    xs, names = load(trace)
    check_nesting(xs)
    g = groups(xs)
    check_containment(g)
    check_links(xs, names, perf_json, out)
    rest = argv[4:]
    while rest:
        if rest[0] == "--ring":
            check_ring(xs, names, g, int(rest[1]), int(rest[2]))
            rest = rest[3:]
        elif rest[0] == "--phases":
            check_phases(g, int(rest[1]), rest[2].split(","))
            rest = rest[3:]
        else:
            raise SystemExit("unknown option " + rest[0])
    print("ok: %d slices, %d groups" % (len(xs), len(g)))


if __name__ == "__main__":
    main(sys.argv)
