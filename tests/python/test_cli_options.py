#!/usr/bin/env python3
"""yolo12-infer's options as an Ultralytics user types them (docs/cli.md): key=value spellings,
underscores, "did you mean" errors before any work, the default model lookup, run folders.

Needs the built CLI and ../shared/data (the COCO YOLO11n weights and bus.jpg); exits 77 (skipped)
without them. Every run gets YOLO12_CONFIG_DIR in a temporary folder, never the user's settings.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import test_cli as base

BUS = base.BUS


def run(*args, cwd=None, env_extra=None, drop=("YOLO12_MODEL",), timeout=300, config_dir=None, stdin=None):
    """Runs the CLI with a clean environment: no YOLO12_MODEL, a config folder of our own."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    if config_dir is not False:  # False: leave the variable unset
        env["YOLO12_CONFIG_DIR"] = config_dir or RunTest.empty_config
    env.update(env_extra or {})
    p = subprocess.run([base.CLI, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=env, cwd=cwd,
                       input=stdin)
    return p.returncode, p.stdout, p.stderr


def detections(stdout):
    return [d for line in stdout.splitlines() if line.startswith("{") for d in json.loads(line).get("detections", [])]


class RunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="yolo12_cli_options_")
        cls.model = os.path.join(cls.tmp, "yolo11n_coco.y12")
        RunTest.empty_config = os.path.join(cls.tmp, "no-config")
        subprocess.run([sys.executable, os.path.join(base.SOURCE_DIR, "exporter", "export.py"), base.WEIGHTS, "-o",
                        cls.model, "--no-set-default"], capture_output=True, timeout=300,
                       env={**os.environ, "YOLO12_CONFIG_DIR": RunTest.empty_config})
        if not os.path.exists(cls.model):  # an exporter without --no-set-default
            subprocess.run([sys.executable, os.path.join(base.SOURCE_DIR, "exporter", "export.py"), base.WEIGHTS, "-o",
                            cls.model], check=True, capture_output=True, timeout=300,
                           env={**os.environ, "YOLO12_CONFIG_DIR": RunTest.empty_config})
        shutil.rmtree(RunTest.empty_config, ignore_errors=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def folder(self, name):
        path = os.path.join(self.tmp, name)
        os.makedirs(path, exist_ok=True)
        return path


class Spellings(RunTest):
    def test_key_value_options_are_honoured(self):
        rc, out, err = run("--model", self.model, BUS, "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        everything = detections(out)
        self.assertGreater(len(everything), 2)
        # conf=0.75 runs at 0.75 (it used to run at 0.25 and then call conf=0.75 a missing file).
        rc, out, err = run("--model", self.model, BUS, "conf=0.75", "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        self.assertEqual(detections(out), [d for d in everything if d["score"] >= 0.75])
        self.assertEqual(len(detections(out)), 2)
        # imgsz=160, max_det=1, classes=[0], device=cpu, and source=/model= themselves.
        rc, out, err = run("source=" + BUS, "model=" + self.model, "imgsz=160", "max_det=1", "classes=[0]",
                           "device=cpu", "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        line = json.loads(out)
        self.assertEqual(line["input"], [160, 160])
        self.assertEqual([d["class_id"] for d in line["detections"]], [0])
        # --max_det with an underscore, and a leading mode word.
        rc, out, err = run("predict", BUS, "--model", self.model, "--max_det", "2", "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(detections(out)), 2)
        # half=True: accepted, and the CPU says it runs FP32; verbose=False: no per-image line.
        rc, out, err = run("--model", self.model, BUS, "half=True", "verbose=False")
        self.assertEqual(rc, 0, err)
        self.assertIn("--half has no effect on the CPU", err)
        self.assertNotIn("image 1/1", out)

    def test_drawing_options(self):
        images = {}
        for name, args in {"default": [], "no_labels": ["show_labels=False"], "no_conf": ["--hide-conf"],
                           "thick": ["line_width=9"], "thin": ["--line_width", "1"]}.items():
            out = os.path.join(self.tmp, "draw_" + name)
            rc, _, err = run("--model", self.model, BUS, "save=True", "--output", out, "-q", "--threads", "1", *args)
            self.assertEqual(rc, 0, err)
            with open(os.path.join(out, "bus.jpg"), "rb") as f:
                images[name] = f.read()
        self.assertEqual(len(set(images.values())), len(images), "every drawing option changes the picture")

    def test_unknown_or_unsupported_options_fail_before_any_work(self):
        cases = {
            ("conff=0.3",): "unknown option 'conff' (did you mean conf=?)",
            ("--conff", "0.3"): "unknown option --conff (did you mean --conf?)",
            ("--max_dett", "3"): "did you mean --max-det?",
            ("imgz=320",): "did you mean imgsz=?",
            ("show_label=False",): "did you mean show_labels=?",
            ("augment=True",): "'augment' is not supported by yolo12-infer",
            ("half=maybe",): "half=maybe: expected True or False",
            ("tracker=botsort.yaml",): "only ByteTrack",
            ("--threads", "-1"): "--threads -1",
            ("--save-conf",): "add --save-txt",
            ("--imgsz", ""): "--imgsz: an empty value",   # not the model's default size
            ("imgsz=",): "imgsz=: needs a value",
            ("--classes", " "): "--classes: an empty value",
        }
        project = os.path.join(self.tmp, "never")
        for args, message in cases.items():
            start = time.monotonic()
            rc, out, err = run("--model", self.model, BUS, *args, "--save", "--project", project, "--json",
                               os.path.join(self.tmp, "never.jsonl"))
            self.assertEqual(rc, 2, f"{args}: {err}")
            self.assertIn(message, err, args)
            self.assertLess(time.monotonic() - start, 10)
            self.assertFalse(os.path.exists(project), f"{args} created the run folder")
            self.assertFalse(os.path.exists(os.path.join(self.tmp, "never.jsonl")), f"{args} wrote the JSON")

    def test_a_key_value_that_names_a_file_is_a_source(self):
        folder = self.folder("kv")
        odd = os.path.join(folder, "conf=0.9.jpg")
        shutil.copy(BUS, odd)
        rc, out, err = run("--model", self.model, "conf=0.9.jpg", "--json", "-", "-q", cwd=folder)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["source"], "conf=0.9.jpg")
        self.assertGreater(len(detections(out)), 2)  # ran at the default conf, 0.25


class DefaultModel(RunTest):
    NO_MODEL = ("error: no model: pass --model FILE.y12, set YOLO12_MODEL, or export one with exporter/export.py "
                "(which records it as the default)")

    def settings(self, name, content):
        folder = self.folder(name)
        with open(os.path.join(folder, "settings.json"), "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))
        return folder

    def test_lookup_order(self):
        # Nothing anywhere: the documented one-line error, exit 2.
        rc, _, err = run(BUS)
        self.assertEqual(rc, 2)
        self.assertEqual(err.splitlines()[0], self.NO_MODEL)
        # The settings file's default.
        config = self.settings("cfg_ok", {"model": self.model, "other": "kept"})
        rc, out, err = run(BUS, "-v", config_dir=config)
        self.assertEqual(rc, 0, err)
        self.assertIn("image 1/1", out)
        self.assertIn(f"(the default in {config}/settings.json)", err)
        # $YOLO12_MODEL wins over the settings file, --model over both.
        missing = os.path.join(self.tmp, "missing.y12")
        rc, _, err = run(BUS, config_dir=config, env_extra={"YOLO12_MODEL": missing})
        self.assertEqual(rc, 1)
        self.assertIn(missing, err)
        rc, _, err = run(BUS, "--model", self.model, config_dir=config, env_extra={"YOLO12_MODEL": missing})
        self.assertEqual(rc, 0, err)
        # model= is --model.
        rc, _, err = run(BUS, "model=" + self.model)
        self.assertEqual(rc, 0, err)

    def test_config_folder(self):
        # $XDG_CONFIG_HOME/yolo12 without YOLO12_CONFIG_DIR, then $HOME/.config/yolo12.
        xdg = self.folder("xdg")
        self.settings(os.path.join("xdg", "yolo12"), {"model": self.model})
        rc, _, err = run(BUS, "-v", drop=("YOLO12_MODEL", "YOLO12_CONFIG_DIR"), env_extra={"XDG_CONFIG_HOME": xdg},
                         config_dir=False)
        self.assertEqual(rc, 0, err)
        home = self.folder("home")
        self.settings(os.path.join("home", ".config", "yolo12"), {"model": self.model})
        env = {k: v for k, v in os.environ.items() if k not in ("YOLO12_MODEL", "YOLO12_CONFIG_DIR", "XDG_CONFIG_HOME")}
        env["HOME"] = home
        p = subprocess.run([base.CLI, BUS], capture_output=True, text=True, env=env, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)

    def test_corrupt_settings_are_one_line_errors(self):
        for name, content in {"not_json": "{model: ", "array": "[1, 2]", "number": {"model": 3},
                              "deep": "[" * 100000 + "]" * 100000}.items():
            config = self.settings("bad_" + name, content)
            rc, _, err = run(BUS, config_dir=config)
            self.assertEqual(rc, 2, name)
            first = err.splitlines()[0]
            self.assertTrue(first.startswith(f"error: {config}/settings.json: corrupt settings file"), first)
            self.assertLess(len(first), 400)

    def test_help_tells_the_lookup(self):
        rc, out, _ = run("--help")
        self.assertEqual(rc, 0)
        for word in ("YOLO12_MODEL", "settings.json", "YOLO12_CONFIG_DIR", "runs/detect/predict"):
            self.assertIn(word, out)

    def test_export_then_bare_command(self):
        # What the demo does: export (which records the default), then the bare command.
        config = self.folder("cfg_export")
        model = os.path.join(self.folder("exported"), "yolo11n.y12")
        p = subprocess.run([sys.executable, os.path.join(base.SOURCE_DIR, "exporter", "export.py"), base.WEIGHTS,
                            "-o", model], capture_output=True, text=True, timeout=300,
                           env={**os.environ, "YOLO12_CONFIG_DIR": config})
        self.assertEqual(p.returncode, 0, p.stderr)
        if not os.path.exists(os.path.join(config, "settings.json")):
            self.skipTest("this exporter does not record the default model yet (docs: default_model)")
        rc, out, err = run(BUS, config_dir=config)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"image 1/1 .*bus\.jpg: 320x320 4 persons, 1 bus")


class RunFolders(RunTest):
    def test_runs_never_overwrite_each_other(self):
        cwd = self.folder("runs_cwd")
        for expected in ("predict", "predict2", "predict3"):
            rc, out, err = run("--model", self.model, BUS, "--save", cwd=cwd)
            self.assertEqual(rc, 0, err)
            self.assertIn(f"Results saved to runs/detect/{expected}", out)
            self.assertTrue(os.path.isfile(os.path.join(cwd, "runs", "detect", expected, "bus.jpg")))
        rc, out, err = run("--model", self.model, BUS, "save_txt=True", "exist_ok=True", cwd=cwd)
        self.assertEqual(rc, 0, err)
        self.assertIn("Results saved to runs/detect/predict\n", out)
        self.assertTrue(os.path.isfile(os.path.join(cwd, "runs", "detect", "predict", "labels", "bus.txt")))
        # --project and --name, also as project=/name=.
        for expected in ("exp", "exp2"):
            rc, out, err = run("--model", self.model, BUS, "--save", "project=p", "--name", "exp", cwd=cwd)
            self.assertEqual(rc, 0, err)
            self.assertIn(f"Results saved to p/{expected}", out)
        # --track names the folder "track"; nothing saved, no folder.
        rc, out, err = run("--model", self.model, BUS, "--save-crop", "--track", cwd=cwd)
        self.assertEqual(rc, 0, err)
        self.assertIn("Results saved to runs/detect/track", out)
        rc, out, err = run("--model", self.model, BUS, cwd=cwd)
        self.assertNotIn("Results saved", out)
        self.assertEqual(sorted(os.listdir(os.path.join(cwd, "runs", "detect"))),
                         ["predict", "predict2", "predict3", "track"])
        # --output: exactly that folder, and not with --project/--name.
        rc, out, err = run("--model", self.model, BUS, "--save", "--output", "exact/dir", cwd=cwd)
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.isfile(os.path.join(cwd, "exact", "dir", "bus.jpg")))
        rc, _, err = run("--model", self.model, BUS, "--save", "--output", "exact/dir", "--name", "x", cwd=cwd)
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    base.main(__file__, (base.CLI, base.WEIGHTS, BUS), ())
