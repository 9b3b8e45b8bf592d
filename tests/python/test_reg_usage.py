#!/usr/bin/env python3
"""tools/dev/reg_usage.py on made-up `cuobjdump -res-usage` listings: kernel names matched across builds without their
anonymous-namespace hash, the blocks per SM that registers allow, and a drop flagged."""
import os
import sys
import unittest

SOURCE_DIR = os.environ.get("YOLO12_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dev"))
import reg_usage  # noqa: E402

# The same two instances of conv2d_implicit_gemm_f16 in two builds (each build hashes the file's anonymous namespace
# differently), and a kernel whose name gives no block size.
PREFIX = "_ZN6yolo124cuda11conv_detail54_GLOBAL__N__{h}_21_conv_implicit_gemm_cu_{h}24conv2d_implicit_gemm_f16"
TILE_128 = "ILi128ELi128ELi64ELi2ELi4ELi3ELb1ELb1ELi1EEEvNS1_18ImplicitGemmParamsI6__halfEE"  # 8 warps
TILE_64 = "ILi64ELi64ELi64ELi2ELi2ELi3ELb0ELb1ELi2EEEvNS1_18ImplicitGemmParamsI6__halfEE"  # 4 warps


def listing(h, regs_128, regs_64, stack_other):
    return f"""
Resource usage:
 Common:
  GLOBAL:0
 Function {PREFIX.format(h=h)}{TILE_128}:
  REG:{regs_128} STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:696 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function {PREFIX.format(h=h)}{TILE_64}:
  REG:{regs_64} STACK:0 SHARED:1024 LOCAL:0 CONSTANT[0]:696 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _Z12other_kernelPf:
  REG:40 STACK:{stack_other} SHARED:0 LOCAL:0 CONSTANT[0]:360 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


class RegUsage(unittest.TestCase):
    def test_blocks_per_sm(self):
        self.assertEqual(reg_usage.reg_blocks(128, 256), 2)  # 128 x 256 = 32,768 registers a block
        self.assertEqual(reg_usage.reg_blocks(130, 256), 1)  # 136 a thread once rounded per warp
        self.assertEqual(reg_usage.reg_blocks(72, 128), 7)
        self.assertEqual(reg_usage.reg_blocks(32, 64), 32)   # at most 64 warps an SM
        self.assertEqual(reg_usage.block_threads(PREFIX.format(h="a972e2c2") + TILE_128), 256)
        self.assertEqual(reg_usage.block_threads(PREFIX.format(h="a972e2c2") + TILE_64), 128)
        self.assertIsNone(reg_usage.block_threads("_Z12other_kernelPf"))

    def test_matched_across_builds_and_drop_flagged(self):
        old = reg_usage.parse(listing("a972e2c2", 128, 72, 0))
        new = reg_usage.parse(listing("5b01c3d4", 130, 64, 8))
        self.assertEqual(len(old), 3)
        self.assertEqual(set(old), set(new))  # the hash is gone from the names
        lines, drops = reg_usage.compare(old, new)
        self.assertEqual(drops, 1)
        text = "\n".join(lines)
        self.assertIn("REG 128 -> 130", text)
        self.assertIn("blocks/SM by registers 2 -> 1  DROP", text)
        self.assertIn("blocks/SM by registers 7 -> 8", text)  # 72 -> 64 registers: one more block
        self.assertIn("STACK    0 ->    8", text)
        self.assertTrue(lines[-1].startswith("3 kernels in both, 0 in one only; 1 with fewer blocks per SM"))

    def test_unchanged_kernels_only_with_all(self):
        same = reg_usage.parse(listing("a972e2c2", 128, 72, 0))
        lines, drops = reg_usage.compare(same, same)
        self.assertEqual((len(lines), drops), (1, 0))
        lines, _ = reg_usage.compare(same, same, every=True)
        self.assertEqual(len(lines), 4)
        lines, _ = reg_usage.compare(same, same, kernel_re="other", every=True)
        self.assertEqual(len(lines), 2)


if __name__ == "__main__":
    unittest.main()
