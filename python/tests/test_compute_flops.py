"""hccn.compute_flops: FLOPs at the topology's peak rate, per dtype where
the file gives one (docs/topology.md, peak_TFLOPS), against flops / rate."""
import unittest

from support import hccn

TYPES = {"version": 1, "name": "rates", "node_types": [{
    "name": "box", "count": 1,
    "npu": {"count": 2, "arena_MiB": 4, "reduce_bw_GBps": 100,
            "peak_TFLOPS": {"fp16": 100, "fp32": 25}},
    "fabric": {"type": "mesh", "bw_GBps": 10, "lat_us": 1.0}}]}


def spend():
    hccn.init()
    out = []
    for dtype in (None, "float32", "float16"):
        t0 = hccn.time()
        hccn.compute_flops(1e12, dtype)
        out.append(hccn.time() - t0)
    try:
        hccn.compute_flops(1e12, "bfloat16")
        out.append(None)
    except hccn.HccnError as e:
        out.append(str(e))
    return out


class ComputeFlopsTest(unittest.TestCase):
    def test_rates(self):
        for none, fp32, fp16, bf16 in hccn.run(spend, topology=TYPES):
            self.assertAlmostEqual(none, 1e12 / 100e12, delta=1e-12 * 0.04)
            self.assertAlmostEqual(fp32, 1e12 / 25e12, delta=1e-12 * 0.04)
            self.assertAlmostEqual(fp16, 1e12 / 100e12, delta=1e-12 * 0.04)
            self.assertIn("peak_TFLOPS.bf16 is not given", bf16)


if __name__ == "__main__":
    unittest.main()
