"""The backend's behaviour in one process (N process groups on the rank
threads of hccn.run, or one through init_process_group with world size
1): async work and future chains, sub-groups, simulated times equal to the
binding's, DDP, compute and step summaries, and errors."""
import unittest

from tsupport import PGApi, data, spmd, topology  # sys.path first

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.nn.utils import skip_init

import hccn
import hccn.torch as ht
from hccn.torch import _backend


class AsyncAndFutures(unittest.TestCase):

    def test_async_waits_in_any_order_and_chains(self):
        def rank(api, r, n):
            ts = [data(r, (8,), torch.float32, seed=s) for s in range(3)]
            works = [api.all_reduce(t, "SUM", async_op=True) for t in ts]
            done_before = [w.is_completed() for w in works]
            works[2].wait()
            works[0].wait()
            fut = works[1].get_future()
            chained = fut.then(lambda f: f.value()[0] * 2).then(
                lambda f: f.value() + 1)
            last = chained.wait()
            g = api.all_gather_base(torch.empty(8 * n), ts[0],
                                    async_op=True).get_future()
            return done_before, ts, last, g.wait()[0], works[1].result()
        n = 4
        got = spmd(n, rank)
        sums = [sum(data(q, (8,), torch.float32, seed=s) for q in range(n))
                for s in range(3)]
        for r in range(n):
            done_before, ts, last, gathered, res = got[r]
            self.assertEqual(done_before, [False] * 3)
            for s in range(3):
                self.assertTrue(torch.equal(ts[s], sums[s]))
            self.assertTrue(torch.equal(last, sums[1] * 2 + 1))
            self.assertTrue(torch.equal(gathered, torch.cat([sums[0]] * n)))
            self.assertTrue(torch.equal(res[0], sums[1]))


class Coalesced(unittest.TestCase):

    def test_allreduce_coalesced(self):
        def rank(api, r, n):
            ts = [data(r, (3,), torch.int16, seed=1),
                  data(r, (2, 2), torch.int16, seed=2).t()]
            api.pg.allreduce_coalesced(ts).wait()
            return ts
        got = spmd(4, rank)
        want = [sum(data(q, (3,), torch.int16, seed=1) for q in range(4)),
                sum(data(q, (2, 2), torch.int16, seed=2) for q in range(4)).t()]
        for ts in got:
            for a, b in zip(ts, want):
                self.assertTrue(torch.equal(a, b))


class SubGroups(unittest.TestCase):

    def test_sub_group_of_odd_ranks(self):
        def rank(api, r, n):
            sub = _backend.sub_group(api.pg, [3, 1])      # sorted: [1, 3]
            t = data(r, (5,), torch.int32, seed=1)
            if sub is None:
                return None, t
            PGApi(sub).all_reduce(t, "SUM")
            b = torch.full((2,), float(r))
            PGApi(sub).broadcast(b, 1)                    # group rank 1
            return (sub.rank(), sub.size()), (t, b)
        got = spmd(4, rank)
        want = data(1, (5,), torch.int32, seed=1) + \
            data(3, (5,), torch.int32, seed=1)
        for r in (0, 2):
            self.assertIsNone(got[r][0])
            self.assertTrue(torch.equal(got[r][1],
                                        data(r, (5,), torch.int32, seed=1)))
        for r, grank in ((1, 0), (3, 1)):
            self.assertEqual(got[r][0], (grank, 2))
            self.assertTrue(torch.equal(got[r][1][0], want))
            self.assertTrue(torch.equal(got[r][1][1], torch.full((2,), 3.)))


def _binding_times(n, count):
    """The simulated durations of the op sequence of _torch_times, run
    through the Python binding of the C API."""
    def main():
        hccn.init()
        x = hccn.Tensor(np.ones(count, np.float32))
        out = []
        hccn.allreduce(x)
        out.append(hccn.last_duration())
        hccn.allgather(x)
        out.append(hccn.last_duration())
        hccn.reduce_scatter(x)
        out.append(hccn.last_duration())
        hccn.broadcast(x, src=1)
        out.append(hccn.last_duration())
        fut = hccn.allreduce(x, async_op=True)
        hccn.compute(1e-4)
        fut.wait()
        out.append((hccn.last_duration(), hccn.time()))
        return out
    return hccn.run(main, topology=topology(n))


def _torch_times(n, count):
    def rank(api, r, size):
        t = torch.ones(count)
        out = []
        api.all_reduce(t)
        out.append(ht.last_duration())
        api.all_gather_base(torch.empty(count * size), t)
        out.append(ht.last_duration())
        api.reduce_scatter_base(torch.empty(count // size), t)
        out.append(ht.last_duration())
        api.broadcast(t, 1)
        out.append(ht.last_duration())
        w = api.all_reduce(t, async_op=True)
        ht.compute(seconds=1e-4)
        w.wait()
        out.append((ht.last_duration(), ht.clock()))
        return out
    return spmd(n, rank)


class SimulatedTimes(unittest.TestCase):

    def test_equal_to_the_binding(self):
        for n, count in ((4, 1 << 16), (16, 1 << 12)):
            with self.subTest(n=n):
                want = _binding_times(n, count)
                got = _torch_times(n, count)
                self.assertEqual(got, want)          # exact
                self.assertGreater(got[0][0], 0.0)

    def test_compute_overlap_and_step_summary(self):
        def rank(api, r, n):
            ht.step()
            w = api.all_reduce(torch.ones(1 << 18), async_op=True)
            ht.compute(seconds=2e-6)
            w.wait()
            return ht.step(), ht.last_duration()
        for s, dur in spmd(4, rank):
            self.assertEqual(s["ops"], 1)
            self.assertEqual(s["compute_s"], 2e-6)
            self.assertAlmostEqual(s["hidden_s"], 2e-6, delta=1e-15)
            self.assertAlmostEqual(s["exposed_s"], dur - 2e-6, delta=1e-15)
            self.assertEqual(s["step_s"], dur)


def _model():
    """The same model on every call and thread: torch's default Linear
    initialisation (uniform within 1/sqrt(fan_in)) drawn from a generator
    of its own. Not torch.manual_seed: the rank threads of one process
    share torch's global generator, so models built on several threads at
    once would draw each other's numbers (DDP would then broadcast rank 0's
    model to all, which the serial reference does not start from)."""
    g = torch.Generator().manual_seed(0)
    layers = [skip_init(torch.nn.Linear, 8, 32), torch.nn.Tanh(),
              skip_init(torch.nn.Linear, 32, 32), torch.nn.Tanh(),
              skip_init(torch.nn.Linear, 32, 4)]
    with torch.no_grad():
        for lin in layers[::2]:
            bound = lin.in_features ** -0.5
            lin.weight.uniform_(-bound, bound, generator=g)
            lin.bias.uniform_(-bound, bound, generator=g)
    return torch.nn.Sequential(*layers)


def _batch(rank, step):
    g = torch.Generator().manual_seed(1000 * step + rank)
    return torch.randn(6, 8, generator=g), torch.randn(6, 4, generator=g)


def _train(model, steps, batch_of, lr=0.1):
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for s in range(steps):
        x, y = batch_of(s)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


class DDPInProcess(unittest.TestCase):
    """DDP (C++ reducer, buckets, comm hooks) on 4 rank threads. Tolerance
    against one process training on the concatenated batch: 1e-6 relative
    to the largest parameter (the reducer's bucket order and hccn's
    reduction order differ from autograd's single-batch sums).

    The first step reduces one bucket of all gradients (torch's reducer
    buckets only from the second step on); then the tiny bucket cap, for
    the first bucket too (DDP reads dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB
    by default), gives every parameter a bucket of its own."""

    CAP_MB = 1e-5              # 10 bytes: less than any parameter
    BUCKETS = [1476] + [4, 128, 32, 1024, 32, 256] * 2    # elements, by call

    def setUp(self):
        self._first = dist._DEFAULT_FIRST_BUCKET_BYTES
        dist._DEFAULT_FIRST_BUCKET_BYTES = int(self.CAP_MB * 1024 * 1024)

    def tearDown(self):
        dist._DEFAULT_FIRST_BUCKET_BYTES = self._first

    def run_ddp(self, hook):
        def rank(api, r, n):
            m = _model()
            ddp = DDP(m, process_group=api.pg, bucket_cap_mb=self.CAP_MB)
            sizes = []
            if hook:
                def h(state, bucket):
                    sizes.append(bucket.buffer().numel())
                    fut = api.pg.allreduce([bucket.buffer()]).get_future()
                    return fut.then(lambda f: f.value()[0] / n)
                ddp.register_comm_hook(None, h)
            _train(ddp, 3, lambda s: _batch(r, s))
            if hook:
                self.assertEqual(sizes, self.BUCKETS, "rank %d" % r)
            return [p.detach().clone() for p in m.parameters()]
        return spmd(4, rank)

    def check(self, got):
        for r in range(1, 4):
            for a, b in zip(got[r], got[0]):
                self.assertTrue(torch.equal(a, b), "rank %d differs" % r)
        ref = _model()
        _train(ref, 3, lambda s: tuple(torch.cat(z) for z in zip(
            *[_batch(r, s) for r in range(4)])))
        for a, b in zip(got[0], ref.parameters()):
            scale = b.detach().abs().max().item()
            self.assertLess((a - b.detach()).abs().max().item(),
                            1e-6 * scale)

    def test_ddp_default_hook(self):
        self.check(self.run_ddp(hook=False))

    def test_ddp_comm_hook(self):
        self.check(self.run_ddp(hook=True))


class Errors(unittest.TestCase):

    def test_mismatched_shapes_across_ranks(self):
        def rank(api, r, n):
            try:
                api.all_reduce(torch.ones(4 + (r == 2)))
            except ht.HccnBackendError as e:
                return e.rank, e.op, str(e)
            return None
        for r, got in enumerate(spmd(4, rank, timeout=20)):
            self.assertIsNotNone(got, "rank %d got no error" % r)
            self.assertEqual(got[:2], (r, "allreduce"))
            self.assertIn("HCCN_ERR_MISMATCH", got[2])

    def test_unsupported_device_dtype_and_op(self):
        def rank(api, r, n):
            msgs = []
            for t, op in ((torch.ones(3, device="meta"), "SUM"),
                          (torch.ones(3, dtype=torch.complex64), "SUM"),
                          (torch.ones(3), "BAND")):
                try:
                    api.all_reduce(t, op)
                except ht.HccnBackendError as e:
                    msgs.append(str(e))
            return msgs
        msgs = spmd(2, rank)[1]
        self.assertEqual(len(msgs), 3)
        self.assertIn("rank 1, allreduce: tensors[0] is on device meta", msgs[0])
        self.assertIn("dtype torch.complex64", msgs[1])
        self.assertIn("reduction BAND is not supported", msgs[2])


class InitProcessGroup(unittest.TestCase):
    """init_process_group("hccn") in this process (world size 1): the rank
    thread, the topology check, DDP through the default group."""

    def tearDown(self):
        if dist.is_initialized():
            dist.destroy_process_group()

    def init(self, npus):
        dist.init_process_group("hccn", store=dist.HashStore(), rank=0,
                                world_size=1,
                                pg_options={"topology": topology(npus)})

    def test_wrong_world_size(self):
        with self.assertRaisesRegex(RuntimeError, "world size 1 .* does not "
                                    "match the topology .* 4 NPUs"):
            self.init(4)

    def test_default_group_ops_and_ddp(self):
        self.init(1)
        t = torch.arange(4.)
        dist.all_reduce(t)
        self.assertTrue(torch.equal(t, torch.arange(4.)))
        w = dist.broadcast(t, 0, async_op=True)
        ht.compute(seconds=1e-3)
        w.wait()
        self.assertEqual(ht.clock(), 1e-3)
        m = _model()
        ddp = DDP(m)
        _train(ddp, 2, lambda s: _batch(0, s))
        ref = _model()
        _train(ref, 2, lambda s: _batch(0, s))
        for a, b in zip(m.parameters(), ref.parameters()):
            self.assertTrue(torch.allclose(a, b, rtol=0, atol=1e-6))


if __name__ == "__main__":
    unittest.main()
