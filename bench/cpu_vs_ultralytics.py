#!/usr/bin/env python3
"""CPU timing of this engine next to Ultralytics/PyTorch, in one run, written to docs/benchmarks-cpu.md.

    python3 bench/cpu_vs_ultralytics.py --build-dir build [--pt tests/data/yolo12n_rand.pt]
        [--image ../shared/data/images/bus.jpg] [--threads 2] [--runs 20] [--warmup 3] [--rounds 2]
        [--out docs/benchmarks-cpu.md]

Both sides get the same weights (the .pt checkpoint, converted for us with exporter/export.py into the
build folder), the same number of CPU threads (torch.set_num_threads) and the same decoded image:

  forward     the network alone on the image letterboxed to 640x640 (Ultralytics: the fused model
              under torch.inference_mode; ours: Detector::forward_raw through yolo12-cpu-bench);
  end to end  one call from decoded pixels to boxes in image pixels (Ultralytics: YOLO.predict on
              the BGR array with its .pt defaults, i.e. the rect letterbox, 640x480 for bus.jpg; ours:
              Detector::detect with rect=true), with each side's own preprocess / inference /
              postprocess split.

The two sides alternate in --rounds rounds of --runs timed runs each (after --warmup untimed runs), so
a change of load on a shared machine hits both; the table gives medians over all timed runs and the
load average before and after. Needs: yolo12-cpu-bench (built with the tests), python3 with
ultralytics, torch and opencv-python.
"""

import argparse
import datetime
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def git_commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def load_avg() -> str:
    try:
        return " / ".join(f"{x:.1f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def run_ours(bench: Path, y12: Path, raw: Path, w: int, h: int, args) -> dict:
    cmd = [str(bench), str(y12), "--image", str(raw), str(w), str(h), "--size", str(args.size), "--rect",
           "--threads", str(args.threads), "--runs", str(args.runs), "--warmup", str(args.warmup)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"yolo12-cpu-bench failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout)


class Ultralytics:
    """The peer as a user runs it: YOLO.predict, and for the forward the very network predict runs (its
    AutoBackend: fused, and on x86 CPUs in channels-last memory format, which Ultralytics turns on
    there; the plain NCHW module was several times slower here)."""

    def __init__(self, pt: Path, img_bgr, args):
        import numpy as np
        import torch
        from ultralytics import YOLO
        from ultralytics.data.augment import LetterBox

        torch.set_num_threads(args.threads)
        self.torch, self.args, self.img = torch, args, img_bgr
        self.yolo = YOLO(str(pt))
        self.yolo.predict(img_bgr, imgsz=args.size, device="cpu", verbose=False)  # builds the predictor
        self.net = self.yolo.predictor.model
        boxed = LetterBox(new_shape=(args.size, args.size), auto=False, stride=32)(image=img_bgr)
        chw = np.ascontiguousarray(boxed[..., ::-1].transpose(2, 0, 1))
        self.x = torch.from_numpy(chw.astype(np.float32) / 255.0)[None]

    def forward(self) -> list:
        times = []
        with self.torch.inference_mode():
            for i in range(self.args.warmup + self.args.runs):
                t0 = time.perf_counter()
                self.net(self.x)
                if i >= self.args.warmup:
                    times.append((time.perf_counter() - t0) * 1e3)
        return times

    def predict(self):
        times, stages, ndet = [], [], 0
        for i in range(self.args.warmup + self.args.runs):
            t0 = time.perf_counter()
            res = self.yolo.predict(self.img, imgsz=self.args.size, conf=0.25, iou=0.7, device="cpu", verbose=False)
            ms = (time.perf_counter() - t0) * 1e3
            if i >= self.args.warmup:
                times.append(ms)
                stages.append(res[0].speed)
                ndet = len(res[0].boxes)
        return times, stages, ndet


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build-dir", type=Path, default=ROOT / "build")
    ap.add_argument("--pt", type=Path, default=ROOT / "tests" / "data" / "yolo12n_rand.pt")
    ap.add_argument("--image", type=Path, default=ROOT.parent / "shared" / "data" / "images" / "bus.jpg")
    ap.add_argument("--size", type=int, default=640)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks-cpu.md")
    args = ap.parse_args()

    import cv2

    bench = args.build_dir / "tests" / "yolo12-cpu-bench"
    if not bench.exists():
        sys.exit(f"{bench} not found: build it with `cmake --build {args.build_dir} --target yolo12-cpu-bench`")
    img = cv2.imread(str(args.image), cv2.IMREAD_COLOR)
    if img is None:
        sys.exit(f"cannot read {args.image}")
    h, w = img.shape[:2]

    work = Path(tempfile.mkdtemp(prefix="yolo12-cpu-bench-"))
    y12 = args.build_dir / "bench" / (args.pt.stem + ".y12")
    y12.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(ROOT / "exporter" / "export.py"), str(args.pt), "-o", str(y12)], check=True,
                   stdout=subprocess.DEVNULL)
    raw = work / "image.bgr"
    raw.write_bytes(img.tobytes())

    import torch
    import ultralytics

    load_before = load_avg()
    peer = Ultralytics(args.pt, img, args)
    ours_fwd, ours_e2e, ours_stage, ours_det, ours_input = [], [], [], 0, None
    peer_fwd, peer_e2e, peer_stage, peer_det = [], [], [], 0
    for r in range(args.rounds):
        print(f"round {r + 1}/{args.rounds}: yolo12 ...", flush=True)
        o = run_ours(bench, y12, raw, w, h, args)
        ours_fwd += o["forward_ms"]
        ours_e2e += o["end_to_end_ms"]
        ours_stage.append(o["median"])
        ours_det, ours_input = o["detections"], o["e2e_input"]
        print(f"round {r + 1}/{args.rounds}: Ultralytics ...", flush=True)
        peer_fwd += peer.forward()
        t, s, peer_det = peer.predict()
        peer_e2e += t
        peer_stage += s
    load_after = load_avg()

    med = statistics.median
    o_pre = med(s["preprocess_ms"] for s in ours_stage)
    o_inf = med(s["inference_ms"] for s in ours_stage)
    o_post = med(s["postprocess_ms"] for s in ours_stage)
    p_pre = med(s["preprocess"] for s in peer_stage)
    p_inf = med(s["inference"] for s in peer_stage)
    p_post = med(s["postprocess"] for s in peer_stage)
    of, pf, oe, pe = med(ours_fwd), med(peer_fwd), med(ours_e2e), med(peer_e2e)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    def shown(a: str) -> str:  # no machine-specific absolute paths in the committed page
        if not os.path.isabs(a):
            return shlex.quote(a)
        p = Path(a).resolve()
        return shlex.quote(str(p.relative_to(ROOT))) if p.is_relative_to(ROOT) else shlex.quote(p.name)

    command = " ".join(["python3 bench/cpu_vs_ultralytics.py"] + [shown(a) for a in sys.argv[1:]])
    n_samples = args.rounds * args.runs
    lines = [
        "# CPU timings: yolo12 against Ultralytics/PyTorch",
        "",
        f"Made by `bench/cpu_vs_ultralytics.py` on {now}; commit `{git_commit()}`.",
        "",
        f"- machine: {cpu_name()}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}",
        f"- threads: {args.threads} for both (our `cpu_threads`, `torch.set_num_threads`)",
        f"- peer: Ultralytics {ultralytics.__version__}, torch {torch.__version__} (CPU), the model predict runs "
        "(fused, channels-last)",
        f"- model: `{args.pt.relative_to(ROOT) if args.pt.is_relative_to(ROOT) else args.pt.name}` "
        f"(yolo12n, random weights), ours converted with exporter/export.py (f32)",
        f"- image: `{args.image.name}` ({w}x{h}); end to end runs at {ours_input[1]}x{ours_input[0]} (rect) on "
        "both sides; forward at "
        f"{args.size}x{args.size}",
        "- measured: *forward* is the network alone on the letterboxed tensor (ours: `Detector::forward_raw` "
        "through `yolo12-cpu-bench`; peer: the AutoBackend predict uses, under `torch.inference_mode`); "
        "*end to end* goes from decoded BGR pixels to boxes in image pixels (ours: `Detector::detect`; peer: "
        "`YOLO.predict` on the array), JPEG decoding excluded on both sides",
        f"- statistics: medians of {n_samples} timed runs per figure ({args.rounds} alternating rounds of "
        f"{args.runs}, {args.warmup} warm-up runs each), wall clock",
        f"- load average (1/5/15 min) before: {load_before}, after: {load_after}",
        f"- command: `{command}`",
        "",
        "| per image, ms (median) | yolo12 CPU | Ultralytics CPU | yolo12 / Ultralytics |",
        "|---|---|---|---|",
        f"| network forward, {args.size}x{args.size} | {of:.1f} | {pf:.1f} | {of / pf:.2f} |",
        f"| end to end, decoded image to boxes | {oe:.1f} | {pe:.1f} | {oe / pe:.2f} |",
        f"| - preprocess (letterbox) | {o_pre:.1f} | {p_pre:.1f} | |",
        f"| - inference | {o_inf:.1f} | {p_inf:.1f} | |",
        f"| - postprocess (NMS, boxes) | {o_post:.1f} | {p_post:.1f} | |",
        f"| detections kept (conf 0.25) | {ours_det} | {peer_det} | |",
        "",
        "**Read with care:** a load average well above 0 before or after (listed above) means other jobs "
        "shared the two cores, and absolute numbers are then inflated and noisy. Both sides were "
        "measured in alternating rounds under the same conditions, so the ratio is the figure to read. "
        "The random-weight model keeps many boxes (up to max_det 300), which makes postprocessing heavier "
        "than with trained weights on both sides.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
