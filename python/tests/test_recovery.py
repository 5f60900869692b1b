"""Recovery: revoke, agree, shrink and grow from Python, against values
computed here (which ranks survive, the AND of their flags, their sums)."""
import unittest

import numpy as np

from support import needs, switch_topology

import hccn


def topology(npus, faults):
    topo = switch_topology(npus)
    topo["faults"] = faults
    return topo


@needs("hccn_comm_shrink")
class RecoveryTest(unittest.TestCase):

    def test_revoke_releases_and_raises(self):
        def body():
            g = hccn.init()
            if hccn.get_rank() == 0:
                hccn.compute(20e-6)
                hccn.revoke(g)
            else:
                with self.assertRaises(hccn.RevokedError):
                    hccn.allreduce(hccn.Tensor(np.ones(4, np.float32)))
            with self.assertRaises(hccn.RevokedError):
                hccn.barrier()
            return True
        self.assertEqual(hccn.run(body, switch_topology(4)), [True] * 4)

    def test_shrink_agree_grow(self):
        # 6 NPUs: 0-4 work, 5 is a spare; NPU 2 fails at 10 us.
        faults = [{"kind": "npu_fail", "npu": 2, "at_us": 10}]

        def body():
            me = hccn.get_rank()
            w = hccn.init()
            team = hccn.new_group([0, 1, 2, 3, 4], group=w)
            if me == 5:
                g = hccn.grow([5], join=True)
            else:
                try:
                    hccn.compute(20e-6)
                    hccn.allreduce(hccn.Tensor(np.ones(4)), group=team)
                except hccn.FaultError:
                    return None
                except (hccn.RemoteError, hccn.RevokedError):
                    hccn.revoke(team)       # whoever sees it first
                flag = hccn.agree(~(1 << me), group=team)
                failed = hccn.failed_ranks(team)
                s = hccn.shrink(team)
                g = hccn.grow([5], group=s)
                assert (flag, failed, s.size(), s.rank()) == (
                    ~0b11011, [2], 4, [0, 1, None, 2, 3][me]), (flag, failed)
            t = hccn.Tensor(np.full(4, float(me)))
            hccn.allreduce(t, group=g)
            return g.size(), g.rank(), t.cpu().numpy()[0]

        res = hccn.run(body, topology(6, faults))
        self.assertIsNone(res[2])
        for me, pos in zip([0, 1, 3, 4, 5], range(5)):
            self.assertEqual(res[me], (5, pos, 13.0))


if __name__ == "__main__":
    unittest.main()
