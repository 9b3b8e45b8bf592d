"""An application built against an *installed* libyolo12 with find_package(yolo12) runs a model.

Installs the build tree into a temporary prefix, configures tests/example_app with CMake, builds it
and runs it on the committed random-weight YOLO12n fixture (exported here with exporter/export.py).
Exit 77 (skipped) when the exporter's inputs are missing.
"""
import os
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("YOLO12_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("YOLO12_BINARY_DIR", os.path.join(SRC, "build"))
FIXTURE = os.path.join(SRC, "tests", "data", "yolo12n_rand.pt")


class ExampleApp(unittest.TestCase):
    def test_find_package_app_runs(self):
        with tempfile.TemporaryDirectory() as tmp:
            model = os.path.join(tmp, "yolo12n_rand.y12")
            subprocess.run([sys.executable, os.path.join(SRC, "exporter", "export.py"), FIXTURE, "-o", model],
                           check=True, capture_output=True, text=True)
            run = subprocess.run(["bash", os.path.join(SRC, "tests", "example_app", "check.sh"), BUILD, model, "cpu"],
                                 capture_output=True, text=True, timeout=900)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            self.assertIn("on cpu:", run.stdout)
            self.assertIn("detections at 640x640", run.stdout)


if __name__ == "__main__":
    if not os.path.exists(FIXTURE) or not os.path.exists(os.path.join(SRC, "exporter", "export.py")):
        print("SKIPPED: tests/data/yolo12n_rand.pt or exporter/export.py missing")
        sys.exit(77)
    result = unittest.main(exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
