"""Tensors, dtypes and the bfloat16 helpers."""
import numpy as np

import hccn
from support import RunCase


class BFloat16Test(RunCase):

    def test_round_to_nearest_even(self):
        one = 1.0
        x = np.array([one, one + 2 ** -8, one + 3 * 2 ** -8, -2.5, 0.0,
                      np.inf, 1e-40], np.float32)
        bits = hccn.to_bfloat16(x)
        self.assertEqual(bits.dtype, np.uint16)
        back = hccn.from_bfloat16(bits)
        # 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even mantissa wins.
        np.testing.assert_array_equal(
            back[:6], [1.0, 1.0, 1.0 + 2 ** -6, -2.5, 0.0, np.inf])
        self.assertEqual(bits[0], 0x3F80)
        self.assertTrue(np.isnan(hccn.from_bfloat16(
            hccn.to_bfloat16(np.array([np.nan], np.float32))))[0])


class TensorTest(RunCase):

    def test_round_trip_every_dtype(self):
        dts = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
               np.int64, np.uint64, np.float16, np.float32, np.float64]

        def fn():
            out = []
            for dt in dts:
                a = (np.arange(12) % 7).astype(dt).reshape(3, 4)
                t = hccn.Tensor(a)
                out.append((t.dtype, t.shape, t.nbytes, t.device,
                            t.cpu().numpy()))
            b = hccn.Tensor(np.array([0x3F80], np.uint16), dtype="bfloat16")
            out.append((b.dtype, b.shape, b.nbytes, b.device,
                        b.cpu().numpy()))
            return out
        res = self.run_ranks(fn)
        for rank, rows in enumerate(res):
            for dt, (dtype, shape, nbytes, dev, vals) in zip(dts, rows):
                self.assertEqual(dtype, np.dtype(dt))
                self.assertEqual((shape, dev), ((3, 4), "npu:%d" % rank))
                self.assertEqual(nbytes, 12 * np.dtype(dt).itemsize)
                np.testing.assert_array_equal(
                    vals, (np.arange(12) % 7).astype(dt).reshape(3, 4))
            self.assertEqual(rows[-1][0], "bfloat16")
            np.testing.assert_array_equal(rows[-1][4], [0x3F80])

    def test_copies_and_host_tensors(self):
        def fn():
            src = np.arange(4, dtype=np.float32)
            t = hccn.Tensor(src)
            src[0] = 99                      # the device copy is separate
            host = t.cpu()
            host.numpy()[1] = 77             # so is the host copy
            t.copy_(np.ones(4) * 5)
            h = hccn.Tensor([1, 2, 3], device="cpu", dtype=np.int8)
            z = hccn.zeros((2, 2), np.float64)
            s = hccn.Tensor(np.float32(3.5))
            used = hccn.mem_info()["allocations"]
            return (host.numpy(), t.cpu().numpy(), h.device, h.numpy(),
                    z.cpu().numpy(), s.cpu().numpy(), s.shape, used)
        host, dev, hdev, hvals, z, s, sshape, used = self.run_ranks(fn)[0]
        np.testing.assert_array_equal(host, [0, 77, 2, 3])
        np.testing.assert_array_equal(dev, [5, 5, 5, 5])
        self.assertEqual(hdev, "cpu")
        np.testing.assert_array_equal(hvals, [1, 2, 3])
        np.testing.assert_array_equal(z, np.zeros((2, 2)))
        self.assertEqual((float(s), sshape), (3.5, ()))
        self.assertEqual(used, 3)            # t, z, s

    def test_rank_queries(self):
        def fn():
            return (hccn.get_rank(), hccn.get_world_size(), hccn.device_id(),
                    hccn.node(), hccn.local_rank())
        res = hccn.run(fn, topology="configs/default.json")
        self.assertEqual(res[9], (9, 16, 9, 1, 1))
        with hccn.Cluster("configs/default.json") as cl:
            self.assertEqual((cl.size, cl.nodes), (16, 2))

    def test_memory_is_returned_between_runs(self):
        def fn():
            hccn.Tensor(np.ones(1 << 20, np.float32))
            keep = hccn.Tensor(np.ones(1 << 20, np.float32))
            return hccn.mem_info()["allocations"], keep.numel()
        with hccn.Cluster("configs/laptop-4.json") as cl:
            first = cl.run(fn)
            self.assertEqual(first[0], (1, 1 << 20))  # the first was freed
            self.assertEqual(cl.run(lambda: hccn.mem_info()["allocations"]),
                             [0] * 4)
