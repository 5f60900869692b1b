"""Sub-communicators (new_group, split_group, init(device_ids)) and
operation groups (group_start/group_end)."""
import numpy as np

import hccn
from support import DEFAULT16, LAPTOP4, RunCase, needs


@needs("hccn_comm_create", "hccn_comm_destroy")
class NewGroupTest(RunCase):

    def test_members_and_non_members(self):
        def fn():
            r = hccn.get_rank()
            g = hccn.new_group(ranks=[3, 0, 1])
            if not g.is_member:
                err = None
                try:
                    hccn.allreduce(hccn.Tensor(np.ones(2)), group=g)
                except hccn.InvalidArgumentError as e:
                    err = e.message
                return g.rank(), g.size(), None, err
            t = hccn.Tensor(np.full(3, r + 1, np.int32))
            hccn.allreduce(t, group=g)
            return g.rank(), g.size(), t.cpu().numpy(), g.ranks
        res = self.run_ranks(fn)
        for r, want_rank in ((3, 0), (0, 1), (1, 2)):
            grank, size, vals, ranks = res[r]
            self.assertEqual((grank, size, ranks), (want_rank, 3, [3, 0, 1]))
            np.testing.assert_array_equal(vals, [7, 7, 7])
        grank, size, vals, err = res[2]
        self.assertEqual((grank, size, vals), (-1, 3, None))
        self.assertIn("rank 2 is not a member", err)

    def test_init_with_device_ids(self):
        def fn():
            g = hccn.init(device_ids=[8, 9, 10, 11])
            r = hccn.get_rank()
            assert r == g.rank()
            if r < 0:
                return r, hccn.device_id(), None
            t = hccn.Tensor(np.full(4, hccn.device_id(), np.float32))
            out = hccn.allgather(t)          # on the default group
            return r, hccn.get_world_size(), out.cpu().numpy()[:, 0]
        res = self.run_ranks(fn, topology=DEFAULT16)
        for dev in range(16):
            if 8 <= dev < 12:
                self.assertEqual(res[dev][:2], (dev - 8, 4))
                np.testing.assert_array_equal(res[dev][2], [8, 9, 10, 11])
            else:
                self.assertEqual(res[dev], (-1, dev, None))

    def test_init_whole_world_and_bad_ids(self):
        def fn():
            g = hccn.init(device_ids=range(4))
            try:
                hccn.init(device_ids=[0, 0, 1])
            except hccn.InvalidArgumentError as e:
                return g.name, hccn.get_world_size(), e.message
        for name, size, msg in self.run_ranks(fn):
            self.assertEqual((name, size), ("world", 4))
            self.assertIn("must be distinct NPU indices in [0, 4)", msg)

    def test_destroy(self):
        def fn():
            g = hccn.new_group([0, 1, 2, 3])
            hccn.barrier(group=g)
            g.destroy()
            g.destroy()                      # idempotent
            try:
                hccn.barrier(group=g)
            except hccn.InvalidArgumentError as e:
                return e.message
        for msg in self.run_ranks(fn):
            self.assertIn("not a member", msg)


@needs("hccn_comm_split", "hccn_comm_create")
class HierarchicalTest(RunCase):

    def test_split_by_node_then_across_nodes(self):
        """Intra-node allreduce, then allreduce among same-index NPUs of
        the nodes, equals one world allreduce."""
        def fn():
            node, local = hccn.node(), hccn.local_rank()
            intra = hccn.split_group(color=node)
            inter = hccn.split_group(color=local)
            data = np.arange(10, dtype=np.int64) * (hccn.device_id() + 1)
            t = hccn.Tensor(data)
            hccn.allreduce(t, group=intra)
            hccn.allreduce(t, group=inter)
            return (intra.rank(), intra.size(), inter.rank(), inter.size(),
                    t.cpu().numpy())
        res = self.run_ranks(fn, topology=DEFAULT16)
        want = np.arange(10) * sum(range(1, 17))
        for dev, (ir, isz, xr, xsz, vals) in enumerate(res):
            self.assertEqual((ir, isz, xr, xsz), (dev % 8, 8, dev // 8, 2))
            np.testing.assert_array_equal(vals, want)

    def test_group_broadcast_from_leader(self):
        """Every rank calls both new_group (collective on the world); the
        broadcast's src is a rank in the group, not a world rank."""
        def fn():
            g0 = hccn.new_group(range(8))
            g1 = hccn.new_group(range(8, 16))
            g = g0 if g0.is_member else g1
            t = hccn.Tensor(np.full(6, hccn.device_id(), np.float64))
            hccn.broadcast(t, src=2, group=g)
            return t.cpu().numpy()
        for dev, vals in enumerate(self.run_ranks(fn, topology=DEFAULT16)):
            np.testing.assert_array_equal(vals, np.full(6, 2 + 8 * (dev // 8)))

    def test_split_key_orders_ranks_and_nocolor(self):
        def fn():
            r = hccn.get_rank()
            g = hccn.split_group(color=None if r == 0 else 1, key=-r)
            if not g.is_member:
                return g.rank(), None
            t = hccn.Tensor(np.array([r], np.int32))
            return g.rank(), hccn.allgather(t, group=g).cpu().numpy()[:, 0]
        res = self.run_ranks(fn)
        self.assertEqual(res[0], (-1, None))
        for r in (1, 2, 3):
            self.assertEqual(res[r][0], 3 - r)
            np.testing.assert_array_equal(res[r][1], [3, 2, 1])


@needs("hccn_comm_set_algo", "hccn_comm_create")
class GroupOptionsTest(RunCase):

    def test_set_algo(self):
        def fn():
            g = hccn.new_group([0, 1, 2, 3])
            out = []
            for algo in ("ring", "mesh"):
                g.set_algo(algo)
                t = hccn.Tensor(np.full(1000, hccn.get_rank(), np.float32))
                hccn.allreduce(t, group=g)
                out.append(t.cpu().numpy()[0])
            g.set_algo("no-such-algorithm")     # checked when used
            err = None
            try:
                hccn.allreduce(hccn.Tensor(np.ones(4, np.float32)), group=g)
            except hccn.HccnError as e:
                err = e
            g.set_algo(None)
            t = hccn.Tensor(np.ones(4, np.float32))
            hccn.allreduce(t, group=g)
            out.append(t.cpu().numpy()[0])
            return out, err
        for vals, err in self.run_ranks(fn):
            self.assertEqual(vals, [6.0, 6.0, 4.0])
            self.assertIsInstance(err, hccn.HccnError)
            self.assertIn("no-such-algorithm", err.message)


@needs("hccn_group_start", "hccn_group_end")
class OperationGroupTest(RunCase):

    def test_grouped_exchange_and_allreduces(self):
        def fn():
            r, n = hccn.get_rank(), hccn.get_world_size()
            left, right = (r - 1) % n, (r + 1) % n
            got_l, got_r = hccn.zeros(4, np.int16), hccn.zeros(4, np.int16)
            mine = hccn.Tensor(np.full(4, r, np.int16))
            a = hccn.Tensor(np.full(3, r, np.float32))
            b = hccn.Tensor(np.full(3, 2 * r, np.float64))
            with hccn.grouped():
                hccn.send(mine, right)
                hccn.send(mine, left)
                hccn.recv(got_l, left)
                hccn.recv(got_r, right)
                hccn.allreduce(a)
                hccn.allreduce(b, op=hccn.ReduceOp.MAX)
            return [x.cpu().numpy()[0] for x in (got_l, got_r, a, b)]
        res = self.run_or_skip("send/recv posted in hccn_group_start/end "
                               "(about 1 run in 3)", fn, LAPTOP4)
        for r, vals in enumerate(res):
            self.assertEqual(vals, [(r - 1) % 4, (r + 1) % 4, 6.0, 6.0])

    def test_group_end_without_start(self):
        def fn():
            try:
                hccn.group_end()
            except hccn.HccnError as e:
                return type(e).__name__
        self.assertEqual(self.run_ranks(fn), ["InvalidArgumentError"] * 4)
