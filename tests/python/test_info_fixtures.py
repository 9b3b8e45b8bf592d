"""Every fixture converts with exporter/export.py and `yolo12-infer --model FILE --info` loads each one.

Fixtures: the committed Ultralytics checkpoints (tests/data/*.pt), the shared turbo YOLOv12 checkpoint
and the real COCO YOLO11n / YOLOv8n ONNX exports (../shared/data, skipped when absent). For each, the
summary printed by --info must name the family, the class count and the layer count the exporter
wrote into the header; and a corrupt copy must fail with exit 1 and a message naming the file.
Exit 77 (skipped) when the CLI was not built.
"""
import glob
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

SRC = os.environ.get("YOLO12_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
BUILD = os.environ.get("YOLO12_BINARY_DIR", os.path.join(SRC, "build"))
CLI = os.path.join(BUILD, "yolo12-infer")
SHARED = os.environ.get("YOLO12_SHARED_DATA", os.path.join(SRC, "..", "shared", "data"))


def fixtures():
    found = sorted(glob.glob(os.path.join(SRC, "tests", "data", "*.pt")))
    found += sorted(glob.glob(os.path.join(SHARED, "fixtures", "*.pt")))
    found += sorted(glob.glob(os.path.join(SHARED, "weights", "*.onnx")))
    return found


def header_of(path):
    with open(path, "rb") as f:
        head = f.read(24)
        (length,) = struct.unpack("<Q", head[16:24])
        return json.loads(f.read(length))


class InfoOnEveryFixture(unittest.TestCase):
    def test_every_fixture_converts_and_loads(self):
        inputs = fixtures()
        self.assertGreaterEqual(len(inputs), 2, "expected the committed fixtures in tests/data")
        if not os.path.isdir(SHARED):
            print("note: ../shared/data absent: only the committed fixtures were checked")
        with tempfile.TemporaryDirectory() as tmp:
            for src in inputs:
                with self.subTest(fixture=os.path.basename(src)):
                    out = os.path.join(tmp, os.path.basename(src) + ".y12")
                    exp = subprocess.run([sys.executable, os.path.join(SRC, "exporter", "export.py"), src, "-o", out],
                                         capture_output=True, text=True, timeout=600)
                    self.assertEqual(exp.returncode, 0, exp.stderr)
                    header = header_of(out)
                    info = subprocess.run([CLI, "--model", out, "--info"], capture_output=True, text=True, timeout=120)
                    self.assertEqual(info.returncode, 0, info.stdout + info.stderr)
                    self.assertIn(f"family:     {header['family']}", info.stdout)
                    self.assertIn(f"classes:    {header['nc']}", info.stdout)
                    self.assertIn(f"layers:     {len(header['layers'])}", info.stdout)
                    print(f"{os.path.basename(src)}: {header['family']} scale {header.get('scale')} "
                          f"nc {header['nc']} layers {len(header['layers'])}: --info ok")
                    # A corrupt copy (one flipped byte in the tensor table's JSON) is refused cleanly.
                    with open(out, "rb") as f:
                        data = bytearray(f.read())
                    pos = data.find(b'"tensors"')
                    data[pos + 1] = ord("X")
                    bad = out + ".bad.y12"
                    with open(bad, "wb") as f:
                        f.write(bytes(data))
                    info = subprocess.run([CLI, "--model", bad, "--info"], capture_output=True, text=True, timeout=120)
                    self.assertEqual(info.returncode, 1, info.stdout + info.stderr)
                    self.assertIn(bad, info.stdout + info.stderr)


if __name__ == "__main__":
    if not os.path.exists(CLI):
        print(f"SKIPPED: {CLI} not built")
        sys.exit(77)
    result = unittest.main(exit=False).result
    sys.exit(0 if result.wasSuccessful() else 1)
