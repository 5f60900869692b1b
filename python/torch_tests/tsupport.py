"""Shared helpers of the torch backend's tests: the package on sys.path,
topologies by world size, deterministic rank data, serial torch
references, and a process-group API that runs the same rank program on a
ProcessGroupHccn directly (one process, N rank threads) or through
torch.distributed (N processes)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch._C._distributed_c10d import (  # noqa: E402
    AllgatherOptions, AllreduceOptions, AllToAllOptions, BarrierOptions,
    BroadcastOptions, GatherOptions, ReduceOp, ReduceOptions,
    ReduceScatterOptions, ScatterOptions)

import hccn  # noqa: E402
import hccn.torch as ht  # noqa: E402

SOURCE = os.path.dirname(os.path.dirname(HERE))

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16,
          torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64,
          torch.bool]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]


def topology(n):
    """A topology of n NPUs: laptop-4, default (16), or a small dict."""
    if n == 4:
        return "configs/laptop-4.json"
    if n == 16:
        return "configs/default.json"
    return {"version": 1, "name": "test-%d" % n, "node_types": [{
        "name": "box", "count": 1,
        "npu": {"count": n, "arena_MiB": 64, "reduce_bw_GBps": 100},
        "fabric": {"type": "switch", "bw_GBps": 50, "lat_us": 1.0}}]}


def data(rank, shape, dtype, seed=0):
    """Deterministic tensor of a rank: small integers for floating types
    (every sum and product of up to 16 ranks is exact in any order), 0/1
    for bool, full-range values for integer types (sums wrap)."""
    g = torch.Generator().manual_seed(seed * 7919 + rank)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    if dtype.is_floating_point:
        return torch.randint(-2, 3, shape, generator=g).to(dtype)
    info = torch.iinfo(dtype)
    lo, hi = max(info.min, -2 ** 62), min(info.max, 2 ** 62)
    return torch.randint(lo, hi, shape, generator=g,
                         dtype=torch.int64).to(dtype)


def reduce_ref(tensors, op):
    """The reduction of the ranks' tensors computed serially in torch, with
    hccn's documented semantics: integers wrap, AVG of integers truncates
    toward zero, fp16/bf16 reduce through fp32 (exact here: small
    integers), bool SUM is OR and PRODUCT AND."""
    dtype, n = tensors[0].dtype, len(tensors)
    if dtype == torch.bool:
        s = torch.stack(tensors).to(torch.int64)
        return {"SUM": s.amax(0), "MAX": s.amax(0), "PRODUCT": s.amin(0),
                "MIN": s.amin(0)}[op].bool()
    if dtype.is_floating_point:
        s = torch.stack(tensors).to(torch.float64)
    else:
        s = torch.stack(tensors).to(torch.int64)
    if op == "MAX":
        return s.amax(0).to(dtype)
    if op == "MIN":
        return s.amin(0).to(dtype)
    if op == "PRODUCT":
        r = s[0]
        for x in s[1:]:
            r = (r * x).to(dtype).to(s.dtype)       # wraps as in C
        return r.to(dtype)
    total = s.sum(0).to(dtype)
    if op != "AVG":
        return total
    if dtype.is_floating_point:          # n is a power of two: exact
        return (total.to(torch.float64) / n).to(dtype)
    return torch.div(total.to(torch.int64), n,
                     rounding_mode="trunc").to(dtype)


def redop(name):
    return getattr(ReduceOp, name)


class PGApi:
    """torch.distributed's calls, made on a ProcessGroupHccn directly
    (ranks are its group ranks). Blocking unless async_op."""

    def __init__(self, pg):
        self.pg = pg

    def _done(self, work, async_op):
        if async_op:
            return work
        work.wait()
        return None

    def all_reduce(self, t, op="SUM", async_op=False):
        o = AllreduceOptions()
        o.reduceOp = redop(op)
        return self._done(self.pg.allreduce([t], o), async_op)

    def all_gather(self, outs, t, async_op=False):
        return self._done(self.pg.allgather([outs], [t], AllgatherOptions()),
                          async_op)

    def all_gather_base(self, out, t, async_op=False):
        return self._done(self.pg._allgather_base(out, t), async_op)

    def reduce_scatter(self, out, ins, op="SUM", async_op=False):
        o = ReduceScatterOptions()
        o.reduceOp = redop(op)
        return self._done(self.pg.reduce_scatter([out], [ins], o), async_op)

    def reduce_scatter_base(self, out, t, op="SUM", async_op=False):
        o = ReduceScatterOptions()
        o.reduceOp = redop(op)
        return self._done(self.pg._reduce_scatter_base(out, t, o), async_op)

    def broadcast(self, t, src, async_op=False):
        o = BroadcastOptions()
        o.rootRank = src
        return self._done(self.pg.broadcast([t], o), async_op)

    def reduce(self, t, dst, op="SUM", async_op=False):
        o = ReduceOptions()
        o.rootRank, o.reduceOp = dst, redop(op)
        return self._done(self.pg.reduce([t], o), async_op)

    def gather(self, t, outs, dst, async_op=False):
        o = GatherOptions()
        o.rootRank = dst
        return self._done(self.pg.gather([outs] if outs else [], [t], o),
                          async_op)

    def scatter(self, t, ins, src, async_op=False):
        o = ScatterOptions()
        o.rootRank = src
        return self._done(self.pg.scatter([t], [ins] if ins else [], o),
                          async_op)

    def all_to_all_single(self, out, t, osplit=None, isplit=None,
                          async_op=False):
        return self._done(self.pg.alltoall_base(
            out, t, osplit or [], isplit or [], AllToAllOptions()), async_op)

    def all_to_all(self, outs, ins, async_op=False):
        return self._done(self.pg.alltoall(outs, ins, AllToAllOptions()),
                          async_op)

    def send(self, t, dst):
        self.pg.send([t], dst, 0).wait()

    def recv(self, t, src):
        self.pg.recv([t], src, 0).wait()

    def barrier(self, async_op=False):
        return self._done(self.pg.barrier(BarrierOptions()), async_op)


class DistApi:
    """The same calls through torch.distributed (world ranks)."""

    def all_reduce(self, t, op="SUM", async_op=False):
        return dist.all_reduce(t, redop(op), async_op=async_op)

    def all_gather(self, outs, t, async_op=False):
        return dist.all_gather(outs, t, async_op=async_op)

    def all_gather_base(self, out, t, async_op=False):
        return dist._all_gather_base(out, t, async_op=async_op)

    def reduce_scatter(self, out, ins, op="SUM", async_op=False):
        return dist.reduce_scatter(out, ins, redop(op), async_op=async_op)

    def reduce_scatter_base(self, out, t, op="SUM", async_op=False):
        return dist._reduce_scatter_base(out, t, redop(op), async_op=async_op)

    def broadcast(self, t, src, async_op=False):
        return dist.broadcast(t, src, async_op=async_op)

    def reduce(self, t, dst, op="SUM", async_op=False):
        return dist.reduce(t, dst, redop(op), async_op=async_op)

    def gather(self, t, outs, dst, async_op=False):
        return dist.gather(t, outs, dst, async_op=async_op)

    def scatter(self, t, ins, src, async_op=False):
        return dist.scatter(t, ins, src, async_op=async_op)

    def all_to_all_single(self, out, t, osplit=None, isplit=None,
                          async_op=False):
        return dist.all_to_all_single(out, t, osplit, isplit,
                                      async_op=async_op)

    def all_to_all(self, outs, ins, async_op=False):
        return dist.all_to_all(outs, ins, async_op=async_op)

    def send(self, t, dst):
        dist.send(t, dst)

    def recv(self, t, src):
        dist.recv(t, src)

    def barrier(self, async_op=False):
        return dist.barrier(async_op=async_op)


def spmd(n, fn, timeout=60):
    """Runs fn(PGApi(pg), rank, n) on every rank thread of an n-NPU
    cluster, pg a ProcessGroupHccn made on that thread; returns the list
    of results by rank."""
    def main():
        pg = ht.new_process_group()
        return fn(PGApi(pg), pg.rank(), pg.size())
    return hccn.run(main, topology=topology(n), timeout=timeout)
