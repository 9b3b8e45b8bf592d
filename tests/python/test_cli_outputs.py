#!/usr/bin/env python3
"""What yolo12-infer writes (docs/cli.md, "What it writes"): Ultralytics' label files, crops,
non-ASCII names, and the guards of issue 13: no output over an input or the model, unique names
across sources, and every failed write failing the run.

Needs the built CLI and ../shared/data (COCO YOLO11n weights, bus.jpg, the car video) and ffmpeg;
exits 77 (skipped) without them.
"""
import hashlib
import json
import os
import shutil
import subprocess
import unittest

import test_cli as base
from test_cli_options import RunTest, run, detections

BUS = base.BUS


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def labels(path):
    with open(path) as f:
        return [line.split() for line in f.read().splitlines()]


class Labels(RunTest):
    def test_five_columns_then_conf(self):
        out = os.path.join(self.tmp, "labels5")
        rc, stdout, err = run("--model", self.model, BUS, "--save-txt", "--output", out, "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        rows = labels(os.path.join(out, "labels", "bus.txt"))
        dets = detections(stdout)
        self.assertEqual(len(rows), len(dets))
        self.assertTrue(all(len(r) == 5 for r in rows), rows)  # what Ultralytics' training loader reads
        self.assertEqual([int(r[0]) for r in rows], [d["class_id"] for d in dets])
        rc, _, err = run("--model", self.model, BUS, "save_txt=True", "save_conf=True", "--output", out, "-q")
        self.assertEqual(rc, 0, err)
        rows6 = labels(os.path.join(out, "labels", "bus.txt"))
        self.assertEqual([r[:5] for r in rows6], rows)
        self.assertEqual([round(float(r[5]), 4) for r in rows6], [d["score"] for d in dets])

    def test_crops(self):
        out = os.path.join(self.tmp, "crops")
        rc, stdout, err = run("--model", self.model, BUS, "--save-crop", "--output", out, "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        dets = detections(stdout)
        persons = sorted(os.listdir(os.path.join(out, "crops", "person")))
        self.assertEqual(persons, ["bus.jpg", "bus2.jpg", "bus3.jpg", "bus4.jpg"][: sum(d["class_id"] == 0 for d in dets)])
        self.assertEqual(os.listdir(os.path.join(out, "crops", "bus")), ["bus.jpg"])
        # The first person's crop: the box times 1.02 plus 10 pixels (Ultralytics' save_one_box).
        x1, y1, x2, y2 = next(d for d in dets if d["class_id"] == 0)["box"]
        _, w, h, _ = base.ffprobe_video(os.path.join(out, "crops", "person", "bus.jpg"))
        self.assertAlmostEqual(w, min(810, (x2 - x1) * 1.02 + 10), delta=2)
        self.assertAlmostEqual(h, min(1080, (y2 - y1) * 1.02 + 10), delta=2)
        self.assertFalse(os.path.exists(os.path.join(out, "bus.jpg")))  # --save-crop alone saves no annotated copy

    def test_non_ascii_names_are_kept(self):
        folder = os.path.join(self.tmp, "données")
        os.makedirs(folder, exist_ok=True)
        name = os.path.join(folder, "bus_ü_日本 1.jpg")
        shutil.copy(BUS, name)
        out = os.path.join(self.tmp, "sortie_é")
        jsonl = os.path.join(self.tmp, "résultats.jsonl")
        rc, stdout, err = run("--model", self.model, name, "--save", "--save-txt", "--save-crop", "--output", out,
                              "--json", jsonl)
        self.assertEqual(rc, 0, err)
        with open(jsonl, encoding="utf-8") as f:
            self.assertEqual(json.loads(f.readline())["source"], name)
        self.assertIn(name, stdout)
        self.assertTrue(os.path.isfile(os.path.join(out, "bus_ü_日本 1.jpg")))
        self.assertTrue(os.path.isfile(os.path.join(out, "labels", "bus_ü_日本 1.txt")))
        self.assertTrue(os.path.isfile(os.path.join(out, "crops", "bus", "bus_ü_日本 1.jpg")))


class Guards(RunTest):
    def setUp(self):
        self.inputs = os.path.join(self.tmp, "inputs_" + self._testMethodName)
        os.makedirs(self.inputs, exist_ok=True)
        self.image = os.path.join(self.inputs, "bus.jpg")
        shutil.copy(BUS, self.image)
        self.image_digest = digest(self.image)
        self.model_digest = digest(self.model)

    def tearDown(self):
        self.assertEqual(digest(self.image), self.image_digest, "the input image was changed")
        self.assertEqual(digest(self.model), self.model_digest, "the model was changed")

    def test_json_over_an_input_or_the_model(self):
        link = os.path.join(self.tmp, "link_" + self._testMethodName + ".jpg")
        os.symlink(self.image, link)
        for target in (self.image, self.model, link, os.path.join(self.inputs, "..", os.path.basename(self.inputs), "bus.jpg")):
            rc, _, err = run("--model", self.model, self.image, "--json", target)
            self.assertEqual(rc, 2, target)
            self.assertIn("refusing to write over", err)

    def test_save_into_the_folder_of_the_inputs(self):
        for args in (["--output", self.inputs], ["--project", self.tmp, "--name", os.path.basename(self.inputs), "--exist-ok"],
                     ["--output", os.path.join(self.inputs, ".")]):
            rc, _, err = run("--model", self.model, self.image, "--save", *args)
            self.assertEqual(rc, 2, args)
            self.assertIn("would write over its inputs", err)
        # Labels only (they go to labels/) are fine there.
        rc, _, err = run("--model", self.model, self.image, "--save-txt", "--output", self.inputs)
        self.assertEqual(rc, 0, err)

    def test_a_label_file_never_replaces_an_input(self):
        # A source list that sits where a label file would go: labels/bus.txt.
        os.makedirs(os.path.join(self.inputs, "labels"), exist_ok=True)
        listing = os.path.join(self.inputs, "labels", "bus.txt")
        with open(listing, "w") as f:
            f.write(self.image + "\n")
        before = digest(listing)
        rc, _, err = run("--model", self.model, listing, "--save-txt", "--output", self.inputs)
        self.assertEqual(rc, 1, err)
        self.assertIn("not written: it is the list of inputs", err)
        self.assertEqual(digest(listing), before)

    def test_dump_raw_over_the_input_tensor(self):
        import gzip
        import numpy as np
        tensor = os.path.join(self.inputs, "x.npy")
        with gzip.open(os.path.join(base.TEST_DATA, "input_bus_320.npy.gz")) as f:
            np.save(tensor, np.load(f))
        before = digest(tensor)
        rc, _, err = run("--model", self.model, "--input-tensor", tensor, "--dump-raw", tensor)
        self.assertEqual(rc, 2, err)
        self.assertEqual(digest(tensor), before)


class UniqueNames(RunTest):
    def test_image_clip_1_and_frame_1_of_clip(self):
        folder = os.path.join(self.tmp, "names")
        os.makedirs(folder, exist_ok=True)
        image = os.path.join(folder, "clip_1.jpg")
        shutil.copy(BUS, image)
        clip = os.path.join(folder, "clip.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", base.VIDEO, "-ss", "16", "-frames:v", "3", "-an", "-c:v",
                        "mpeg4", clip], check=True, timeout=120)
        out = os.path.join(self.tmp, "names_out")
        rc, stdout, err = run("--model", self.model, image, clip, "--save-txt", "--output", out, "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        lines = [json.loads(l) for l in stdout.splitlines()]
        image_rows = labels(os.path.join(out, "labels", "clip_1.txt"))
        self.assertEqual(len(image_rows), len(lines[0]["detections"]))  # still the image's labels
        frame_files = sorted(f for f in os.listdir(os.path.join(out, "labels")) if f != "clip_1.txt")
        self.assertEqual(frame_files, sorted(f"clip-2_{l['frame'] + 1}.txt" for l in lines[1:] if l["detections"]))
        self.assertTrue(frame_files)


class WriteFailures(RunTest):
    def test_json_to_a_full_disk(self):
        rc, _, err = run("--model", self.model, BUS, "--json", "/dev/full")
        self.assertEqual(rc, 1)
        self.assertIn("error: /dev/full: cannot write the JSON Lines (No space left on device)", err)
        with open("/dev/full", "w") as full:
            p = subprocess.run([base.CLI, "--model", self.model, BUS, "--json", "-", "-q"], stdout=full,
                               stderr=subprocess.PIPE, text=True, timeout=300,
                               env={**os.environ, "YOLO12_CONFIG_DIR": RunTest.empty_config})
        self.assertEqual(p.returncode, 1)
        self.assertIn("error: stdout: cannot write the JSON Lines", p.stderr)

    def test_saving_where_files_cannot_be_written(self):
        out = os.path.join(self.tmp, "blocked")
        os.makedirs(os.path.join(out, "bus.jpg"))  # a folder where the annotated image should go
        os.makedirs(os.path.join(out, "labels", "bus.txt"))
        rc, stdout, err = run("--model", self.model, BUS, "--save", "--save-txt", "--output", out)
        self.assertEqual(rc, 1, err)
        self.assertIn(f"error: {out}/bus.jpg: cannot write", err)
        self.assertIn(f"error: {out}/labels/bus.txt: cannot write", err)
        self.assertIn("2 outputs could not be written", stdout)
        # The same for a video file.
        os.makedirs(os.path.join(out, "clip.mp4"))
        clip = os.path.join(self.tmp, "clip.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", base.VIDEO, "-frames:v", "2", "-an", "-c:v", "mpeg4", clip],
                       check=True, timeout=120)
        rc, _, err = run("--model", self.model, clip, "--save", "--output", out, "--imgsz", "160")
        self.assertEqual(rc, 1, err)
        self.assertIn(f"{out}/clip.mp4", err)
        if os.geteuid() != 0:  # root writes into read-only folders anyway
            ro = os.path.join(self.tmp, "read_only")
            os.makedirs(ro)
            os.chmod(ro, 0o555)
            rc, _, err = run("--model", self.model, BUS, "--save", "--output", ro)
            self.assertEqual(rc, 1, err)


if __name__ == "__main__":
    base.main(__file__, (base.CLI, base.WEIGHTS, BUS, base.VIDEO), ("ffmpeg",))
