#!/usr/bin/env python3
"""Benchmarks of yolo12_torch on one CUDA GPU (issue 12), random weights, fp16:

  ops    every distinct Conv and AAttn shape of yolo12n / yolo12s at 640x640 (found by hooks on an
         Ultralytics DetectionModel), forward and forward+backward, ours (yolo12::conv2d,
         yolo12::area_attention) against PyTorch (cuDNN conv; SDPA on the area chunks), batch 16 and 32,
         channels_last; plus the per-model totals weighted by how often each shape occurs, and the
         Detect decode (ours against the plain-PyTorch DFL decode).
  train  one training step (forward, Ultralytics' loss, backward, SGD; AMP fp16 with a GradScaler) of
         yolo12n and yolo12s at batch 32, 640x640: unpatched eager (NCHW as Ultralytics trains, and
         channels_last), patched eager, and with torch.compile (unpatched and patched).

    python3 python/yolo12_torch/bench.py --out DIR [--what ops,train] [--scales n,s] [--batches 16,32]
        [--compile n] [--budget SECONDS]

Times are medians over CUDA-event-timed iterations after warm-up. Results: DIR/bench.json (every row)
and DIR/bench.md (tables), rewritten after every row so that a cut run keeps what it measured.
"""

import argparse
import copy
import json
import os
import statistics
import sys
import time
import traceback

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yolo12_torch as yt  # noqa: E402

DEV = torch.device("cuda")
START = time.time()


def timed(fn, iters, warmup=3):
    """Median milliseconds of fn() over iters runs (CUDA events)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


class Report:
    def __init__(self, out):
        self.out, self.rows, self.notes = out, [], []
        os.makedirs(out, exist_ok=True)

    def add(self, row):
        self.rows.append(row)
        print(json.dumps(row), flush=True)
        self.write()

    def note(self, text):
        self.notes.append(text)
        print("note: " + text, flush=True)
        self.write()

    def write(self):
        meta = {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU", "torch": torch.__version__, "notes": self.notes}
        with open(os.path.join(self.out, "bench.json"), "w") as f:
            json.dump({"meta": meta, "rows": self.rows}, f, indent=1)
        with open(os.path.join(self.out, "bench.md"), "w") as f:
            f.write(markdown(meta, self.rows))


def markdown(meta, rows):
    lines = ["yolo12_torch benchmarks on %s, torch %s, fp16, random weights, medians (ms)." % (meta["gpu"], meta["torch"]), ""]
    tot = [r for r in rows if r["kind"] == "op_total"]
    if tot:
        lines += ["| model | op | batch | shapes (layers) | ours fwd | torch fwd | ours fwd+bwd | torch fwd+bwd |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += ["| yolo12%s | %s | %d | %d (%d) | %.3f | %.3f | %.3f | %.3f |" % (
            r["scale"], r["op"], r["batch"], r["shapes"], r["layers"], r["ours_fwd"], r["ref_fwd"], r["ours_fwdbwd"],
            r["ref_fwdbwd"]) for r in tot]
        lines.append("")
    tr = [r for r in rows if r["kind"] == "train"]
    if tr:
        lines += ["| model | batch | variant | step ms | images/s |", "|---|---|---|---|---|"]
        lines += ["| yolo12%s | %d | %s | %s | %s |" % (r["scale"], r["batch"], r["variant"],
                                                     "%.1f" % r["ms"] if "ms" in r else r.get("error", "")[:80],
                                                     "%.0f" % (1000 * r["batch"] / r["ms"]) if "ms" in r else "")
                  for r in tr]
        lines.append("")
    per = [r for r in rows if r["kind"] in ("conv", "attention", "detect")]
    if per:
        lines += ["| model | op | shape | count | batch | ours fwd | torch fwd | ours fwd+bwd | torch fwd+bwd |",
                  "|---|---|---|---|---|---|---|---|---|"]
        lines += ["| yolo12%s | %s | %s | %d | %d | %.3f | %.3f | %.3f | %.3f |" % (
            r["scale"], r["kind"], r["shape"], r["count"], r["batch"], r["ours_fwd"], r["ref_fwd"], r["ours_fwdbwd"],
            r["ref_fwdbwd"]) for r in per]
    lines += [""] + ["- " + n for n in meta["notes"]]
    return "\n".join(lines) + "\n"


def model(scale):
    from ultralytics.nn.tasks import DetectionModel
    torch.manual_seed(0)
    return DetectionModel("yolo12%s.yaml" % scale, verbose=False)


def shapes(scale):
    """Distinct (conv, attention) shapes of one 640x640 image through yolo12<scale>, with their counts."""
    from ultralytics.nn.modules.block import AAttn
    from ultralytics.nn.modules.conv import Conv
    m = model(scale).to(DEV).train()
    convs, attns, hooks = {}, {}, []

    def conv_hook(mod, inp, out):
        c = mod.conv
        key = (inp[0].shape[1], inp[0].shape[2], inp[0].shape[3], c.out_channels, c.kernel_size[0], c.stride[0],
               c.padding[0], c.groups)
        convs[key] = convs.get(key, 0) + 1

    def attn_hook(mod, inp, out):
        _, _, h, w = inp[0].shape
        key = (h * w, mod.num_heads, mod.area)
        attns[key] = attns.get(key, 0) + 1

    for mod in m.modules():
        if isinstance(mod, Conv):
            hooks.append(mod.register_forward_hook(conv_hook))
        elif isinstance(mod, AAttn):
            hooks.append(mod.register_forward_hook(attn_hook))
    with torch.no_grad():
        m(torch.zeros(1, 3, 640, 640, device=DEV))
    for h in hooks:
        h.remove()
    return convs, attns


def bench_conv(key, batch, iters):
    c, h, w, o, k, s, p, g = key
    x = torch.randn(batch, c, h, w, device=DEV, dtype=torch.half).contiguous(memory_format=torch.channels_last)
    wt = (torch.randn(o, c // g, k, k, device=DEV) / (c // g * k * k) ** 0.5).half()
    x.requires_grad_()
    wt.requires_grad_()
    ours = lambda: yt.conv2d(x, wt, None, None, s, p, 1, g, False)  # noqa: E731  (the train-mode conv: no bias)
    ref = lambda: F.conv2d(x, wt, None, s, p, 1, g)  # noqa: E731
    gy = torch.randn_like(ref())

    def fb(f):
        return lambda: torch.autograd.grad(f(), (x, wt), gy)

    with torch.no_grad():
        r = {"ours_fwd": timed(ours, iters), "ref_fwd": timed(ref, iters)}
    r.update(ours_fwdbwd=timed(fb(ours), iters), ref_fwdbwd=timed(fb(ref), iters))
    return r


def bench_attention(key, batch, iters):
    n, heads, area = key
    qkv = torch.randn(batch, n, heads * 96, device=DEV, dtype=torch.half, requires_grad=True)
    q, k, v = qkv.view(batch, n, heads, 96).split([32, 32, 32], dim=3)  # the patched AAttn's views
    leaves = (qkv,)

    def ours():
        return yt.area_attention(q, k, v, area)

    def ref():  # SDPA on the chunks, (B * area, heads, N / area, 32)
        qs, ks, vs = (t.reshape(batch * area, n // area, heads, 32).transpose(1, 2) for t in (q, k, v))
        return F.scaled_dot_product_attention(qs, ks, vs).transpose(1, 2).reshape(batch, n, heads, 32)

    go = torch.randn(batch, n, heads, 32, device=DEV, dtype=torch.half)

    def fb(f):
        return lambda: torch.autograd.grad(f(), leaves, go)

    with torch.no_grad():
        r = {"ours_fwd": timed(ours, iters), "ref_fwd": timed(ref, iters)}
    r.update(ours_fwdbwd=timed(fb(ours), iters), ref_fwdbwd=timed(fb(ref), iters))
    return r


def bench_detect(batch, iters, nc=80, reg_max=16):
    sizes = ((80, 80), (40, 40), (20, 20))
    box = [torch.randn(batch, 4 * reg_max, h, w, device=DEV, dtype=torch.half).contiguous(
        memory_format=torch.channels_last).requires_grad_() for h, w in sizes]
    cls = [torch.randn(batch, nc, h, w, device=DEV, dtype=torch.half).contiguous(
        memory_format=torch.channels_last).requires_grad_() for h, w in sizes]
    strides = [8, 16, 32]
    proj = torch.arange(reg_max, device=DEV, dtype=torch.half)

    def ref():  # Ultralytics' decode in plain PyTorch: DFL, anchors, dist2bbox, sigmoid
        outs = []
        for bx, c, s in zip(box, cls, strides):
            b, _, h, w = bx.shape
            dist = (bx.reshape(b, 4, reg_max, h * w).softmax(2) * proj.view(1, 1, -1, 1)).sum(2)
            ys, xs = torch.meshgrid(torch.arange(h, device=DEV), torch.arange(w, device=DEV), indexing="ij")
            ax, ay = xs.reshape(-1) + 0.5, ys.reshape(-1) + 0.5
            lt, tp, rt, bt = dist.unbind(1)
            xywh = torch.stack([ax + (rt - lt) / 2, ay + (bt - tp) / 2, lt + rt, tp + bt], 1) * s
            outs.append(torch.cat([xywh, c.reshape(b, nc, h * w).sigmoid()], 1))
        return torch.cat(outs, 2)

    ours = lambda: yt.detect_decode(box, cls, strides)  # noqa: E731
    g = torch.randn_like(ref())

    def fb(f):
        return lambda: torch.autograd.grad(f(), box + cls, g)

    with torch.no_grad():
        r = {"ours_fwd": timed(ours, iters), "ref_fwd": timed(ref, iters)}
    r.update(ours_fwdbwd=timed(fb(ours), iters), ref_fwdbwd=timed(fb(ref), iters))
    return r


def failed(rep, what, e):
    """A failed measurement is a note (and a traceback in the log), not the end of the run."""
    traceback.print_exc()
    rep.note("%s failed: %s: %s" % (what, type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
    torch.cuda.empty_cache()


def run_ops(rep, scales, batches, iters, deadline):
    for scale in scales:
        try:
            convs, attns = shapes(scale)
        except Exception as e:  # noqa: BLE001
            failed(rep, "ops: the shapes of yolo12%s" % scale, e)
            continue
        for batch in batches:
            totals = {"conv": [0, 0, {}], "attention": [0, 0, {}]}
            for kind, table, fn in (("conv", convs, bench_conv), ("attention", attns, bench_attention)):
                for key, count in table.items():
                    if time.time() > deadline:
                        rep.note("ops: out of time at yolo12%s batch %d %s %s" % (scale, batch, kind, key))
                        return
                    try:
                        r = fn(key, batch, iters)
                    except Exception as e:  # noqa: BLE001  (the totals then leave this shape out)
                        failed(rep, "ops: yolo12%s batch %d %s %s" % (scale, batch, kind, key), e)
                        continue
                    rep.add(dict(kind=kind, scale=scale, batch=batch, shape=str(key), count=count, **r))
                    t = totals[kind]
                    t[0] += 1
                    t[1] += count
                    for name, ms in r.items():
                        t[2][name] = t[2].get(name, 0.0) + count * ms
            for kind, (n, layers, sums) in totals.items():
                rep.add(dict(kind="op_total", scale=scale, op=kind, batch=batch, shapes=n, layers=layers, **sums))
    for batch in batches:
        if time.time() > deadline:
            rep.note("ops: out of time before the Detect decode at batch %d" % batch)
            return
        try:
            rep.add(dict(kind="detect", scale="n/s", batch=batch, shape="P3-P5 640, nc 80, reg_max 16", count=1,
                         **bench_detect(batch, iters)))
        except Exception as e:  # noqa: BLE001
            failed(rep, "ops: Detect decode batch %d" % batch, e)


def train_step_fn(m, batch, compiled=None):
    from ultralytics.cfg import get_cfg
    m.args = get_cfg()
    opt = torch.optim.SGD(m.parameters(), lr=1e-3, momentum=0.9)
    scaler = torch.amp.GradScaler("cuda")
    # Not `compiled or m`: bool() of a compiled module calls its __len__, which torch 2.11 makes raise
    # "DetectionModel does not support len()" (the H200 run of 2026-12-01).
    fwd = m if compiled is None else compiled

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            preds = fwd(batch["img"])
            loss = m.loss(batch, preds)[0].sum()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    return step


def random_batch(b, nc, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = 4
    xy = torch.rand(b * n, 2, generator=g) * 0.6 + 0.2
    wh = torch.rand(b * n, 2, generator=g) * 0.3 + 0.1
    cpu = {"img": torch.rand(b, 3, 640, 640, generator=g), "batch_idx": torch.arange(b).repeat_interleave(n).float(),
           "cls": torch.randint(0, nc, (b * n, 1), generator=g).float(), "bboxes": torch.cat([xy, wh], 1)}
    return {k: v.to(DEV) for k, v in cpu.items()}


def run_train(rep, scales, batch, compile_scales, iters, deadline, only=None):
    for scale in scales:
        variants = [("unpatched eager", False, False, False), ("unpatched eager channels_last", False, True, False),
                    ("patched eager", True, True, False)]
        if scale in compile_scales:
            variants += [("unpatched compile", False, True, True), ("patched compile", True, True, True)]
        if only:  # entries "name" or "scale:name", "_" for a space
            variants = [v for v in variants if v[0] in only or "%s:%s" % (scale, v[0]) in only]
        for name, patched, cl, comp in variants:
            if time.time() > deadline:
                rep.note("train: out of time before yolo12%s %s" % (scale, name))
                return
            row = dict(kind="train", scale=scale, batch=batch, variant=name)
            try:
                m = model(scale).to(DEV).train()
                b = random_batch(batch, m.model[-1].nc)
                if cl:
                    m = m.to(memory_format=torch.channels_last)
                    b["img"] = b["img"].contiguous(memory_format=torch.channels_last)
                if patched:
                    yt.patch(m)
                t0 = time.time()
                step = train_step_fn(m, b, torch.compile(m) if comp else None)
                step()  # the compile, when there is one
                torch.cuda.synchronize()
                row["first_step_s"] = round(time.time() - t0, 1)
                row["ms"] = timed(step, iters, warmup=2)
                row["peak_mem_gb"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 1)
            except Exception as e:  # noqa: BLE001  (a failed variant is a row, not the end of the run)
                row["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                traceback.print_exc()
            rep.add(row)
            del m
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join("out", "torch_bench"))
    ap.add_argument("--what", default="ops,train")
    ap.add_argument("--scales", default="n,s")
    ap.add_argument("--batches", default="16,32")
    ap.add_argument("--train-batch", type=int, default=32)
    ap.add_argument("--compile", default="n", help="scales also trained under torch.compile ('none': none)")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--variants", default="", help="training variants to run: comma-separated 'name' or 'scale:name', '_' for a space (default: all)")
    ap.add_argument("--budget", type=float, default=300, help="seconds; what is left when they run out is skipped")
    a = ap.parse_args()
    if not torch.cuda.is_available() or not yt.with_cuda:
        sys.exit("bench: needs a CUDA device and yolo12_torch built with CUDA")
    torch.backends.cudnn.benchmark = True
    rep = Report(a.out)
    deadline = START + a.budget
    scales, what = a.scales.split(","), a.what.split(",")
    if "train" in what:  # the training step first: it is the headline figure
        run_train(rep, scales, a.train_batch, a.compile.split(","), 10, deadline,
                  [v.strip().replace("_", " ") for v in a.variants.split(",") if v.strip()] or None)
    if "ops" in what:
        run_ops(rep, scales, [int(b) for b in a.batches.split(",")], a.iters, deadline)
    rep.note("total %.0f s" % (time.time() - START))


if __name__ == "__main__":
    main()
