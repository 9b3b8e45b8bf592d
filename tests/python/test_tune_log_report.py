#!/usr/bin/env python3
"""tools/dev/tune_log_report.py on a made-up tuning log: the sums, the per-conv comparison and the skipped lines."""
import os
import subprocess
import sys
import tempfile
import unittest

SOURCE_DIR = os.environ.get("YOLO12_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "dev"))
import tune_log_report  # noqa: E402

LOG = """per-op profile fp16 b32: 3 ops
tune conv f16 c96-96 k3 s1 p1 g1 d1 a1 80x80-80x80 b32 ld96,96,0 al1111: implicit_gemm_wgmma 128x96x64 s3 0.160; halo_wgmma 256x96 s3 0.090; halo_wgmma 128x96 s3 0.100
tune conv f16 c96-96 k3 s1 p1 g1 d1 a1 80x80-80x80 b32 ld96,96,0 al1111: implicit_gemm_wgmma 128x96x64 s3 0.150; halo_wgmma 256x96 s3 0.170
tune conv f16 c64-64 k1 s1 p0 g1 d1 a1 80x80-80x80 b32 ld64,64,0 al1111: implicit_gemm_f16 128x64x64 w8 0.050; implicit_gemm_f16 64x64x64 w4 0.040
tune conv f16 c96-96 k3 s1 p1 g1 d1 a1 20x20-20x20 b1 ld96,96,0 al1111: implicit_gemm_f16 split-K 2 0.010
tune broken line: plan notanumber
tune chain f16 40x40 b1 c64 ld192 dw7 | 64 r-1 mem64 | 64 r-1 mem192 | 128 silu r-1 | 64 silu r1 y192 | 192 r-1 y192: chain fused 0.008; chain split 0.011; chain links 0.025
"""


class TuneLogReport(unittest.TestCase):
    def test_parse_skips_other_lines(self):
        rows = tune_log_report.parse(LOG.splitlines())
        self.assertEqual(len(rows), 5)
        self.assertEqual([r[1] for r in rows], [32, 32, 32, 1, 1])
        self.assertEqual(rows[4][2], [("chain fused", 0.008), ("chain split", 0.011), ("chain links", 0.025)])
        self.assertEqual(rows[0][2][1], ("halo_wgmma 256x96 s3", 0.090))
        self.assertEqual(rows[2][2][0], ("implicit_gemm_f16 128x64x64 w8", 0.050))

    def test_sums_and_deltas(self):
        rows = [r for r in tune_log_report.parse(LOG.splitlines()) if r[0].startswith("conv")]
        text = tune_log_report.report(rows, "halo_wgmma", 10)
        # batch 32: select 0.160 + 0.150 + 0.050; fastest 0.090 + 0.150 + 0.040;
        # without halo_wgmma 0.160 + 0.150 + 0.040.
        self.assertIn("batch 32: 3 convs; sum of conv_select's plans 0.360 ms, of the fastest 0.280 ms, "
                      "of the fastest without halo_wgmma 0.350 ms; halo_wgmma ran on 2 convs", text)
        self.assertIn("-0.0700 ms", text)  # 0.090 against 0.160: the largest gain first
        self.assertIn("+0.0200 ms", text)  # 0.170 against 0.150
        self.assertLess(text.index("-0.0700"), text.index("+0.0200"))
        self.assertIn("batch 1: 1 convs", text)

    def test_by_shape(self):
        rows = [r for r in tune_log_report.parse(LOG.splitlines()) if r[0].startswith("conv")]
        self.assertEqual(tune_log_report.shape_of(rows[0][0]), "conv f16 c96-96 k3 s1 p1 g1 d1 a1 80x80-80x80 b32")
        text = tune_log_report.report_by_shape(rows, "halo_wgmma")
        # The two 96->96 convs at 80x80: halo_wgmma 0.090 + 0.170 against 0.160 + 0.150; the 1x1 and the batch-1
        # conv have no halo_wgmma plan and are left out.
        self.assertIn("batch 32: halo_wgmma against the best other plan, per shape", text)
        self.assertIn("-0.0500 ms  conv f16 c96-96 k3 s1 p1 g1 d1 a1 80x80-80x80 b32 (n=2): halo_wgmma 0.2600 "
                      "(halo_wgmma 256x96 s3) vs 0.3100 (implicit_gemm_wgmma 128x96x64 s3)", text)
        self.assertNotIn("c64-64", text)
        self.assertNotIn("batch 1", text)

    def test_gaps(self):
        rows = [r for r in tune_log_report.parse(LOG.splitlines()) if r[0].startswith("conv")]
        text = tune_log_report.report_gaps(rows, 10)
        # batch 32: select 0.160 + 0.150 + 0.050 = 0.360, fastest 0.090 + 0.150 + 0.040 = 0.280. The 96->96 shape
        # loses 0.070 (0.310 -> 0.240, halo_wgmma 256x96 once, the wgmma plan once: the first most common), the 1x1
        # 0.010; the larger loss first.
        self.assertIn("batch 32: conv_select 0.360 ms, the fastest 0.280 ms (-0.080)", text)
        self.assertIn("-0.0700 ms  conv f16 c96-96 k3 s1 p1 g1 d1 a1 80x80-80x80 b32 (n=2): 0.3100 "
                      "(implicit_gemm_wgmma 128x96x64 s3) -> 0.2400 (halo_wgmma 256x96 s3)", text)
        self.assertIn("-0.0100 ms  conv f16 c64-64 k1 s1 p0 g1 d1 a1 80x80-80x80 b32 (n=1): 0.0500 "
                      "(implicit_gemm_f16 128x64x64 w8) -> 0.0400 (implicit_gemm_f16 64x64x64 w4)", text)
        self.assertLess(text.index("c96-96"), text.index("c64-64"))
        self.assertIn("batch 1: conv_select 0.010 ms, the fastest 0.010 ms (+0.000)", text)
        self.assertEqual(len(tune_log_report.report_gaps(rows, 1).splitlines()), 5)  # 2 headers, 2 shapes, 1 "more"

    def test_gaps_leave_out_the_fused_kernels(self):
        # A fused kernel's line names the fused way first whatever runs untuned: --gaps must not read it as the rule's.
        # The branch below would otherwise show as a 0.077 ms loss (the thirty-fifth session's yolo12s log).
        branch = ("tune dw_branch conv f16 c128-128 k3 s1 p1 g128 d1 a1 80x80-80x80 b32 ld128,128,0 al1111 | conv f16 "
                  "c128-80 k1 s1 p0 g1 d1 a0 80x80-80x80 b32 ld128,80,0 al1111: branch fused 0.383; branch links 0.306")
        rows = tune_log_report.parse(LOG.splitlines() + [branch])
        text = tune_log_report.report_gaps(rows, 10)
        self.assertIn("(2 lines of the fused kernels left out", text)  # the branch and the chain
        self.assertNotIn("dw_branch", text)
        self.assertNotIn("chain", text.split("left out")[1])
        self.assertIn("batch 32: conv_select 0.360 ms, the fastest 0.280 ms (-0.080)", text)
        conv_only = [r for r in rows if r[0].startswith("conv")]
        self.assertNotIn("left out", tune_log_report.report_gaps(conv_only, 10))

    def test_agree(self):
        # Two GPUs' logs. X: P2 fastest on both and beats both logged rules (agreed). Y: each log's fastest is the
        # other's slower plan by over 3 % (the GPUs disagree). Z: in one log only. W: the rule is the fastest on both.
        # V: the logs' common plan (R2) is within 3 % of both fastest but the first log's rule is faster than it.
        # U: the second log's fastest plan (U3) is one the first did not time.
        a = """tune conv f16 cX b1 ld1 al1: P1 0.010; P2 0.008; P3 0.009
tune conv f16 cX b1 ld2 al1: P1 0.010; P2 0.008; P3 0.009
tune conv f16 cY b1 ld1 al1: Q1 0.020; Q2 0.015
tune conv f16 cZ b1 ld1 al1: S1 0.030; S2 0.010
tune conv f16 cW b1 ld1 al1: T1 0.005; T2 0.006
tune conv f16 cV b1 ld1 al1: R1 0.010; R2 0.0101
tune conv f16 cU b1 ld1 al1: U1 0.010; U2 0.020
"""
        b = """tune conv f16 cX b1 ld1 al1: P3 0.0095; P1 0.012; P2 0.009
tune conv f16 cY b1 ld7 al1: Q1 0.020; Q2 0.025
tune conv f16 cW b1 ld1 al1: T1 0.004; T2 0.007
tune conv f16 cV b1 ld1 al1: R1 0.012; R2 0.010
tune conv f16 cU b1 ld1 al1: U1 0.030; U2 0.040; U3 0.015
"""
        ra, rb = tune_log_report.parse(a.splitlines()), tune_log_report.parse(b.splitlines())
        text = tune_log_report.report_agree(ra, rb, 10, 0.03)
        lines = text.splitlines()
        self.assertEqual(lines[0], "batch 1: 5 shapes in both logs; 1 where one plan within 3 % of both logs' fastest "
                                   "beats both logged rules (summed ms gained in each log):")
        # X: two convs in the first log (0.020 -> 0.016), one in the second (its rule P3 0.0095 -> 0.009).
        self.assertEqual(lines[1], "  -0.0040 / -0.0005 ms  conv f16 cX b1 (n=2 / 1): P1 / P3 -> P2 (1.00x / 1.00x of "
                                   "each log's fastest)")
        self.assertEqual(lines[2], "batch 1: 2 shapes where no plan is within 3 % in both and the fastest differ:")
        self.assertEqual(lines[3], "  conv f16 cU b1 (n=1 / 1): fastest U1 0.0100 / U3 0.0150 ms; each other's "
                                   "untimed / 0.0300; rule U1 0.0100 / U1 0.0300")
        self.assertEqual(lines[4], "  conv f16 cY b1 (n=1 / 1): fastest Q2 0.0150 / Q1 0.0200 ms; each other's "
                                   "0.0200 / 0.0250; rule Q1 0.0200 / Q1 0.0200")
        self.assertEqual(len(lines), 5)  # the larger disagreement first (U: 0.015 ms, Y: 0.010); Z, W, V nowhere
        # With a slack under V's 1 %, V's fastest plans (R1 / R2) differ by more than it: a disagreement. X stays
        # agreed (P2 is the fastest in both logs).
        tight = tune_log_report.report_agree(ra, rb, 10, 0.005).splitlines()
        self.assertIn("batch 1: 3 shapes where no plan is within 0.5 % in both and the fastest differ:", tight)
        self.assertIn("  conv f16 cV b1 (n=1 / 1): fastest R1 0.0100 / R2 0.0100 ms; each other's 0.0101 / 0.0120; "
                      "rule R1 0.0100 / R1 0.0120", tight)
        self.assertIn("cX", tight[1])

    def test_command_line(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "profile.log")
            with open(path, "w") as f:
                f.write(LOG)
            script = os.path.join(SOURCE_DIR, "tools", "dev", "tune_log_report.py")
            out = subprocess.run([sys.executable, script, path, "--top", "1"], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("... 1 more", out.stdout)
            out = subprocess.run([sys.executable, script, path, "--keys", "chain", "--kernel", "chain fused"],
                                 capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)
            self.assertIn("batch 1: 1 convs; sum of conv_select's plans 0.008 ms, of the fastest 0.008 ms, of the "
                          "fastest without chain fused 0.011 ms; chain fused ran on 1 convs", out.stdout)
            self.assertIn("-0.0030 ms", out.stdout)
            self.assertNotIn("batch 32", out.stdout)
            out = subprocess.run([sys.executable, script, path, "--agree", path], capture_output=True, text=True)
            self.assertEqual(out.returncode, 0, out.stderr)  # a log against itself: its own gaps, nothing differs
            self.assertIn("batch 32: 2 shapes in both logs; 2 where one plan", out.stdout)
            self.assertIn("-0.0500 / -0.0500 ms  conv f16 c96-96", out.stdout)
            self.assertIn("batch 32: 0 shapes where no plan", out.stdout)
            empty = os.path.join(d, "empty.log")
            open(empty, "w").close()
            out = subprocess.run([sys.executable, script, empty], capture_output=True, text=True)
            self.assertEqual(out.returncode, 1)
            self.assertIn("no 'tune ...' lines", out.stderr)
            out = subprocess.run([sys.executable, script, path, "--agree", empty], capture_output=True, text=True)
            self.assertEqual(out.returncode, 1)
            self.assertIn("empty.log: no 'tune ...' lines", out.stderr)


if __name__ == "__main__":
    unittest.main()
