"""Errors arrive as exceptions with the C library's message."""
import os
import tempfile
import time as wall

import numpy as np

import hccn
from support import LAPTOP4, RunCase, switch_topology


def _catch(call):
    """(exception class name, message) of call(), or None if it passed."""
    try:
        call()
    except hccn.HccnError as e:
        return type(e).__name__, e.message, e.status_name
    except TypeError as e:
        return type(e).__name__, str(e), None
    return None


class WrongArgumentTest(RunCase):

    def test_wrong_arguments(self):
        def fn():
            f32 = hccn.Tensor(np.ones(5, np.float32))
            return {
                "root": _catch(lambda: hccn.broadcast(f32, src=7)),
                "dtype": _catch(lambda: hccn.Tensor(np.ones(2, np.complex64))),
                "bf16": _catch(lambda: hccn.Tensor(np.ones(2, np.float32),
                                                   dtype="bfloat16")),
                "host": _catch(lambda: hccn.allreduce(
                    hccn.Tensor(np.ones(2), device="cpu"))),
                "split": _catch(lambda: hccn.reduce_scatter(f32)),
                "op": _catch(lambda: hccn.allreduce(f32, op="median")),
                "device": _catch(lambda: hccn.Tensor(
                    np.ones(2), device="npu:%d" % ((hccn.get_rank() + 1) % 4))),
                "numpy": _catch(lambda: f32.numpy()),
                "nomem": _catch(lambda: hccn.empty(1 << 40, np.uint8)),
                "out": _catch(lambda: hccn.allgather(
                    f32, out=hccn.empty(5, np.float32))),
            }
        res = self.run_ranks(fn)
        for rank, got in enumerate(res):
            with self.subTest(rank=rank):
                cls, msg, name = got["root"]
                self.assertEqual((cls, name), ("InvalidArgumentError",
                                               "HCCN_ERR_INVALID"))
                self.assertIn("rank %d: root 7 is out of range [0, 4)" % rank,
                              msg)
                self.assertIn("complex64 has no hccn counterpart",
                              got["dtype"][1])
                self.assertIn("uint16 array of raw bfloat16 bits",
                              got["bf16"][1])
                self.assertIn("on the host (cpu)", got["host"][1])
                self.assertIn("5 elements do not split into 4", got["split"][1])
                self.assertIn("invalid reduction op 'median'", got["op"][1])
                self.assertIn("not the calling rank's NPU (npu:%d)" % rank,
                              got["device"][1])
                self.assertEqual(got["numpy"][0], "TypeError")
                self.assertEqual(got["nomem"][0], "OutOfMemoryError")
                self.assertIn("do not fit", got["nomem"][1])
                self.assertIn("out must hold 20 elements", got["out"][1])

    def test_outside_a_rank_function(self):
        for call in (hccn.get_rank, lambda: hccn.Tensor(np.ones(2)),
                     hccn.barrier, hccn.time):
            with self.assertRaisesRegex(hccn.InvalidArgumentError,
                                        "inside the function passed to "
                                        "hccn.run"):
                call()

    def test_topology_errors(self):
        with self.assertRaises(hccn.HccnError) as cm:
            hccn.Cluster("no/such/topology.json")
        self.assertIn("no/such/topology.json", str(cm.exception))
        bad = switch_topology(4)
        bad["node_types"][0]["npu"]["count"] = -1
        with self.assertRaises(hccn.TopologyError) as cm:
            hccn.Cluster(bad)
        self.assertIn("node_types", cm.exception.message)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "broken.json")
            with open(path, "w") as f:
                f.write("{ not json")
            with self.assertRaises(hccn.TopologyError) as cm:
                hccn.Cluster(path)
            self.assertIn(path, cm.exception.message)

    def test_freed_tensor(self):
        kept = []

        def fn():
            t = hccn.Tensor(np.ones(3, np.float32))
            kept.append(t)
            t2 = hccn.Tensor(np.ones(3, np.float32))
            t2.free()
            return _catch(lambda: t2.cpu()), t
        res = self.run_ranks(fn)
        self.assertIn("device memory was freed", res[0][0][1])
        # A returned device tensor comes back on the host.
        np.testing.assert_array_equal(res[0][1].numpy(), np.ones(3))
        with self.assertRaisesRegex(hccn.InvalidArgumentError, "freed"):
            kept[0].cpu()


class MismatchTest(RunCase):

    def test_every_rank_gets_mismatch_naming_the_ranks(self):
        def fn():
            t = hccn.Tensor(np.ones(4, np.float32))
            if hccn.get_rank() % 2 == 0:
                first = _catch(lambda: hccn.allreduce(t))
            else:
                first = _catch(lambda: hccn.allgather(t))
            # The communicator is broken from then on.
            return first, _catch(lambda: hccn.allreduce(t))
        res = self.run_ranks(fn)
        for rank, (first, later) in enumerate(res):
            with self.subTest(rank=rank):
                cls, msg, name = first
                self.assertEqual((cls, name), ("MismatchError",
                                               "HCCN_ERR_MISMATCH"))
                self.assertIn("rank %d:" % rank, msg)
                self.assertRegex(msg, r"rank 0 called allreduce\(count=4.*"
                                      r"but rank 1 called allgather")
                self.assertEqual(later[0], "MismatchError")
                self.assertIn("broken", later[1])

    def test_uncaught_mismatch_is_reraised_by_run(self):
        def fn():
            n = 4 + hccn.get_rank() % 2
            hccn.allreduce(hccn.Tensor(np.zeros(n, np.int32)))
        with self.assertRaises(hccn.MismatchError) as cm:
            self.run_ranks(fn)
        e = cm.exception
        self.assertEqual(e.rank, 0)
        self.assertEqual(sorted(e.rank_errors), [0, 1, 2, 3])
        for err in e.rank_errors.values():
            self.assertIsInstance(err, hccn.MismatchError)
        self.assertIn("count=4", e.message)
        self.assertIn("count=5", e.message)


class RankExceptionTest(RunCase):

    def test_exception_is_reraised_with_its_rank(self):
        def fn():
            if hccn.get_rank() == 2:
                raise KeyError("bad key on two")
            hccn.barrier()      # the others wait for rank 2 until timeout
        t0 = wall.monotonic()
        with self.assertRaises(KeyError) as cm:
            self.run_ranks(fn, timeout=1)
        self.assertLess(wall.monotonic() - t0, 30)
        e = cm.exception
        self.assertEqual(e.rank, 2)
        self.assertIn("bad key on two", str(e))
        for r in (0, 1, 3):     # told rank 2 left, or gave up waiting
            self.assertIsInstance(e.rank_errors[r], (hccn.RemoteError,
                                                     hccn.HccnTimeoutError))
        if hasattr(e, "__notes__"):
            self.assertIn("raised on rank 2", e.__notes__[0])

    def test_every_rank_raising(self):
        def fn():
            raise RuntimeError("rank %d gives up" % hccn.get_rank())
        with self.assertRaisesRegex(RuntimeError, "rank 0 gives up") as cm:
            self.run_ranks(fn)
        self.assertEqual(len(cm.exception.rank_errors), 4)

    def test_cluster_is_reusable_after_a_failure(self):
        with hccn.Cluster(LAPTOP4) as cl:
            with self.assertRaises(ValueError):
                cl.run(lambda: int("x"))
            self.assertEqual(cl.run(hccn.get_rank), [0, 1, 2, 3])
