"""The backend across processes, one rank a process, as users run it:
`/usr/bin/python3 -m hccn.torch.run -n N mp_worker.py ...` for N = 2, 4 and 16, and
the documented torchrun line for N = 2. Each run's per-rank results are
checked against serial torch computations (program.expected, exact), its
simulated times against the binding's in one process (==), DDP's
parameters across ranks (bit-identical) and against one-process training.
Skipped when this hccn has no multi-process mode (hccn.Cluster without
proc_rank)."""
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

import tsupport  # sys.path first
from tsupport import SOURCE, data

import torch

import hccn
import program
import test_backend

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "mp_worker.py")
MULTI = "proc_rank" in inspect.signature(hccn.Cluster.__init__).parameters
SKIP = ("this hccn build has no multi-process mode (hccn.Cluster takes no "
        "proc_rank)")


def launch(n, parts, dtypes=("float32",), topology=None, torchrun=False,
           timeout=300, env_extra=None):
    """Runs mp_worker.py in n processes; returns (exit code, stderr text,
    per-rank results or None)."""
    out = tempfile.mkdtemp(prefix="hccn-torch-test-")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [HERE, os.path.join(SOURCE, "python"), env.get("PYTHONPATH", "")])
    env.setdefault("HCCN_TIMEOUT", "60")
    env.update(env_extra or {})
    topo = topology if topology is not None else tsupport.topology(n)
    env["HCCN_TOPOLOGY"] = topo if isinstance(topo, str) else json.dumps(topo)
    args = [WORKER, out, ",".join(parts), ",".join(dtypes)]
    if torchrun:
        cmd = ["/usr/bin/torchrun", "--redirects", "1", "--tee", "2",
               "--log_dir", os.path.join(out, "logs"),
               "--nproc_per_node", str(n)] + args
    else:
        cmd = [sys.executable, "-m", "hccn.torch.run", "-n", str(n)] + args
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        try:
            stdout, stderr = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)     # the launcher and its ranks
            stdout, stderr = p.communicate()
            stderr += "\n(killed after %d s)" % timeout
        files = [os.path.join(out, "rank%d.pt" % r) for r in range(n)]
        got = ([torch.load(f) for f in files]
               if all(os.path.exists(f) for f in files) else None)
        return p.returncode, stdout + stderr, got
    finally:
        shutil.rmtree(out, ignore_errors=True)


class Base(unittest.TestCase):

    def run_ok(self, n, parts, dtypes=("float32",), **kw):
        rc, text, got = launch(n, parts, dtypes, **kw)
        self.assertEqual(rc, 0, text[-3000:])
        self.assertIsNotNone(got, text[-3000:])
        return got

    def check_ops(self, got, n, dtypes):
        program.compare(self, [g["ops"] for g in got],
                        program.expected(n, [getattr(torch, d)
                                             for d in dtypes]))

    def check_times(self, got, n):
        want = test_backend._binding_times(n, 1 << 12)
        for r, g in enumerate(got):
            self.assertEqual(g["times"], want[r], "rank %d" % r)

    def check_ddp(self, got):
        for r, g in enumerate(got):
            for a, b in zip(g["ddp"], got[0]["ddp"]):
                self.assertTrue(torch.equal(a, b), "rank %d differs" % r)
        n = len(got)
        ref = test_backend._model()
        test_backend._train(ref, 3, lambda s: tuple(torch.cat(z) for z in zip(
            *[test_backend._batch(r, s) for r in range(n)])))
        for a, b in zip(got[0]["ddp"], ref.parameters()):
            scale = b.detach().abs().max().item()
            self.assertLess((a - b.detach()).abs().max().item(), 1e-6 * scale)



class Launchers(Base):
    """The launchers and the world size check, in runs that need no
    multi-process mode (one process, or failing before the cluster)."""

    def test_one_process_under_both_launchers(self):
        for torchrun in (False, True):
            with self.subTest(torchrun=torchrun):
                got = self.run_ok(1, ["ops", "ddp"], ("int32",),
                                  torchrun=torchrun)
                self.check_ops(got, 1, ("int32",))
                self.check_ddp(got)

    def test_world_size_not_the_topology(self):
        rc, text, got = launch(2, ["ops"], topology="configs/laptop-4.json")
        self.assertNotEqual(rc, 0)
        self.assertIsNone(got)
        self.assertIn("the world size 2 (processes) does not match the "
                      "topology configs/laptop-4.json, which has 4 NPUs", text)



@unittest.skipUnless(MULTI, SKIP)
class MultiProcess(Base):

    def test_2_processes(self):
        dtypes = ("float32", "float64", "float16", "bfloat16", "int8",
                  "uint8", "int16", "int32", "int64", "bool")
        tmp = tempfile.mkdtemp(prefix="hccn-torch-trace-")
        self.addCleanup(shutil.rmtree, tmp, True)
        trace = os.path.join(tmp, "trace.json")
        got = self.run_ok(2, ["ops", "async", "times", "ddp"], dtypes,
                          env_extra={"HCCN_TRACE": trace})
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
        for r in range(2):          # both processes' ranks are traced
            self.assertTrue(any(e.get("name") == "allreduce" and
                                e.get("tid") == r for e in events))
        self.check_ops(got, 2, dtypes)
        self.check_times(got, 2)
        self.check_ddp(got)
        sums = [sum(data(q, (8,), torch.float32, seed=s) for q in range(2))
                for s in range(3)]
        for g in got:
            want = sums + [sums[1] * 2, torch.cat([sums[0]] * 2)]
            self.assertEqual(len(g["async"]), len(want))
            for a, b in zip(g["async"], want):
                self.assertTrue(torch.equal(a, b))

    def test_4_processes(self):
        dtypes = ("float32", "bfloat16", "int64", "bool")
        got = self.run_ok(4, ["ops", "subgroup", "times"], dtypes)
        self.check_ops(got, 4, dtypes)
        self.check_times(got, 4)
        want = data(1, (5,), torch.int32, seed=1) + \
            data(3, (5,), torch.int32, seed=1)
        for r, g in enumerate(got):
            if r in (1, 3):
                self.assertTrue(torch.equal(g["sub"][0], want))
                self.assertTrue(torch.equal(g["sub"][1],
                                            torch.full((3,), 3.)))
            else:
                self.assertTrue(torch.equal(g["sub"][0],
                                            data(r, (5,), torch.int32,
                                                 seed=1)))

    def test_16_processes(self):
        got = self.run_ok(16, ["ops", "times", "ddp"], ("float32",))
        self.check_ops(got, 16, ("float32",))
        self.check_times(got, 16)
        self.check_ddp(got)

    def test_documented_torchrun_line(self):
        got = self.run_ok(2, ["ops", "ddp"], ("int32",), torchrun=True)
        self.check_ops(got, 2, ("int32",))
        self.check_ddp(got)

    def test_mismatched_shapes(self):
        got = self.run_ok(2, ["mismatch"])
        for r, g in enumerate(got):
            self.assertIsNotNone(g["mismatch"], "rank %d got no error" % r)
            self.assertEqual(g["mismatch"][:2], (r, "allreduce"))
            self.assertIn("HCCN_ERR_MISMATCH", g["mismatch"][2])



if __name__ == "__main__":
    unittest.main()
