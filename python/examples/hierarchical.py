#!/usr/bin/python3
"""Hierarchical collectives built from groups: intra-node and inter-node.

On a cluster of servers (configs/default.json: 2 nodes x 8 NPUs), NPUs of a
node talk over fast intra-node links and nodes over slower NICs. Two
groups per rank express the hierarchy:

  intra: the NPUs of my node          (new_group of the node's ranks)
  inter: the NPUs with my local index  (split_group by local rank)

1. Inter-node broadcast: node 0's NPUs hold the initial parameters (each a
   replica); every inter group broadcasts from its node-0 member, so all
   NICs carry a copy at once.
2. Hierarchical allreduce: reduce_scatter inside the node, allreduce of
   the 1/8 shard across nodes, allgather inside the node. The result is
   checked against numpy and its time compared with a flat allreduce.

    /usr/bin/python3 python/examples/hierarchical.py [--topology FILE] [--mib N]
"""
import argparse

from _needs import hccn, numpy as np  # numpy and hccn, checked first


def make_groups(per_node):
    """intra (my node) and inter (my local index) groups. Group creation is
    collective: every rank takes part in every new_group call."""
    intra = None
    for first in range(0, hccn.get_world_size(), per_node):
        g = hccn.new_group(range(first, first + per_node))
        if g.is_member:
            intra = g
    inter = hccn.split_group(color=hccn.local_rank(), key=hccn.node())
    return intra, inter


def step(count, per_node):
    world = hccn.init()
    intra, inter = make_groups(per_node)

    # 1. Parameters from node 0 to every node: one broadcast per inter group.
    params = np.full(count, 0.5, np.float32) if hccn.node() == 0 else \
        np.zeros(count, np.float32)
    p = hccn.Tensor(params)
    hccn.broadcast(p, src=0, group=inter)
    t_bcast = hccn.last_duration()
    got_params = bool(np.all(p.cpu().numpy() == 0.5))

    # 2. Hierarchical allreduce of a gradient.
    grad = np.arange(count, dtype=np.float32) % 97 * (hccn.device_id() + 1)
    g = hccn.Tensor(grad)
    shard = hccn.reduce_scatter(g, group=intra)
    t1 = hccn.last_duration()
    hccn.allreduce(shard, group=inter)
    t2 = hccn.last_duration()
    full = hccn.allgather(shard, group=intra)
    t3 = hccn.last_duration()

    # The same allreduce on the whole world, for comparison.
    flat = hccn.Tensor(grad)
    hccn.allreduce(flat, group=world)
    t_flat = hccn.last_duration()
    same = bool(np.array_equal(full.cpu().numpy().reshape(-1),
                               flat.cpu().numpy()))
    return (got_params, t_bcast, (t1, t2, t3), t_flat, same,
            full.cpu().numpy().reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", default=hccn.DEFAULT_TOPOLOGY)
    ap.add_argument("--mib", type=float, default=16.0,
                    help="gradient size in MiB (fp32)")
    args = ap.parse_args()

    with hccn.Cluster(args.topology) as cl:
        nodes, per_node = cl.nodes, cl.size // cl.nodes
        count = int(args.mib * (1 << 20) / 4) // per_node * per_node
        res = cl.run(step, args=(count, per_node))
    n = len(res)
    want = (np.arange(count, dtype=np.float64) % 97) * sum(range(1, n + 1))
    for got_params, _, _, _, same, full in res:
        assert got_params, "a node did not receive the parameters"
        assert same, "hierarchical and flat allreduce differ"
        assert np.array_equal(full, want.astype(np.float32))
    _, t_bcast, (t1, t2, t3), t_flat, _, _ = res[0]
    print("%d nodes x %d NPUs, gradient %.1f MiB fp32" %
          (nodes, per_node, count * 4 / (1 << 20)))
    print("inter-node broadcast of the parameters: %9.1f us" % (t_bcast * 1e6))
    print("hierarchical allreduce: intra reduce_scatter %.1f us + inter "
          "allreduce %.1f us + intra allgather %.1f us = %.1f us" %
          (t1 * 1e6, t2 * 1e6, t3 * 1e6, (t1 + t2 + t3) * 1e6))
    print("flat allreduce on the world:            %9.1f us" % (t_flat * 1e6))
    print("results equal numpy (sum over %d ranks)" % n)


if __name__ == "__main__":
    main()
