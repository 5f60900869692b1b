"""Every collective, for every dtype, equals the serial numpy reference."""
import numpy as np

import hccn
from support import (DEFAULT16, DTYPES, LAPTOP4, OPS, RunCase, dname,
                     rank_data, reduce_ref, switch_topology)

COUNT = 37          # odd, so no algorithm gets a round split


def _dev(a, dtype):
    return hccn.Tensor(a, dtype=dtype)


def _host(t):
    return t.cpu().numpy()


def all_collectives(dtypes, ops):
    """The rank function: runs each collective and returns its results,
    keyed by (collective, dtype name, op name)."""
    r, n = hccn.get_rank(), hccn.get_world_size()
    out = {}
    for dt in dtypes:
        key = dname(dt)
        for op in ops:
            t = _dev(rank_data(r, COUNT, dt, seed=op), dt)
            hccn.allreduce(t, op=op)
            out["allreduce", key, op.name] = _host(t)
            t = _dev(rank_data(r, n * 3, dt, seed=10 + op), dt)
            out["reduce_scatter", key, op.name] = _host(
                hccn.reduce_scatter(t, op=op))
        t = _dev(rank_data(r, COUNT, dt, seed=22), dt)
        out["allgather", key, None] = _host(hccn.allgather(t))
        t = _dev(rank_data(r, n * 4, dt, seed=23), dt)
        out["alltoall", key, None] = _host(hccn.alltoall(t))
    return out


def rooted_collectives(dtypes):
    """reduce to the last rank and broadcast from rank 1, per dtype."""
    r, n = hccn.get_rank(), hccn.get_world_size()
    out = {}
    for dt in dtypes:
        key = dname(dt)
        t = _dev(rank_data(r, COUNT, dt, seed=20), dt)
        hccn.reduce(t, dst=n - 1, op=hccn.ReduceOp.SUM)
        out["reduce", key, "SUM"] = _host(t)
        t = _dev(rank_data(r, COUNT, dt, seed=21), dt)
        hccn.broadcast(t, src=1)
        out["broadcast", key, None] = _host(t)
    return out


class CollectivesTest(RunCase):

    def check_all(self, topology, n, dtypes, ops):
        results = self.run_ranks(all_collectives, topology,
                                 args=(dtypes, ops))
        self.assertEqual(len(results), n)
        for dt in dtypes:
            key = dname(dt)
            for op in ops:
                ins = [rank_data(r, COUNT, dt, seed=op) for r in range(n)]
                want = reduce_ref(ins, op, dt)
                for r in range(n):
                    with self.subTest(coll="allreduce", dtype=key,
                                      op=op.name, rank=r):
                        np.testing.assert_array_equal(
                            results[r]["allreduce", key, op.name], want)
                ins = [rank_data(r, n * 3, dt, seed=10 + op)
                       for r in range(n)]
                want = reduce_ref(ins, op, dt)
                for r in range(n):
                    with self.subTest(coll="reduce_scatter", dtype=key,
                                      op=op.name, rank=r):
                        np.testing.assert_array_equal(
                            results[r]["reduce_scatter", key, op.name],
                            want[3 * r:3 * r + 3])
            self.check_moves(results, n, dt, key)

    def check_rooted(self, results, n, dt, key):
        ins = [rank_data(r, COUNT, dt, seed=20) for r in range(n)]
        want = reduce_ref(ins, hccn.ReduceOp.SUM, dt)
        for r in range(n):
            with self.subTest(coll="reduce", dtype=key, rank=r):
                got = results[r]["reduce", key, "SUM"]
                # Only the root's tensor changes.
                np.testing.assert_array_equal(got, want if r == n - 1
                                              else ins[r])
        src = rank_data(1, COUNT, dt, seed=21)
        for r in range(n):
            with self.subTest(coll="broadcast", dtype=key, rank=r):
                np.testing.assert_array_equal(
                    results[r]["broadcast", key, None], src)

    def check_moves(self, results, n, dt, key):
        ins = np.stack([rank_data(r, COUNT, dt, seed=22) for r in range(n)])
        for r in range(n):
            with self.subTest(coll="allgather", dtype=key, rank=r):
                got = results[r]["allgather", key, None]
                self.assertEqual(got.shape, (n, COUNT))
                np.testing.assert_array_equal(got, ins)
        ins = [rank_data(r, n * 4, dt, seed=23).reshape(n, 4)
               for r in range(n)]
        for r in range(n):
            with self.subTest(coll="alltoall", dtype=key, rank=r):
                want = np.concatenate([ins[j][r] for j in range(n)])
                np.testing.assert_array_equal(
                    results[r]["alltoall", key, None], want)

    def check_rooted_all(self, topology, n, dtypes):
        results = self.run_or_skip(
            "a rooted collective (broadcast, reduce) right after another "
            "(also hccn-perf broadcast -n 3)", rooted_collectives, topology,
            args=(dtypes,))
        for dt in dtypes:
            self.check_rooted(results, n, dt, dname(dt))

    def test_rooted_four_ranks(self):
        self.check_rooted_all(LAPTOP4, 4, DTYPES)

    def test_rooted_sixteen_ranks(self):
        self.check_rooted_all(DEFAULT16, 16, [np.float32, np.uint8])

    def test_four_ranks_every_dtype_and_op(self):
        self.check_all(LAPTOP4, 4, DTYPES, OPS)

    def test_three_ranks(self):
        self.check_all(switch_topology(3), 3,
                       [np.float32, hccn.BFLOAT16, np.int16],
                       [hccn.ReduceOp.SUM, hccn.ReduceOp.AVG,
                        hccn.ReduceOp.MAX])

    def test_sixteen_ranks_two_nodes(self):
        self.check_all(DEFAULT16, 16, [np.float32, np.int64, np.float16],
                       [hccn.ReduceOp.SUM, hccn.ReduceOp.MIN])

    def test_multidimensional_shapes(self):
        def fn():
            r = hccn.get_rank()
            a = np.arange(24, dtype=np.float32).reshape(8, 3) * (r + 1)
            t = hccn.Tensor(a)
            rs = hccn.reduce_scatter(t)
            ag = hccn.allgather(hccn.Tensor(a[:2]))
            hccn.allreduce(t)
            return t.cpu().numpy(), rs.cpu().numpy(), ag.cpu().numpy()
        res = self.run_ranks(fn)
        base = np.arange(24, dtype=np.float32).reshape(8, 3)
        for r, (full, block, gathered) in enumerate(res):
            np.testing.assert_array_equal(full, base * 10)
            self.assertEqual(block.shape, (2, 3))
            np.testing.assert_array_equal(block, base[2 * r:2 * r + 2] * 10)
            self.assertEqual(gathered.shape, (4, 2, 3))
            for j in range(4):
                np.testing.assert_array_equal(gathered[j], base[:2] * (j + 1))

    def test_send_recv_ring(self):
        def fn():
            r, n = hccn.get_rank(), hccn.get_world_size()
            mine = hccn.Tensor(np.full(5, r, np.int32))
            got = hccn.zeros(5, np.int32)
            if r % 2 == 0:
                hccn.send(mine, (r + 1) % n)
                hccn.recv(got, (r - 1) % n)
            else:
                hccn.recv(got, (r - 1) % n)
                hccn.send(mine, (r + 1) % n)
            return got.cpu().numpy()
        for r, got in enumerate(self.run_ranks(fn)):
            np.testing.assert_array_equal(got, np.full(5, (r - 1) % 4))

    def test_barrier_and_durations(self):
        def fn():
            hccn.compute(1e-3 * hccn.get_rank())
            hccn.barrier()
            after = hccn.time()
            t = hccn.Tensor(np.ones(1 << 16, np.float32))
            hccn.allreduce(t)
            return after, hccn.last_duration(), hccn.time()
        res = self.run_ranks(fn)
        for after, dur, end in res:
            # Nobody leaves the barrier before the slowest rank arrives.
            self.assertGreaterEqual(after, 3e-3)
            self.assertGreater(dur, 0.0)
            self.assertAlmostEqual(end, res[0][2], places=12)
        self.assertEqual(len({d for _, d, _ in res}), 1)
