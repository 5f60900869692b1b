#!/usr/bin/python3
"""Step 2: gradient clipping by the global norm of sharded gradients.

After step 1 every rank held all the averaged gradients. Here each rank
keeps only its shard (reduce_scatter, as ZeRO-style optimizers do), so no
rank sees the whole gradient: the global L2 norm is the square root of an
allreduce of the ranks' local sums of squares. Every rank then clips its
shard by the same factor and the shards are gathered back (allgather).

    /usr/bin/python3 python/examples/step2_global_norm.py [--topology FILE]
"""
import argparse

from _needs import hccn, numpy as np  # numpy and hccn, checked first

PARAMS = 1 << 20
MAX_NORM = 100.0


def gradient(rank):
    return np.random.default_rng(rank).standard_normal(PARAMS).astype(
        np.float32)


def clip_step():
    hccn.init()
    rank = hccn.get_rank()
    grad = hccn.Tensor(gradient(rank))
    shard = hccn.reduce_scatter(grad, op=hccn.ReduceOp.SUM)  # my 1/n, summed
    t_rs = hccn.last_duration()

    local = shard.cpu().numpy().astype(np.float64)
    sq = hccn.Tensor(np.array([np.dot(local, local)]))
    hccn.allreduce(sq)                                       # sum of squares
    norm = float(np.sqrt(sq.cpu().numpy()[0]))
    t_norm = hccn.last_duration()

    scale = min(1.0, MAX_NORM / (norm + 1e-6))
    clipped = hccn.Tensor(shard.cpu().numpy() * np.float32(scale))
    full = hccn.allgather(clipped)
    t_ag = hccn.last_duration()
    return norm, scale, full.cpu().numpy().reshape(-1), (t_rs, t_norm, t_ag)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default=hccn.DEFAULT_TOPOLOGY)
    args = ap.parse_args()

    res = hccn.run(clip_step, args.topology)
    n = len(res)
    total = np.sum([gradient(r).astype(np.float64) for r in range(n)], axis=0)
    want_norm = float(np.linalg.norm(total))
    for norm, _, _, _ in res:
        assert abs(norm - want_norm) <= 1e-5 * want_norm, (norm, want_norm)
    norm, scale, clipped, (t_rs, t_norm, t_ag) = res[0]
    assert np.allclose(clipped, total * scale, rtol=1e-4, atol=1e-4)

    print("ranks: %d, gradient: %d fp32" % (n, PARAMS))
    print("global norm %.3f (numpy: %.3f), clip factor %.4f" %
          (norm, want_norm, scale))
    print("reduce_scatter %.1f us, norm allreduce %.1f us, allgather %.1f us"
          % (t_rs * 1e6, t_norm * 1e6, t_ag * 1e6))
    print("every rank agrees on the norm; clipped gradient matches numpy")


if __name__ == "__main__":
    main()
