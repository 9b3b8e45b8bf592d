#!/usr/bin/env python3
"""tools/hostile/run.py - runs the hostile corpus against a yolo12-infer build and counts outcomes.

    python3 tools/hostile/run.py --cli build/yolo12-infer --gen build/tools/hostile/yolo12-hostile-gen
        [--base extra.y12] [--every N] [--in-process] [--parts models,inputs,options] [--jobs 2] [--timeout 30]
        [--mem-mb 3072 | --mem-mb 0] [--report report.json]

Parts (README.md in this folder describes each case):
  models   every variant yolo12-hostile-gen makes of the tiny base model and of each --base (or one
           in --every N of them), each run as `yolo12-infer --model V --device cpu IMAGE --json -`, or
           with --in-process through the generator's build of the library (a Detector and one detect()
           in a forked child per variant: no exec, so the whole corpus runs in minutes);
  inputs   the image, video, stream, tensor, batch and output cases of issue 13;
  options  bad option sets (and a few good ones).
Each run has a wall-clock limit (--timeout) and an address-space limit (--mem-mb; 0 for ASan builds,
which reserve terabytes of address space). Every run is classified:
  error    a clean refusal: exit 1 or 2 and a line starting with "error:" on stderr;
  success  exit 0;
  crash    a signal other than the runner's own kill, a sanitizer report, "terminate called";
  hang     still running at --timeout (killed);
  memory   bad_alloc / out of memory, or killed by the memory limit;
  other    any other exit.
and judged against what the case expects (a corrupt model must be refused: a success is a silent
acceptance of a changed byte). The counts go to stdout and, with --report, to a JSON file.
Needs python3 and ffmpeg (for the video and stream cases); numpy is not needed.
"""

import argparse
import collections
import concurrent.futures
import http.server
import json
import os
import re
import resource
import shutil
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CRASH_SIGNALS = {signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE, signal.SIGTRAP}


# ---- running one command ------------------------------------------------------------------------

def limits(mem_mb):
    def apply():
        os.setsid()
        if mem_mb:
            resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
    return apply


def run(cmd, timeout, mem_mb, stdin=None, interrupt_after=None, cwd=None):
    """Runs cmd; returns dict(outcome, rc, seconds, stderr). interrupt_after: send SIGINT after s."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limits(mem_mb), cwd=cwd)
    hung = False
    try:
        if interrupt_after is not None:
            try:
                out, err = p.communicate(stdin, timeout=interrupt_after)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGINT)
                t0 = time.monotonic()  # the case measures the time from the interrupt
                out, err = p.communicate(timeout=timeout)
        else:
            out, err = p.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
    seconds = time.monotonic() - t0
    err = err.decode("utf-8", "replace")
    rc = p.returncode
    if hung:
        outcome = "hang"
    elif re.search(r"AddressSanitizer|LeakSanitizer|runtime error:|terminate called|Segmentation fault", err):
        outcome = "crash"
    elif re.search(r"bad_alloc|out of memory|Cannot allocate memory|failed to allocate", err, re.I):
        outcome = "memory"
    elif rc is not None and rc < 0:
        outcome = "memory" if -rc == signal.SIGKILL else ("crash" if -rc in CRASH_SIGNALS else "other")
    elif rc == 0:
        outcome = "success"
    elif rc in (1, 2) and re.search(r"^error: ", err, re.M):
        outcome = "error"
    else:
        outcome = "other"
    return {"outcome": outcome, "rc": rc, "seconds": round(seconds, 2), "stderr": err[-600:],
            "stdout": out[-2000:].decode("utf-8", "replace")}


# ---- the model corpus ---------------------------------------------------------------------------

# What each kind of variant must give; anything else is a failure of that kind.
MODEL_EXPECT = {"control": {"success"}, "corrupt": {"error"}, "hostile": {"error"}, "v1-data": {"error", "success"}}


def make_image(path, w=96, h=64):
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", f"testsrc=size={w}x{h}",
                    "-frames:v", "1", path], check=True)


def model_part(a, work, results):
    image = os.path.join(work, "image.jpg")
    make_image(image)
    bases = [("tiny", os.path.join(work, "tiny.y12"), a.every)]
    subprocess.run([a.gen, "--tiny", bases[0][1]], check=True)
    for extra in a.base:
        bases.append((os.path.basename(extra), extra, a.every))
    for label, base, every in bases:
        if a.in_process:
            in_process(a, work, label, base, every, results)
            continue
        listing = subprocess.run([a.gen, base, "--list"], check=True, capture_output=True, text=True).stdout
        variants = [json.loads(l) for l in listing.splitlines()]
        chosen = [v for v in variants if v["index"] % every == 0 or v["kind"] == "control"]
        print(f"models: {label}: {len(chosen)} of {len(variants)} variants", flush=True)
        batch_dir = os.path.join(work, "variants")
        for start in range(0, len(chosen), 200):
            batch = chosen[start:start + 200]
            shutil.rmtree(batch_dir, ignore_errors=True)
            os.makedirs(batch_dir)
            subprocess.run([a.gen, base, "--emit-indices", batch_dir] + [str(v["index"]) for v in batch], check=True)
            files = {int(f.split("-", 1)[0]): os.path.join(batch_dir, f) for f in os.listdir(batch_dir)}

            def one(v):
                r = run([a.cli, "--model", files[v["index"]], "--device", "cpu", image, "--json", "-", "-q"],
                        a.timeout, a.mem_mb)
                r.update(part="models", base=label, case=v["name"], kind=v["kind"],
                         passed=r["outcome"] in MODEL_EXPECT[v["kind"]])
                return r

            with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
                results.extend(pool.map(one, batch))
            done = start + len(batch)
            if done % 1000 < 200:
                print(f"models: {label}: {done} run", flush=True)
        shutil.rmtree(batch_dir, ignore_errors=True)


def in_process(a, work, label, base, every, results):
    """The model variants through the generator's own build of the library, one fork per variant."""
    run_dir = os.path.join(work, "in-process")
    os.makedirs(run_dir, exist_ok=True)
    p = subprocess.Popen([a.gen, base, "--run", run_dir, str(every), str(int(a.timeout)), str(a.mem_mb)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    n = 0
    for line in p.stdout:
        r = json.loads(line)
        r.update(part="models", base=label, case=r.pop("name"), stderr=r.pop("message"), rc=None, stdout="",
                 passed=r["outcome"] in MODEL_EXPECT[r["kind"]])
        results.append(r)
        n += 1
        if n % 1000 == 0:
            print(f"models: {label}: {n} run in process", flush=True)
    if p.wait() != 0:
        raise RuntimeError(f"{a.gen} --run failed")
    print(f"models: {label}: {n} variants run in process", flush=True)


# ---- inputs: images, videos, streams, tensors, outputs (issue 13) --------------------------------

def png_bomb(path, w=30000, h=30000):
    """A real PNG of w x h black RGB pixels (2.7 GB decoded), streamed through zlib: ~2.6 MB on disk."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)
    comp = zlib.compressobj(9)
    row = b"\0" * (1 + 3 * w)
    parts = []
    for _ in range(h):
        parts.append(comp.compress(row))
    parts.append(comp.flush())
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b""))


def mjpeg_frames(work, n=30):
    """n small JPEG frames (bytes) of a moving test pattern."""
    d = os.path.join(work, "frames")
    os.makedirs(d, exist_ok=True)
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10",
                    "-frames:v", str(n), os.path.join(d, "f%03d.jpg")], check=True)
    return [open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))]


class Server:
    """A local TCP server on 127.0.0.1 whose handler(sock) misbehaves on every connection."""

    def __init__(self, handler):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.handler, self.stop = handler, False
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(conn,), daemon=True).start()

    def serve(self, conn):
        try:
            conn.recv(65536)
            self.handler(conn)
        except OSError:
            pass
        finally:
            try:
                conn.close()
            except OSError:
                pass

    def close(self):
        self.stop = True
        self.sock.close()


def mjpeg_handler(frames, count, then):
    """Serves `count` frames as multipart MJPEG, then 'stall' (keeps the socket silent) or 'close'."""
    def handler(conn):
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: multipart/x-mixed-replace; boundary=frame\r\n\r\n")
        for i in range(count):
            f = frames[i % len(frames)]
            conn.sendall(b"--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(f) + f + b"\r\n")
            time.sleep(0.1)
        if then == "stall":
            time.sleep(3600)
    return handler


def half_file_handler(data):
    def handler(conn):
        conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: video/mp4\r\nContent-Length: %d\r\n\r\n" % len(data))
        conn.sendall(data[:len(data) // 2])
    return handler


def input_cases(a, work, model):
    """(name, argv after the CLI, expectation, checks) for every image/video/stream/tensor/output case."""
    cases = []
    img = os.path.join(work, "in", "photo.jpg")
    os.makedirs(os.path.dirname(img), exist_ok=True)
    make_image(img, 320, 240)
    m = ["--model", model, "--device", "cpu", "-q"]

    def unchanged(*paths):
        before = {p: open(p, "rb").read() for p in paths}
        return lambda r: all(open(p, "rb").read() == b for p, b in before.items()) or "an input or the model changed"

    # data loss: each case on its own copies, so that a CLI which does destroy them spoils no other case
    def copies(tag):
        d = os.path.join(work, "loss-" + tag)
        os.makedirs(d)
        shutil.copy(model, os.path.join(d, "model.y12"))
        shutil.copy(img, os.path.join(d, "photo.jpg"))
        return os.path.join(d, "model.y12"), os.path.join(d, "photo.jpg")
    mod1, img1 = copies("input")
    cases.append(("json-onto-input", ["--model", mod1, "--device", "cpu", "-q", img1, "--json", img1], {"error"},
                  [unchanged(img1)]))
    mod2, img2 = copies("model")
    cases.append(("json-onto-model", ["--model", mod2, "--device", "cpu", "-q", img2, "--json", mod2], {"error"},
                  [unchanged(mod2)]))
    mod3, img3 = copies("save")
    cases.append(("save-over-inputs", ["--model", mod3, "--device", "cpu", "-q", img3, "--save", "--output",
                                       os.path.dirname(img3)], {"error", "success"}, [unchanged(img3)]))
    clip_dir = os.path.join(work, "collide")
    os.makedirs(clip_dir, exist_ok=True)
    make_image(os.path.join(clip_dir, "clip_1.jpg"))
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=96x64:rate=5", "-t", "1",
                    os.path.join(clip_dir, "clip.mp4")], check=True)
    labels_out = os.path.join(work, "collide-out")

    def distinct_labels(r):
        found = [f for _, _, fs in os.walk(labels_out) for f in fs if f.endswith(".txt")]
        return len(found) == len(set(found)) and len(found) >= 6 or f"label files {sorted(found)}"
    cases.append(("label-collision", m + [os.path.join(clip_dir, "clip_1.jpg"), os.path.join(clip_dir, "clip.mp4"),
                                         "--save-txt", "--conf", "0", "--output", labels_out],
                  {"success"}, [distinct_labels]))
    cases.append(("json-dev-full", m + [img, "--json", "/dev/full"], {"error"}, []))
    blocker = os.path.join(work, "a-file")
    open(blocker, "w").write("x")
    cases.append(("save-unwritable", m + [img, "--save", "--output", os.path.join(blocker, "sub")], {"error"}, []))
    # images
    bomb = os.path.join(work, "bomb.png")
    png_bomb(bomb)
    cases.append(("png-bomb", m + [bomb], {"error"}, []))
    cases.append(("png-bomb-batch4", m + [bomb, bomb, bomb, bomb, "--batch", "4"], {"error"}, []))
    sparse = os.path.join(work, "sparse.jpg")
    with open(sparse, "wb") as f:
        f.truncate(1 << 30)
    cases.append(("sparse-1GiB-jpg", m + [sparse], {"error"}, [lambda r: r["seconds"] < 10 or "slow"]))
    garbage = os.path.join(work, "garbage.jpg")
    data = bytearray(open(img, "rb").read())
    mid = len(data) // 2
    data[mid:mid + 600] = bytes((i * 37) & 255 for i in range(600))
    open(garbage, "wb").write(bytes(data))
    cases.append(("jpeg-garbage-middle", ["--model", model, "--device", "cpu", garbage], {"error", "success"},
                  [lambda r: re.search(r"^(error|warning): .*garbage", r["stderr"], re.M) is not None or "not reported"]))
    # videos
    full = os.path.join(work, "full.mp4")
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10", "-t", "4",
                    "-pix_fmt", "yuv420p", full], check=True)
    cut = os.path.join(work, "cut.mp4")
    blob = open(full, "rb").read()
    open(cut, "wb").write(blob[:len(blob) // 2])
    reported = lambda r: re.search(r"^(error|warning): ", r["stderr"], re.M) is not None or "not reported"
    cases.append(("truncated-mp4", ["--model", model, "--device", "cpu", cut], {"error", "success"}, [reported]))
    servers = []
    http_half = Server(half_file_handler(blob))
    servers.append(http_half)
    cases.append(("http-mp4-cut-at-half", ["--model", model, "--device", "cpu", f"http://127.0.0.1:{http_half.port}/v.mp4"],
                  {"error", "success"}, [reported]))
    # streams
    frames = mjpeg_frames(work)
    for then in ("stall", "close"):
        s = Server(mjpeg_handler(frames, 5, then))
        servers.append(s)
        # Every connection serves 5 frames, then stalls or closes: the reconnect budget (3 tries in all,
        # frames do not refill it) with 5 s without a frame per try must end it: 4 x 5 s + the 0.5, 1, 2 s
        # waits, under 40 s. (With the defaults, 30 s and 5 tries, the bound is about 3 minutes.)
        cases.append((f"stream-frames-then-{then}",
                      m + ["--stream-timeout", "5", "--stream-retries", "3", f"http://127.0.0.1:{s.port}/s.mjpg"],
                      {"error", "success"}, [lambda r: r["seconds"] < 40 or "too slow"]))
    s = Server(lambda conn: time.sleep(3600))
    servers.append(s)
    cases.append(("stream-plain-stall", m + [f"http://127.0.0.1:{s.port}/s.mjpg"], {"error"},
                  [lambda r: r["seconds"] < 90 or "too slow"]))
    cases.append(("stream-sigint-during-stall", m + [f"http://127.0.0.1:{s.port}/s.mjpg"], {"error", "success", "other"},
                  [lambda r: r["seconds"] < 2.0 or f"{r['seconds']} s after SIGINT"], 3.0))
    udp_port = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp_port.bind(("127.0.0.1", 0))
    port = udp_port.getsockname()[1]
    udp_port.close()
    cases.append(("udp-mpegts-sender-stops", m + [f"udp://127.0.0.1:{port}"], {"error", "success"},
                  [lambda r: r["seconds"] < 90 or "too slow"], None,
                  ["ffmpeg", "-loglevel", "error", "-re", "-i", full, "-t", "3", "-f", "mpegts", f"udp://127.0.0.1:{port}"]))
    # tensors and batches
    npy = os.path.join(work, "huge.npy")
    hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32768, 32768), }"
    hdr += " " * ((64 - (10 + len(hdr) + 1) % 64) % 64) + "\n"
    open(npy, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + b"\0" * 64)
    cases.append(("npy-claims-12GB", m + ["--input-tensor", npy, "--save-raw", os.path.join(work, "raw.npy")], {"error"}, []))
    cases.append(("batch16-imgsz8192", m + [img] * 16 + ["--batch", "16", "--imgsz", "8192"], {"error"},
                  [lambda r: "bad_alloc" not in r["stderr"] or "bad_alloc"]))
    cases.append(("batch1024-one-image", m + [img, "--batch", "1024"], {"success", "error"}, []))
    return cases, servers


OPTION_SETS = [
    # (args after the model and image, expected outcomes)
    (["--conf", "-1"], {"error"}), (["--conf", "2"], {"error"}), (["--conf", "nan"], {"error"}),
    (["--conf", "abc"], {"error"}), (["--iou", "-0.1"], {"error"}), (["--iou", "1.5"], {"error"}),
    (["--iou", "inf"], {"error"}), (["--imgsz", "0"], {"error"}), (["--imgsz", "33"], {"error"}),
    (["--imgsz", "-32"], {"error"}), (["--imgsz", "100000"], {"error"}), (["--imgsz", "1e9"], {"error"}),
    (["--imgsz", "99999999999999999999"], {"error"}), (["--batch", "0"], {"error"}), (["--batch", "-1"], {"error"}),
    (["--batch", "100000"], {"error"}), (["--batch", "4294967297"], {"error"}), (["--max-det", "0"], {"error"}),
    (["--max-det", "-5"], {"error"}), (["--device", "tpu"], {"error"}), (["--device", "cuda:99"], {"error"}),
    (["--device", "cuda:-1"], {"error"}), (["--classes", "80"], {"error"}), (["--classes", "-1"], {"error"}),
    (["--classes", "abc"], {"error"}), (["--vid-stride", "0"], {"error"}), (["--vid-stride", "-3"], {"error"}),
    (["--threads", "-1"], {"error"}), (["--foo"], {"error"}), (["--conf"], {"error"}), (["--imgsz", ""], {"error"}),
    (["--json"], {"error"}), (["--model"], {"error"}), (["--input-tensor"], {"error"}),
    (["--line-width", "-4"], {"error"}), (["--line-width", "100000"], {"error", "success"}),
    (["conf=-1"], {"error"}), (["imgsz=abc"], {"error"}), (["batch=0"], {"error"}), (["iou="], {"error"}),
    (["--conf", "0.25", "--conf", "0.5"], {"error", "success"}), (["--imgsz", "64"], {"success"}),
    (["--conf", "0"], {"success"}), (["--conf", "1"], {"success"}), (["--iou", "0"], {"success"}),
    (["--max-det", "1"], {"success"}), (["--classes", "0", "1"], {"success"}), (["--agnostic-nms"], {"error", "success"}),
    (["--rect"], {"error", "success"}), (["--half"], {"success"}), (["--device", "cpu"], {"success"}),
]


def inputs_part(a, work, results, model):
    cases, servers = input_cases(a, work, model)
    try:
        for case in cases:
            name, args, expect, checks = case[:4]
            interrupt = case[4] if len(case) > 4 else None
            sender = subprocess.Popen(case[5], stdin=subprocess.DEVNULL) if len(case) > 5 else None
            r = run([a.cli] + args, a.timeout if interrupt is None else 10, a.mem_mb, interrupt_after=interrupt,
                    cwd=work)
            if sender:
                sender.kill()
                sender.wait()
            problems = [c(r) for c in checks] if r["outcome"] not in ("crash", "hang", "memory") else []
            problems = [p for p in problems if p is not True]
            r.update(part="inputs", case=name, kind="input", passed=r["outcome"] in expect and not problems,
                     problems=problems)
            results.append(r)
            print(f"inputs: {name}: {r['outcome']} ({r['seconds']} s){' ' + str(problems) if problems else ''}", flush=True)
    finally:
        for s in servers:
            s.close()


def options_part(a, work, results, model):
    image = os.path.join(work, "opt.jpg")
    make_image(image)

    def one(spec):
        args, expect = spec
        r = run([a.cli, "--model", model, image, "-q", "--json", "-"] + args, a.timeout, a.mem_mb, cwd=work)
        r.update(part="options", case=" ".join(args), kind="option", passed=r["outcome"] in expect)
        return r
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        results.extend(pool.map(one, OPTION_SETS))


# ---- report -------------------------------------------------------------------------------------

def summarize(results):
    table = collections.defaultdict(collections.Counter)
    for r in results:
        table[(r["part"], r["kind"])][r["outcome"]] += 1
    outcomes = ["error", "success", "crash", "hang", "memory", "other"]
    lines = ["| part | kind | runs | " + " | ".join(outcomes) + " | failed |", "|---" * (len(outcomes) + 4) + "|"]
    for (part, kind), c in sorted(table.items()):
        failed = sum(1 for r in results if r["part"] == part and r["kind"] == kind and not r["passed"])
        lines.append(f"| {part} | {kind} | {sum(c.values())} | " + " | ".join(str(c[o]) for o in outcomes) +
                     f" | {failed} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cli", required=True, help="the yolo12-infer to attack")
    p.add_argument("--gen", required=True, help="yolo12-hostile-gen (cmake -DYOLO12_BUILD_HOSTILE=ON)")
    p.add_argument("--base", action="append", default=[], help="another base model (e.g. an exported yolo12n)")
    p.add_argument("--every", type=int, default=1, help="run one variant in N of each base (controls always)")
    p.add_argument("--in-process", action="store_true",
                   help="models: run the variants through the generator's library in forked children, not the CLI")
    p.add_argument("--parts", default="models,inputs,options")
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=30.0)
    p.add_argument("--mem-mb", type=int, default=3072, help="address-space limit per run; 0 for none (ASan)")
    p.add_argument("--report", help="write every run as JSON here")
    a = p.parse_args()
    a.cli, a.gen = os.path.abspath(a.cli), os.path.abspath(a.gen)
    parts = a.parts.split(",")
    results = []
    with tempfile.TemporaryDirectory(prefix="hostile-") as work:
        model = os.path.join(work, "model.y12")
        subprocess.run([a.gen, "--tiny", model], check=True)
        if "models" in parts:
            model_part(a, work, results)
        if "inputs" in parts:
            inputs_part(a, work, results, model)
        if "options" in parts:
            options_part(a, work, results, model)
    print(summarize(results))
    bad = [r for r in results if not r["passed"]]
    for r in bad[:60]:
        last = r["stderr"].strip().splitlines()[-1:] or [""]
        print(f"FAILED {r['part']} {r['kind']} {r['case']}: {r['outcome']} rc={r['rc']} {r['seconds']} s: {last[0][:200]}")
    if len(bad) > 60:
        print(f"... and {len(bad) - 60} more")
    if a.report:
        with open(a.report, "w") as f:
            json.dump({"summary": summarize(results), "runs": results}, f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
