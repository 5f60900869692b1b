#!/usr/bin/python3
"""Step 1: data-parallel gradient allreduce, overlapped with backward compute.

Every rank computes the gradients of a small model layer by layer, from the
last layer to the first (simulated with hccn.compute). As soon as a layer's
gradient is ready its allreduce is posted asynchronously, so it runs while
the next layer's backward pass computes; the rank waits for all of them at
the end. The example prints how much communication the overlap hid.

    /usr/bin/python3 python/examples/step1_allreduce_overlap.py [--topology FILE]
"""
import argparse

from _needs import hccn, numpy as np  # numpy and hccn, checked first

# (name, parameters, backward compute in simulated seconds)
LAYERS = [("embed", 4 << 20, 300e-6), ("block1", 2 << 20, 400e-6),
          ("block2", 2 << 20, 400e-6), ("head", 1 << 20, 200e-6)]


def gradients(rank):
    """This rank's gradients (its mini-batch differs from the others')."""
    rng = np.random.default_rng(rank)
    return {name: rng.standard_normal(size).astype(np.float32)
            for name, size, _ in LAYERS}


def train_step(overlap):
    hccn.init()
    grads = gradients(hccn.get_rank())
    start = hccn.time()
    pending = []
    for name, _, backward_s in reversed(LAYERS):
        hccn.compute(backward_s)                  # backward of this layer
        t = hccn.Tensor(grads[name])
        fut = hccn.allreduce(t, op=hccn.ReduceOp.AVG, async_op=True)
        if not overlap:
            fut.wait()
        pending.append((name, fut))
    comm = 0.0
    averaged = {}
    for name, fut in pending:
        averaged[name] = fut.wait().cpu().numpy()
        comm += fut.duration()
    return hccn.time() - start, comm, averaged


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default=hccn.DEFAULT_TOPOLOGY)
    args = ap.parse_args()

    serial = hccn.run(train_step, args.topology, args=(False,))
    overlapped = hccn.run(train_step, args.topology, args=(True,))
    n = len(overlapped)
    step_serial, comm, _ = serial[0]
    step_overlap, _, averaged = overlapped[0]
    compute = sum(s for _, _, s in LAYERS)

    # Check against numpy: the mean of every rank's gradients.
    for name, _, _ in LAYERS:
        want = np.mean([gradients(r)[name] for r in range(n)], axis=0)
        assert np.allclose(averaged[name], want, rtol=1e-5, atol=1e-6), name

    print("ranks: %d, parameters: %.1f M fp32" %
          (n, sum(p for _, p, _ in LAYERS) / 1e6))
    print("backward compute:           %8.1f us" % (compute * 1e6))
    print("allreduce time (sum):       %8.1f us" % (comm * 1e6))
    print("step, wait after each layer: %7.1f us" % (step_serial * 1e6))
    print("step, overlapped:           %8.1f us  (%.0f%% of the "
          "communication hidden)" % (step_overlap * 1e6, 100.0 * min(
              1.0, (step_serial - step_overlap) / comm)))
    print("averaged gradients match numpy")


if __name__ == "__main__":
    main()
