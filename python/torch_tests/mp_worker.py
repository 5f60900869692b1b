"""One process of the multi-process tests (started by hccn.torch.run or
torchrun): joins the job with init_process_group("hccn"), runs the parts
named on the command line and saves what they produced to OUTDIR/rankR.pt
for test_multiprocess.py to check.

    mp_worker.py OUTDIR PART[,PART...] [DTYPES]

Parts: ops (program.program through torch.distributed), subgroup, async,
times (the sequence of test_backend._torch_times), ddp (3 steps),
mismatch (an allreduce whose size differs on the last rank)."""
import os
import sys

from tsupport import DistApi, data  # sys.path first

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import hccn.torch as ht
import program
import test_backend


def part_ops(r, n, dtypes):
    return program.program(DistApi(), r, n, dtypes)


def part_subgroup(r, n):
    ranks = list(range(1, n, 2))                  # the odd ranks
    g = dist.new_group(ranks)
    t = data(r, (5,), torch.int32, seed=1)
    if r in ranks:
        dist.all_reduce(t, group=g)
        b = torch.full((3,), float(r))
        dist.broadcast(b, ranks[-1], group=g)      # a world rank
        return {"sub": [t, b]}
    return {"sub": [t]}


def part_async(r, n):
    ts = [data(r, (8,), torch.float32, seed=s) for s in range(3)]
    works = [dist.all_reduce(t, async_op=True) for t in ts]
    works[2].wait()
    chained = works[1].get_future().then(lambda f: f.value()[0] * 2)
    works[0].wait()
    flat = torch.empty(8 * n)
    dist.all_gather_into_tensor(flat, ts[0])
    return {"async": ts + [chained.wait(), flat]}


def part_times(r, n):
    count = 1 << 12
    t = torch.ones(count)
    out = []
    dist.all_reduce(t)
    out.append(ht.last_duration())
    dist._all_gather_base(torch.empty(count * n), t)
    out.append(ht.last_duration())
    dist._reduce_scatter_base(torch.empty(count // n), t)
    out.append(ht.last_duration())
    dist.broadcast(t, 1)
    out.append(ht.last_duration())
    w = dist.all_reduce(t, async_op=True)
    ht.compute(seconds=1e-4)
    w.wait()
    out.append((ht.last_duration(), ht.clock()))
    return {"times": out}


def part_ddp(r, n):
    m = test_backend._model()
    ddp = DDP(m, bucket_cap_mb=0.001)
    test_backend._train(ddp, 3, lambda s: test_backend._batch(r, s))
    return {"ddp": [p.detach().clone() for p in m.parameters()]}


def part_mismatch(r, n):
    try:
        dist.all_reduce(torch.ones(4 + (r == n - 1)))
    except ht.HccnBackendError as e:
        return {"mismatch": (e.rank, e.op, str(e))}
    return {"mismatch": None}


def main():
    outdir, parts = sys.argv[1], sys.argv[2].split(",")
    # times first: its durations are compared with a run that starts at
    # simulated time 0 (durations of later ops round differently).
    parts.sort(key=lambda p: p != "times")
    names = sys.argv[3].split(",") if len(sys.argv) > 3 else ["float32"]
    dtypes = [getattr(torch, d) for d in names]
    dist.init_process_group("hccn")
    r, n = dist.get_rank(), dist.get_world_size()
    result = {}
    for part in parts:
        if part == "ops":
            result["ops"] = part_ops(r, n, dtypes)
        else:
            result.update(globals()["part_" + part](r, n))
    torch.save(result, os.path.join(outdir, "rank%d.pt" % r))
    # Rank 0 holds torch's TCPStore: it must not exit while the others may
    # still poll it (new_group ends in a store barrier).
    if "mismatch" not in parts:
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
