"""alltoallv, allgatherv and reduce_scatterv against numpy references."""
import numpy as np

import hccn
from support import LAPTOP4, RunCase, rank_data, reduce_ref

# Elements rank i sends to rank j (zeros included); rank j receives
# column j.
A2A = [[3, 0, 5, 1], [0, 2, 0, 7], [4, 4, 1, 0], [2, 0, 6, 3]]
COUNTS = [5, 0, 9, 2]


def v_collectives():
    r, n = hccn.get_rank(), hccn.get_world_size()
    out = {}
    t = hccn.Tensor(rank_data(r, sum(A2A[r]), np.int32, seed=1))
    out["alltoallv"] = hccn.alltoallv(
        t, A2A[r], [A2A[i][r] for i in range(n)]).cpu().numpy()
    t = hccn.Tensor(rank_data(r, COUNTS[r], np.float32, seed=2))
    out["allgatherv"] = hccn.allgatherv(t, COUNTS).cpu().numpy()
    t = hccn.Tensor(rank_data(r, sum(COUNTS), np.float32, seed=3))
    fut = hccn.reduce_scatterv(t, COUNTS, op=hccn.ReduceOp.SUM,
                               async_op=True)
    out["reduce_scatterv"] = fut.wait().cpu().numpy()
    return out


def bad_counts():
    t = hccn.Tensor(np.zeros(4, np.float32))
    try:
        hccn.reduce_scatterv(t, [1, 1, 1])
    except hccn.InvalidArgumentError as e:
        return str(e)
    return None


class VCollectivesTest(RunCase):

    def test_four_ranks(self):
        res = self.run_ranks(v_collectives, LAPTOP4)
        n = len(res)
        self.assertEqual(n, 4)
        sends = [rank_data(r, sum(A2A[r]), np.int32, seed=1)
                 for r in range(n)]
        offs = [np.cumsum([0] + A2A[r]) for r in range(n)]
        gath = np.concatenate([rank_data(r, COUNTS[r], np.float32, seed=2)
                               for r in range(n)])
        red = reduce_ref([rank_data(r, sum(COUNTS), np.float32, seed=3)
                          for r in range(n)], hccn.ReduceOp.SUM, np.float32)
        starts = np.cumsum([0] + COUNTS)
        for r in range(n):
            with self.subTest(rank=r):
                want = np.concatenate([sends[i][offs[i][r]:offs[i][r + 1]]
                                       for i in range(n)])
                np.testing.assert_array_equal(res[r]["alltoallv"], want)
                np.testing.assert_array_equal(res[r]["allgatherv"], gath)
                np.testing.assert_array_equal(res[r]["reduce_scatterv"],
                                              red[starts[r]:starts[r + 1]])

    def test_count_list_must_match_group(self):
        msgs = self.run_ranks(bad_counts, LAPTOP4)
        for m in msgs:
            self.assertIn("4 non-negative entries", m)
