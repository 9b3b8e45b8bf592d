"""An application built against an *installed* libyolo12 runs a model (docs/api.md, "Using the
library"): the library installs into a temporary prefix; tests/example_app is built with CMake
(find_package, in a project that cannot find spdlog or the CUDA toolkit) and with pkg-config, and run
on the committed random-weight YOLO12n fixture (exported here with exporter/export.py). Also: the
shared libyolo12 of the build tree exports only the public API, and its typed errors are caught by
type in the application.

Exit 77 (skipped) when the exporter's inputs are missing.
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("YOLO12_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("YOLO12_BINARY_DIR", os.path.join(SRC, "build"))
FIXTURE = os.path.join(SRC, "tests", "data", "yolo12n_rand.pt")

# What a shared libyolo12 may export in namespace yolo12 (include/yolo12: YOLO12_API).
PUBLIC = ("yolo12::Detector", "yolo12::DetectorPool", "yolo12::DeviceSpec", "yolo12::parse_devices",
          "yolo12::ByteTracker", "yolo12::ModelInfo", "yolo12::version", "yolo12::read_model_info", "yolo12::Error",
          "yolo12::ModelError", "yolo12::InputError", "yolo12::OptionError", "yolo12::CudaError")


def exported_yolo12_symbols(library):
    out = subprocess.run(["nm", "-DC", "--defined-only", library], capture_output=True, text=True, check=True).stdout
    names = []
    for line in out.splitlines():
        name = line.split(" ", 2)[-1]
        name = re.sub(r"^(typeinfo name for |typeinfo for |vtable for |non-virtual thunk to )", "", name)
        if name.startswith("yolo12::"):
            names.append(name)
    return names


class ExampleApp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.model = os.path.join(cls.tmp.name, "yolo12n_rand.y12")
        subprocess.run([sys.executable, os.path.join(SRC, "exporter", "export.py"), FIXTURE, "-o", cls.model],
                       check=True, capture_output=True, text=True,
                       env={**os.environ, "YOLO12_CONFIG_DIR": os.path.join(cls.tmp.name, "config")})

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_installed_library_with_cmake_and_pkg_config(self):
        run = subprocess.run(["bash", os.path.join(SRC, "tests", "example_app", "check.sh"), BUILD, self.model, "cpu"],
                             capture_output=True, text=True, timeout=900)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        cmake_part, pc_part = run.stdout.split("== 2. pkg-config")
        for part in (cmake_part, pc_part):
            self.assertIn("typed errors: ok", part)
            self.assertIn("tracker: ok", part)
            self.assertRegex(part, r"yolo12 \d+\.\d+\.\d+ \(headers \d+\.\d+\.\d+\) on cpu: \d+ detections at 640x640")
        installed = run.stdout.split("== 1.")[0]
        self.assertNotIn("spdlog", installed)      # consumers need no spdlog ...
        self.assertNotIn("CUDA", installed)        # ... nor the CUDA toolkit
        self.assertIn("-lyolo12", installed)

    def test_shared_library_exports_only_the_public_api(self):
        libraries = [p for p in glob.glob(os.path.join(BUILD, "libyolo12*.so*")) if not os.path.islink(p)]
        app = os.path.join(BUILD, "yolo12_example_shared")
        if not libraries or not os.path.exists(app):
            self.skipTest("no shared libyolo12 in the build tree (configure with the tests)")
        names = exported_yolo12_symbols(libraries[0])
        self.assertTrue(any(n.startswith("yolo12::Detector::detect") for n in names), names)
        leaked = [n for n in names if not n.startswith(PUBLIC)]
        self.assertEqual(leaked, [], "internal symbols exported")
        run = subprocess.run([app, self.model, "cpu"], capture_output=True, text=True, timeout=300)
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertIn("typed errors: ok", run.stdout)
        self.assertIn("tracker: ok", run.stdout)
        self.assertIn("detections at 640x640", run.stdout)
        needed = subprocess.run(["readelf", "-d", libraries[0]], capture_output=True, text=True).stdout
        self.assertNotIn("cudart", needed)  # the CUDA runtime is linked in statically


if __name__ == "__main__":
    if not os.path.exists(FIXTURE) or not os.path.exists(os.path.join(SRC, "exporter", "export.py")):
        print("SKIPPED: tests/data/yolo12n_rand.pt or exporter/export.py missing")
        sys.exit(77)
    result = unittest.main(exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
