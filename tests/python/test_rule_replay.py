#!/usr/bin/env python3
"""yolo12-rule-replay (tools/dev/rule_replay.cu) on a made-up tuning log: the convs rebuilt from their keys, the plans
conv_select picks under YOLO12_CONV_VARIANTS (as on an H200 where no GPU answers), their logged times summed, and
the lines it cannot price. Skipped (77) where the build has no CUDA backend, so no yolo12-rule-replay."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

BINARY_DIR = os.environ.get("YOLO12_BINARY_DIR", "")
TOOL = os.path.join(BINARY_DIR, "yolo12-rule-replay")

# yolo12n's 1x1 128->64 at 40x40 and 48->64 at 160x160, batch 32: without the two variants (the defaults before
# the nineteenth session) both stay on mma.sync 128x64 on 8 warps; f16_wgmma_fewrows sends the first to the wgmma
# kernel, f16_tall_1x1 the second to 256-row tiles, and both are defaults now. The batch-1 line's first plan is what
# the (made-up) logged rule chose; the replayed rules choose 64x32 there. The broken line and the fp32 key are not
# priced.
LOG = """per-op profile fp16 b32: 4 ops
tune conv f16 c128-64 k1 s1 p0 g1 d1 a0 40x40-40x40 b32 ld128,64,64 al1111: implicit_gemm_f16 128x64x64 w8 0.0137; implicit_gemm_wgmma 128x64x64 s4 0.0112; implicit_gemm_f16 256x64x64 w8 0.0130
tune conv f16 c48-64 k1 s1 p0 g1 d1 a1 160x160-160x160 b32 ld48,64,0 al1111: implicit_gemm_f16 128x64x64 w8 0.1050; implicit_gemm_f16 256x64x64 w8 0.0914
tune conv f16 c128-64 k1 s1 p0 g1 d1 a0 20x20-20x20 b1 ld128,64,64 al1111: implicit_gemm_f16 128x64x64 w8 0.0060; implicit_gemm_f16 64x32x64 w4 0.0050
tune conv f16 c64-64 k1 s1 p0 g1 d1 a1 40x40-40x40 b32 ld64,64,0 al1111: implicit_gemm_f16 128x64x64 w8 notanumber
tune conv f32 c64-64 k1 s1 p0 g1 d1 a1 40x40-40x40 b32 ld64,64,0 al1111: implicit_gemm_f32 0.0200
"""


def replay(log_path, variants):
    env = dict(os.environ)
    env["YOLO12_CONV_VARIANTS"] = variants
    env["CUDA_VISIBLE_DEVICES"] = ""  # plan as on an H200 even on a GPU machine
    out = subprocess.run([TOOL, log_path], capture_output=True, text=True, env=env, timeout=120)
    if out.returncode != 0:
        raise AssertionError(f"exit {out.returncode}: {out.stdout}{out.stderr}")
    return out.stdout


def sums(text, batch):
    m = re.search(rf"^batch {batch}: (\d+) convs; the logged rule ([\d.]+) ms, the replayed rule ([\d.]+) ms "
                  rf"\(([-+][\d.]+)\), the fastest ([\d.]+) ms; (\d+) plans changed, (\d+) untimed$", text, re.M)
    if not m:
        raise AssertionError(f"no batch {batch} line in:\n{text}")
    return int(m.group(1)), float(m.group(2)), float(m.group(3)), float(m.group(5)), int(m.group(6)), int(m.group(7))


class RuleReplay(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.log = os.path.join(cls.dir.name, "profile.log")
        with open(cls.log, "w") as f:
            f.write(LOG)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_defaults(self):
        text = replay(self.log, "+f16_bk64")  # "+name": the defaults, f16_bk64 being one of them
        # batch 32: both variants are defaults, so the fastest plans: 0.0112 + 0.0914.
        self.assertEqual(sums(text, 32), (2, 0.119, 0.103, 0.103, 2, 0))
        self.assertIn("replayed implicit_gemm_wgmma 128x64x64 s4 0.0112", text)
        self.assertIn("replayed implicit_gemm_f16 256x64x64 w8 0.0914", text)
        # batch 1: 20x20 is a small grid, where the defaults take 64x32 on 4 warps (0.0050, not the logged 0.0060).
        self.assertEqual(sums(text, 1), (1, 0.006, 0.005, 0.005, 1, 0))
        self.assertIn("logged implicit_gemm_f16 128x64x64 w8 replayed implicit_gemm_f16 64x32x64 w4 0.0050", text)
        self.assertNotIn("f32", text)

    def test_neither(self):
        text = replay(self.log, "-f16_tall_1x1,-f16_wgmma_fewrows")
        # The eighteenth session's defaults: both convs keep the logged plan: 0.0137 + 0.1050.
        self.assertEqual(sums(text, 32), (2, 0.119, 0.119, 0.103, 0, 0))

    def test_fewrows(self):
        text = replay(self.log, "-f16_tall_1x1")
        # 128->64 at 40x40 (2 K tiles, 400 row tiles) goes to the wgmma kernel: 0.0112 + 0.1050.
        self.assertEqual(sums(text, 32), (2, 0.119, 0.116, 0.103, 1, 0))
        self.assertIn("replayed implicit_gemm_wgmma 128x64x64 s4 0.0112", text)

    def test_tall(self):
        text = replay(self.log, "-f16_wgmma_fewrows")
        # Both are 1x1 convs of 64 channels with K <= 2 tiles: 256-row tiles, 0.0130 + 0.0914.
        self.assertEqual(sums(text, 32), (2, 0.119, 0.104, 0.103, 2, 0))

    def test_untimed(self):
        # All variants off: the plain BK-32 tiles, which the log did not time: counted at the logged plan's time.
        text = replay(self.log, "none")
        self.assertEqual(sums(text, 32)[5], 2)
        self.assertIn("(untimed)", text)


if __name__ == "__main__":
    if not os.path.isfile(TOOL):
        print(f"SKIPPED: {TOOL} not built (the CUDA backend is not in this build)")
        sys.exit(77)
    unittest.main()
