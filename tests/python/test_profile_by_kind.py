#!/usr/bin/env python3
"""tools/dev/profile_by_kind.py on a made-up profile: each op's kind, the sums per kind, and only the asked batch."""
import os
import sys
import unittest

SOURCE_DIR = os.environ.get("YOLO12_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dev"))
import profile_by_kind  # noqa: E402

LOG = """roofline fp16 b1: 2 ops, sum of medians 0.020 ms, sum of floors 0.002 ms (0.002 ms of it bytes), 10.0x
  op   0   0.0100 ms  floor   0.0010 ms (bytes)   10.0x  gap   0.0090 ms  conv 1x1/1 64->64 g1 80x80->80x80 [implicit_gemm_f16]
  op   1   0.0100 ms  floor   0.0010 ms (bytes)   10.0x  gap   0.0090 ms  attention 1600 tokens, area 4, 2 heads, d 32/32
roofline fp16 b32: 6 ops, sum of medians 1.000 ms, sum of floors 0.400 ms (0.300 ms of it bytes), 2.5x
  op   0   0.3000 ms  floor   0.1000 ms (bytes)    3.0x  gap   0.2000 ms  conv 1x1/1 64->64 g1 80x80->80x80 [implicit_gemm_f16]
  op   1   0.2000 ms  floor   0.1000 ms (flops)    2.0x  gap   0.1000 ms  conv 1x1/1 128->64 g1 40x40->40x40 +res [implicit_gemm_wgmma]
  op   2   0.2000 ms  floor   0.0500 ms (bytes)    4.0x  gap   0.1500 ms  conv 3x3/1 64->64 g64 40x40->40x40 [depthwise rows_f16]
  op   3   0.1500 ms  floor   0.0500 ms (flops)    3.0x  gap   0.1000 ms  conv 3x3/2 64->128 g1 80x80->40x40 [implicit_gemm_wgmma]
  op   4   0.1000 ms  floor   0.0500 ms (bytes)    2.0x  gap   0.0500 ms  conv pair 3x3/2 3->16->32 640x640->160x160 [stem_pair_f16]
  op   5   0.0500 ms  floor   0.0500 ms (bytes)    1.0x  gap   0.0000 ms  conv pair 3x3/1 16->8->16 +res 160x160->160x160 [halo_pair_f16]
n fp16 b32  net(graph)    0.900 ms
"""


class ProfileByKind(unittest.TestCase):
    def test_kinds(self):
        k = profile_by_kind.kind_of
        self.assertEqual(k("conv 1x1/1 64->64 g1 80x80->80x80 [x]"), "1x1 convs")
        self.assertEqual(k("conv 3x3/1 64->64 g64 40x40->40x40 [x]"), "depthwise")
        self.assertEqual(k("conv 3x3/1 64->64 g1 40x40->40x40 [x]"), "3x3/1 convs")
        self.assertEqual(k("conv 3x3/2 64->128 g1 80x80->40x40 [x]"), "3x3/2 convs")
        self.assertEqual(k("conv pair 3x3/2 3->16->32 640x640->160x160 [x]"), "stem pair")
        self.assertEqual(k("conv pair 3x3/1 16->8->16 +res 160x160->160x160 [x]"), "halo pairs")
        self.assertEqual(k("conv branch dw3x3 64->64->80->80->80->80 80x80->80x80 [x]"), "Detect's class branches")
        self.assertEqual(k("upsample x2 256ch 40x40"), "upsample")

    def test_sums_of_one_batch(self):
        ops, header = profile_by_kind.parse(LOG.splitlines(), 32)
        self.assertEqual(len(ops), 6)  # the batch-1 section and the bench line after the section left out
        self.assertTrue(header.startswith("roofline fp16 b32: 6 ops"))
        text = profile_by_kind.table(ops)
        self.assertIn("| 1x1 convs | 2 | 0.500 ms | 0.200 ms | 2.5x |", text)
        self.assertIn("| depthwise | 1 | 0.200 ms | 0.050 ms | 4.0x |", text)
        self.assertIn("| all | 6 | 1.000 ms | 0.400 ms | 2.5x |", text)
        self.assertLess(text.index("1x1 convs"), text.index("depthwise"))  # by time, largest first


if __name__ == "__main__":
    unittest.main()
