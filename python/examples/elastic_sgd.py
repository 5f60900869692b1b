#!/usr/bin/python3
"""Elastic data-parallel SGD: an NPU fails at step K and training goes on.

The Python twin of examples/elastic_sgd.c. Linear regression on 16 ranks;
the fault plan (the topology's "faults" key) fails one NPU in the middle
of step K's compute. The survivors' allreduce fails; they revoke the
group, shrink it to themselves, rescale the global batch and do step K
again. Their weights must equal, bit for bit, a serial numpy run of the
same steps with the same membership change: x is -1, 0 or 1 and residuals
are rounded to multiples of 2^-20, so every sum is exact in any order. It
prints the failure's simulated cost (lost work, detection, recovery).

    /usr/bin/python3 python/examples/elastic_sgd.py [--topology FILE]
        [--step K] [--npu NPU]
"""
import argparse
import json
import sys

from _needs import hccn, numpy as np  # numpy and hccn, checked first
from hccn.cluster import _find_topology

DIM = 512
BATCH = 4               # samples per rank per step
STEPS = 8
QBITS = 20
LR = 0.0625
T_COMPUTE = 200e-6      # simulated compute of one step
DETECT_S = 1e-3
INIT_S = 100e-6
HIDDEN = ((np.arange(DIM) % 7) - 3) / 8.0


def samples(step, pos):
    """The BATCH samples (x, y) of comm rank pos at step."""
    rng = np.random.default_rng(step * 1000 + pos)
    x = rng.integers(-1, 2, size=(BATCH, DIM)).astype(np.float64)
    return x, x @ HIDDEN


def local_grad(w, step, pos):
    x, y = samples(step, pos)
    r = x @ w - y
    r = np.ldexp(np.rint(np.ldexp(r, QBITS)), -QBITS)
    return x.T @ r


def update(w, g, p):
    return w - (LR / (BATCH * p)) * g


def reference(p, fail_step):
    w = np.zeros(DIM)
    for step in range(STEPS):
        n = p - 1 if fail_step is not None and step >= fail_step else p
        g = sum(local_grad(w, step, pos) for pos in range(n))
        w = update(w, g, n)
    return w


def train():
    g = hccn.init()
    w = np.zeros(DIM)
    clocks = {}
    step = 0
    while step < STEPS:
        t0 = hccn.time()
        grad = hccn.Tensor(local_grad(w, step, g.rank()))
        try:
            hccn.compute(T_COMPUTE)
        except hccn.FaultError:
            return None                       # this NPU failed: it leaves
        try:
            hccn.allreduce(grad, group=g)
        except (hccn.RemoteError, hccn.RevokedError, hccn.FaultError):
            clocks.setdefault("err", (step, hccn.time()))
            hccn.revoke(g)
            g = hccn.shrink(g)
            clocks.setdefault("shrunk", hccn.time())
            continue                          # the step again
        w = update(w, grad.cpu().numpy(), g.size())
        clocks.setdefault("step", hccn.time() - t0)
        step += 1
    return w, clocks


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default=hccn.DEFAULT_TOPOLOGY)
    ap.add_argument("--step", type=int, default=3)
    ap.add_argument("--npu", type=int, default=5)
    args = ap.parse_args()
    with open(_find_topology(args.topology)) as f:
        topo = json.load(f)

    with hccn.Cluster(topo) as cl:            # fault-free: the step time
        p = cl.size
        cl.set_recovery(DETECT_S, INIT_S)
        t_step = cl.run(train)[0][1]["step"]
    fail_at = args.step * t_step + T_COMPUTE / 2
    topo["faults"] = [{"kind": "npu_fail", "npu": args.npu,
                       "at_us": fail_at * 1e6}]
    with hccn.Cluster(topo) as cl:
        cl.set_recovery(DETECT_S, INIT_S)
        res = cl.run(train)

    want = reference(p, args.step)
    c = res[0][1] if args.npu != 0 else res[1][1]
    seen, t_err = c["err"]
    t_rec0 = max(t_err, fail_at + DETECT_S)
    print("elastic_sgd.py: %d ranks, %d weights, %d samples per rank, %d "
          "steps" % (p, DIM, BATCH, STEPS))
    print("NPU %d fails at %.3f us, in step %d; the survivors see it in step "
          "%d" % (args.npu, fail_at * 1e6, args.step, seen))
    print("cost of the failure (simulated): lost work %.3f us, detection "
          "%.3f us, agreement and new communicator %.3f us" %
          ((t_err - args.step * t_step) * 1e6, (t_rec0 - t_err) * 1e6,
           (c["shrunk"] - t_rec0) * 1e6))
    print("global batch %d -> %d samples" % (BATCH * p, BATCH * (p - 1)))
    bad = [r for r, x in enumerate(res)
           if r != args.npu and not np.array_equal(x[0], want)]
    if res[args.npu] is not None or bad or seen != args.step:
        print("FAIL: survivors %s differ from the serial reference" % bad)
        return 1
    print("the %d survivors' weights equal the serial reference bit for bit"
          % (p - 1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
