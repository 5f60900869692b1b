"""Futures: async collectives overlap simulated compute; wait, times."""
import numpy as np

import hccn
from support import LAPTOP4, RunCase

MiB = 1 << 20


class AsyncTest(RunCase):

    def test_overlap_with_compute(self):
        def fn(compute_s):
            t = hccn.Tensor(np.full(MiB // 4, hccn.get_rank() + 1,
                                    np.float32))
            t0 = hccn.time()
            fut = hccn.allreduce(t, async_op=True)
            hccn.compute(compute_s)
            out = fut.wait()
            start, end = fut.times()
            return (t0, start, end, hccn.time(), hccn.last_duration(),
                    out is t, t.cpu().numpy()[:3], fut.is_completed())
        # Compute far longer than the allreduce: the clock ends at compute.
        for t0, start, end, now, last, same, vals, done in self.run_ranks(
                fn, args=(1.0,)):
            self.assertEqual(start, t0)
            self.assertGreater(end, start)
            self.assertLess(end - start, 1.0)
            self.assertAlmostEqual(now, t0 + 1.0, places=12)
            self.assertAlmostEqual(last, end - start, places=12)
            self.assertTrue(same and done)
            np.testing.assert_array_equal(vals, [10, 10, 10])
        # No compute: the clock ends with the allreduce.
        for t0, start, end, now, *_ in self.run_ranks(fn, args=(0.0,)):
            self.assertAlmostEqual(now, end, places=12)

    def test_overlap_beats_serial(self):
        def fn(async_op):
            t = hccn.Tensor(np.ones(MiB // 4, np.float32))
            fut = hccn.allreduce(t, async_op=async_op)
            hccn.compute(20e-6)
            if async_op:
                fut.wait()
            return hccn.time()
        serial = self.run_ranks(fn, args=(False,))[0]
        overlapped = self.run_ranks(fn, args=(True,))[0]
        self.assertLess(overlapped, serial)

    def test_many_outstanding_waited_in_reverse(self):
        def fn():
            r = hccn.get_rank()
            a = hccn.Tensor(np.full(8, r, np.int64))
            b = hccn.Tensor(np.full(2, r, np.float64))
            c = hccn.Tensor(np.arange(8, dtype=np.int32) + 8 * r)
            d = hccn.Tensor(np.arange(8, dtype=np.uint16) * (r + 1))
            futs = [hccn.allreduce(a, op=hccn.ReduceOp.MAX, async_op=True),
                    hccn.allgather(b, async_op=True),
                    hccn.reduce_scatter(c, async_op=True),
                    hccn.alltoall(d, async_op=True),
                    hccn.barrier(async_op=True)]
            outs = [f.wait() for f in reversed(futs)][::-1]
            again = futs[0].wait()
            return ([o.cpu().numpy() if o is not None else None
                     for o in outs], again is outs[0])
        for r, (outs, again) in enumerate(self.run_ranks(fn)):
            np.testing.assert_array_equal(outs[0], np.full(8, 3))
            np.testing.assert_array_equal(
                outs[1], np.repeat(np.arange(4.0), 2).reshape(4, 2))
            cols = np.arange(8) + 8 * np.arange(4)[:, None]
            np.testing.assert_array_equal(outs[2],
                                          cols.sum(0)[2 * r:2 * r + 2])
            np.testing.assert_array_equal(
                outs[3], np.array([2 * r, 2 * r + 1] * 4, np.uint16) *
                np.repeat(np.arange(1, 5), 2).astype(np.uint16))
            self.assertIsNone(outs[4])
            self.assertTrue(again)

    def test_isend_irecv(self):
        def fn():
            r, n = hccn.get_rank(), hccn.get_world_size()
            out = hccn.zeros(3, np.float32)
            rf = hccn.irecv(out, (r - 1) % n)
            sf = hccn.isend(hccn.Tensor(np.full(3, r, np.float32)),
                            (r + 1) % n)
            self.assertIsNone(sf.wait())
            return rf.wait().cpu().numpy()
        for r, got in enumerate(self.run_ranks(fn)):
            np.testing.assert_array_equal(got, np.full(3, (r - 1) % 4))

    def test_unwaited_future_is_finished_at_return(self):
        def fn():
            hccn.allreduce(hccn.Tensor(np.ones(4, np.float32)),
                           async_op=True)
            return "returned"
        self.assertEqual(self.run_ranks(fn), ["returned"] * 4)

    def test_times_before_completion(self):
        def fn():
            fut = hccn.allreduce(hccn.Tensor(np.ones(MiB, np.float32)),
                                 async_op=True)
            try:            # known early only if every rank has posted
                early = fut.times()[0]
            except hccn.InProgressError as e:
                early = e.message
            fut.wait()
            return early, fut.duration()
        for early, dur in self.run_ranks(fn, topology=LAPTOP4):
            if isinstance(early, str):
                self.assertIn("not completed", early)
            self.assertGreater(dur, 0.0)
