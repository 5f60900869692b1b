"""Compressed transfers: fp32 data crosses the links as fp16 or bf16.

The bound checked (docs/python.md): each value that crosses a link is
rounded to the wire type and partial sums are kept in fp32, and the result
is rounded to the wire type, so for n ranks an element of a compressed sum
is within (n + 1) * u * sum_i |x_i| of the exact sum (u = 2^-11 for fp16,
2^-8 for bf16), plus the wire type's smallest subnormal. MAX and MIN are
exact up to the final rounding: the wire-rounded max of the inputs.
"""
import numpy as np

import hccn
from support import DEFAULT16, LAPTOP4, RunCase, needs

UNIT = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}
TINY = {"float16": 2.0 ** -24, "bfloat16": 2.0 ** -133}


def wire_round(x, wire):
    x = np.asarray(x, np.float32)
    if wire == "float16":
        return x.astype(np.float16).astype(np.float32)
    return hccn.from_bfloat16(hccn.to_bfloat16(x))


def data(rank, count=3001):
    rng = np.random.default_rng(100 + rank)
    return (rng.standard_normal(count) * 10.0 ** rng.integers(
        -3, 3, count)).astype(np.float32)


def compressed_collectives(wire):
    cd = np.float16 if wire == "float16" else "bfloat16"
    r = hccn.get_rank()
    res = {}
    for op in (hccn.ReduceOp.SUM, hccn.ReduceOp.AVG, hccn.ReduceOp.MAX):
        t = hccn.Tensor(data(r))
        hccn.allreduce(t, op=op, compress_dtype=cd)
        res["allreduce", op.name] = t.cpu().numpy()
    n = hccn.get_world_size()
    t = hccn.Tensor(data(r, 250 * n))
    res["reduce_scatter"] = hccn.reduce_scatter(t, compress_dtype=cd)
    res["allgather"] = hccn.allgather(hccn.Tensor(data(r, 100)),
                                      compress_dtype=cd)
    return res


@needs("hccn_allreduce_opts", "hccn_reduce_scatter_opts",
       "hccn_allgather_opts")
class CompressionTest(RunCase):

    def check_bound(self, got, inputs, wire, what):
        n = len(inputs)
        exact = np.sum(np.stack(inputs).astype(np.float64), axis=0)
        mag = np.sum(np.abs(np.stack(inputs).astype(np.float64)), axis=0)
        bound = (n + 1) * UNIT[wire] * mag + n * TINY[wire]
        err = np.abs(got.astype(np.float64) - exact)
        worst = int(np.argmax(err - bound))
        self.assertTrue(np.all(err <= bound),
                        "%s: element %d off by %g > bound %g" %
                        (what, worst, err[worst], bound[worst]))
        # Not silently uncompressed: fp32 sums keep more than the wire has.
        self.assertTrue(np.any(got != exact.astype(np.float32)))

    def check_topology(self, topology, n):
        for wire in ("float16", "bfloat16"):
            res = self.run_ranks(compressed_collectives, topology,
                                 args=(wire,))
            ins = [data(r) for r in range(n)]
            for r in range(n):
                self.check_bound(res[r]["allreduce", "SUM"], ins, wire,
                                 "%s allreduce rank %d" % (wire, r))
                self.check_bound(res[r]["allreduce", "AVG"] * n, ins, wire,
                                 "%s avg rank %d" % (wire, r))
                np.testing.assert_array_equal(
                    res[r]["allreduce", "MAX"],
                    wire_round(np.max(np.stack(ins), axis=0), wire))
                blocks = [data(j, 250 * n)[250 * r:250 * (r + 1)]
                          for j in range(n)]
                self.check_bound(res[r]["reduce_scatter"].numpy(), blocks,
                                 wire, "%s reduce_scatter rank %d" % (wire, r))
                np.testing.assert_array_equal(
                    res[r]["allgather"].numpy(),
                    np.stack([wire_round(data(j, 100), wire)
                              for j in range(n)]))

    def test_four_ranks(self):
        self.check_topology(LAPTOP4, 4)

    def test_sixteen_ranks(self):
        self.check_topology(DEFAULT16, 16)

    def test_compression_shortens_the_transfer(self):
        def fn(cd):
            t = hccn.Tensor(np.ones(1 << 20, np.float32))
            hccn.allreduce(t, compress_dtype=cd)
            return hccn.last_duration()
        plain = self.run_ranks(fn, args=(None,))[0]
        half = self.run_ranks(fn, args=(np.float16,))[0]
        self.assertLess(half, 0.75 * plain)

    @needs("hccn_comm_set_compression", "hccn_comm_create")
    def test_group_setting_and_per_call_override(self):
        def fn():
            g = hccn.new_group([0, 1, 2, 3])
            g.set_compression(np.float16)
            x = np.full(4, 1.0 + 2.0 ** -20, np.float32)
            a = hccn.Tensor(x)
            hccn.allreduce(a, group=g)                  # fp16 on the wire
            b = hccn.Tensor(x)
            hccn.allreduce(b, group=g, compress_dtype=False)  # overridden
            return a.cpu().numpy()[0], b.cpu().numpy()[0]
        for a, b in self.run_ranks(fn):
            self.assertEqual(a, 4.0)
            self.assertEqual(b, np.float32(4.0 * (1.0 + 2.0 ** -20)))

    def test_needs_fp32(self):
        def fn():
            try:
                hccn.allreduce(hccn.Tensor(np.ones(4, np.int32)),
                               compress_dtype=np.float16)
            except hccn.InvalidArgumentError as e:
                return e.message
        for msg in self.run_ranks(fn):
            self.assertIn("compressed transfers need fp32", msg)

    def test_bad_compress_dtype(self):
        def fn():
            try:
                hccn.allreduce(hccn.Tensor(np.ones(4, np.float32)),
                               compress_dtype=np.int8)
            except hccn.InvalidArgumentError as e:
                return e.message
        for msg in self.run_ranks(fn):
            self.assertIn("compress_dtype must be", msg)
