#!/usr/bin/env python3
"""yolo12_torch.patch / unpatch on Ultralytics models, on the CPU: the patched modules, state dicts,
pickling and copies; patched against unpatched outputs (YOLO12, YOLO11, YOLOv8, the committed fixtures,
the turbo YOLOv12 checkpoint from ../shared/data); AAttn and Detect modules forward and backward;
a few optimizer steps of a patched and an unpatched yolo12n from the same weights and batch (same
losses and gradients); torch.compile (aot_eager: dynamo, the fake kernels, AOTAutograd; inductor runs
in test_torch_gpu.py) of a patched model in eval and train mode.

    python3 tests/python/test_torch_patch.py   # exit 0 pass, 1 fail, 77 skipped (torch, the extension or ultralytics missing)
"""

import copy
import gzip
import io
import json
import os
import sys
import unittest

REPO = os.environ.get("YOLO12_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(REPO, "tests", "data")
SHARED = os.path.join(REPO, "..", "shared", "data")
sys.path.insert(0, os.path.join(REPO, "python", "yolo12_torch"))
try:
    import numpy as np
    import torch
    import yolo12_torch as yt
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.modules.block import AAttn
    from ultralytics.nn.modules.conv import Conv
    from ultralytics.nn.modules.head import Detect
    from ultralytics.nn.tasks import DetectionModel
except (ImportError, OSError) as e:  # OSError: a torch whose libraries are broken (a cut install)
    # tools/setup.sh sets YOLO12_TORCH_REQUIRED=1 once it built the extension
    print("%s: %s" % ("FAIL" if os.environ.get("YOLO12_TORCH_REQUIRED") == "1" else "SKIP", e))
    sys.exit(1 if os.environ.get("YOLO12_TORCH_REQUIRED") == "1" else 77)


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-30)).item()


def build(cfg, seed=0):
    torch.manual_seed(seed)
    return DetectionModel(cfg, verbose=False)


def load_npy(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return torch.from_numpy(np.load(f))


def grads(y, x, model, g):
    """Names and gradients of the input (if it requires grad) and of the trainable parameters."""
    named = ([("input", x)] if x is not None else []) + [(n, q) for n, q in model.named_parameters() if q.requires_grad]
    return [n for n, _ in named], torch.autograd.grad(y, [q for _, q in named], g, allow_unused=True)


def grad_errors(ga, gb):
    """Per tensor |a - b| / max(|a|, 1e-2 |all of a|): gradients that are zero but for rounding (the bias of
    a conv feeding a train-mode BatchNorm) are judged against the scale of the whole set."""
    total = torch.cat([a.flatten().double() for a in ga if a is not None]).norm()
    return [None if a is None else ((b.double() - a.double()).norm() / torch.maximum(a.double().norm(), 1e-2 * total)).item()
            for a, b in zip(ga, gb)]


def close_grads(ga, gb, tol):
    return all((a is None) == (b is None) for a, b in zip(ga, gb)) and all(
        e is None or e < tol for e in grad_errors(ga, gb))


def grad_report(names, ga, gb):
    errs = grad_errors(ga, gb)
    worst = sorted(((e, n) for e, n in zip(errs, names) if e is not None), reverse=True)[:3]
    return ", ".join("d%s %.2g" % (n, e) for e, n in worst)


def random_batch(b, size, nc, seed):
    """Images and a few labelled boxes per image, in the trainer's batch format."""
    g = torch.Generator().manual_seed(seed)
    n = 3
    xy = torch.rand(b * n, 2, generator=g) * 0.6 + 0.2
    wh = torch.rand(b * n, 2, generator=g) * 0.3 + 0.1
    return {"img": torch.rand(b, 3, size, size, generator=g),
            "batch_idx": torch.arange(b).repeat_interleave(n).float(),
            "cls": torch.randint(0, nc, (b * n, 1), generator=g).float(),
            "bboxes": torch.cat([xy, wh], 1)}


def turbo_aattn(dim, heads, area, seed):
    """An AAttn in the layout of the official YOLOv12 ("turbo") checkpoints: qk and v convs, 5x5 pe."""
    torch.manual_seed(seed)
    m = AAttn.__new__(AAttn)
    torch.nn.Module.__init__(m)
    m.area, m.num_heads, m.head_dim = area, heads, dim // heads
    m.qk = Conv(dim, 2 * dim, 1, act=False)
    m.v = Conv(dim, dim, 1, act=False)
    m.proj = Conv(dim, dim, 1, act=False)
    m.pe = Conv(dim, dim, 5, 1, 2, g=dim, act=False)
    for c in (m.qk, m.v, m.proj, m.pe):  # BN statistics that are not the identity
        c.bn.running_mean.uniform_(-0.2, 0.2)
        c.bn.running_var.uniform_(0.5, 2.0)
    return m


def turbo_reference(m, x):
    """The turbo attention in plain PyTorch (facts of the official repository's AAttn)."""
    b, c, h, w = x.shape
    n, heads, hd = h * w, m.num_heads, m.head_dim
    qk = m.qk(x).flatten(2).transpose(1, 2)
    v = m.v(x)
    pp = m.pe(v)
    v = v.flatten(2).transpose(1, 2)
    a = m.area
    qk, v = qk.reshape(b * a, n // a, 2 * c), v.reshape(b * a, n // a, c)
    q, k = qk.split([c, c], dim=2)
    q, k, v = (t.transpose(1, 2).reshape(b * a, heads, hd, n // a) for t in (q, k, v))
    attn = ((q.transpose(-2, -1) @ k) * hd ** -0.5).softmax(-1)
    y = (v @ attn.transpose(-2, -1)).permute(0, 3, 1, 2).reshape(b, n, c)
    return m.proj(y.reshape(b, h, w, c).permute(0, 3, 1, 2) + pp)


class PatchMechanics(unittest.TestCase):
    def test_classes_state_copies_pickles(self):
        m = build("yolo12n.yaml")
        p = yt.patch(copy.deepcopy(m))
        names = {type(x).__name__ for x in p.modules()}
        for n in ("Yolo12Conv", "Yolo12DWConv", "Yolo12AAttn", "Yolo12Detect", "Yolo12Conv2d"):
            self.assertIn(n, names)
        self.assertTrue(all(isinstance(a, type(b)) for a, b in zip(p.modules(), m.modules())), "subclasses of the originals")
        self.assertEqual(list(p.state_dict()), list(m.state_dict()))
        self.assertIs(yt.patch(p), p, "patch returns the model, patching twice is harmless")
        self.assertTrue(yt.is_patched(copy.deepcopy(p)), "a deep copy stays patched")
        buf = io.BytesIO()
        torch.save(p, buf)
        buf.seek(0)
        q = torch.load(buf, weights_only=False)
        self.assertFalse(yt.is_patched(q), "pickles name the original classes")
        self.assertNotIn(b"yolo12_torch", buf.getvalue())
        self.assertIs(yt.unpatch(p), p)
        self.assertFalse(yt.is_patched(p))
        self.assertEqual([type(a) for a in p.modules()], [type(b) for b in m.modules()])
        self.assertFalse(any("_yolo12" in k for x in p.modules() for k in vars(x)), "no attribute left behind")

    def test_fuse_before_and_after(self):
        m = build("yolo12n.yaml").eval()
        x = torch.rand(1, 3, 64, 96)
        f = copy.deepcopy(m).fuse(verbose=False)
        with torch.no_grad():
            want = f(x)[0]
            for label, model in (("patched after fuse", yt.patch(copy.deepcopy(f))),
                                 ("fused after patch", yt.patch(copy.deepcopy(m)).fuse(verbose=False))):
                self.assertLess(rel(model(x)[0], want), 1e-5, label)
                yt.unpatch(model)
                self.assertEqual(rel(model(x)[0], want), 0.0, label + ", unpatched")


class ModelParity(unittest.TestCase):
    """Patched and unpatched models of the same weights give the same head output (float32, eval)."""

    def test_families_random(self):
        x = torch.rand(2, 3, 64, 96)
        for cfg in ("yolo12n.yaml", "yolo12s.yaml", "yolo11n.yaml", "yolov8n.yaml"):
            m = build(cfg).eval()
            p = yt.patch(copy.deepcopy(m))
            with torch.no_grad():
                a, b = m(x), p(x)
            self.assertLess(rel(b[0], a[0]), 1e-5, cfg)
            for key in ("boxes", "scores"):
                self.assertLess(rel(b[1][key], a[1][key]), 1e-5, cfg + " " + key)

    def test_committed_fixtures(self):
        with open(os.path.join(DATA, "fixtures.json")) as f:
            fixtures = [e for e in json.load(f) if e.get("model") and e["imgsz"] == [320, 320]]
        self.assertTrue(fixtures)
        for e in fixtures:
            ck = torch.load(os.path.join(DATA, e["model"]), weights_only=False, map_location="cpu")
            model = yt.patch(ck["model"].float().eval())
            x = load_npy(os.path.join(DATA, e["input"]))
            with torch.no_grad():
                err = rel(model(x)[0], load_npy(os.path.join(DATA, e["output"])))
            self.assertLess(err, e["tolerance_rel_l2"], e["name"])

    def test_turbo_checkpoint(self):
        ckpt = os.path.join(SHARED, "fixtures", "yolov12n-turbo_rand.pt")
        if not os.path.exists(ckpt):
            self.skipTest("%s is absent (../shared/data)" % ckpt)
        model = torch.load(ckpt, weights_only=False, map_location="cpu")["model"].float().eval()
        x = load_npy(os.path.join(SHARED, "fixtures", "input_bus_640.npy.gz"))
        with self.assertRaises(AttributeError):  # stock Ultralytics cannot run the turbo attention
            model(x)
        yt.patch(model)
        with torch.no_grad():
            err = rel(model(x)[0], load_npy(os.path.join(SHARED, "fixtures", "yolov12n-turbo_bus_out.npy")))
        self.assertLess(err, 1e-3)  # the fixture's conditioning (SOURCES.md): 1e-6 input noise moves it by 2.3e-4


class Modules(unittest.TestCase):
    """AAttn (both families) and Detect, forward and backward, train and eval."""

    def grads_close(self, m, p, x, fwd, tol, label):
        xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
        ya, yb = fwd(m, xa), fwd(p, xb)
        self.assertLess(rel(yb, ya), tol, label + " forward")
        g = torch.randn(ya.shape, generator=torch.Generator().manual_seed(5))
        names, ga = grads(ya, xa, m, g)
        _, gb = grads(yb, xb, p, g)
        self.assertTrue(close_grads(ga, gb, tol), "%s: %s" % (label, grad_report(names, ga, gb)))

    def test_aattn(self):
        for dim, heads, area, size in ((64, 2, 4, (10, 10)), (64, 2, 4, (6, 10)), (96, 3, 1, (5, 6)), (64, 2, 3, (5, 9))):
            torch.manual_seed(dim + area)
            m = AAttn(dim, heads, area)
            for mode in ("train", "eval"):
                m.train(mode == "train")
                p = yt.patch(copy.deepcopy(m))
                x = torch.randn(2, dim, *size)
                self.grads_close(m, p, x, lambda mod, t: mod(t), 1e-5, "AAttn %s %s" % ((dim, heads, area, size), mode))
                t = turbo_aattn(dim, heads, area, seed=area).train(mode == "train")
                tp = yt.patch(copy.deepcopy(t))
                self.grads_close(t, tp, x, lambda mod, z: turbo_reference(mod, z) if not yt.is_patched(mod) else mod(z),
                                 1e-5, "turbo AAttn %s %s" % ((dim, heads, area, size), mode))

    def test_detect(self):
        torch.manual_seed(1)
        ch = (16, 32, 64)
        d = Detect(nc=5, ch=ch)
        d.stride = torch.tensor([8.0, 16.0, 32.0])
        d.bias_init()
        xs = [torch.randn(2, c, s, s) for c, s in zip(ch, (8, 4, 2))]
        for mode in ("eval", "train"):
            d.train(mode == "train")
            p = yt.patch(copy.deepcopy(d))

            def head(mod, *ts):
                out = mod(list(ts))
                return out[0] if mode == "eval" else torch.cat([out["boxes"], out["scores"]], 1)

            leaves_a = [x.clone().requires_grad_() for x in xs]
            leaves_b = [x.clone().requires_grad_() for x in xs]
            ya, yb = head(d, *leaves_a), head(p, *leaves_b)
            self.assertLess(rel(yb, ya), 1e-5, "Detect " + mode)
            g = torch.randn(ya.shape)
            trainable = [n for n, q in d.named_parameters() if q.requires_grad]
            ga = torch.autograd.grad(ya, leaves_a + [q for q in d.parameters() if q.requires_grad], g, allow_unused=True)
            gb = torch.autograd.grad(yb, leaves_b + [q for q in p.parameters() if q.requires_grad], g, allow_unused=True)
            names = ["input %d" % i for i in range(3)] + trainable
            self.assertTrue(close_grads(ga, gb, 1e-5), "Detect %s: %s" % (mode, grad_report(names, ga, gb)))


class Training(unittest.TestCase):
    def steps(self, dtype, steps, loss_tol, grad_tol):
        """Patched and unpatched yolo12n, same weights and batch: same losses and gradients at every SGD step."""
        m = build("yolo12n.yaml", seed=3).to(dtype)
        m.args = get_cfg()
        p = yt.patch(copy.deepcopy(m))
        batch = random_batch(2, 64, m.model[-1].nc, seed=9)
        batch["img"] = batch["img"].to(dtype)
        opts = [torch.optim.SGD(x.parameters(), lr=0.01, momentum=0.9) for x in (m, p)]
        names = [n for n, q in m.named_parameters() if q.requires_grad]
        for step in range(steps):
            losses, grads = [], []
            for model, opt in zip((m, p), opts):
                model.train()
                opt.zero_grad()
                loss = model.loss(batch)[0].sum()
                loss.backward()
                losses.append(loss.item())
                grads.append([q.grad for q in model.parameters() if q.requires_grad])
            self.assertAlmostEqual(losses[1] / losses[0], 1.0, delta=loss_tol, msg="step %d losses %s" % (step, losses))
            self.assertTrue(close_grads(grads[0], grads[1], grad_tol),
                            "%s step %d: %s" % (dtype, step, grad_report(names, grads[0], grads[1])))
            for opt in opts:
                opt.step()
        pa, pb = ([q.detach() for q in x.parameters() if q.requires_grad] for x in (m, p))
        self.assertTrue(close_grads(pa, pb, grad_tol), "%s weights: %s" % (dtype, grad_report(names, pa, pb)))

    def test_optimizer_steps_float64(self):
        """Three steps in float64 (the operators' loop kernels): equal to rounding. (In float32 the
        2x2 P5 maps' train-mode BatchNorm, 8 values per channel, amplifies rounding step after step.)"""
        self.steps(torch.float64, 3, 1e-9, 1e-7)

    def test_optimizer_step_float32(self):
        """One float32 step on the engine's CPU kernels (the forwards) and the loops (the backwards)."""
        self.steps(torch.float32, 1, 1e-4, 1e-3)


class Compile(unittest.TestCase):
    def test_aot_eager(self):
        """torch.compile traces a patched model without graph breaks and gives the eager output."""
        import torch._dynamo
        m = yt.patch(build("yolo12n.yaml").eval())
        x = torch.rand(1, 3, 64, 64)
        with torch.no_grad():
            want = m(x)[0]
            torch._dynamo.reset()
            explained = torch._dynamo.explain(m)(x)
            self.assertEqual(explained.graph_break_count, 0, [str(r.reason)[:300] for r in explained.break_reasons])
            got = torch.compile(m, backend="aot_eager")(x)[0]
        self.assertLess(rel(got, want), 1e-6)
        # train mode: the backward goes through the registered autograd formulas inside the compiled graph
        m.train()
        torch.manual_seed(0)
        xa = torch.rand(2, 3, 64, 64)
        eager = m(xa)
        loss_e = eager["boxes"].square().mean() + eager["scores"].sigmoid().mean()
        names, ge = grads(loss_e, None, m, None)
        compiled = torch.compile(m, backend="aot_eager")(xa)
        loss_c = compiled["boxes"].square().mean() + compiled["scores"].sigmoid().mean()
        _, gc = grads(loss_c, None, m, None)
        self.assertLess(abs(loss_c.item() / loss_e.item() - 1), 1e-5)
        self.assertTrue(close_grads(ge, gc, 1e-4), grad_report(names, ge, gc))


if __name__ == "__main__":
    unittest.main()
