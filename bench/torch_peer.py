#!/usr/bin/env python3
"""The PyTorch peer for yolo12-bench: Ultralytics YOLO12 on the same GPU, network forward only.

    python3 bench/torch_peer.py run --out peer.json --save-dir models/peer \
        [--scales n,s,m,l,x] [--batches 1,32] [--compile n] [--channels-last graph,compile] [--iters 50]
    python3 bench/torch_peer.py warm --save-dir /tmp/peer-warm [--scales n,s,m,l,x] [--batches 1,32] \
        [--compile n] [--channels-last graph,compile] [--jobs 4]
    python3 bench/torch_peer.py save --save-dir models/peer [--scales n,s]
    python3 bench/torch_peer.py table --peer peer.json --ours ours_n.json ours_s.json ... \
        --command "tools/gpu_check.sh" > table.md

`run`: for each scale, a random-weight model from Ultralytics' yolo12{scale}.yaml (default init,
saved unfused as {save_dir}/yolo12{scale}_peer.pt through Ultralytics' own Model.save, so that
exporter/export.py can convert the very same weights for our engine), then fuse(), eval, on the GPU,
at 640x640 on random input. Modes: eager fp32 / fp16, the eager model captured in one CUDA graph
(fp32 / fp16), and for the scales in --compile torch.compile (inductor, default mode) then captured in
one CUDA graph (fp16). The fp16 graph and compile+graph modes named in --channels-last also run with
the model and input in channels_last (NHWC) memory format (keys with a `_cl` suffix); both numbers are
recorded, and each row's `best_fp16` names PyTorch's fastest fp16 mode of all. Median and p90 of
--iters runs, timed with CUDA events after warm-up. `max-autotune` is never used: its compiles took
over 9 minutes for yolo12n alone on the H200.
With --merge, rows of an earlier --out file whose scale and batch this run does not measure are kept, so a
peer split over several calls ends in one JSON.
`warm`: the compiles of `run` (each compiled scale, batch and memory format), done beforehand in --jobs
processes at once, one per compile, so that `run`'s own compiles find Inductor's on-disk caches
(the FX graph and autograd caches, Triton's kernels) warm. Nothing is timed there, and `run` still times
every mode alone on the GPU after it; its rows record how many of their compiles hit the FX graph cache
(`compile_cache_hits`). A cold compile takes 15-40 s (yolo12x the most), one that hits the caches 3-12 s
(thirty-second session, H100): twenty cold compiles one after another are most of the peer's time.
`save`: only the .pt files of `run` (the same seed, so the same weights), for yolo12-bench without the
peer's timings (tools/gpu_check.sh perf).
`table`: one side-by-side markdown table (ours from yolo12-bench JSON, the peer from `run`); the PyTorch
graph and compile+graph columns show the better memory format, marked "(cl)" where channels_last won.
"""

import argparse
import datetime
import json
import time
import os
import sys


def _stats(ms):
    ms = sorted(ms)
    return {"median_ms": ms[len(ms) // 2], "p90_ms": ms[min(len(ms) - 1, int(len(ms) * 0.9))]}


def _time(fn, iters, warmup, torch):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))
    return _stats(out)


def _graphed(model, x, torch):
    """The model's forward on the static input x captured in one CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x)
    return g.replay


# The fp16 modes a row can hold, in the order they are run: (key, mode, channels_last).
FP16_FAST_MODES = (("fp16_graph", "graph", False), ("fp16_graph_cl", "graph", True),
                   ("fp16_compile_graph", "compile+graph", False), ("fp16_compile_graph_cl", "compile+graph", True))


def best_fp16(modes):
    """PyTorch's fastest fp16 mode of a row (eager included) as {"mode": key, "median_ms": ms}, or None."""
    timed = {k: v["median_ms"] for k, v in modes.items() if k.startswith("fp16_") and "median_ms" in v}
    if not timed:
        return None
    key = min(timed, key=timed.get)
    return {"mode": key, "median_ms": timed[key]}


def _better_format(modes, key):
    """The better of a mode and its channels_last twin: (entry, True if channels_last won)."""
    a, b = modes.get(key), modes.get(key + "_cl")
    a_ok, b_ok = bool(a) and "median_ms" in a, bool(b) and "median_ms" in b
    if b_ok and (not a_ok or b["median_ms"] < a["median_ms"]):
        return b, True
    return (a if a_ok else None), False


def _peer_model(scale, save_dir):
    """The peer's random-weight model of one scale (seed 0), saved as {save_dir}/yolo12{scale}_peer.pt."""
    import torch
    from ultralytics import YOLO

    torch.manual_seed(0)
    wrapper = YOLO(f"yolo12{scale}.yaml", task="detect")
    wrapper.save(os.path.join(save_dir, f"yolo12{scale}_peer.pt"))
    return wrapper


def _fused_model(wrapper, dev):
    """The peer's model as `run` times it: fused, eval, on dev."""
    model = wrapper.model.fuse(verbose=False) if hasattr(wrapper.model, "fuse") else wrapper.model
    return model.eval().to(dev)


def _in_format(m, x, cl, torch):
    """The model and input of an fp16 mode in its memory format: m and x themselves, or channels_last copies."""
    if not cl:
        return m, x
    return __import__("copy").deepcopy(m).to(memory_format=torch.channels_last), \
        x.contiguous(memory_format=torch.channels_last)


def _compile(mm, xx, torch):
    """A fresh torch.compile (inductor, default mode) of mm, run three times on xx (the compile happens in the
    first): (the compiled model, how many FX graph cache hits the compile had)."""
    from torch._dynamo.utils import counters

    torch._dynamo.reset()  # a fresh compile per batch size and format: no dynamic shapes
    hits = counters["inductor"]["fxgraph_cache_hit"]
    cm = torch.compile(mm)
    for _ in range(3):
        cm(xx)
    return cm, counters["inductor"]["fxgraph_cache_hit"] - hits


def _mode_sets(args):
    """--compile and --channels-last as sets: (the scales compiled, the fp16 modes also run in channels_last)."""
    return (set(s for s in args.compile.split(",") if s),
            set(m for m in args.channels_last.split(",") if m and m != "none"))


def _compile_plan(args):
    """The (scale, batch, formats) whose compile+graph modes `run` times with these arguments; formats is a tuple
    of channels_last flags."""
    compile_scales, cl_modes = _mode_sets(args)
    formats = (False, True) if "compile" in cl_modes else (False,)
    return [(s, int(b), formats) for s in args.scales.split(",") if s in compile_scales
            for b in args.batches.split(",")]


def cmd_warm_one(args):
    """One compile of `warm` (a scale, batch and memory format), in its own process, made as `run` makes it."""
    import torch

    torch.backends.cudnn.benchmark = True
    dev = torch.device(args.device)
    os.makedirs(args.save_dir, exist_ok=True)
    model = _fused_model(_peer_model(args.scale, args.save_dir), dev)
    x32 = torch.rand(args.batch, 3, 640, 640, device=dev)
    with torch.inference_mode():
        # As in `run`, the fp32 model has run at this batch before its fp16 copy is made: the Detect head keeps
        # the anchors of the last input shape, and a compile that found none would trace another graph.
        model(x32)
        m, x = __import__("copy").deepcopy(model).half(), x32.half()
        m(x)
        t0 = time.perf_counter()
        _, hits = _compile(*_in_format(m, x, args.channels_last, torch), torch)
        print(f"warm yolo12{args.scale} b{args.batch}{' cl' if args.channels_last else ''}: "
              f"{time.perf_counter() - t0:.1f} s ({hits} cache hits)", flush=True)


def cmd_warm(args):
    """`run`'s compiles beforehand, one process per compile and --jobs at once (each with its share of Inductor's
    compile threads), in the order `run` needs them: each one that ends is a cache entry, also when a time limit
    stops the rest."""
    import subprocess

    plan = [(scale, batch, cl) for scale, batch, formats in _compile_plan(args) for cl in formats]
    jobs = max(1, args.jobs)
    env = dict(os.environ)
    env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", str(max(1, (os.cpu_count() or jobs) // jobs)))
    os.makedirs(args.save_dir, exist_ok=True)
    todo, running, failed = list(plan), [], 0
    t0 = time.perf_counter()
    while todo or running:
        while todo and len(running) < jobs:
            scale, batch, cl = todo.pop(0)
            name = f"{scale}_b{batch}{'_cl' if cl else ''}"
            log = open(os.path.join(args.save_dir, f"warm_{name}.log"), "w")
            cmd = [sys.executable, os.path.abspath(__file__), "warm-one", "--scale", scale, "--batch", str(batch),
                   "--save-dir", os.path.join(args.save_dir, name), "--device", args.device]
            if cl:
                cmd.append("--channels-last")
            running.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), log, name))
        time.sleep(0.2)
        for item in [r for r in running if r[0].poll() is not None]:
            running.remove(item)
            proc, log, name = item
            log.close()
            with open(log.name) as f:
                lines = [line.rstrip() for line in f if line.startswith("warm ")]
            failed += proc.returncode != 0
            print(f"{name}: rc={proc.returncode} at {time.perf_counter() - t0:.0f} s; " + "; ".join(lines), flush=True)
    print(f"warm: {len(plan)} compiles, {failed} failed, {time.perf_counter() - t0:.0f} s with {jobs} at once")
    return 1 if failed else 0


def cmd_save(args):
    os.makedirs(args.save_dir, exist_ok=True)
    for scale in args.scales.split(","):
        _peer_model(scale, args.save_dir)
        print(f"saved {os.path.join(args.save_dir, f'yolo12{scale}_peer.pt')}")


def _kept_rows(path, scales, batches):
    """--merge: the rows of an earlier JSON at path (if any) whose scale and batch are not among these."""
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        return [r for r in json.load(f).get("results", []) if r["scale"] not in scales or r["batch"] not in batches]


def cmd_run(args):
    import torch

    torch.backends.cudnn.benchmark = True
    dev = torch.device("cuda:0")
    scales = args.scales.split(",")
    batches = [int(b) for b in args.batches.split(",")]
    compile_scales, cl_modes = _mode_sets(args)
    os.makedirs(args.save_dir, exist_ok=True)
    doc = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "ultralytics": __import__("ultralytics").__version__,
        "input": [640, 640],
        "iters": args.iters,
        "results": [],
    }
    if args.merge:
        doc["results"] = _kept_rows(args.out, scales, batches)
    for scale in scales:
        model = _fused_model(_peer_model(scale, args.save_dir), dev)
        params = sum(p.numel() for p in model.parameters())
        for batch in batches:
            x32 = torch.rand(batch, 3, 640, 640, device=dev)
            row = {"scale": scale, "batch": batch, "parameters": params, "modes": {}}
            with torch.inference_mode():
                for prec in ("fp32", "fp16"):
                    m = model if prec == "fp32" else __import__("copy").deepcopy(model).half()
                    x = x32 if prec == "fp32" else x32.half()
                    if batch == 1 or prec == "fp16":  # eager fp32 at batch 32 adds little and costs time
                        row["modes"][f"{prec}_eager"] = _time(lambda: m(x), args.iters, 5, torch)
                    try:
                        replay = _graphed(m, x, torch)
                        row["modes"][f"{prec}_graph"] = _time(replay, args.iters, 5, torch)
                    except Exception as e:  # noqa: BLE001 - record and go on
                        row["modes"][f"{prec}_graph"] = {"error": str(e)[:200]}
                    if prec == "fp16":
                        _fast_fp16_modes(row, m, x, scale in compile_scales, cl_modes, args.iters, torch)
                    del m
            torch.cuda.empty_cache()
            row["best_fp16"] = best_fp16(row["modes"])
            doc["results"].append(row)
            print(f"peer yolo12{scale} b{batch}: " + ", ".join(
                f"{k} {v['median_ms']:.3f} ms" for k, v in row["modes"].items() if "median_ms" in v), flush=True)
            # Written after every row, so a run cut short by its time limit keeps what it measured.
            with open(args.out, "w") as f:
                json.dump(doc, f, indent=1)


def _fast_fp16_modes(row, m, x, compile_it, cl_modes, iters, torch):
    """The fp16 graph (already timed, contiguous) and compile+graph modes, each also in channels_last where
    cl_modes names it; every result (or error) lands in row["modes"]."""
    for key, mode, cl in FP16_FAST_MODES:
        if mode == "graph" and not cl:
            continue  # timed with the other precisions
        if (mode == "compile+graph" and not compile_it) or (cl and mode.split("+")[0] not in cl_modes):
            continue
        try:
            mm, xx = _in_format(m, x, cl, torch)
            if mode == "graph":
                row["modes"][key] = _time(_graphed(mm, xx, torch), iters, 5, torch)
                continue
            t0 = time.perf_counter()
            cm, hits = _compile(mm, xx, torch)
            replay = _graphed(cm, xx, torch)
            row["compile_s" + ("_cl" if cl else "")] = round(time.perf_counter() - t0, 1)
            row["compile_cache_hits"] = row.get("compile_cache_hits", 0) + hits
            row["modes"][key] = _time(replay, iters, 5, torch)
        except Exception as e:  # noqa: BLE001 - record and go on
            row["modes"][key] = {"error": str(e)[:200]}


def _fmt(entry, batch):
    if not entry or "median_ms" not in entry:
        return ""
    ms = entry["median_ms"]
    return f"{ms:.2f} ms" if batch == 1 else f"{ms:.2f} ms ({batch * 1000.0 / ms:.0f} img/s)"


def _fmt_format(modes, key, batch):
    """A graph / compile+graph cell: the better memory format, "(cl)" where channels_last won."""
    entry, cl = _better_format(modes, key)
    return _fmt(entry, batch) + (" (cl)" if entry and cl else "")


def _speedup(o16, modes):
    peer = {}
    for key, mode, cl in FP16_FAST_MODES:
        if "median_ms" in modes.get(key, {}):
            name = mode + (" cl" if cl else "")
            peer[name] = modes[key]["median_ms"]
    if not o16 or "median_ms" not in o16 or not peer:
        return ""
    which = min(peer, key=peer.get)
    return f"{peer[which] / o16['median_ms']:.2f}x vs {which}"


def cmd_table(args):
    with open(args.peer) as f:
        peer = json.load(f)
    ours = {}
    for path in args.ours:
        with open(path) as f:
            d = json.load(f)
        for r in d["results"]:
            ours[(d["scale"], r["precision"], r["batch"])] = r
    lines = []
    lines.append(f"Measured {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC on {peer['device']} "
                 f"(torch {peer['torch']}, Ultralytics {peer['ultralytics']}), 640x640, random weights, "
                 f"median of {peer['iters']} runs (PyTorch) / yolo12-bench defaults (ours), CUDA events after "
                 f"warm-up. Command: `{args.command}`.")
    lines.append("")
    lines.append("Network forward only (input already on the GPU). yolo12 = this engine, one CUDA graph; "
                 "PyTorch eager / one CUDA graph / torch.compile + CUDA graph; the graph and compile+graph "
                 "columns show the better of the contiguous and the channels_last memory format, \"(cl)\" where "
                 "channels_last won (both are in the JSON).")
    lines.append("")
    lines.append("| model | batch | yolo12 fp16 | yolo12 fp32 | PyTorch fp16 graph | PyTorch fp16 compile+graph | "
                 "PyTorch fp32 graph | PyTorch fp16 eager | PyTorch fp32 eager | yolo12 fp16 speed-up |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for row in peer["results"]:
        s, b, m = row["scale"], row["batch"], row["modes"]
        o16 = ours.get((s, "fp16", b), {}).get("network_graph")
        o32 = ours.get((s, "fp32", b), {}).get("network_graph")
        lines.append(f"| yolo12{s} | {b} | {_fmt(o16, b)} | {_fmt(o32, b)} | {_fmt_format(m, 'fp16_graph', b)} | "
                     f"{_fmt_format(m, 'fp16_compile_graph', b)} | {_fmt(m.get('fp32_graph'), b)} | "
                     f"{_fmt(m.get('fp16_eager'), b)} | {_fmt(m.get('fp32_eager'), b)} | {_speedup(o16, m)} |")
    lines.append("")
    lines.append("Speed-up = PyTorch's fastest fp16 graph or compile+graph mode measured for that row, in either "
                 "memory format, divided by this engine's fp16 time; below 1.00x we are slower.")
    lines.append("")
    lines.append("This engine end to end (one `detect()`: H2D of a 1280x720 BGR frame, letterbox, network, decode + "
                 "NMS, D2H of the boxes; stage times from events inside the graph):")
    lines.append("")
    lines.append("| model | precision | batch | preprocess | network | postprocess | end to end (host) | throughput |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for (s, p, b), r in sorted(ours.items()):
        e2e = r["end_to_end"]["median_ms"]
        lines.append(f"| yolo12{s} | {p} | {b} | {r['preprocess']['median_ms']:.3f} ms | "
                     f"{r['network']['median_ms']:.3f} ms | {r['postprocess']['median_ms']:.3f} ms | "
                     f"{e2e:.3f} ms (p90 {r['end_to_end']['p90_ms']:.3f}) | {b * 1000.0 / e2e:.0f} img/s |")
    print("\n".join(lines))


def main_with(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--save-dir", required=True)
    r.add_argument("--scales", default="n,s,m,l,x")
    r.add_argument("--batches", default="1,32")
    r.add_argument("--compile", default="n")
    r.add_argument("--channels-last", default="graph,compile",
                   help="fp16 modes also run in channels_last, comma-separated: graph, compile (or none)")
    r.add_argument("--iters", type=int, default=50)
    r.add_argument("--merge", action="store_true",
                   help="keep the rows of an existing --out file that this run does not measure")
    w = sub.add_parser("warm", help="run's compiles beforehand, several processes at once, for Inductor's caches")
    w.add_argument("--save-dir", required=True, help="scratch folder (the processes' .pt files and logs)")
    w.add_argument("--scales", default="n,s,m,l,x")
    w.add_argument("--batches", default="1,32")
    w.add_argument("--compile", default="n")
    w.add_argument("--channels-last", default="graph,compile")
    w.add_argument("--jobs", type=int, default=4)
    w.add_argument("--device", default="cuda:0")
    o = sub.add_parser("warm-one", help=argparse.SUPPRESS)
    o.add_argument("--scale", required=True)
    o.add_argument("--batch", type=int, required=True)
    o.add_argument("--save-dir", required=True)
    o.add_argument("--channels-last", action="store_true", help="the channels_last compile (else the contiguous)")
    o.add_argument("--device", default="cuda:0")
    v = sub.add_parser("save", help="only write the peer's .pt files (the same weights as run), no timing")
    v.add_argument("--save-dir", required=True)
    v.add_argument("--scales", default="n,s,m,l,x")
    t = sub.add_parser("table")
    t.add_argument("--peer", required=True)
    t.add_argument("--ours", nargs="+", required=True)
    t.add_argument("--command", default="tools/gpu_check.sh")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        cmd_run(args)
    elif args.cmd == "warm":
        return cmd_warm(args)
    elif args.cmd == "warm-one":
        cmd_warm_one(args)
    elif args.cmd == "save":
        cmd_save(args)
    else:
        cmd_table(args)
    return 0


def main():
    return main_with(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
