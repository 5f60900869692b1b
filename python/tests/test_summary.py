"""hccn.summary_mark / hccn.summary: a rank's exposed and hidden
communication on a known overlap case, against the times worked out by
hand from the topology (docs/sim_api.md)."""
import unittest

import numpy as np

from support import hccn

# Two NPUs joined by one 10 GB/s, 1 us link each way.
PAIR = {"version": 1, "name": "pair", "node_types": [{
    "name": "pair", "count": 1,
    "npu": {"count": 2, "arena_MiB": 16, "reduce_bw_GBps": 100},
    "fabric": {"type": "mesh", "bw_GBps": 10, "lat_us": 1.0}}]}
MSG = 1000000                       # bytes
SEND_S = MSG / 10e9                 # the send ends when the bytes have left
RECV_S = 1e-6 + MSG / 10e9          # the receive one latency later


def overlap():
    hccn.init()
    rank = hccn.get_rank()
    t = hccn.Tensor(np.full(MSG, rank, dtype=np.uint8))
    hccn.summary_mark()
    f = hccn.isend(t, 1) if rank == 0 else hccn.irecv(t, 0)
    hccn.compute(40e-6)
    f.wait()
    s = hccn.summary()
    p2p = hccn.summary(kind="p2p")
    none = hccn.summary(kind="allreduce")
    return s, p2p, none


class SummaryTest(unittest.TestCase):
    def test_overlap(self):
        res = hccn.run(overlap, topology=PAIR)
        for rank, (s, p2p, none) in enumerate(res):
            comm = SEND_S if rank == 0 else RECV_S
            self.assertEqual(s["ops"], 1)
            self.assertAlmostEqual(s["comm_s"], comm, delta=1e-15)
            self.assertAlmostEqual(s["hidden_s"], 40e-6, delta=1e-15)
            self.assertAlmostEqual(s["exposed_s"], comm - 40e-6, delta=1e-15)
            self.assertAlmostEqual(s["compute_s"], 40e-6, delta=1e-15)
            self.assertAlmostEqual(s["until_s"], comm, delta=1e-15)
            self.assertEqual(p2p, s)
            self.assertEqual(none["ops"], 0)
            self.assertEqual(none["comm_s"], 0.0)

    def test_bad_kind(self):
        def fn():
            hccn.init()
            hccn.summary_mark()
            with self.assertRaises(hccn.InvalidArgumentError):
                hccn.summary(kind="nosuch")
        hccn.run(fn, topology=PAIR)


if __name__ == "__main__":
    unittest.main()
