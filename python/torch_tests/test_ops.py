"""Every operation of the backend on 2, 4 and 16 ranks of one process (one
ProcessGroupHccn per rank thread under hccn.run) against the serial torch
computation of program.expected (exact)."""
import unittest

from tsupport import DTYPES, spmd
import torch

import program


class OpsInProcess(unittest.TestCase):

    def check(self, n, dtypes):
        got = spmd(n, lambda api, r, size: program.program(api, r, size,
                                                           dtypes))
        program.compare(self, got, program.expected(n, dtypes))

    def test_2_ranks_every_dtype(self):
        self.check(2, DTYPES)

    def test_4_ranks_every_dtype(self):
        self.check(4, DTYPES)

    def test_16_ranks(self):
        self.check(16, [torch.float32, torch.bfloat16, torch.int8,
                        torch.bool])


if __name__ == "__main__":
    unittest.main()
