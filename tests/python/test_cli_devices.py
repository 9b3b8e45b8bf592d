#!/usr/bin/env python3
"""--device lists in yolo12-infer (docs/cli.md, "Several devices"): `--device cpu,cpu` runs two CPU
workers through exactly the code paths of `--device cuda:0,1` (batches round-robin, each video on one
detector, several at once), so its JSON Lines, label files, crops and saved images and videos must be
those of `--device cpu`, in the same order (per source for videos, whose lines may interleave), apart
from the timing figures. Lists that cannot be honoured are usage errors (exit 2) before any work.

Needs the built CLI, the committed random-weight fixture (tests/data/yolo12n_rand.pt, exported here)
and ffmpeg (the images and videos are generated); exits 77 (skipped) without them. Runs at --imgsz
160 so that it stays fast on two cores.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import test_cli as base

FIXTURE = os.path.join(base.TEST_DATA, "yolo12n_rand.pt")
COMMON = ["--imgsz", "160", "--batch", "2", "--max-det", "6", "--conf", "0.3"]


def run(*args, timeout=300):
    env = {k: v for k, v in os.environ.items() if k != "YOLO12_MODEL"}
    env["YOLO12_CONFIG_DIR"] = Devices.config  # never the user's settings
    p = subprocess.run([base.CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def without_times(lines):
    for line in lines:
        line.pop("times_ms", None)
    return lines


def decoded_frames(path):
    """The framemd5 of a video's decoded frames: the pictures, whatever the container's metadata."""
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-f", "framemd5", "-"], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    return [line.split(",")[-1].strip() for line in out.splitlines() if not line.startswith("#")]


def saved_files(folder):
    """{relative path: digest} of everything a run saved (videos by their decoded frames)."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if name.endswith(".mp4"):
                digest = decoded_frames(path)
            else:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            files[os.path.relpath(path, folder)] = digest
    return files


class Devices(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="yolo12_cli_devices_")
        Devices.config = os.path.join(cls.tmp, "config")
        cls.model = os.path.join(cls.tmp, "rand.y12")
        subprocess.run([sys.executable, os.path.join(base.SOURCE_DIR, "exporter", "export.py"), FIXTURE, "-o", cls.model,
                        "--no-set-default"], check=True, capture_output=True, timeout=300,
                       env={**os.environ, "YOLO12_CONFIG_DIR": Devices.config})
        # Five images of different sizes and formats (five batches of 2 with the missing one), two videos.
        cls.images = os.path.join(cls.tmp, "images")
        os.makedirs(cls.images)
        for i, (source, size, ext) in enumerate([("testsrc", "160x120", "jpg"), ("mandelbrot", "200x150", "png"),
                                                 ("smptebars", "96x96", "jpg"), ("rgbtestsrc", "240x160", "png"),
                                                 ("testsrc2", "170x130", "jpg")]):
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"{source}=size={size}", "-frames:v", "1",
                            os.path.join(cls.images, f"im{i}.{ext}")], check=True, timeout=60)
        cls.videos = []
        for name, source, frames in (("clip_a.mp4", "testsrc", 12), ("clip_b.mp4", "mandelbrot", 9)):
            path = os.path.join(cls.tmp, name)
            subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"{source}=size=160x120:rate=10",
                            "-frames:v", str(frames), "-c:v", "mpeg4", "-q:v", "3", path], check=True, timeout=60)
            cls.videos.append(path)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def outputs(self, name, status, *args):
        """Runs with everything saved; returns (JSON objects without times, saved files, stdout + stderr)."""
        out, jsonl = os.path.join(self.tmp, name), os.path.join(self.tmp, name + ".jsonl")
        rc, stdout, stderr = run("--model", self.model, *COMMON, "--save", "--save-txt", "--save-crop", "--output", out,
                                 "--json", jsonl, "-v", *args)
        self.assertEqual(rc, status, stderr)
        return without_times(base.read_jsonl(jsonl)), saved_files(out), stdout + stderr

    def test_images_round_robin_give_the_one_device_results_in_order(self):
        missing = os.path.join(self.tmp, "missing.jpg")
        sources = [self.images, missing, os.path.join(self.images, "im3.png")]  # 7 inputs: batches of 2, one error
        one, one_files, _ = self.outputs("img_one", 1, "--device", "cpu", *sources)
        two, two_files, log = self.outputs("img_two", 1, "device=cpu,cpu", *sources)  # Ultralytics' spelling
        self.assertEqual(len(one), 7)
        self.assertEqual([l["source"] for l in one][-2:], [missing, os.path.join(self.images, "im3.png")])
        self.assertIn("error", one[5])
        self.assertTrue(all(l.get("detections") for l in one if "error" not in l), "the fixture should find boxes")
        self.assertEqual(two, one)  # the same objects in the same order
        self.assertEqual(two_files, one_files)
        self.assertTrue(any(p.startswith("labels/") for p in one_files))
        self.assertTrue(any(p.startswith("crops/") for p in one_files))
        self.assertIn("im3-2.png", one_files)  # the second im3 gets its own name in both runs
        # The run was spread, and the closing line names the devices.
        self.assertIn("images 1..5: batches of 2 in turn on cpu, cpu", log)
        self.assertRegex(log, r"Speed: .* per image on cpu, cpu\n")

    def test_videos_run_at_once_each_in_order(self):
        one, one_files, _ = self.outputs("vid_one", 0, "--device", "cpu", *self.videos)
        two, two_files, log = self.outputs("vid_two", 0, "--device", "cpu,cpu", *self.videos)
        self.assertEqual([(l["source"], l["frame"]) for l in one],
                         [(self.videos[0], f) for f in range(12)] + [(self.videos[1], f) for f in range(9)])
        for video in self.videos:  # each source's own lines in order, the same as on one device
            self.assertEqual([l for l in two if l["source"] == video], [l for l in one if l["source"] == video])
        self.assertEqual(len(two), len(one))
        self.assertEqual(two_files, one_files)
        self.assertEqual(len(one_files["clip_a.mp4"]), 12)
        self.assertTrue(any(p.startswith("labels/clip_b_") for p in one_files))
        self.assertEqual(log.count(": on cpu\n"), 2)  # one detector each
        self.assertRegex(log, r"Speed: .* per image on cpu, cpu\n")

    def test_track_runs_images_as_one_sequence_on_one_detector(self):
        rc, one, err = run("--model", self.model, *COMMON, "--track", "--device", "cpu", self.images, "--json", "-")
        self.assertEqual(rc, 0, err)
        rc, two, err = run("--model", self.model, *COMMON, "--track", "--device", "cpu,cpu", self.images, "--json", "-",
                           "-v")
        self.assertEqual(rc, 0, err)
        self.assertEqual(without_times([json.loads(l) for l in two.splitlines()]),
                         without_times([json.loads(l) for l in one.splitlines()]))
        self.assertIn("--track: images 1..5 form one sequence and run on cpu alone", err)

    def cuda_works(self, index):
        rc, _, _ = run("--model", self.model, "--imgsz", "160", "--device", f"cuda:{index}",
                       os.path.join(self.images, "im0.jpg"), "-q")
        return rc == 0

    def test_gpu_lists_give_the_one_gpu_results(self):
        # On a GPU machine with a CUDA build (tools/gpu_check.sh builds one): 0,0 (two workers on one
        # GPU) and, with two GPUs, 0,1 and cuda:0,1 against --device 0.
        if not self.cuda_works(0):
            self.skipTest("no usable CUDA device (no GPU, or a build without CUDA)")
        lists = ["0,0"] + (["0,1", "cuda:0,1"] if self.cuda_works(1) else [])
        sources = [self.images, *self.videos]
        one, one_files, _ = self.outputs("gpu_one", 0, "--device", "0", *sources)
        for devices in lists:
            two, two_files, log = self.outputs("gpu_" + devices.replace(":", "_").replace(",", "_"), 0, "--device",
                                               devices, *sources)
            self.assertEqual([l for l in two if "frame" not in l], [l for l in one if "frame" not in l], devices)
            for video in self.videos:
                self.assertEqual([l for l in two if l["source"] == video], [l for l in one if l["source"] == video])
            self.assertEqual(len(two), len(one))
            self.assertEqual(two_files, one_files, devices)
            names = ", ".join("cuda:" + i for i in devices.replace("cuda:", "").split(","))
            self.assertRegex(log, r"Speed: .* per image on " + names + "\n", devices)

    def test_lists_that_cannot_be_honoured_are_usage_errors_before_any_work(self):
        cases = [("0,x", "device 'x' is not a device"), ("auto,0", "'auto' cannot be part of a list"),
                 ("cpu,,cpu", "is empty"), ("0,63", "cuda")]
        if not shutil.which("nvidia-smi"):  # CI: no GPU (on a machine with two, cuda:0,1 is valid)
            cases.append(("cuda:0,1", "cuda"))
        for device, message in cases:
            out, jsonl = os.path.join(self.tmp, "refused"), os.path.join(self.tmp, "refused.jsonl")
            rc, stdout, err = run("--model", self.model, "--imgsz", "160", "--device", device, self.images, "--save",
                                  "--output", out, "--json", jsonl)
            self.assertEqual(rc, 2, (device, err))
            self.assertIn(message, err, device)
            self.assertEqual(len(err.strip().splitlines()[0].split("error: ")), 2, err)  # one error line
            self.assertFalse(os.path.exists(out) or os.path.exists(jsonl), device)  # nothing was done
            self.assertEqual(stdout, "")


if __name__ == "__main__":
    base.main(__file__, (base.CLI, FIXTURE, os.path.join(base.SOURCE_DIR, "exporter", "export.py")), ("ffmpeg",))
