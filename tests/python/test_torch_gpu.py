#!/usr/bin/env python3
"""The yolo12 PyTorch operators on CUDA (python/yolo12_torch built with its CUDA kernels): forward and
backward against PyTorch (cuDNN conv, matmul/softmax attention, the DFL decode) in float32 and float16
(bfloat16 for attention), NCHW and channels_last inputs, opcheck; Ultralytics' AAttn and Detect;
patched against unpatched yolo12n training steps (fp32 and AMP fp16); torch.compile (inductor).

    python3 tests/python/test_torch_gpu.py   # exit 0 pass, 1 fail, 77 skipped (no CUDA device or CPU-only build)

ctest label gpu (tests/CMakeLists.txt: names ending in _gpu). python/yolo12_torch/gpu_check.sh runs it.
"""

import copy
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_torch_ops as T  # noqa: E402  (exits 77 without torch or the extension)
import torch  # noqa: E402
import yolo12_torch as yt  # noqa: E402

if not torch.cuda.is_available() or not yt.with_cuda:
    print("SKIP: %s" % ("no CUDA device" if not torch.cuda.is_available() else "yolo12_torch was built without CUDA"))
    sys.exit(77)

try:
    import test_torch_patch as P  # needs ultralytics
except SystemExit:
    P = None

DEV = torch.device("cuda")
torch.backends.cudnn.allow_tf32 = False  # exact fp32 references (the engine's fp32 kernels are FFMA)
torch.backends.cuda.matmul.allow_tf32 = False
TOL = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 3e-2}


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


class Conv(unittest.TestCase):
    # (B, C, H, W, O, k, stride, pad, groups): the CPU cases' shapes plus ones the family uses
    CASES = [c[:8] + (c[9],) for c in T.CONV_CASES if c[8] == 1] + [
        (2, 32, 40, 40, 64, 3, 2, 1, 1), (2, 64, 20, 20, 64, 1, 1, 0, 1), (2, 128, 20, 20, 128, 7, 1, 3, 128),
        (2, 3, 64, 64, 16, 3, 2, 1, 1), (2, 48, 17, 13, 40, 3, 1, 1, 2), (2, 64, 10, 10, 64, 3, 1, 1, 64)]

    def test_against_cudnn(self):
        for dt in (torch.float32, torch.float16):
            for (b, c, h, w, o, k, s, p, g) in self.CASES:
                for silu, res, cl in ((False, False, False), (True, True, True), (True, False, True)):
                    gen = torch.Generator(device=DEV).manual_seed(11)
                    fmt = torch.channels_last if cl else torch.contiguous_format
                    x = torch.randn(b, c, h, w, generator=gen, device=DEV).to(dt, memory_format=fmt).requires_grad_()
                    wt = (torch.randn(o, c // g, k, k, generator=gen, device=DEV) / (c // g * k * k) ** 0.5).to(dt)
                    wt.requires_grad_()
                    bb = torch.randn(o, generator=gen, device=DEV).to(dt).requires_grad_()
                    y_ref = T.ref_conv(x, wt, bb, None, s, p, 1, g, silu)
                    r = torch.randn(y_ref.shape, generator=gen, device=DEV).to(dt).requires_grad_() if res else None
                    if res:
                        y_ref = y_ref + r
                    y = yt.conv2d(x, wt, bb, r, s, p, 1, g, silu)
                    gy = torch.randn(y.shape, generator=gen, device=DEV).to(dt)
                    leaves = [x, wt, bb] + ([r] if res else [])
                    name = "%s %s silu=%s res=%s cl=%s" % (dt, (b, c, h, w, o, k, s, p, g), silu, res, cl)
                    self.assertLess(rel(y, y_ref), TOL[dt], name + " y")
                    for t, a, e in zip("xwbr", torch.autograd.grad(y, leaves, gy), torch.autograd.grad(y_ref, leaves, gy)):
                        self.assertLess(rel(a, e), 4 * TOL[dt], name + " d" + t)

    def test_autocast(self):
        x = torch.randn(2, 16, 12, 12, device=DEV)
        w = torch.randn(32, 16, 3, 3, device=DEV, requires_grad=True)
        with torch.autocast("cuda", dtype=torch.float16):
            y = yt.conv2d(x, w, None, None, 1, 1, 1, 1, True)
        self.assertEqual(y.dtype, torch.float16)
        y.float().sum().backward()
        self.assertEqual(w.grad.dtype, torch.float32)


class Attention(unittest.TestCase):
    def test_against_reference(self):
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            for (b, n, heads, area) in ((2, 400, 2, 4), (2, 45, 3, 3), (1, 1600, 4, 4), (3, 100, 1, 1), (2, 63, 2, 7)):
                for layout in ("plain", "nchw", "tokens"):
                    (q, k, v), leaves = T.qkv_views(b, n, heads, torch.float32, layout, requires_grad=False, seed=n)
                    leaves = [t.to(DEV, dt).requires_grad_() for t in leaves]
                    if layout == "plain":
                        q, k, v = leaves
                    else:
                        base = leaves[0]
                        qkv = base.transpose(1, 2) if layout == "nchw" else base
                        q, k, v = qkv.reshape(b, n, heads, 96).split([32, 32, 32], dim=3)
                    out = yt.area_attention(q, k, v, area)
                    out_ref, _ = T.ref_attention(q.float(), k.float(), v.float(), area)
                    name = "%s %s %s" % (dt, (b, n, heads, area), layout)
                    self.assertLess(rel(out, out_ref), TOL[dt], name + " out")
                    go = torch.randn(out.shape, device=DEV).to(dt)
                    g1 = torch.autograd.grad(out, leaves, go)
                    g2 = torch.autograd.grad(out_ref, leaves, go.float())
                    for a, e in zip(g1, g2):
                        self.assertLess(rel(a, e), 4 * TOL[dt], name + " grad")

    def test_lse(self):
        q, k, v = (torch.randn(2, 96, 2, 32, device=DEV) for _ in range(3))
        out, lse = torch.ops.yolo12.area_attention_fwd(q, k, v, 4)
        out_ref, lse_ref = T.ref_attention(q, k, v, 4)
        self.assertLess(rel(lse, lse_ref), 1e-5)


class Detect(unittest.TestCase):
    def test_against_reference(self):
        for dt in (torch.float32, torch.float16):
            for reg_max, nc in ((16, 80), (4, 3)):
                box, cls, strides = T.detect_inputs(torch.float32, reg_max=reg_max, nc=nc,
                                                    sizes=((80, 80), (40, 40), (20, 20)))
                box = [t.to(DEV, dt).contiguous(memory_format=torch.channels_last).requires_grad_() for t in box]
                cls = [t.to(DEV, dt).requires_grad_() for t in cls]
                y = yt.detect_decode(box, cls, strides)
                y_ref = T.ref_detect([t.float() for t in box], [t.float() for t in cls], strides)
                self.assertLess(rel(y, y_ref), TOL[dt], "detect %s y" % dt)
                g = torch.randn(y.shape, device=DEV).to(dt)
                for a, e in zip(torch.autograd.grad(y, box + cls, g), torch.autograd.grad(y_ref, box + cls, g.float())):
                    self.assertLess(rel(a, e), 4 * TOL[dt], "detect %s grad" % dt)


class OpCheck(unittest.TestCase):
    def test_ops(self):
        for dt in (torch.float32, torch.float16):
            x = torch.randn(2, 16, 7, 9, device=DEV, dtype=dt, requires_grad=True)
            w = torch.randn(24, 8, 3, 3, device=DEV, dtype=dt, requires_grad=True)
            b = torch.randn(24, device=DEV, dtype=dt, requires_grad=True)
            r = torch.randn(2, 24, 4, 5, device=DEV, dtype=dt, requires_grad=True)
            torch.library.opcheck(torch.ops.yolo12.conv2d, (x, w, b, r, 2, 1, 1, 2, True), atol=1e-2, rtol=1e-2)
            q, k, v = (torch.randn(2, 45, 2, 32, device=DEV, dtype=dt, requires_grad=True) for _ in range(3))
            torch.library.opcheck(torch.ops.yolo12.area_attention_fwd, (q, k, v, 3), atol=1e-2, rtol=1e-2)
            box, cls, strides = T.detect_inputs(torch.float32)
            box = [t.to(DEV, dt).requires_grad_() for t in box]
            cls = [t.to(DEV, dt).requires_grad_() for t in cls]
            torch.library.opcheck(torch.ops.yolo12.detect_decode, (box, cls, strides), atol=1e-2, rtol=1e-2)


@unittest.skipIf(P is None, "ultralytics is not installed")
class Models(unittest.TestCase):
    def module_grads(self, m, x, fwd, tol, label):
        p = yt.patch(copy.deepcopy(m))
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = fwd(m, xa), fwd(p, xb)
        self.assertLess(rel(yb, ya), tol, label + " forward")
        g = torch.randn(ya.shape, device=DEV)
        names, ga = P.grads(ya, xa, m, g)
        _, gb = P.grads(yb, xb, p, g)
        self.assertTrue(P.close_grads(ga, gb, 4 * tol), "%s: %s" % (label, P.grad_report(names, ga, gb)))

    def test_modules(self):
        """AAttn (both families) and Detect on CUDA, forward and backward, against the unpatched modules."""
        for dim, heads, area, size in ((64, 2, 4, (20, 20)), (128, 4, 4, (40, 40)), (96, 3, 3, (9, 5))):
            for mode in (True, False):
                m = P.AAttn(dim, heads, area).to(DEV).train(mode)
                x = torch.randn(2, dim, *size, device=DEV)
                self.module_grads(m, x, lambda mod, t: mod(t), 1e-4, "AAttn %s" % ((dim, heads, area, size, mode),))
                t = P.turbo_aattn(dim, heads, area, seed=area).to(DEV).train(mode)
                self.module_grads(t, x, lambda mod, z: mod(z) if yt.is_patched(mod) else P.turbo_reference(mod, z),
                                  1e-4, "turbo AAttn %s" % ((dim, heads, area, size, mode),))
        ch = (64, 128, 256)
        d = P.Detect(nc=80, ch=ch)
        d.stride = torch.tensor([8.0, 16.0, 32.0])
        d.bias_init()
        d = d.to(DEV).eval()
        xs = [torch.randn(2, c, s, s, device=DEV) for c, s in zip(ch, (40, 20, 10))]
        p = yt.patch(copy.deepcopy(d))
        la, lb = [x.clone().requires_grad_() for x in xs], [x.clone().requires_grad_() for x in xs]
        ya, yb = d(la)[0], p(lb)[0]
        self.assertLess(rel(yb, ya), 1e-4, "Detect forward")
        g = torch.randn(ya.shape, device=DEV)
        ga = torch.autograd.grad(ya, la + [q for q in d.parameters() if q.requires_grad], g)
        gb = torch.autograd.grad(yb, lb + [q for q in p.parameters() if q.requires_grad], g)
        self.assertTrue(P.close_grads(ga, gb, 1e-3), "Detect backward")

    def test_families_eval(self):
        x = torch.rand(2, 3, 320, 256, device=DEV)
        for cfg in ("yolo12n.yaml", "yolo12s.yaml", "yolo11n.yaml", "yolov8n.yaml"):
            m = P.build(cfg).to(DEV).eval()
            p = yt.patch(copy.deepcopy(m))
            with torch.no_grad():
                self.assertLess(rel(p(x)[0], m(x)[0]), 1e-4, cfg)
                with torch.autocast("cuda", dtype=torch.float16):
                    self.assertLess(rel(p(x)[0], m(x)[0]), 2e-2, cfg + " autocast fp16")

    def train_steps(self, amp, steps=3, resync=False):
        """`steps` SGD steps of an unpatched and a patched yolo12n from the same weights and batch. With
        `resync`, each step after the first starts the patched model from the reference's weights, buffers
        and momentum, so every step compares the operators at the same point."""
        m = P.build("yolo12n.yaml", seed=3).to(DEV)
        m.args = P.get_cfg()
        p = yt.patch(copy.deepcopy(m))
        batch = {k: v.to(DEV) for k, v in P.random_batch(4, 256, m.model[-1].nc, seed=9).items()}
        opts = [torch.optim.SGD(x.parameters(), lr=0.01, momentum=0.9) for x in (m, p)]
        out = []
        for _ in range(steps):
            losses, grads = [], []
            for model, opt in zip((m, p), opts):
                model.train()
                opt.zero_grad()
                with torch.autocast("cuda", dtype=torch.float16, enabled=amp):
                    loss = model.loss(batch)[0].sum()
                loss.backward()
                losses.append(loss.item())
                grads.append([q.grad for q in model.parameters() if q.requires_grad])
                opt.step()
            out.append((losses, grads))
            if resync:
                with torch.no_grad():
                    pd = p.state_dict()
                    for k, v in m.state_dict().items():
                        pd[k].copy_(v)
                    for qa, qb in zip(m.parameters(), p.parameters()):
                        ma, mb = opts[0].state.get(qa, {}), opts[1].state.get(qb, {})
                        if ma.get("momentum_buffer") is not None:
                            mb["momentum_buffer"].copy_(ma["momentum_buffer"])
        return m, out

    def test_training_fp32(self):
        """Three steps, each from the reference's weights (resync): losses within 1e-4 and gradients within
        1e-3 at every step. Free-running (each model on its own weights), float32 rounding in the first
        steps changes the loss's discrete choices (the task-aligned assigner's anchors, train-mode
        BatchNorm's statistics) by step 3: on the H200 three A2C2f gradients then differed by 0.6 while
        step 1 agreed within 1e-3 (2026-12-01). So free-running only the losses are held, to 1e-2; the
        gradient gap is printed. The float64 steps of test_torch_patch.py run free and exact."""
        # The reference in true float32: cuDNN's convs and matmuls default to TF32 on this GPU.
        tf32 = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
        torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
        try:
            m, steps = self.train_steps(False, resync=True)
            _, free = self.train_steps(False)
        finally:
            torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = tf32
        names = [n for n, q in m.named_parameters() if q.requires_grad]
        for i, (losses, (ga, gb)) in enumerate(steps):
            self.assertAlmostEqual(losses[1] / losses[0], 1.0, delta=1e-4, msg="resync step %d %s" % (i, losses))
            self.assertTrue(P.close_grads(ga, gb, 1e-3), "resync step %d: %s" % (i, P.grad_report(names, ga, gb)))
        for i, (losses, (ga, gb)) in enumerate(free):
            self.assertAlmostEqual(losses[1] / losses[0], 1.0, delta=1e-4 if i == 0 else 1e-2,
                                   msg="free step %d %s" % (i, losses))
            print("free-running step %d: losses %s, worst gradients %s" % (i, losses, P.grad_report(names, ga, gb)))

    def test_training_amp(self):
        _, steps = self.train_steps(True)
        for i, (losses, _) in enumerate(steps):
            self.assertAlmostEqual(losses[1] / losses[0], 1.0, delta=2e-2, msg="step %d %s" % (i, losses))

    def test_compile_inductor(self):
        m = yt.patch(P.build("yolo12n.yaml").to(DEV).eval())
        x = torch.rand(2, 3, 256, 256, device=DEV)
        with torch.no_grad():
            want = m(x)[0]
            got = torch.compile(m)(x)[0]
        self.assertLess(rel(got, want), 1e-4)


if __name__ == "__main__":
    unittest.main()
