"""The rank program of the op tests and its serial reference.

program(api, rank, n, dtypes) runs every supported operation through api
(tsupport.PGApi or DistApi) on deterministic data and returns what each
produced; expected(n, dtypes) computes, serially in torch from the same
data, what every rank must hold. Both return {case name: list of tensors}
per rank, so a test compares them with torch.equal (exact: the data are
small integers for floating types, and integers wrap alike)."""
import torch

from tsupport import OPS, data, reduce_ref

SHAPE = (3, 4)       # 12 elements: divisible by 2 and 4, not 16


def _ops_of(dtype):
    return [op for op in OPS if not (dtype == torch.bool and op == "AVG")]


def program(api, rank, n, dtypes):
    """Runs the operations on this rank; returns {case: [tensors]}."""
    out = {}
    for di, dt in enumerate(dtypes):
        for oi, op in enumerate(_ops_of(dt)):
            t = data(rank, SHAPE, dt, seed=100 * di + oi)
            api.all_reduce(t, op)
            out["allreduce/%s/%s" % (dt, op)] = [t]
        t = data(rank, (2, n), dt, seed=di)
        outs = [torch.empty_like(t) for _ in range(n)]
        api.all_gather(outs, t)
        out["allgather/%s" % dt] = outs
        flat = torch.empty((n * 2, n), dtype=dt)
        api.all_gather_base(flat, t)
        out["allgather_base/%s" % dt] = [flat]
        ins = [data(rank * n + j, (5,), dt, seed=di) for j in range(n)]
        rs = torch.empty(5, dtype=dt)
        api.reduce_scatter(rs, ins, "MAX")
        out["reduce_scatter/%s" % dt] = [rs]
        big = torch.cat(ins)
        rsb = torch.empty(5, dtype=dt)
        api.reduce_scatter_base(rsb, big, "SUM")
        out["reduce_scatter_base/%s" % dt] = [rsb]
        t = data(rank, SHAPE, dt, seed=di + 50)
        api.broadcast(t, n - 1)
        out["broadcast/%s" % dt] = [t]
        t = data(rank, SHAPE, dt, seed=di + 60)
        api.reduce(t, 1 % n, "SUM")
        out["reduce/%s" % dt] = [t]
    out.update(_rooted(api, rank, n))
    out.update(_alltoall(api, rank, n))
    out.update(_p2p_and_views(api, rank, n))
    return out


def _rooted(api, rank, n):
    out = {}
    t = data(rank, (4,), torch.float32, seed=7)
    outs = [torch.empty(4) for _ in range(n)] if rank == 0 else None
    api.gather(t, outs, 0)
    out["gather"] = outs if rank == 0 else [t]
    src = n - 1
    ins = ([data(100 + j, (3,), torch.int32, seed=8) for j in range(n)]
           if rank == src else None)
    t = torch.zeros(3, dtype=torch.int32)
    api.scatter(t, ins, src)
    out["scatter"] = [t]
    return out


def _alltoall(api, rank, n):
    out = {}
    t = data(rank, (2 * n, 3), torch.int64, seed=9)
    res = torch.empty_like(t)
    api.all_to_all_single(res, t)
    out["alltoall_single"] = [res]
    # rank r sends r + j + 1 rows to rank j
    isplit = [rank + j + 1 for j in range(n)]
    osplit = [j + rank + 1 for j in range(n)]
    t = data(rank, (sum(isplit), 2), torch.float32, seed=10)
    res = torch.empty((sum(osplit), 2))
    api.all_to_all_single(res, t, osplit, isplit)
    out["alltoall_splits"] = [res]
    ins = [data(rank * n + j, (j + 1,), torch.bfloat16, seed=11)
           for j in range(n)]
    outs = [torch.empty(rank + 1, dtype=torch.bfloat16) for _ in range(n)]
    api.all_to_all(outs, ins)
    out["alltoall_list"] = outs
    return out


def _p2p_and_views(api, rank, n):
    out = {}
    t = data(rank, (6,), torch.float16, seed=12)
    got = torch.empty(6, dtype=torch.float16)
    if n == 1:                               # no peer: nothing to move
        got.copy_(t)
    elif rank % 2 == 0:
        api.send(t, (rank + 1) % n)
        api.recv(got, (rank - 1) % n)
    else:
        api.recv(got, (rank - 1) % n)
        api.send(t, (rank + 1) % n)
    out["sendrecv"] = [got]
    api.barrier()
    base = data(rank, (4, 6), torch.float32, seed=13)
    view = base.t()[::2]                     # non-contiguous (3 x 4)
    api.all_reduce(view, "SUM")
    out["noncontiguous"] = [base]
    return out


def expected(n, dtypes):
    """{case: [tensors]} per rank, computed serially."""
    ranks = range(n)
    per = [dict() for _ in ranks]
    for di, dt in enumerate(dtypes):
        for oi, op in enumerate(_ops_of(dt)):
            ref = reduce_ref([data(r, SHAPE, dt, seed=100 * di + oi)
                              for r in ranks], op)
            for r in ranks:
                per[r]["allreduce/%s/%s" % (dt, op)] = [ref]
        ts = [data(r, (2, n), dt, seed=di) for r in ranks]
        ins = [[data(r * n + j, (5,), dt, seed=di) for j in range(n)]
               for r in ranks]
        bc = data(n - 1, SHAPE, dt, seed=di + 50)
        red = reduce_ref([data(r, SHAPE, dt, seed=di + 60) for r in ranks],
                         "SUM")
        for r in ranks:
            per[r]["allgather/%s" % dt] = list(ts)
            per[r]["allgather_base/%s" % dt] = [torch.cat(ts)]
            per[r]["reduce_scatter/%s" % dt] = [
                reduce_ref([ins[q][r] for q in ranks], "MAX")]
            per[r]["reduce_scatter_base/%s" % dt] = [
                reduce_ref([ins[q][r] for q in ranks], "SUM")]
            per[r]["broadcast/%s" % dt] = [bc]
            per[r]["reduce/%s" % dt] = [
                red if r == 1 % n else data(r, SHAPE, dt, seed=di + 60)]
    for r in ranks:
        per[r].update(_expected_rest(r, n))
    return per


def _expected_rest(r, n):
    ranks = range(n)
    e = {}
    gathered = [data(q, (4,), torch.float32, seed=7) for q in ranks]
    e["gather"] = gathered if r == 0 else [gathered[r]]
    e["scatter"] = [data(100 + r, (3,), torch.int32, seed=8)]
    blocks = [data(q, (2 * n, 3), torch.int64, seed=9).chunk(n)[r]
              for q in ranks]
    e["alltoall_single"] = [torch.cat(blocks)]
    parts = []
    for q in ranks:
        isplit = [q + j + 1 for j in range(n)]
        t = data(q, (sum(isplit), 2), torch.float32, seed=10)
        parts.append(t.split(isplit)[r])
    e["alltoall_splits"] = [torch.cat(parts)]
    e["alltoall_list"] = [data(q * n + r, (r + 1,), torch.bfloat16, seed=11)
                          for q in ranks]
    e["sendrecv"] = [data((r - 1) % n, (6,), torch.float16, seed=12)]
    base = data(r, (4, 6), torch.float32, seed=13)
    summed = reduce_ref([data(q, (4, 6), torch.float32, seed=13).t()[::2]
                         for q in ranks], "SUM")
    base.t()[::2] = summed
    e["noncontiguous"] = [base]
    return e


def compare(case, got, want):
    """Raises AssertionError naming the first case and rank that differ."""
    for r, (g, w) in enumerate(zip(got, want)):
        if sorted(g) != sorted(w):
            raise AssertionError("rank %d: cases %s, expected %s"
                                 % (r, sorted(g), sorted(w)))
        for name in w:
            a, b = g[name], w[name]
            if len(a) != len(b) or not all(
                    x.dtype == y.dtype and torch.equal(x, y)
                    for x, y in zip(a, b)):
                case.fail("rank %d, %s: got %s, expected %s"
                          % (r, name, a, b))
