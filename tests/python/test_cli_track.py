#!/usr/bin/env python3
"""--track in yolo12-infer (docs/cli.md, "Tracking"): the tracker's IDs reach the JSON
("track_id"), the label files (the last column, as Ultralytics' save_txt when tracking) and the
drawings. The tracker itself (yolo12::ByteTracker, its agreement with Ultralytics' ByteTrack) is
tested with the library.

Needs the built CLI, ../shared/data (COCO YOLO11n weights, the car video, bus.jpg) and ffmpeg;
exits 77 (skipped) without them.
"""
import collections
import hashlib
import json
import os
import subprocess
import unittest

import test_cli as base
from test_cli_options import RunTest, run


class Track(RunTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.clip = os.path.join(cls.tmp, "cars.mp4")  # 25 frames with cars driving through
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", base.VIDEO, "-ss", "16", "-frames:v", "25", "-an", "-c:v",
                        "mpeg4", "-q:v", "2", cls.clip], check=True, timeout=120)

    def test_ids_in_json_labels_and_drawings(self):
        out = os.path.join(self.tmp, "tracked")
        rc, stdout, err = run("track", self.clip, "--model", self.model, "--save-txt", "--save-conf", "--save",
                              "--output", out, "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        lines = [json.loads(l) for l in stdout.splitlines()]
        self.assertEqual(len(lines), 25)
        ids = [d["track_id"] for l in lines for d in l["detections"]]
        self.assertTrue(ids and all(isinstance(i, int) and i >= 1 for i in ids), ids)
        # Boxes are the tracker's, clipped to the frame (Ultralytics' Results.update).
        for l in lines:
            for d in l["detections"]:
                x1, y1, x2, y2 = d["box"]
                self.assertTrue(0 <= x1 <= x2 <= l["width"] and 0 <= y1 <= y2 <= l["height"], (l["frame"], d))
        # The same car keeps its id from frame to frame.
        self.assertGreaterEqual(max(collections.Counter(ids).values()), 5)
        # Labels: class cx cy w h conf id (Ultralytics appends the id last).
        for l in lines:
            if not l["detections"]:
                continue
            with open(os.path.join(out, "labels", f"cars_{l['frame'] + 1}.txt")) as f:
                rows = [r.split() for r in f.read().splitlines()]
            self.assertEqual([int(r[6]) for r in rows], [d["track_id"] for d in l["detections"]])
            self.assertEqual([round(float(r[5]), 4) for r in rows], [d["score"] for d in l["detections"]])
        # Without --save-conf: class cx cy w h id.
        rc, _, err = run("--track", self.clip, "--model", self.model, "--save-txt", "--output", out + "_6", "-q")
        self.assertEqual(rc, 0, err)
        some = sorted(os.listdir(os.path.join(out + "_6", "labels")))[0]
        with open(os.path.join(out + "_6", "labels", some)) as f:
            self.assertEqual(len(f.readline().split()), 6)
        frames, _, _, _ = base.ffprobe_video(os.path.join(out, "cars.mp4"))
        self.assertEqual(frames, 25)

    def test_without_track_no_ids(self):
        rc, stdout, err = run(self.clip, "--model", self.model, "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        self.assertFalse(any("track_id" in d for l in stdout.splitlines() for d in json.loads(l)["detections"]))

    def test_tracked_drawing_shows_the_id(self):
        digests = {}
        for name, args in {"plain": [], "tracked": ["--track"]}.items():
            out = os.path.join(self.tmp, "draw_" + name)
            rc, _, err = run(base.BUS, "--model", self.model, "--save", "--output", out, "--conf", "0.5", "-q", *args)
            self.assertEqual(rc, 0, err)
            with open(os.path.join(out, "bus.jpg"), "rb") as f:
                digests[name] = hashlib.sha256(f.read()).hexdigest()
        self.assertNotEqual(digests["plain"], digests["tracked"])  # "id:1 person 0.84" instead of "person 0.84"

    def test_track_defaults_to_conf_0_1_as_ultralytics(self):
        # An explicit conf is honoured ...
        rc, stdout, err = run(self.clip, "--model", self.model, "--track", "--json", "-", "-q", "conf=0.6")
        self.assertEqual(rc, 0, err)
        scores = [d["score"] for l in stdout.splitlines() for d in json.loads(l)["detections"]]
        self.assertTrue(scores and all(s >= 0.6 for s in scores), scores)
        # ... and without it the tracker gets the boxes down to 0.1 (ByteTrack's second association),
        # so tracks continue through frames where their car scores below 0.25.
        rc, stdout, err = run(self.clip, "--model", self.model, "--track", "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        tracked = [d["score"] for l in stdout.splitlines() for d in json.loads(l)["detections"]]
        self.assertLess(min(tracked), 0.25, tracked)
        self.assertGreaterEqual(min(tracked), 0.1)

if __name__ == "__main__":
    base.main(__file__, (base.CLI, base.WEIGHTS, base.VIDEO, base.BUS), ("ffmpeg",))
