"""The examples run and check themselves (small sizes)."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

from support import HERE

EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


def run_example(name, *args):
    env = dict(os.environ)
    env.setdefault("HCCN_TIMEOUT", "30")
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, name)] +
                          list(args), capture_output=True, text=True,
                          env=env, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


class ExamplesTest(unittest.TestCase):

    def check(self, name, *args):
        rc, out, err = run_example(name, *args)
        self.assertEqual(rc, 0, "%s failed:\n%s%s" % (name, out, err))
        return out

    def test_step1_overlap(self):
        out = self.check("step1_allreduce_overlap.py", "--topology",
                         "configs/laptop-4.json")
        self.assertIn("averaged gradients match numpy", out)
        self.assertIn("of the communication hidden", out)

    def test_step2_global_norm(self):
        out = self.check("step2_global_norm.py", "--topology",
                         "configs/laptop-4.json")
        self.assertIn("every rank agrees on the norm", out)

    def test_elastic_sgd(self):
        out = self.check("elastic_sgd.py", "--step", "2", "--npu", "9")
        self.assertIn("NPU 9 fails at", out)
        self.assertIn("global batch 64 -> 60 samples", out)
        self.assertIn("weights equal the serial reference bit for bit", out)

    def test_hierarchical(self):
        out = self.check("hierarchical.py", "--mib", "0.5")
        self.assertIn("results equal numpy (sum over 16 ranks)", out)

    def test_benchmark(self):
        with tempfile.TemporaryDirectory() as d:
            png = os.path.join(d, "busbw.png")
            out = self.check("allreduce_benchmark.py", "--max-bytes", "65536",
                             "--iters", "1", "--plot", png)
            rows = [line for line in out.splitlines()
                    if line.strip() and not line.startswith("#")]
            self.assertEqual(len(rows), 2 * 7)       # 8 B .. 32 KiB, x4
            self.assertIn("# 16 NPUs, 2 nodes x 8", out)
            if importlib.util.find_spec("matplotlib") is None:
                self.assertIn("no plot", out)
            else:
                self.assertTrue(os.path.getsize(png) > 1000)


if __name__ == "__main__":
    unittest.main()
