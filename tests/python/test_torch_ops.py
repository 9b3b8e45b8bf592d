#!/usr/bin/env python3
"""The yolo12 PyTorch operators on the CPU (python/yolo12_torch): gradcheck in float64, forward and
backward against PyTorch's own ops in float32, torch.library.opcheck (schema, fake kernels, autograd
registration), errors for bad input.

    python3 tests/python/test_torch_ops.py   # exit 0 pass, 1 fail, 77 skipped (torch or the extension missing)

The extension must be built in place first (tools/setup.sh does it):
    cd python/yolo12_torch && python3 setup.py build_ext --inplace
"""

import os
import sys
import unittest

REPO = os.environ.get("YOLO12_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python", "yolo12_torch"))
try:
    import torch
    import torch.nn.functional as F
    import yolo12_torch as yt
except (ImportError, OSError) as e:  # OSError: a torch whose libraries are broken (a cut install)
    # tools/setup.sh sets YOLO12_TORCH_REQUIRED=1 once it built the extension
    print("%s: %s" % ("FAIL" if os.environ.get("YOLO12_TORCH_REQUIRED") == "1" else "SKIP", e))
    sys.exit(1 if os.environ.get("YOLO12_TORCH_REQUIRED") == "1" else 77)

ops = torch.ops.yolo12

# (B, C, H, W, O, k, stride, pad, dilation, groups): odd sizes, stride 2, groups, depthwise, dilation.
CONV_CASES = [
    (2, 4, 7, 9, 6, 3, 1, 1, 1, 1),
    (2, 4, 8, 7, 6, 3, 2, 1, 1, 2),
    (1, 4, 9, 6, 4, 5, 1, 2, 1, 4),   # depthwise 5x5
    (2, 6, 5, 5, 6, 3, 2, 1, 1, 6),   # depthwise stride 2
    (2, 3, 6, 5, 5, 1, 1, 0, 1, 1),   # 1x1
    (1, 3, 9, 8, 4, 3, 2, 0, 1, 1),   # no padding, stride 2
    (1, 2, 9, 9, 3, 3, 1, 2, 2, 1),   # dilation 2
]


def ref_conv(x, w, b, r, s, p, d, g, silu):
    y = F.conv2d(x, w, b, s, p, d, g)
    if silu:
        y = F.silu(y)
    return y + r if r is not None else y


def ref_attention(q, k, v, area):
    """out (B, N, heads, 32) and lse (B, heads, N) by plain matmul / softmax per chunk."""
    b, n, h, d = q.shape
    m = n // area
    qc, kc, vc = (t.reshape(b, area, m, h, d).permute(0, 1, 3, 2, 4) for t in (q, k, v))  # (B, area, heads, m, d)
    s = qc @ kc.transpose(-1, -2) * d ** -0.5
    out = (s.softmax(-1) @ vc).permute(0, 1, 3, 2, 4).reshape(b, n, h, d)
    return out, torch.logsumexp(s, -1).permute(0, 2, 1, 3).reshape(b, h, n)


def ref_detect(box, cls, strides):
    """(B, 4 + nc, A): DFL (cx, cy, w, h) * stride and sigmoid scores, levels in order."""
    outs = []
    for bx, c, s in zip(box, cls, strides):
        b, c4, h, w = bx.shape
        r = c4 // 4
        ar = lambda m: torch.arange(m, dtype=bx.dtype, device=bx.device)  # noqa: E731
        dist = (bx.reshape(b, 4, r, h * w).softmax(2) * ar(r).view(1, 1, r, 1)).sum(2)
        ys, xs = torch.meshgrid(ar(h), ar(w), indexing="ij")
        ax, ay = xs.reshape(-1) + 0.5, ys.reshape(-1) + 0.5
        lt, tp, rt, bt = dist.unbind(1)
        xywh = torch.stack([ax + (rt - lt) / 2, ay + (bt - tp) / 2, lt + rt, tp + bt], 1) * s
        outs.append(torch.cat([xywh, c.reshape(b, -1, h * w).sigmoid()], 1))
    return torch.cat(outs, 2)


def detect_inputs(dtype, batch=2, reg_max=4, nc=3, sizes=((3, 4), (2, 2), (1, 3)), requires_grad=False):
    g = torch.Generator().manual_seed(3)
    box = [torch.randn(batch, 4 * reg_max, h, w, generator=g, dtype=dtype) * 2 for h, w in sizes]
    cls = [torch.randn(batch, nc, h, w, generator=g, dtype=dtype) for h, w in sizes]
    for t in box + cls:
        t.requires_grad_(requires_grad)
    return box, cls, [8, 16, 32][:len(sizes)]


def qkv_views(b, n, heads, dtype, layout, requires_grad=True, seed=0):
    """q, k, v (B, N, heads, 32) as views of one qkv tensor, as the patched AAttn makes them:
    'nchw' slices an NCHW conv output (token stride 1), 'tokens' a token-major one; 'plain' three tensors;
    'maps' three NCHW maps viewed as tokens (the turbo v; at B = 1 the view's batch stride is arbitrary)."""
    g = torch.Generator().manual_seed(seed)
    if layout == "plain":
        ts = [torch.randn(b, n, heads, 32, generator=g, dtype=dtype).requires_grad_(requires_grad) for _ in range(3)]
        return ts, ts
    if layout == "maps":
        maps = [torch.randn(b, heads * 32, n, generator=g, dtype=dtype).requires_grad_(requires_grad) for _ in range(3)]
        return [t.transpose(1, 2).reshape(b, n, heads, 32) for t in maps], maps
    if layout == "nchw":
        base = torch.randn(b, heads * 96, n, generator=g, dtype=dtype).requires_grad_(requires_grad)
        qkv = base.transpose(1, 2)  # (B, N, 3C), token stride 1
    else:
        base = torch.randn(b, n, heads * 96, generator=g, dtype=dtype).requires_grad_(requires_grad)
        qkv = base
    return list(qkv.view(b, n, heads, 96).split([32, 32, 32], dim=3)), [base]


class Gradcheck(unittest.TestCase):
    """torch.autograd.gradcheck in float64 of every operator."""

    def test_conv2d(self):
        for (b, c, h, w, o, k, s, p, d, g) in CONV_CASES:
            for silu, bias, res in ((False, True, True), (True, False, False), (True, True, True)):
                gen = torch.Generator().manual_seed(b * 100 + c * 10 + k)
                x = torch.randn(b, c, h, w, generator=gen, dtype=torch.float64, requires_grad=True)
                wt = torch.randn(o, c // g, k, k, generator=gen, dtype=torch.float64, requires_grad=True)
                bb = torch.randn(o, generator=gen, dtype=torch.float64, requires_grad=True) if bias else None
                ho, wo = (h + 2 * p - d * (k - 1) - 1) // s + 1, (w + 2 * p - d * (k - 1) - 1) // s + 1
                r = torch.randn(b, o, ho, wo, generator=gen, dtype=torch.float64, requires_grad=True) if res else None
                fn = lambda x, wt, bb, r: yt.conv2d(x, wt, bb, r, s, p, d, g, silu)  # noqa: E731
                with self.subTest(case=(b, c, h, w, o, k, s, p, d, g), silu=silu, bias=bias, residual=res):
                    self.assertTrue(torch.autograd.gradcheck(fn, (x, wt, bb, r)))

    def test_area_attention(self):
        for (b, n, heads, area) in ((2, 15, 2, 3), (1, 7, 1, 1), (2, 12, 3, 4), (1, 9, 2, 9)):
            for layout in ("plain", "nchw", "tokens"):
                (q, k, v), leaves = qkv_views(b, n, heads, torch.float64, layout)
                with self.subTest(shape=(b, n, heads, area), layout=layout):
                    if layout == "plain":
                        ok = torch.autograd.gradcheck(lambda q, k, v: yt.area_attention(q, k, v, area), (q, k, v))
                    else:  # through the views: the gradient of the one qkv tensor
                        def fn(base):
                            qkv = base.transpose(1, 2) if layout == "nchw" else base
                            q, k, v = qkv.reshape(b, n, heads, 96).split([32, 32, 32], dim=3)
                            return yt.area_attention(q, k, v, area)
                        ok = torch.autograd.gradcheck(fn, tuple(leaves))
                    self.assertTrue(ok)

    def test_detect_decode(self):
        for sizes, reg_max in ((((3, 4), (2, 2), (1, 3)), 4), (((2, 3),), 16), (((1, 1), (2, 1)), 1)):
            box, cls, strides = detect_inputs(torch.float64, reg_max=reg_max, sizes=sizes, requires_grad=True)
            fn = lambda *ts: yt.detect_decode(ts[:len(box)], ts[len(box):], strides)  # noqa: E731
            with self.subTest(sizes=sizes, reg_max=reg_max):
                self.assertTrue(torch.autograd.gradcheck(fn, tuple(box + cls)))


class AgainstPyTorch(unittest.TestCase):
    """float32 forward (the engine's CPU backend) and backward (plain loops) against PyTorch's ops."""

    def close(self, got, want, tol, what):
        err = ((got - want).norm() / want.norm().clamp_min(1e-30)).item()
        self.assertLess(err, tol, "%s: relative L2 error %.3g" % (what, err))

    def test_conv2d(self):
        cases = CONV_CASES + [(2, 16, 20, 20, 32, 3, 2, 1, 1, 1), (1, 3, 32, 32, 16, 3, 2, 1, 1, 1),
                              (2, 64, 10, 10, 64, 7, 1, 3, 1, 64), (2, 48, 12, 12, 64, 1, 1, 0, 1, 1)]
        for (b, c, h, w, o, k, s, p, d, g) in cases:
            for silu, res in ((False, False), (True, True)):
                gen = torch.Generator().manual_seed(7)
                x = torch.randn(b, c, h, w, generator=gen, requires_grad=True)
                wt = (torch.randn(o, c // g, k, k, generator=gen) / (c // g * k * k) ** 0.5).requires_grad_()
                bb = torch.randn(o, generator=gen, requires_grad=True)
                y_ref = ref_conv(x, wt, bb, None, s, p, d, g, silu)
                r = torch.randn(y_ref.shape, generator=gen, requires_grad=True) if res else None
                if res:
                    y_ref = y_ref + r
                y = yt.conv2d(x, wt, bb, r, s, p, d, g, silu)
                gy = torch.randn(y.shape, generator=gen)
                leaves = [x, wt, bb] + ([r] if res else [])
                grads = torch.autograd.grad(y, leaves, gy)
                grads_ref = torch.autograd.grad(y_ref, leaves, gy)
                name = "conv %s silu=%s residual=%s" % ((b, c, h, w, o, k, s, p, d, g), silu, res)
                self.close(y, y_ref, 1e-5, name + " y")
                for t, gt, gr in zip(("x", "w", "b", "residual"), grads, grads_ref):
                    self.close(gt, gr, 1e-5, name + " d" + t)

    def test_area_attention(self):
        for (b, n, heads, area) in ((2, 64, 2, 4), (1, 100, 4, 1), (2, 45, 2, 3), (3, 400, 1, 4)):
            for layout in ("plain", "nchw", "tokens", "maps"):
                (q, k, v), leaves = qkv_views(b, n, heads, torch.float32, layout, seed=n)
                out, lse = ops.area_attention_fwd(q, k, v, area)
                out_ref, lse_ref = ref_attention(q, k, v, area)
                name = "attention %s %s" % ((b, n, heads, area), layout)
                self.close(out, out_ref, 1e-5, name + " out")
                self.close(lse, lse_ref, 1e-5, name + " lse")
                go = torch.randn(out.shape)
                g1 = torch.autograd.grad(yt.area_attention(q, k, v, area), leaves, go)
                g2 = torch.autograd.grad(out_ref, leaves, go)
                for a, bb in zip(g1, g2):
                    self.close(a, bb, 1e-5, name + " grad")

    def test_detect_decode(self):
        for reg_max, nc in ((16, 80), (4, 3)):
            box, cls, strides = detect_inputs(torch.float32, reg_max=reg_max, nc=nc, sizes=((8, 8), (4, 4), (2, 2)),
                                              requires_grad=True)
            y, y_ref = yt.detect_decode(box, cls, strides), ref_detect(box, cls, strides)
            self.close(y, y_ref, 1e-6, "detect y")
            g = torch.randn(y.shape)
            for a, bb in zip(torch.autograd.grad(y, box + cls, g), torch.autograd.grad(y_ref, box + cls, g)):
                self.close(a, bb, 1e-5, "detect grad")


class OpCheck(unittest.TestCase):
    """torch.library.opcheck: schema, fake kernels, autograd registration, AOT dispatch."""

    def test_ops(self):
        gen = torch.Generator().manual_seed(1)
        for dt in (torch.float32, torch.float64):
            x = torch.randn(2, 4, 7, 9, generator=gen, dtype=dt, requires_grad=True)
            w = torch.randn(6, 2, 3, 3, generator=gen, dtype=dt, requires_grad=True)
            b = torch.randn(6, generator=gen, dtype=dt, requires_grad=True)
            r = torch.randn(2, 6, 4, 5, generator=gen, dtype=dt, requires_grad=True)
            torch.library.opcheck(ops.conv2d, (x, w, b, r, 2, 1, 1, 2, True))
            torch.library.opcheck(ops.conv2d, (x, w, None, None, 2, 1, 1, 2, False))
            q, k, v = (torch.randn(2, 15, 2, 32, generator=gen, dtype=dt, requires_grad=True) for _ in range(3))
            torch.library.opcheck(ops.area_attention_fwd, (q, k, v, 3))
            box, cls, strides = detect_inputs(dt, requires_grad=True)
            torch.library.opcheck(ops.detect_decode, (box, cls, strides))


class Import(unittest.TestCase):
    def test_without_torch_first(self):
        """`import yolo12_torch` on its own (the extension needs torch's libraries loaded first)."""
        import subprocess
        code = "import sys; sys.path.insert(0, %r); import yolo12_torch" % os.path.join(REPO, "python", "yolo12_torch")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr[-500:])


class Errors(unittest.TestCase):
    """Bad input: one-line typed errors, no crash."""

    def test_conv2d(self):
        x, w = torch.randn(1, 4, 5, 5), torch.randn(8, 4, 3, 3)
        with self.assertRaisesRegex(ValueError, "yolo12::conv2d: x has 4 channels"):
            yt.conv2d(x, torch.randn(8, 3, 3, 3))
        with self.assertRaisesRegex(ValueError, "square"):
            yt.conv2d(x, torch.randn(8, 4, 3, 1))
        with self.assertRaisesRegex(ValueError, "does not fit"):
            yt.conv2d(x, torch.randn(8, 4, 7, 7))
        with self.assertRaisesRegex(ValueError, "residual must be"):
            yt.conv2d(x, w, None, torch.randn(1, 8, 5, 5))
        with self.assertRaisesRegex(TypeError, "float32 or float64"):
            yt.conv2d(x.half(), w.half())
        with self.assertRaisesRegex(TypeError, "weight is"):
            yt.conv2d(x, w.double())
        with self.assertRaisesRegex(ValueError, "stride >= 1"):
            yt.conv2d(x, w, stride=0)

    def test_area_attention(self):
        q = torch.randn(1, 10, 2, 32)
        with self.assertRaisesRegex(ValueError, "10 tokens cannot be cut into 3"):
            yt.area_attention(q, q, q, 3)
        with self.assertRaisesRegex(ValueError, r"\(B, N, heads, 32\)"):
            yt.area_attention(torch.randn(1, 10, 2, 16), q, q)
        with self.assertRaisesRegex(ValueError, "one shape"):
            yt.area_attention(q, q[:, :5], q)

    def test_detect_decode(self):
        box, cls, strides = detect_inputs(torch.float32)
        with self.assertRaisesRegex(ValueError, "one stride per level"):
            yt.detect_decode(box, cls, strides[:2])
        with self.assertRaisesRegex(ValueError, "4 \\* reg_max"):
            yt.detect_decode([box[0][:, :7]] + box[1:], cls, strides)
        with self.assertRaisesRegex(ValueError, "do not agree"):
            yt.detect_decode(box, [cls[1], cls[0], cls[2]], strides)
        with self.assertRaisesRegex(ValueError, "1 to 4 levels"):
            yt.detect_decode(box * 2, cls * 2, strides * 2)


if __name__ == "__main__":
    unittest.main()
