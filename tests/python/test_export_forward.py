#!/usr/bin/env python3
"""End-to-end check of exported files: a small numpy forward pass of a .y12 model, compared with the
Ultralytics reference head outputs listed in tests/data/fixtures.json.

The forward pass below is written from docs/model-format.md alone (the layer table and the block
descriptions), in float64, one image at a time. If the exporter stored a wrong tensor, a wrong field,
or the spec described a block wrongly (e.g. the turbo attention layout), the output would not match.

    python3 tests/python/test_export_forward.py   # exit 0 pass, 1 fail, 77 an input is missing
"""

import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np

REPO = os.environ.get("YOLO12_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(REPO, "..", "shared", "data")
EXPORT = os.path.join(REPO, "exporter", "export.py")
# The exporter records each model it writes as yolo12-infer's default: in a folder of this run's own,
# never the user's settings.
_CONFIG = tempfile.TemporaryDirectory(prefix="y12-test-config-")
os.environ["YOLO12_CONFIG_DIR"] = _CONFIG.name


def load_y12(path):
    """Header and tensors (float64) of a .y12 file."""
    with open(path, "rb") as f:
        blob = f.read()
    n = struct.unpack("<Q", blob[16:24])[0]
    header = json.loads(blob[24:24 + n])
    start = (24 + n + 255) // 256 * 256
    tensors = {}
    for t in header["tensors"]:
        dt = "<f4" if t["dtype"] == "f32" else "<f2"
        raw = blob[start + t["offset"]:start + t["offset"] + t["size"]]
        tensors[t["name"]] = np.frombuffer(raw, dtype=dt).astype(np.float64).reshape(t["shape"])
    return header, tensors


# --- primitive ops on one image (C, H, W) ---------------------------------------------------------

def conv2d(x, w, b, stride=1, pad=0, groups=1):
    """x: (C, H, W); w: (O, C/groups, k, k); b: (O,). Zero padding."""
    c, h, wd = x.shape
    o, cg, k, _ = w.shape
    if pad:
        x = np.pad(x, ((0, 0), (pad, pad), (pad, pad)))
    ho, wo = (h + 2 * pad - k) // stride + 1, (wd + 2 * pad - k) // stride + 1
    if groups == c and cg == 1 and o == c:  # depthwise: accumulate shifted slices
        out = np.zeros((c, ho, wo))
        for i in range(k):
            for j in range(k):
                out += w[:, 0, i, j][:, None, None] * x[:, i:i + stride * ho:stride, j:j + stride * wo:stride]
        return out + b[:, None, None]
    win = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(1, 2))[:, ::stride, ::stride]  # (C, Ho, Wo, k, k)
    outs = []
    og = o // groups
    for gi in range(groups):
        cols = win[gi * cg:(gi + 1) * cg].transpose(0, 3, 4, 1, 2).reshape(cg * k * k, ho * wo)
        outs.append(w[gi * og:(gi + 1) * og].reshape(og, -1) @ cols)
    return np.concatenate(outs, 0).reshape(o, ho, wo) + b[:, None, None]


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(x, axis):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def maxpool_same(x, k):
    p = k // 2
    xp = np.pad(x, ((0, 0), (p, p), (p, p)), constant_values=-np.inf)
    return np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2)).max(axis=(3, 4))


class Net:
    def __init__(self, header, tensors):
        self.h, self.t = header, tensors

    def conv(self, p, x, k, s=1, g=1, act=True, p_=None):
        w, b = self.t[p + ".conv.weight"], self.t[p + ".conv.bias"]
        assert w.shape[2] == k, (p, w.shape, k)
        y = conv2d(x, w, b, s, k // 2 if p_ is None else p_, g)
        return silu(y) if act else y

    def bottleneck(self, p, x, shortcut, g):
        y = self.conv(p + ".cv2", self.conv(p + ".cv1", x, 3), 3, g=g)
        return x + y if shortcut and x.shape[0] == y.shape[0] else y

    def c3k(self, p, x, shortcut, g):
        a = self.conv(p + ".cv1", x, 1)
        for j in range(2):
            a = self.bottleneck(f"{p}.m.{j}", a, shortcut, g)
        return self.conv(p + ".cv3", np.concatenate([a, self.conv(p + ".cv2", x, 1)]), 1)

    def aattn(self, p, x, area, kind, pe_k):
        c, hh, ww = x.shape
        heads, hd, n = c // 32, 32, hh * ww
        if kind == "qkv":  # per token (heads, 3*hd): q, k, v side by side per head
            qkv = self.conv(p + ".qkv", x, 1, act=False).reshape(heads, 3 * hd, n)
            q, k, v = qkv[:, :hd], qkv[:, hd:2 * hd], qkv[:, 2 * hd:]
        else:  # turbo: qk conv = all q then all k; separate v conv
            qk = self.conv(p + ".qk", x, 1, act=False).reshape(2, heads, hd, n)
            q, k = qk[0], qk[1]
            v = self.conv(p + ".v", x, 1, act=False).reshape(heads, hd, n)
        v_img = v.reshape(c, hh, ww)
        out = np.zeros((heads, hd, n))
        m = n // area
        for a in range(area):  # contiguous chunks of the row-major token sequence
            sl = slice(a * m, (a + 1) * m)
            att = softmax(np.einsum("hdi,hdj->hij", q[:, :, sl], k[:, :, sl]) * hd ** -0.5, axis=2)
            out[:, :, sl] = np.einsum("hij,hdj->hdi", att, v[:, :, sl])
        y = out.reshape(c, hh, ww) + self.conv(p + ".pe", v_img, pe_k, g=c, act=False)
        return self.conv(p + ".proj", y, 1, act=False)

    def ablock(self, p, x, area, kind, pe_k):
        x = x + self.aattn(p + ".attn", x, area, kind, pe_k)
        return x + self.conv(p + ".mlp.1", self.conv(p + ".mlp.0", x, 1), 1, act=False)

    def psa_attention(self, p, x):
        c, hh, ww = x.shape
        heads = c // 64
        hd = c // heads
        kd = hd // 2
        qkv = self.conv(p + ".qkv", x, 1, act=False).reshape(heads, 2 * kd + hd, hh * ww)
        q, k, v = qkv[:, :kd], qkv[:, kd:2 * kd], qkv[:, 2 * kd:]
        att = softmax(np.einsum("hdi,hdj->hij", q, k) * kd ** -0.5, axis=2)
        y = np.einsum("hij,hdj->hdi", att, v).reshape(c, hh, ww)
        y = y + self.conv(p + ".pe", v.reshape(c, hh, ww), 3, g=c, act=False)
        return self.conv(p + ".proj", y, 1, act=False)

    def layer(self, L, xs):
        p, t = f"model.{L['index']}", L["type"]
        x = xs[0]
        if t == "Conv":
            return self.conv(p, x, L["k"], L["s"], L["g"], L["act"] == "silu", L["p"])
        if t in ("C2f", "C3k2"):
            c = int(L["c2"] * L["e"])
            y = [*np.split(self.conv(p + ".cv1", x, 1), [c])]
            for j in range(L["n"]):
                mp = f"{p}.m.{j}"
                if t == "C3k2" and L["c3k"]:
                    y.append(self.c3k(mp, y[-1], L["shortcut"], L["g"]))
                else:
                    y.append(self.bottleneck(mp, y[-1], L["shortcut"], L["g"]))
            return self.conv(p + ".cv2", np.concatenate(y), 1)
        if t == "A2C2f":
            y = [self.conv(p + ".cv1", x, 1)]
            for j in range(L["n"]):
                mp = f"{p}.m.{j}"
                if L["a2"]:
                    z = y[-1]
                    for q in range(2):
                        z = self.ablock(f"{mp}.{q}", z, L["area"], L["attn"], L["pe_k"])
                    y.append(z)
                else:
                    y.append(self.c3k(mp, y[-1], L["shortcut"], L["g"]))
            out = self.conv(p + ".cv2", np.concatenate(y), 1)
            if L["a2"] and L["residual"]:
                out = x + self.t[p + ".gamma"][:, None, None] * out
            return out
        if t == "SPPF":
            y = [self.conv(p + ".cv1", x, 1, act=L.get("cv1_act", "silu") == "silu")]
            for _ in range(3):
                y.append(maxpool_same(y[-1], L["k"]))
            return self.conv(p + ".cv2", np.concatenate(y), 1)
        if t == "C2PSA":
            c = int(L["c1"] * L["e"])
            a, b = np.split(self.conv(p + ".cv1", x, 1), [c])
            for j in range(L["n"]):
                mp = f"{p}.m.{j}"
                b = b + self.psa_attention(mp + ".attn", b)
                b = b + self.conv(mp + ".ffn.1", self.conv(mp + ".ffn.0", b, 1), 1, act=False)
            return self.conv(p + ".cv2", np.concatenate([a, b]), 1)
        if t == "Upsample":
            return x.repeat(2, axis=1).repeat(2, axis=2)
        if t == "Concat":
            return np.concatenate(xs)
        if t == "Detect":
            return self.detect(p, L, xs)
        raise AssertionError(t)

    def detect(self, p, L, xs):
        reg = L["reg_max"]
        boxes, scores = [], []
        for lvl, (x, s) in enumerate(zip(xs, self.h["strides"])):
            b = self.conv(f"{p}.cv2.{lvl}.1", self.conv(f"{p}.cv2.{lvl}.0", x, 3), 3)
            b = conv2d(b, self.t[f"{p}.cv2.{lvl}.2.weight"], self.t[f"{p}.cv2.{lvl}.2.bias"])
            if L["legacy"]:
                c = self.conv(f"{p}.cv3.{lvl}.1", self.conv(f"{p}.cv3.{lvl}.0", x, 3), 3)
            else:
                c = self.conv(f"{p}.cv3.{lvl}.0.0", x, 3, g=x.shape[0])
                c = self.conv(f"{p}.cv3.{lvl}.0.1", c, 1)
                c = self.conv(f"{p}.cv3.{lvl}.1.0", c, 3, g=c.shape[0])
                c = self.conv(f"{p}.cv3.{lvl}.1.1", c, 1)
            c = conv2d(c, self.t[f"{p}.cv3.{lvl}.2.weight"], self.t[f"{p}.cv3.{lvl}.2.bias"])
            _, hh, ww = b.shape
            dist = (softmax(b.reshape(4, reg, hh * ww), 1) * np.arange(reg)[None, :, None]).sum(1)  # l, t, r, b
            ys, xs_ = np.meshgrid(np.arange(hh) + 0.5, np.arange(ww) + 0.5, indexing="ij")
            ax, ay = xs_.reshape(-1), ys.reshape(-1)
            x1, y1, x2, y2 = ax - dist[0], ay - dist[1], ax + dist[2], ay + dist[3]
            boxes.append(np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1]) * s)
            scores.append(1.0 / (1.0 + np.exp(-c.reshape(c.shape[0], -1))))
        return np.concatenate([np.concatenate(boxes, 1), np.concatenate(scores, 1)], 0)

    def forward(self, img):
        outs = []
        for L in self.h["layers"]:
            xs = [img if f == -1 else outs[f] for f in L["from"]]
            outs.append(self.layer(L, xs))
        return outs[-1]


def load_npy(path):
    if path.endswith(".gz"):
        with gzip.open(path) as f:
            return np.load(f)
    return np.load(path)


def fixture_cases():
    with open(os.path.join(REPO, "tests", "data", "fixtures.json")) as f:
        return json.load(f)


class Forward(unittest.TestCase):
    def run_case(self, name, dtype="--fp32", tol=None):
        case = next((c for c in fixture_cases() if c["name"] == name), None)
        if case is None:
            raise unittest.SkipTest(f"{name} not in tests/data/fixtures.json")
        root = os.path.join(REPO, "tests", "data") if case["root"] == "tests" else SHARED
        if case.get("model"):
            src = os.path.join(root, case["model"])
        else:
            src = os.path.join(SHARED, case["model_source"].split(":", 1)[1])
        inp, ref = os.path.join(root, case["input"]), os.path.join(root, case["output"])
        for pth in (src, inp, ref):
            if not os.path.exists(pth):
                raise unittest.SkipTest(f"missing input {os.path.normpath(pth)} (../shared/data not present?)")
        with tempfile.TemporaryDirectory() as d:
            dst = os.path.join(d, "m.y12")
            p = subprocess.run([sys.executable, EXPORT, src, "-o", dst, dtype], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            net = Net(*load_y12(dst))
        x = load_npy(inp).astype(np.float64)
        want = load_npy(ref).astype(np.float64)
        got = net.forward(x[0])
        self.assertEqual(got.shape, want.shape[1:])
        err = np.linalg.norm(got - want[0]) / np.linalg.norm(want[0])
        tol = tol or max(10 * case.get("fp32_vs_fp64_rel_l2", 1e-4), 1e-5)
        print(f"  {name} {dtype}: rel L2 {err:.3g} (tolerance {tol:.3g})", file=sys.stderr)
        self.assertLess(err, tol)
        # the check is meaningful: a different input gives a clearly different output
        self.assertGreater(np.abs(want[0]).max(), 1.0)

    def test_fixtures(self):
        """Every model listed in tests/data/fixtures.json: the first square case and the first rect case."""
        seen, ran = set(), 0
        for case in fixture_cases():
            key = (case.get("model") or case.get("model_source"), bool(case.get("rect")))
            if key in seen:
                continue
            seen.add(key)
            with self.subTest(case=case["name"]):
                try:
                    self.run_case(case["name"])
                    ran += 1
                except unittest.SkipTest as e:
                    print(f"  skipped {case['name']}: {e}", file=sys.stderr)
        if ran == 0:
            raise unittest.SkipTest("no fixture could run (../shared/data missing?)")

    def test_turbo_fp16(self):
        """--fp16 weights (activations still float64) stay near the reference. This input amplifies
        small changes about 200x (tests/data/fixtures.json), so f16 rounding of the weights (5e-4)
        costs about 3e-2 here (measured 3.1e-2); 0.1 would catch a wrong or garbled tensor."""
        self.run_case("yolov12n-turbo_rand_bus_640", "--fp16", tol=0.1)


def main():
    result = unittest.main(exit=False, verbosity=2).result
    if result.failures or result.errors:
        sys.exit(1)
    sys.exit(77 if result.skipped else 0)


if __name__ == "__main__":
    main()
