#!/usr/bin/env python3
"""End-to-end tests of the yolo12-infer command line (docs/cli.md), run against the built binary.

Needs: $YOLO12_BINARY_DIR/yolo12-infer, ../shared/data (real COCO YOLO11n weights, bus.jpg, the car
video), python3 with numpy, and ffprobe (the ffmpeg package) for the video checks. Exits 77 (skipped)
when the binary or the shared data is missing. The whole car video runs at --imgsz 160 to keep the
file short on two CPU cores (about 12 frames/s there while other builds ran; 320 gave 2.4).
"""
import gzip
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

SOURCE_DIR = os.environ.get("YOLO12_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BINARY_DIR = os.environ.get("YOLO12_BINARY_DIR") or os.path.join(SOURCE_DIR, "build")
CLI = os.path.join(BINARY_DIR, "yolo12-infer")
SHARED = os.path.join(SOURCE_DIR, "..", "shared", "data")
WEIGHTS = os.path.join(SHARED, "weights", "yolo11n_coco_int8dyn_320.onnx")
BUS = os.path.join(SHARED, "images", "bus.jpg")
ZIDANE = os.path.join(SHARED, "images", "zidane.jpg")
VIDEO = os.path.join(SHARED, "videos", "car-detection.mp4")
VIDEO_FRAMES, VIDEO_W, VIDEO_H = 377, 768, 432
TEST_DATA = os.path.join(SOURCE_DIR, "tests", "data")


def run_cli(*args, timeout=300, env=None):
    """Runs the CLI; returns (exit status, stdout, stderr). A crash (signal) gives a negative status."""
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def ffprobe_video(path):
    """(frames counted by decoding, width, height, frame rate) of a video's first stream."""
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
                          "stream=nb_read_frames,width,height,r_frame_rate", "-of", "json", path],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    s = json.loads(out)["streams"][0]
    return int(s["nb_read_frames"]), int(s["width"]), int(s["height"]), s["r_frame_rate"]


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="yolo12_cli_")
        cls.model = os.path.join(cls.tmp, "yolo11n_coco.y12")
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "exporter", "export.py"), WEIGHTS, "-o", cls.model,
                        "--no-set-default"], check=True, capture_output=True, timeout=300)
        with open(os.path.join(TEST_DATA, "references_real.json")) as f:
            refs = json.load(f)["results"]
        cls.ref_bus_320 = next(r for r in refs if r["model"] == "yolo11n_coco" and r["image"] == "bus.jpg"
                               and r["imgsz"] == 320 and not r["rect"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.tmp, name)

    # ---- detections --------------------------------------------------------------------------------

    def test_bus_json_matches_ultralytics(self):
        out = self.path("bus.jsonl")
        rc, stdout, stderr = run_cli("--model", self.model, "--device", "cpu", BUS, "--json", out)
        self.assertEqual(rc, 0, stderr)
        lines = read_jsonl(out)
        self.assertEqual(len(lines), 1)
        r = lines[0]
        self.assertEqual(r["source"], BUS)
        self.assertEqual((r["width"], r["height"], r["input"]), (810, 1080, [320, 320]))
        self.assertEqual(set(r["times_ms"]), {"decode", "preprocess", "inference", "postprocess"})
        classes = [d["class_id"] for d in r["detections"]]
        self.assertIn(5, classes, "no bus")
        self.assertGreaterEqual(classes.count(0), 3, "fewer than 3 persons")
        bus = next(d for d in r["detections"] if d["class_id"] == 5)
        self.assertEqual(bus["class_name"], "bus")
        x1, y1, x2, y2 = bus["box"]
        self.assertGreater(x2 - x1, 600, "the bus spans most of the image width")
        self.assertTrue(150 < y1 < 350 and 650 < y2 < 850, bus["box"])
        # Same detections as Ultralytics predict (tests/data/references_real.json), in the same order.
        ref = self.ref_bus_320["detections"]
        self.assertEqual(classes, [d["class_id"] for d in ref])
        for got, want in zip(r["detections"], ref):
            self.assertAlmostEqual(got["score"], want["score"], delta=2e-3)
            np.testing.assert_allclose(got["box"], want["box"], atol=1.0)
        # The summary line, Ultralytics style.
        self.assertRegex(stdout, r"image 1/1 .*bus\.jpg: 320x320 4 persons, 1 bus, \d+\.\dms")

    def test_classes_filter_and_conf(self):
        rc, stdout, stderr = run_cli("--model", self.model, BUS, "--classes", "5", "--json", "-", "-q")
        self.assertEqual(rc, 0, stderr)
        dets = json.loads(stdout)["detections"]
        self.assertEqual([d["class_id"] for d in dets], [5])
        rc, stdout, stderr = run_cli("--model", self.model, BUS, "--conf", "0.75", "--json", "-", "-q")
        self.assertEqual(rc, 0, stderr)
        scores = [d["score"] for d in json.loads(stdout)["detections"]]
        self.assertEqual(len(scores), 2, scores)  # only the persons at 0.84 and 0.78
        self.assertTrue(all(s >= 0.75 for s in scores))

    def test_folder_glob_and_batch(self):
        folder = self.path("folder")
        os.makedirs(folder, exist_ok=True)
        shutil.copy(ZIDANE, os.path.join(folder, "b_zidane.jpg"))
        shutil.copy(BUS, os.path.join(folder, "a_bus.jpg"))
        with open(os.path.join(folder, "notes.txt"), "w") as f:
            f.write("not an image, and not picked up from a folder\n")
        # A folder (sorted), then a quoted glob the shell did not expand, batched by 2.
        rc, stdout, stderr = run_cli("--model", self.model, folder, os.path.join(folder, "*_bus.jpg"),
                                     "--batch", "2", "--json", "-", "-q")
        self.assertEqual(rc, 0, stderr)
        lines = [json.loads(l) for l in stdout.splitlines()]
        self.assertEqual([os.path.basename(l["source"]) for l in lines], ["a_bus.jpg", "b_zidane.jpg", "a_bus.jpg"])
        self.assertEqual(lines[0]["detections"], lines[2]["detections"])  # batching changes nothing
        self.assertEqual((lines[1]["width"], lines[1]["height"]), (1280, 720))
        self.assertIn(0, [d["class_id"] for d in lines[1]["detections"]])

    def test_save_and_save_txt(self):
        outdir = self.path("saved")
        rc, stdout, stderr = run_cli("--model", self.model, BUS, "--save", "--save-txt", "--save-conf", "--output", outdir,
                                     "--json", "-", "-q")
        self.assertEqual(rc, 0, stderr)
        result = json.loads(stdout)
        # The annotated image keeps the source's name and size.
        annotated = os.path.join(outdir, "bus.jpg")
        self.assertTrue(os.path.isfile(annotated))
        _, w, h, _ = ffprobe_video(annotated)
        self.assertEqual((w, h), (810, 1080))
        # labels/bus.txt: "class cx cy w h conf" (--save-conf), normalised, one line per detection, same order.
        with open(os.path.join(outdir, "labels", "bus.txt")) as f:
            rows = [line.split() for line in f.read().splitlines()]
        self.assertEqual(len(rows), len(result["detections"]))
        for row, d in zip(rows, result["detections"]):
            self.assertEqual(len(row), 6)
            self.assertEqual(int(row[0]), d["class_id"])
            cx, cy, bw, bh, conf = map(float, row[1:])
            x1, y1, x2, y2 = d["box"]
            np.testing.assert_allclose([cx, cy, bw, bh], [(x1 + x2) / 2 / 810, (y1 + y2) / 2 / 1080,
                                                           (x2 - x1) / 810, (y2 - y1) / 1080], atol=1e-4)
            self.assertAlmostEqual(conf, d["score"], delta=1e-4)
            self.assertTrue(all(0 <= v <= 1 for v in (cx, cy, bw, bh, conf)))

    # ---- bad inputs --------------------------------------------------------------------------------

    def test_bad_images_are_reported_and_skipped(self):
        bad = self.path("bad")
        os.makedirs(bad, exist_ok=True)
        truncated, text, missing = (os.path.join(bad, n) for n in ("bus_half.jpg", "notes.jpg", "missing.jpg"))
        with open(BUS, "rb") as f:
            data = f.read()
        with open(truncated, "wb") as f:
            f.write(data[: len(data) // 2])
        with open(text, "w") as f:
            f.write("this is a text file renamed .jpg\n")
        fake_video = os.path.join(bad, "fake.mp4")
        with open(fake_video, "w") as f:
            f.write("this is not a video\n")
        out = self.path("bad.jsonl")
        rc, stdout, stderr = run_cli("--model", self.model, BUS, missing, truncated, text, fake_video, ZIDANE,
                                     "--json", out)
        self.assertEqual(rc, 1, stderr)
        self.assertIn(f"error: {missing}: no such file or directory", stderr)
        self.assertIn(f"error: {truncated}: cannot decode image (truncated JPEG", stderr)
        self.assertIn(f"error: {text}: cannot decode image (not an image", stderr)
        self.assertIn(f"error: {fake_video}: cannot open video", stderr)
        lines = read_jsonl(out)
        self.assertEqual([l["source"] for l in lines], [BUS, missing, truncated, text, fake_video, ZIDANE])
        self.assertIn("detections", lines[0])
        self.assertIn("detections", lines[5])
        for l in lines[1:5]:
            self.assertEqual(set(l), {"source", "error"})
        self.assertIn("4 of 6 inputs failed", stdout)

    def test_info(self):
        rc, stdout, stderr = run_cli("--model", self.model, "--info")
        self.assertEqual(rc, 0, stderr)
        self.assertIn("yolo11", stdout)
        self.assertRegex(stdout, r"classes:\s+80 \(person, bicycle")
        self.assertRegex(stdout, r"input:\s+320x320")
        # A truncated model and a text file: one error line naming the file, exit 1, no signal.
        broken = self.path("broken.y12")
        with open(self.model, "rb") as f:
            data = f.read()
        with open(broken, "wb") as f:
            f.write(data[: len(data) // 2])
        for bad in (broken, os.path.join(SOURCE_DIR, "README.md")):
            rc, stdout, stderr = run_cli("--model", bad, "--info")
            self.assertEqual(rc, 1, f"{bad}: {stderr}")
            self.assertTrue(stderr.startswith("error: ") and bad in stderr, stderr)
        # The same model error stops a detection run before any work.
        rc, _, stderr = run_cli("--model", broken, BUS)
        self.assertEqual(rc, 1)
        self.assertIn(broken, stderr)

    def test_invalid_options_fail_fast(self):
        outdir = self.path("never")
        cases = {
            ("--imgsz", "300"): "multiple of 32",
            ("--imgsz", "320", "100"): "multiple of 32",
            ("--conf", "1.5"): "--conf",
            ("--iou", "-0.1"): "--iou",
            ("--device", "tpu"): "device 'tpu' is not a device",
            ("--batch", "0"): "--batch",
            ("--vid-stride", "0"): "--vid-stride",
            ("--max-det", "0"): "--max-det",
            ("--bogus",): "bogus",
        }
        for args, message in cases.items():
            start = time.monotonic()
            rc, stdout, stderr = run_cli("--model", self.model, BUS, *args, "--save", "--output", outdir)
            self.assertEqual(rc, 2, f"{args}: {stderr}")
            self.assertIn("error:", stderr)
            self.assertIn(message, stderr, args)
            self.assertLess(time.monotonic() - start, 10)
            self.assertFalse(os.path.exists(outdir), f"{args} did work before failing")
        # No model at all: no YOLO12_MODEL, and a config folder without settings (other tests may have
        # recorded a default in the one ctest gives every test).
        env = {k: v for k, v in os.environ.items() if k != "YOLO12_MODEL"}
        env["YOLO12_CONFIG_DIR"] = self.path("empty-config")
        rc, _, stderr = run_cli(BUS, env=env)
        self.assertEqual(rc, 2)
        self.assertIn("--model", stderr)
        # A class id the model does not have.
        rc, _, stderr = run_cli("--model", self.model, BUS, "--classes", "80")
        self.assertEqual(rc, 2, stderr)

    # ---- parity hooks ------------------------------------------------------------------------------

    def test_input_tensor_dump_raw(self):
        tensor, raw = self.path("input_bus_320.npy"), self.path("raw.npy")
        with gzip.open(os.path.join(TEST_DATA, "input_bus_320.npy.gz")) as f:
            np.save(tensor, np.load(f))
        rc, _, stderr = run_cli("--model", self.model, "--device", "cpu", "--input-tensor", tensor, "--dump-raw", raw)
        self.assertEqual(rc, 0, stderr)
        out = np.load(raw)
        self.assertEqual((out.shape, out.dtype), ((1, 84, 2100), np.float32))
        ref = np.load(os.path.join(TEST_DATA, "yolo11n_coco_bus_320_out.npy"))
        rel_l2 = np.linalg.norm(out - ref) / np.linalg.norm(ref)
        self.assertLess(rel_l2, 1e-4)
        # Two images in one batch give (2, 84, 2100), each equal to the single-image output.
        batch = self.path("batch.npy")
        np.save(batch, np.concatenate([np.load(tensor)] * 2))
        rc, _, stderr = run_cli("--model", self.model, "--input-tensor", batch, "--dump-raw", raw)
        self.assertEqual(rc, 0, stderr)
        out2 = np.load(raw)
        self.assertEqual(out2.shape, (2, 84, 2100))
        np.testing.assert_allclose(out2[1], out[0], rtol=1e-4, atol=1e-4)
        # Wrong dtype and wrong rank are refused with a message, exit 1.
        f64, rank3, cut = self.path("f64.npy"), self.path("rank3.npy"), self.path("cut.npy")
        np.save(f64, np.zeros((1, 3, 320, 320)))
        np.save(rank3, np.zeros((3, 320, 320), np.float32))
        with open(tensor, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) // 2])
        for path, message in ((f64, "float32"), (rank3, "(B, 3, H, W)"), (cut, "truncated")):
            rc, _, stderr = run_cli("--model", self.model, "--input-tensor", path, "--dump-raw", raw)
            self.assertEqual(rc, 1, stderr)
            self.assertIn(path, stderr)
            self.assertIn(message, stderr)

    # ---- video -------------------------------------------------------------------------------------

    def test_video_every_frame(self):
        outdir, out = self.path("video"), self.path("video.jsonl")
        start = time.monotonic()
        rc, stdout, stderr = run_cli("--model", self.model, "--imgsz", "160", VIDEO, "--json", out, "--save",
                                     "--output", outdir, "-q", timeout=600)
        seconds = time.monotonic() - start
        print(f"\nvideo: {VIDEO_FRAMES} frames in {seconds:.1f} s ({VIDEO_FRAMES / seconds:.1f} fps)", file=sys.stderr)
        self.assertEqual(rc, 0, stderr)
        lines = read_jsonl(out)
        self.assertEqual([l["frame"] for l in lines], list(range(VIDEO_FRAMES)))
        self.assertTrue(all(l["source"] == VIDEO and (l["width"], l["height"]) == (VIDEO_W, VIDEO_H) for l in lines))
        # A top-down car park: at 160x160 YOLO11n finds a car in some of the frames.
        self.assertTrue(any(d["class_name"] == "car" for l in lines for d in l["detections"]))
        frames, w, h, rate = ffprobe_video(os.path.join(outdir, "car-detection.mp4"))
        self.assertEqual((frames, w, h), (VIDEO_FRAMES, VIDEO_W, VIDEO_H))
        self.assertEqual(rate, ffprobe_video(VIDEO)[3])

    def test_video_stride_and_labels(self):
        # --vid-stride 10 on 25 frames with cars (from frame 200): detections every 10th frame, every
        # frame still saved.
        clip = self.path("clip.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", VIDEO, "-ss", "16", "-frames:v", "25", "-c:v", "mpeg4",
                        clip], check=True, timeout=120)
        outdir = self.path("stride")
        rc, stdout, stderr = run_cli("--model", self.model, clip, "--vid-stride", "10", "--save", "--save-txt",
                                     "--output", outdir, "--json", "-")
        self.assertEqual(rc, 0, stderr)
        lines = [json.loads(l) for l in stdout.splitlines()]
        self.assertEqual([l["frame"] for l in lines], [0, 10, 20])
        self.assertEqual(ffprobe_video(os.path.join(outdir, "clip.mp4"))[0], 25)
        # One label file per detected frame with detections, frames numbered from 1 (clip_11.txt: frame 10).
        labels = sorted(os.listdir(os.path.join(outdir, "labels")))
        expected = sorted(f"clip_{l['frame'] + 1}.txt" for l in lines if l["detections"])
        self.assertTrue(expected)
        self.assertEqual(labels, expected)
        self.assertRegex(stderr, r"video 1/1 \(frame 11/25\) .*clip\.mp4: 320x320 ")

    def test_sigint_leaves_a_playable_video(self):
        outdir, out = self.path("interrupted"), self.path("interrupted.jsonl")
        p = subprocess.Popen([CLI, "--model", self.model, "--imgsz", "160", VIDEO, "--json", out, "--save",
                              "--output", outdir], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # Wait until the first frames are through, then a couple of seconds more.
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (not os.path.exists(out) or os.path.getsize(out) == 0):
            time.sleep(0.1)
        time.sleep(2)
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 130, stderr)
        m = re.search(r"interrupted after (\d+) frames.*saved (\S+) \((\d+) frames\)", stdout)
        self.assertIsNotNone(m, stdout)
        read, path, written = int(m[1]), m[2], int(m[3])
        self.assertTrue(0 < written == read < VIDEO_FRAMES, stdout)
        frames, w, h, _ = ffprobe_video(path)
        self.assertEqual((frames, w, h), (written, VIDEO_W, VIDEO_H))
        self.assertEqual(len(read_jsonl(out)), written)  # JSON flushed: one whole line per frame

    def test_live_stream_drops_and_reconnects(self):
        # A 4-second MJPEG stream served over HTTP by ffmpeg on the loopback interface, in real time.
        # Then the server is gone: the CLI tries 5 times (0.5 + 1 + 2 + 4 + 8 s), reports the stream
        # as failed and exits 1.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = f"http://127.0.0.1:{port}/feed.mjpg"
        server = subprocess.Popen(["ffmpeg", "-v", "error", "-re", "-i", VIDEO, "-t", "4", "-f", "mpjpeg",
                                   "-listen", "1", url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.5)  # let the server start listening
            rc, stdout, stderr = run_cli("--model", self.model, url, "--json", "-", timeout=120)
        finally:
            server.kill()
            server.wait()
        self.assertEqual(rc, 1, stderr)
        lines = [json.loads(l) for l in stdout.splitlines()]
        frames = [l["frame"] for l in lines[:-1]]
        self.assertGreater(len(frames), 5)
        self.assertEqual(frames, sorted(set(frames)))  # in order, never twice
        self.assertEqual(lines[-1]["source"], url)
        self.assertIn("stream lost and could not be reopened after 5 tries", lines[-1]["error"])
        self.assertIn("reopening in 8.0 s (try 5/5)", stderr)
        # Every frame read was either detected or dropped, and drops are reported with their count.
        m = re.search(r"stream 1/1 \S+: (\d+) frames, (\d+) detected", stderr)
        self.assertIsNotNone(m, stderr)
        read, detected = int(m[1]), int(m[2])
        self.assertEqual(detected, len(frames))
        if detected < read:
            self.assertIn(f"{read - detected} of {read} frames dropped because detection is slower", stderr)


def main(script, paths, tools=()):
    """Runs the tests of script, or exits 77 (skipped) naming what is missing."""
    missing = [p for p in paths if not os.path.exists(p)]
    missing += [f"{t} (apt-get install ffmpeg, as tools/setup.sh does)" for t in tools if shutil.which(t) is None]
    if missing:
        print(f"SKIP: {os.path.basename(script)} needs {', '.join(missing)} (build yolo12-infer; ../shared/data)")
        sys.exit(77)
    unittest.main(module="__main__", verbosity=2)


if __name__ == "__main__":
    main(__file__, (CLI, WEIGHTS, BUS, VIDEO), ("ffprobe",))
