#!/usr/bin/env python3
"""Tests of exporter/export.py (plain python3 + numpy).

Runs the exporter as a user would (a subprocess), then reads the produced .y12 back with the small,
independent reader below and checks the layout rules of docs/model-format.md, the tensor names and
shapes, and BatchNorm folding recomputed from the raw checkpoint tensors. Also checks that hostile or
broken inputs are refused with one line and exit status 1, without running their payload.

    python3 tests/python/test_export.py        # exit 0 pass, 1 fail, 77 an input is missing
"""

import glob
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import unittest
import zipfile

import numpy as np

REPO = os.environ.get("YOLO12_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED = os.path.join(REPO, "..", "shared", "data")
EXPORT = os.path.join(REPO, "exporter", "export.py")
TURBO = os.path.join(SHARED, "fixtures", "yolov12n-turbo_rand.pt")
ONNX11 = os.path.join(SHARED, "weights", "yolo11n_coco_int8dyn_320.onnx")
ONNX8 = os.path.join(SHARED, "weights", "yolov8n_coco_int8dyn_320.onnx")
# The exporter records each model it writes as yolo12-infer's default: in a folder of this run's own,
# never the user's settings.
_CONFIG = tempfile.TemporaryDirectory(prefix="y12-test-config-")
os.environ["YOLO12_CONFIG_DIR"] = _CONFIG.name


def run_export(src, dst, *extra):
    p = subprocess.run([sys.executable, EXPORT, src, "-o", dst, *extra], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def need(path):
    if not os.path.exists(path):
        raise unittest.SkipTest(f"missing input {os.path.normpath(path)} (../shared/data not present)")


# --- an independent reader of the .y12 layout ----------------------------------------------------

# --- XXH64 and the version-2 checksum, written again here from the published description ----------

M64 = (1 << 64) - 1
XP1, XP2, XP3, XP4, XP5 = (0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0x85EBCA77C2B2AE63,
                           0x27D4EB2F165667C5)


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _xround(acc, lane):
    return _rotl((acc + lane * XP2) & M64, 31) * XP1 & M64


def xxh64_ref(data, seed=0):
    """XXH64, plainly, one stripe at a time (independent of the exporter's vectorised one)."""
    n, pos = len(data), 0
    if n >= 32:
        v = [(seed + XP1 + XP2) & M64, (seed + XP2) & M64, seed, (seed - XP1) & M64]
        while pos + 32 <= n:
            for i in range(4):
                v[i] = _xround(v[i], int.from_bytes(data[pos + 8 * i:pos + 8 * i + 8], "little"))
            pos += 32
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & M64
        for x in v:
            h = ((h ^ _xround(0, x)) * XP1 + XP4) & M64
    else:
        h = (seed + XP5) & M64
    h = (h + n) & M64
    while pos + 8 <= n:
        h = (_rotl(h ^ _xround(0, int.from_bytes(data[pos:pos + 8], "little")), 27) * XP1 + XP4) & M64
        pos += 8
    if pos + 4 <= n:
        h = (_rotl(h ^ (int.from_bytes(data[pos:pos + 4], "little") * XP1 & M64), 23) * XP2 + XP3) & M64
        pos += 4
    while pos < n:
        h = _rotl(h ^ (data[pos] * XP5 & M64), 11) * XP1 & M64
        pos += 1
    h = (h ^ (h >> 33)) * XP2 & M64
    h = (h ^ (h >> 29)) * XP3 & M64
    return h ^ (h >> 32)


def _xxh64_fast():
    """xxhash's XXH64 where the package is installed (it is not a dependency), else ours."""
    try:
        import xxhash
        return lambda data, seed=0: xxhash.xxh64_intdigest(data, seed)
    except ImportError:
        return xxh64_ref


def tree_checksum_ref(covered, xxh=xxh64_ref):
    """format_v2: XXH64 of the chunk digests (each XXH64 of a 64 KiB chunk), seeded with the length."""
    digests = b"".join(xxh(covered[i:i + 65536]).to_bytes(8, "little") for i in range(0, len(covered), 65536))
    return xxh(digests, len(covered))


# Published XXH64 values (xxHash's own sanity test): the first n bytes of its generated buffer
# (byte i = top byte of 2654435761 * 11400714785074694797^i mod 2^64), with seed 0 or 2654435761.
XXH_SANITY = [(0, 0, 0xEF46DB3751D8E999), (0, 2654435761, 0xAC75FDA2929B17EF), (1, 0, 0xE934A84ADB052768),
              (1, 2654435761, 0x5014607643A9B4C3), (4, 0, 0x9136A0DCA57457EE), (14, 0, 0x8282DCC4994E35C8),
              (14, 2654435761, 0xC3BD6BF63DEB6DF0), (222, 0, 0xB641AE8CB691C174),
              (222, 2654435761, 0x20CB8AB7AE10C14A)]
# Further values computed with the `xxhash` package 4.1.0 (XXH64, seed 0).
XXH_STRINGS = [(b"a", 0xD24EC4F1A98C6E5B), (b"abc", 0x44BC2CF5AD770999), (b"message digest", 0x066ED728FCEEB3BE),
               (b"abcdefghijklmnopqrstuvwxyz", 0xCFE1F278FA89835C),
               (b"The quick brown fox jumps over the lazy dog", 0x0B242D361FDA71BC)]


def sanity_buffer(n):
    out, g = bytearray(), 2654435761
    for _ in range(n):
        out.append(g >> 56)
        g = g * 11400714785074694797 & M64
    return bytes(out)


def read_y12(path):
    """Parses a .y12 file (version 1, or 2 with its checksum verified), asserting every layout rule;
    returns (header, {name: ndarray})."""
    with open(path, "rb") as f:
        blob = f.read()
    assert blob[:8] == b"Y12MODEL", "magic"
    version, reserved, n = struct.unpack("<IIQ", blob[8:24])
    assert version in (1, 2) and reserved == 0, (version, reserved)
    assert 1 <= n <= 64 << 20 and 24 + n <= len(blob), n
    header = json.loads(blob[24:24 + n].decode("utf-8"))
    data_start = (24 + n + 255) // 256 * 256
    assert blob[24 + n:data_start] == b"\0" * (data_start - 24 - n), "header padding must be zeros"
    end = data_start + header["data_size"]
    if version == 2:
        assert len(blob) == end + 16, "a version 2 file ends at data_start + data_size + 16"
        assert blob[end:end + 8] == b"Y12CHECK", "trailer magic"
        want = struct.unpack("<Q", blob[end + 8:])[0]
        got = tree_checksum_ref(blob[:end], _xxh64_fast())
        assert got == want, f"checksum mismatch: the file says {want:#x}, its bytes give {got:#x}"
    else:
        assert len(blob) == end, "a version 1 file ends at data_start + data_size"
    tensors, spans = {}, []
    for t in header["tensors"]:
        assert t["name"] not in tensors, f"duplicate {t['name']}"
        assert t["offset"] % 256 == 0, f"{t['name']} offset not aligned"
        item = {"f32": 4, "f16": 2}[t["dtype"]]
        count = int(np.prod(t["shape"])) if t["shape"] else 1
        assert t["size"] == count * item, f"{t['name']} size"
        assert t["offset"] + t["size"] <= header["data_size"], f"{t['name']} out of bounds"
        spans.append((t["offset"], t["offset"] + t["size"], t["name"]))
        raw = blob[data_start + t["offset"]:data_start + t["offset"] + t["size"]]
        tensors[t["name"]] = np.frombuffer(raw, dtype="<f4" if item == 4 else "<f2").reshape(t["shape"])
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        assert a[1] <= b[0], f"{a[2]} overlaps {b[2]}"
    assert header["parameters"] == sum(v.size for v in tensors.values())
    return header, tensors


# --- an independent, minimal reader of raw checkpoint tensors (trusted test inputs only) ----------

class _Obj:
    def __init__(self, *a, **k):
        self.__dict__["_args"] = a

    def __setstate__(self, s):
        self.__dict__["_state"] = s


def raw_state_dict(pt_path):
    """{'model.0.conv.weight': ndarray, 'model.0.bn.eps': float, ...} of the checkpoint's model."""
    with zipfile.ZipFile(pt_path) as z:
        return _raw_state_dict(z)


def _raw_state_dict(z):
    pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
    prefix = pkl[:-len("data.pkl")]
    dtypes = {"HalfStorage": "<f2", "FloatStorage": "<f4", "DoubleStorage": "<f8", "LongStorage": "<i8"}

    class U(pickle.Unpickler):
        def find_class(self, mod, name):
            if name == "_rebuild_tensor_v2":
                return lambda st, off, size, stride, *a: np.lib.stride_tricks.as_strided(
                    st[off:], size, [s * st.itemsize for s in stride]).copy()
            if name == "_rebuild_parameter":
                return lambda d, *a: d
            if mod in ("collections", "builtins", "__builtin__") and name in ("OrderedDict", "set"):
                return {"OrderedDict": dict, "set": set}[name]
            if mod == "torch" and name in dtypes:
                return dtypes[name]
            return type(name, (_Obj,), {})

        def persistent_load(self, pid):
            return np.frombuffer(z.read(prefix + "data/" + pid[2]), dtype=pid[1])

    root = U(io.BytesIO(z.read(pkl))).load()
    out = {}

    def walk(o, path):
        st = o._state
        for k in ("_parameters", "_buffers"):
            for n, v in (st.get(k) or {}).items():
                if v is not None:
                    out[f"{path}.{n}"] = v
        if "eps" in st:
            out[f"{path}.eps"] = st["eps"]
        for n, c in (st.get("_modules") or {}).items():
            if c is not None:
                walk(c, f"{path}.{n}")
    walk(root["model"]._state["_modules"]["model"], "model")
    return out


def fold(raw, p):
    """BN folding of the Conv module at path p, recomputed here in float64."""
    w = raw[p + ".conv.weight"].astype(np.float64)
    s = raw[p + ".bn.weight"].astype(np.float64) / np.sqrt(raw[p + ".bn.running_var"].astype(np.float64) + raw[p + ".bn.eps"])
    return w * s[:, None, None, None], raw[p + ".bn.bias"] - raw[p + ".bn.running_mean"].astype(np.float64) * s


def rel_err(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


class Tmp(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = self._tmp.name

    def tearDown(self):
        self._tmp.cleanup()

    def out(self, name):
        return os.path.join(self.tmp, name)

    def assert_refused(self, src, needle):
        code, out, err = run_export(src, self.out("refused.y12"))
        self.assertEqual(code, 1, f"expected exit 1, got {code}: {out} {err}")
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
        self.assertEqual(len(lines), 1, f"expected one error line, got:\n{err}")
        self.assertNotIn("Traceback", err)
        self.assertIn(needle, lines[0])
        self.assertFalse(os.path.exists(self.out("refused.y12")), "no output file on failure")
        return lines[0]


# --- .pt checkpoints --------------------------------------------------------------------------------

class TurboFixture(Tmp):
    def test_export_and_read_back(self):
        need(TURBO)
        dst = self.out("turbo.y12")
        code, out, err = run_export(TURBO, dst)
        self.assertEqual(code, 0, err)
        self.assertIn("yolo12-turbo", out)
        h, t = read_y12(dst)
        self.assertEqual((h["family"], h["scale"], h["nc"], h["dtype"], h["reg_max"]), ("yolo12-turbo", "n", 80, "f32", 16))
        self.assertEqual(h["strides"], [8, 16, 32])
        self.assertEqual(len(h["names"]), 80)
        self.assertEqual(h["source"]["format"], "ultralytics-pt")
        self.assertEqual(h["source"]["producer"], "ultralytics 8.3.63")
        self.assertEqual(len(h["source"]["sha256"]), 64)
        L = h["layers"]
        self.assertEqual(len(L), 22)
        self.assertEqual(L[0]["from"], [-1])
        self.assertEqual((L[1]["type"], L[1]["g"], L[3]["g"], L[5]["g"]), ("Conv", 2, 4, 1))
        a = L[6]
        self.assertEqual((a["type"], a["a2"], a["attn"], a["pe_k"], a["area"], a["n"], a["residual"]),
                         ("A2C2f", True, "qk_v", 5, 4, 2, False))
        self.assertEqual(L[8]["area"], 1)
        self.assertEqual(L[12]["from"], [11])
        self.assertEqual(L[13]["from"], [12, 4])
        d = L[21]
        self.assertEqual((d["type"], d["from"], d["ch"], d["legacy"], d["c2"], d["c3"]),
                         ("Detect", [14, 17, 20], [64, 128, 256], False, 64, 80))
        self.assertEqual(list(t["model.6.m.0.0.attn.qk.conv.weight"].shape), [128, 64, 1, 1])
        self.assertEqual(list(t["model.6.m.0.0.attn.v.conv.weight"].shape), [64, 64, 1, 1])
        self.assertEqual(list(t["model.6.m.0.0.attn.pe.conv.weight"].shape), [64, 1, 5, 5])
        self.assertEqual(list(t["model.1.conv.weight"].shape), [32, 8, 3, 3])
        self.assertFalse(any("dfl" in n or ".bn." in n for n in t), "no DFL or BN tensors")
        self.assertTrue(all(v.dtype == np.float32 for v in t.values()))
        # BN folding, recomputed from the raw checkpoint tensors
        raw = raw_state_dict(TURBO)
        for p in ("model.0", "model.6.m.0.0.attn.pe", "model.21.cv3.2.1.1", "model.8.m.1.1.mlp.0"):
            w, b = fold(raw, p)
            self.assertLess(rel_err(t[p + ".conv.weight"], w), 1e-6, p)
            self.assertLess(rel_err(t[p + ".conv.bias"], b), 1e-6, p)
            self.assertGreater(np.abs(t[p + ".conv.weight"] - raw[p + ".conv.weight"]).max(), 1e-3,
                               f"{p}: folding must change the weights")
        self.assertTrue(np.array_equal(t["model.21.cv2.1.2.weight"], raw["model.21.cv2.1.2.weight"].astype(np.float32)))

    def test_fp16(self):
        need(TURBO)
        code, _, err = run_export(TURBO, self.out("a.y12"))
        self.assertEqual(code, 0, err)
        code, out, err = run_export(TURBO, self.out("h.y12"), "--fp16")
        self.assertEqual(code, 0, err)
        h32, t32 = read_y12(self.out("a.y12"))
        h16, t16 = read_y12(self.out("h.y12"))
        self.assertEqual(h16["dtype"], "f16")
        self.assertIn("f16", out)
        self.assertEqual(set(t16), set(t32))
        for n, v in t16.items():
            self.assertEqual(v.dtype, np.float16, n)
            self.assertLess(rel_err(v, t32[n]), 1e-3, n)
        self.assertEqual(h16["layers"], h32["layers"])
        self.assertLess(os.path.getsize(self.out("h.y12")), 0.6 * os.path.getsize(self.out("a.y12")))


class CommittedFixtures(Tmp):
    """Every tests/data/*.pt exports, reads back, and folds BN exactly."""

    def test_all(self):
        pts = sorted(glob.glob(os.path.join(REPO, "tests", "data", "*.pt")))
        if not pts:
            raise unittest.SkipTest("no tests/data/*.pt yet")
        for pt in pts:
            with self.subTest(pt=os.path.basename(pt)):
                for dt in ("--fp32", "--fp16"):
                    dst = self.out(os.path.basename(pt) + dt + ".y12")
                    code, out, err = run_export(pt, dst, dt)
                    self.assertEqual(code, 0, err)
                    h, t = read_y12(dst)
                    self.assertIn(h["family"], ("yolo12", "yolo12-turbo", "yolo11", "yolov8"))
                    self.assertEqual(h["layers"][-1]["type"], "Detect")
                    self.assertEqual(len(h["names"]), h["nc"])
                    raw = raw_state_dict(pt)
                    w, b = fold(raw, "model.0")
                    tol = 1e-6 if dt == "--fp32" else 1e-3
                    self.assertLess(rel_err(t["model.0.conv.weight"], w), tol)
                    self.assertLess(rel_err(t["model.0.conv.bias"], b), tol)
                    for L in h["layers"]:
                        if L["type"] == "A2C2f" and L["residual"]:
                            g = t[f"model.{L['index']}.gamma"]
                            self.assertEqual(g.dtype, np.float32)
                            self.assertTrue(np.array_equal(g, raw[f"model.{L['index']}.gamma"].astype(np.float32)))


# --- hostile and broken inputs -------------------------------------------------------------------

def zip_with_pickle(path, payload, extra=None):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", payload)
        z.writestr("archive/byteorder", "little")
        for k, v in (extra or {}).items():
            z.writestr(k, v)


class Hostile(Tmp):
    def _marker_payload(self, kind):
        marker = self.out("pwned")

        class Evil:
            def __reduce__(self):
                if kind == "system":
                    return (os.system, (f"touch {marker}",))
                if kind == "exec":
                    return (exec, (f"open({marker!r}, 'w').close()",))
                if kind == "eval":
                    return (eval, (f"open({marker!r}, 'w')",))
                raise AssertionError(kind)
        return marker, pickle.dumps({"model": Evil(), "version": "8.3.0"}, protocol=2)

    def test_payloads_are_not_executed(self):
        for kind in ("system", "exec", "eval"):
            with self.subTest(kind=kind):
                marker, payload = self._marker_payload(kind)
                src = self.out(f"evil_{kind}.pt")
                zip_with_pickle(src, payload)
                line = self.assert_refused(src, "refusing")
                self.assertFalse(os.path.exists(marker), f"the {kind} payload ran")
                self.assertTrue("system" in line or "exec" in line or "eval" in line, line)

    def test_benign_metadata_is_read(self):
        # numpy scalars/arrays, paths and sets (as training metadata holds them) load as plain data
        sys.path.insert(0, os.path.join(REPO, "exporter"))
        from y12export import pt_reader
        import pathlib
        obj = {"model": None, "f": np.float64(0.5), "a": np.arange(3, dtype=np.int32), "p": pathlib.PurePosixPath("/a/b"),
               "s": {1, 2}, "b": b"xyz"}
        src = self.out("meta.pt")
        zip_with_pickle(src, pickle.dumps(obj, protocol=2))
        got = pt_reader.load_checkpoint(src)
        self.assertEqual((got["f"], got["p"], got["s"], got["b"]), (0.5, "/a/b", {1, 2}, b"xyz"))
        self.assertTrue(np.array_equal(got["a"].array, [0, 1, 2]))
        self.assert_refused(src, "no 'model'")

    def test_getattr_trick(self):
        # builtins.getattr(builtins, "eval") written by hand with GLOBAL + REDUCE
        payload = (b"\x80\x02cbuiltins\ngetattr\ncbuiltins\n__dict__\n\x85R.")
        src = self.out("getattr.pt")
        zip_with_pickle(src, payload)
        self.assert_refused(src, "getattr")

    def test_reduce_on_unknown_class(self):
        # a REDUCE call on a class that is not on the allow-list (here ultralytics Conv) is refused
        payload = b"\x80\x02cultralytics.nn.modules.conv\nConv\n)R."
        src = self.out("reduce.pt")
        zip_with_pickle(src, payload)
        self.assert_refused(src, "refusing to call ultralytics.nn.modules.conv.Conv")

    def test_tensor_out_of_bounds(self):
        # _rebuild_tensor_v2 asking for 4 floats at stride 2 from a 4-float storage: refused, never read past it
        def text(v):
            b = v.encode()
            return b"X" + struct.pack("<I", len(b)) + b
        payload = (b"\x80\x02}(" + text("model") + b"ctorch._utils\n_rebuild_tensor_v2\n("
                   + b"(" + text("storage") + b"ctorch\nFloatStorage\n" + text("0") + text("cpu") + b"K\x04tQ"
                   + b"K\x00K\x04\x85K\x02\x85\x89ccollections\nOrderedDict\n)RtRu.")
        src = self.out("oob.pt")
        zip_with_pickle(src, payload, {"archive/data/0": b"\0" * 16})
        self.assert_refused(src, "past the end of its storage")

    def test_not_a_zip_and_truncated(self):
        src = self.out("junk.pt")
        with open(src, "wb") as f:
            f.write(b"PK\x03\x04" + b"\x00" * 100)
        self.assert_refused(src, "junk.pt")
        need(TURBO)
        data = read_bytes(TURBO)
        src = self.out("truncated.pt")
        with open(src, "wb") as f:
            f.write(data[: len(data) // 2])
        self.assert_refused(src, "truncated.pt")

    def test_corrupt_member(self):
        need(TURBO)
        data = bytearray(read_bytes(TURBO))
        with zipfile.ZipFile(TURBO) as z:
            info = [i for i in z.infolist() if i.filename.endswith("data.pkl")][0]
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        data[start + 200] ^= 0xFF  # flip a byte inside data.pkl: the CRC no longer matches
        src = self.out("corrupt.pt")
        with open(src, "wb") as f:
            f.write(bytes(data))
        self.assert_refused(src, "corrupt.pt")

    def _rewrite_pickle(self, src, dst, old, new):
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
            for i in zin.infolist():
                b = zin.read(i.filename)
                if i.filename.endswith("data.pkl"):
                    self.assertIn(old, b)
                    b = b.replace(old, new)
                zout.writestr(i.filename, b)

    def test_unsupported_head_and_module(self):
        need(TURBO)
        src = self.out("segment.pt")
        self._rewrite_pickle(TURBO, src, b"ultralytics.nn.modules.head\nDetect\n", b"ultralytics.nn.modules.head\nSegment\n")
        self.assert_refused(src, "Segment")
        src = self.out("unknown.pt")
        self._rewrite_pickle(TURBO, src, b"ultralytics.nn.modules.block\nA2C2f\n", b"ultralytics.nn.modules.block\nA3C3f\n")
        line = self.assert_refused(src, "A3C3f")
        # the message lists the supported types, taken from the exporter's table of module readers
        sys.path.insert(0, os.path.join(REPO, "exporter"))
        from y12export.modules import READERS
        self.assertIn("supported: " + ", ".join(sorted(READERS)), line)
        self.assertTrue({"Conv", "C2f", "C3k2", "A2C2f", "SPPF", "C2PSA", "Upsample", "Concat", "Detect"} <= set(READERS))

    def test_yaml_disagreement(self):
        # scale n's width 0.25 -> 0.5 in the stored yaml: the weights no longer match its channel counts
        need(TURBO)
        src = self.out("yaml.pt")
        with zipfile.ZipFile(TURBO) as zin, zipfile.ZipFile(src, "w", zipfile.ZIP_STORED) as zout:
            for i in zin.infolist():
                b = zin.read(i.filename)
                if i.filename.endswith("data.pkl"):
                    at = b.index(b"G" + struct.pack(">d", 0.25), b.index(b"scales"))
                    b = b[:at] + b"G" + struct.pack(">d", 0.5) + b[at + 9:]
                zout.writestr(i.filename, b)
        self.assert_refused(src, "the yaml gives")

    def test_missing_input(self):
        self.assert_refused(self.out("nope.pt"), "no such file")


# --- integrity: format version 2 and non-finite weights --------------------------------------------

def exporter_module(name):
    sys.path.insert(0, os.path.join(REPO, "exporter"))
    import importlib
    return importlib.import_module(name)


class Checksum(unittest.TestCase):
    def test_reference_against_published_vectors(self):
        buf = sanity_buffer(222)
        for n, seed, want in XXH_SANITY:
            self.assertEqual(xxh64_ref(buf[:n], seed), want, (n, seed))
        for text, want in XXH_STRINGS:
            self.assertEqual(xxh64_ref(text), want, text)

    def test_exporter_xxh64(self):
        ck = exporter_module("y12export.checksum")
        buf = sanity_buffer(222)
        for n, seed, want in XXH_SANITY:
            self.assertEqual(ck.xxh64(buf[:n], seed), want, (n, seed))
        for text, want in XXH_STRINGS:
            self.assertEqual(ck.xxh64(text), want, text)
        rng = np.random.default_rng(12)
        fast = _xxh64_fast()
        for length in list(range(0, 70)) + [95, 96, 97, 255, 256, 4099, 65535, 65536, 65537]:
            data = rng.integers(0, 256, length, dtype=np.uint8).tobytes()
            for seed in (0, 1, length, (1 << 64) - 1):
                self.assertEqual(ck.xxh64(data, seed), fast(data, seed), (length, seed))
        # many rows at once, each with its own seed, as the tree hashes chunks
        rows = rng.integers(0, 256, (5, 1000), dtype=np.uint8)
        seeds = np.array([0, 1, 2, 3, 1 << 63], dtype=np.uint64)
        got = ck.xxh64_rows(rows, seeds)
        self.assertEqual([int(x) for x in got], [fast(r.tobytes(), int(s)) for r, s in zip(rows, seeds)])

    def test_exporter_tree(self):
        ck = exporter_module("y12export.checksum")
        rng = np.random.default_rng(13)
        for length in (1, 24, 65535, 65536, 65537, 3 * 65536, 3 * 65536 + 1000):
            data = rng.integers(0, 256, length, dtype=np.uint8)
            self.assertEqual(ck.tree_checksum(data), tree_checksum_ref(data.tobytes(), _xxh64_fast()), length)
        # the chunk digests are seeded with 0 and the root with the length: a different layout differs
        data = rng.integers(0, 256, 65536 * 2, dtype=np.uint8)
        self.assertNotEqual(ck.tree_checksum(data), xxh64_ref(data.tobytes()))


class FormatVersion2(Tmp):
    def test_v2_is_v1_plus_the_trailer(self):
        pt = os.path.join(REPO, "tests", "data", "yolo12n_rand.pt")
        code, out, err = run_export(pt, self.out("v1.y12"), "--fp16", "--format-version", "1")  # f16: a 5 MB file
        self.assertEqual(code, 0, err)
        code, out, err = run_export(pt, self.out("v2.y12"), "--fp16")
        self.assertEqual(code, 0, err)
        v1, v2 = read_bytes(self.out("v1.y12")), read_bytes(self.out("v2.y12"))
        self.assertEqual(struct.unpack("<I", v1[8:12])[0], 1)
        self.assertEqual(struct.unpack("<I", v2[8:12])[0], 2, "version 2 is the default")
        self.assertEqual(struct.unpack("<I", v2[8:12])[0], 2)
        self.assertEqual(len(v2), len(v1) + 16)
        self.assertEqual(v2[:8] + v2[12:len(v1)], v1[:8] + v1[12:], "the same bytes apart from the version")
        self.assertEqual(v2[-16:-8], b"Y12CHECK")
        self.assertEqual(struct.unpack("<Q", v2[-8:])[0], tree_checksum_ref(v2[:-16]), "xxh64 tree of the file")
        h1, t1 = read_y12(self.out("v1.y12"))
        h2, t2 = read_y12(self.out("v2.y12"))
        self.assertEqual(h1, h2)
        # a changed byte anywhere before the trailer no longer matches
        ck = exporter_module("y12export.checksum")
        for at in (9, 30, len(v1) // 2, len(v1) - 1):
            bad = np.frombuffer(v2[:-16], dtype=np.uint8).copy()
            bad[at] ^= 0x01
            self.assertNotEqual(struct.unpack("<Q", v2[-8:])[0], ck.tree_checksum(bad), at)

    def test_environment_selects_the_version(self):
        pt = os.path.join(REPO, "tests", "data", "yolo12n_rand.pt")
        env = dict(os.environ, Y12EXPORT_FORMAT_VERSION="2")
        p = subprocess.run([sys.executable, EXPORT, pt, "-o", self.out("e.y12"), "--fp16"], capture_output=True, text=True,
                           env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(struct.unpack("<I", read_bytes(self.out("e.y12"))[8:12])[0], 2)
        read_y12(self.out("e.y12"))
        env["Y12EXPORT_FORMAT_VERSION"] = "7"
        p = subprocess.run([sys.executable, EXPORT, pt, "-o", self.out("f.y12")], capture_output=True, text=True, env=env)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("Y12EXPORT_FORMAT_VERSION", p.stderr)


def raw_storage_of(pt_path, tensor):
    """(zip member, byte offset, dtype) of a checkpoint tensor's first element (trusted input)."""
    with zipfile.ZipFile(pt_path) as z:
        where = {}
        pkl = [n for n in z.namelist() if n.endswith("data.pkl")][0]
        prefix = pkl[:-len("data.pkl")]

        class U(pickle.Unpickler):
            def find_class(self, mod, name):
                if name == "_rebuild_tensor_v2":
                    return lambda st, off, *a: ("T", st, off)
                if name == "_rebuild_parameter":
                    return lambda d, *a: d
                if mod in ("collections", "builtins", "__builtin__") and name in ("OrderedDict", "set"):
                    return {"OrderedDict": dict, "set": set}[name]
                if mod == "torch" and name.endswith("Storage"):
                    return {"HalfStorage": "<f2", "FloatStorage": "<f4", "LongStorage": "<i8"}.get(name, "u1")
                return type(name, (_Obj,), {})

            def persistent_load(self, pid):
                return (prefix + "data/" + pid[2], pid[1])

        root = U(io.BytesIO(z.read(pkl))).load()

        def walk(o, path):
            st = o._state
            for k in ("_parameters", "_buffers"):
                for n, v in (st.get(k) or {}).items():
                    if isinstance(v, tuple) and v[0] == "T":
                        (member, dtype), off = v[1], v[2]
                        where[f"{path}.{n}"] = (member, off * np.dtype(dtype).itemsize, dtype)
            for n, c in (st.get("_modules") or {}).items():
                if c is not None:
                    walk(c, f"{path}.{n}")
        walk(root["model"]._state["_modules"]["model"], "model")
    return where[tensor]


def with_value(pt_path, dst, tensor, value):
    """A copy of a checkpoint with the first element of `tensor` set to `value`."""
    member, offset, dtype = raw_storage_of(pt_path, tensor)
    with zipfile.ZipFile(pt_path) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            b = zin.read(info.filename)
            if info.filename == member:
                item = np.dtype(dtype).itemsize
                b = b[:offset] + np.array([value], dtype=dtype).tobytes() + b[offset + item:]
            zout.writestr(info.filename, b)


class NonFinite(Tmp):
    PT = os.path.join(REPO, "tests", "data", "yolo12n_rand.pt")

    def test_nan_or_inf_in_a_checkpoint_tensor_is_named(self):
        for tensor, value in (("model.2.cv1.bn.running_var", np.nan), ("model.0.conv.weight", np.inf),
                              ("model.21.cv3.0.2.bias", -np.inf)):
            with self.subTest(tensor=tensor):
                src = self.out("nan.pt")
                with_value(self.PT, src, tensor, value)
                line = self.assert_refused(src, tensor + ":")
                self.assertIn("NaN or Inf", line)
                self.assertIn("first at index [0", line)

    def test_values_beyond_the_file_type_are_refused(self):
        writer = exporter_module("y12export.writer")
        errors = exporter_module("y12export.errors")
        for dtype, big in (("<f4", 1e39), ("<f2", 7e4)):
            slot = np.zeros(3, dtype=dtype)
            with self.assertRaises(errors.ExportError) as cm:
                writer.store("model.0.conv.weight", np.array([1.0, big, 2.0]), slot)
            self.assertIn("model.0.conv.weight: values overflow float", str(cm.exception))


# --- the command line: -o optional, folders, the default model, the next command ------------------

class CommandLine(Tmp):
    PT = os.path.join(REPO, "tests", "data", "yolo12n_rand.pt")

    def run_cli(self, *args, env=None):
        """The exporter with its settings in this test's own folder; returns (code, stdout lines, stderr)."""
        e = dict(os.environ, YOLO12_CONFIG_DIR=self.out("config"))
        e.pop("YOLO12_MODEL", None)
        e.update(env or {})
        p = subprocess.run([sys.executable, EXPORT, *args], capture_output=True, text=True, env=e, timeout=600)
        return p.returncode, p.stdout.splitlines(), p.stderr

    def settings(self, folder=None):
        with open(os.path.join(folder or self.out("config"), "settings.json")) as f:
            return json.load(f)

    def input_copy(self, folder="in"):
        os.makedirs(self.out(folder), exist_ok=True)
        src = os.path.join(self.out(folder), "yolo12n.pt")
        with open(src, "wb") as f:
            f.write(read_bytes(self.PT))
        return src

    def test_output_beside_the_input_and_the_default_recorded(self):
        src = self.input_copy()
        code, lines, err = self.run_cli(src)
        self.assertEqual(code, 0, err)
        dst = self.out("in/yolo12n.y12")
        read_y12(dst)
        self.assertEqual(self.settings()["model"], os.path.abspath(dst))
        self.assertIn("default model: " + os.path.abspath(dst), "\n".join(lines))
        self.assertTrue(lines[-1].startswith("next: "), lines)
        self.assertIn("yolo12-infer", lines[-1])
        self.assertRegex(lines[-1], r"yolo12-infer path/to/image\.jpg +\(model: .*in/yolo12n\.y12\)$")
        self.assertEqual(read_bytes(src), read_bytes(self.PT), "the input is untouched")

    def test_output_folders_are_created(self):
        src = self.input_copy()
        code, lines, err = self.run_cli(src, "-o", self.out("a/b/c/m.y12"))
        self.assertEqual(code, 0, err)
        read_y12(self.out("a/b/c/m.y12"))
        # a folder (ending in /, or existing) receives the default name
        code, lines, err = self.run_cli(src, "-o", self.out("d/e") + "/")
        self.assertEqual(code, 0, err)
        read_y12(self.out("d/e/yolo12n.y12"))
        code, lines, err = self.run_cli(src, "-o", self.out("d"))
        self.assertEqual(code, 0, err)
        read_y12(self.out("d/yolo12n.y12"))

    def test_the_input_is_never_the_output(self):
        src = self.input_copy()
        before = read_bytes(src)
        code, lines, err = self.run_cli(src, "-o", src)
        self.assertEqual(code, 1)
        self.assertIn("is the input itself", err)
        self.assertEqual(read_bytes(src), before)
        os.symlink(src, self.out("link.y12"))
        code, lines, err = self.run_cli(src, "-o", self.out("link.y12"))
        self.assertEqual(code, 1)
        self.assertEqual(read_bytes(src), before)
        # an output folder that cannot be made: one line, nothing recorded
        with open(self.out("file"), "w") as f:
            f.write("x")
        code, lines, err = self.run_cli(src, "-o", self.out("file/sub/m.y12"))
        self.assertEqual(code, 1)
        self.assertIn("cannot create the output folder", err)
        self.assertFalse(os.path.exists(self.out("config/settings.json")))

    def test_settings_keep_other_keys_and_are_written_atomically(self):
        os.makedirs(self.out("config"))
        with open(self.out("config/settings.json"), "w") as f:
            json.dump({"model": "/old/model.y12", "theme": {"dark": True}, "ünïcode": "ok"}, f)
        code, lines, err = self.run_cli(self.input_copy(), "-o", self.out("m.y12"))
        self.assertEqual(code, 0, err)
        self.assertEqual(self.settings(), {"model": os.path.abspath(self.out("m.y12")), "theme": {"dark": True},
                                           "ünïcode": "ok"})
        self.assertEqual(os.listdir(self.out("config")), ["settings.json"], "no temporary file left")

    def test_corrupt_settings_are_left_alone(self):
        os.makedirs(self.out("config"))
        for bad in ("{oops", "[1, 2]"):
            with open(self.out("config/settings.json"), "w") as f:
                f.write(bad)
            code, lines, err = self.run_cli(self.input_copy(), "-o", self.out("m.y12"))
            self.assertEqual(code, 0, err)  # the model was written; only the default was not recorded
            self.assertIn(self.out("config/settings.json"), err)
            self.assertIn("not recorded", err)
            with open(self.out("config/settings.json")) as f:
                self.assertEqual(f.read(), bad)
            self.assertRegex(lines[-1], r"^next: .*yolo12-infer --model .*m\.y12 path/to/image\.jpg$")

    def test_no_set_default(self):
        code, lines, err = self.run_cli(self.input_copy(), "-o", self.out("m.y12"), "--no-set-default")
        self.assertEqual(code, 0, err)
        self.assertFalse(os.path.exists(self.out("config")))
        self.assertNotIn("default model", "\n".join(lines))
        self.assertRegex(lines[-1], r"^next: .*yolo12-infer --model .*m\.y12 path/to/image\.jpg$")

    def test_config_folder_order(self):
        src = self.input_copy()
        # XDG_CONFIG_HOME/yolo12 when YOLO12_CONFIG_DIR is not set, else HOME/.config/yolo12
        env = {"YOLO12_CONFIG_DIR": "", "XDG_CONFIG_HOME": self.out("xdg"), "HOME": self.out("home")}
        code, lines, err = self.run_cli(src, "-o", self.out("m.y12"), env=env)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.settings(self.out("xdg/yolo12"))["model"], os.path.abspath(self.out("m.y12")))
        env["XDG_CONFIG_HOME"] = ""
        code, lines, err = self.run_cli(src, "-o", self.out("n.y12"), env=env)
        self.assertEqual(code, 0, err)
        self.assertEqual(self.settings(self.out("home/.config/yolo12"))["model"], os.path.abspath(self.out("n.y12")))

    def test_yolo12_model_comes_first(self):
        # $YOLO12_MODEL wins over the recorded default: the next command then names the model
        code, lines, err = self.run_cli(self.input_copy(), "-o", self.out("m.y12"), env={"YOLO12_MODEL": "/x/other.y12"})
        self.assertEqual(code, 0, err)
        self.assertIn("YOLO12_MODEL", err)
        self.assertRegex(lines[-1], r"^next: .*yolo12-infer --model ")

    def test_failure_records_nothing(self):
        bad = self.out("bad.pt")
        with open(bad, "wb") as f:
            f.write(b"PK\x03\x04" + bytes(64))
        code, lines, err = self.run_cli(bad)
        self.assertEqual(code, 1)
        self.assertEqual(lines, [])
        self.assertFalse(os.path.exists(self.out("config")))
        self.assertFalse(os.path.exists(self.out("bad.y12")))


# --- bombs: small files that ask for large allocations ----------------------------------------------

# What a hostile input may cost: the exporter's own peak resident memory. Python with numpy takes about
# 30 MiB and the largest real need below (one 32 MiB storage) about 100 MiB; the bombs asked for GiBs.
PEAK_LIMIT_MIB = 200
# A memory ulimit on the child, so that a regression fails the test instead of swapping the machine.
CHILD_ADDRESS_SPACE = 1536 << 20


def run_export_measured(src, dst, *extra):
    """run_export in a child under a memory ulimit; returns (code, out, err, peak resident MiB)."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen([sys.executable, EXPORT, src, "-o", dst, *extra], stdout=out, stderr=err,
                             preexec_fn=limit, env=env)
        _, status, usage = os.wait4(p.pid, 0)  # this child's own peak resident set (KiB on Linux)
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0), err.seek(0)
        return p.returncode, out.read(), err.read(), usage.ru_maxrss / 1024


def p_str(text):
    """A pickle BINUNICODE opcode pushing text."""
    b = text.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def p_int(n):
    return b"J" + struct.pack("<i", n) if n < 1 << 31 else b"\x8a\x08" + struct.pack("<q", n)


def p_tensor(key, numel, size):
    """_rebuild_tensor_v2(FloatStorage `key` of numel floats, offset 0, (size,), (1,)) as torch writes it."""
    storage = (b"(" + p_str("storage") + p_global("torch", "FloatStorage") + p_str(key) + p_str("cpu")
               + p_int(numel) + b"tQ")
    return (p_global("torch._utils", "_rebuild_tensor_v2") + b"(" + storage + p_int(0) + p_int(size) + b"\x85"
            + p_int(1) + b"\x85" + b"\x89" + p_global("collections", "OrderedDict") + b")RtR")


def deflated_zeros_zip(path, member, blocks, declared=None):
    """A zip whose one deflated member inflates to `blocks` x 16 MiB of zeros, written by hand in a
    moment: after a full flush, deflate turns the same 16 MiB block into the same bytes, so the stream
    is one compressed block repeated. `declared` overrides the member's stated size (a lying header).
    The CRC is left 0: nothing may read that far."""
    import zlib
    zeros = bytes(16 << 20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    assert c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH) == block
    tail = c.flush()
    csize, usize = len(block) * blocks + len(tail), (16 << 20) * blocks if declared is None else declared
    name = member.encode()
    common = struct.pack("<HHHHHIII", 20, 0, 8, 0, 0x21, 0, csize, usize) + struct.pack("<HH", len(name), 0)
    with open(path, "wb") as f:
        f.write(b"PK\x03\x04" + common + name)
        for _ in range(blocks):
            f.write(block)
        f.write(tail)
        cd_at = f.tell()
        central = b"PK\x01\x02" + struct.pack("<H", 20) + common + struct.pack("<HHHII", 0, 0, 0, 0, 0) + name
        f.write(central)
        f.write(b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, 1, 1, len(central), cd_at, 0))


def pb_field(num, payload):
    """A protobuf field: varint (int payload) or length-delimited (bytes payload)."""
    def varint(n):
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    if isinstance(payload, int):
        return varint(num << 3) + varint(payload)
    return varint((num << 3) | 2) + varint(len(payload)) + payload


class Bombs(Tmp):
    """Issue 13: each input asked for GiBs before it was refused; each must now be refused before the
    allocation, in a small, measured amount of memory, with a message naming the limit."""

    def assert_refused_small(self, src, *needles):
        code, out, err, peak = run_export_measured(src, self.out("bomb.y12"))
        lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith("warning:")]
        self.assertEqual(code, 1, f"expected exit 1, got {code}: {out} {err}")
        self.assertEqual(len(lines), 1, err)
        for needle in needles:
            self.assertIn(needle, lines[0])
        self.assertNotIn("MemoryError", err)
        self.assertLess(peak, PEAK_LIMIT_MIB, f"peak resident memory {peak:.0f} MiB: {lines[0]}")
        self.assertFalse(os.path.exists(self.out("bomb.y12")))
        print(f"  {os.path.basename(src)}: {peak:.0f} MiB peak: {lines[0][-110:]}")
        return lines[0]

    def test_pickle_bytearray_size(self):
        # 60 bytes asking bytearray(6e9): 5.8 GB before
        payload = b"\x80\x02}" + p_str("model") + p_global("builtins", "bytearray") + p_int(6_000_000_000) + b"\x85Rs."
        self.assertLessEqual(len(payload), 60)
        src = self.out("bytearray.pt")
        zip_with_pickle(src, payload)
        self.assert_refused_small(src, "bytearray")

    def test_pickle_memo_copies(self):
        # one memoized 1 MiB string encoded 2,000 times (8 bytes of pickle each): 2 GB of copies before
        payload = (b"\x80\x02" + p_global("_codecs", "encode") + b"q\x00" + b"0" + p_str("a" * (1 << 20)) + b"q\x01"
                   + b"0" + p_str("latin1") + b"q\x02" + b"0" + b"](" + b"h\x00h\x01h\x02\x86R" * 2000 + b"e.")
        src = self.out("memo.pt")
        zip_with_pickle(src, payload)
        self.assert_refused_small(src, "pickle builds more than")

    def test_zip_bomb_data_pkl(self):
        # a 2 GiB data.pkl deflated into 2 MB: 4.1 GB before
        src = self.out("zipbomb.pt")
        deflated_zeros_zip(src, "archive/data.pkl", 128)
        self.assertLess(os.path.getsize(src), 4 << 20)
        self.assert_refused_small(src, "data.pkl", "limit")
        # the same stream under a header that claims 1,000 bytes: only those are ever inflated
        deflated_zeros_zip(src, "archive/data.pkl", 128, declared=1000)
        self.assert_refused_small(src, "zipbomb.pt")

    def test_tensors_over_one_storage(self):
        # 64 tensors, each the whole of one 32 MiB storage: 2.1 GB of copies before
        numel = 8 << 20
        payload = b"\x80\x02](" + p_tensor("0", numel, numel) * 64 + b"e."
        src = self.out("views.pt")
        with zipfile.ZipFile(src, "w", zipfile.ZIP_STORED) as z:
            z.writestr("archive/data.pkl", payload)
            z.writestr("archive/data/0", bytes(4 * numel))
        self.assert_refused_small(src, "overlapping")

    def test_huge_inputs(self):
        # sparse files beyond the input limits: refused from their size, never read
        for name, size in (("huge.onnx", 3 << 30), ("huge.pt", 5 << 30)):
            src = self.out(name)
            with open(src, "wb") as f:
                f.truncate(size)
            self.assert_refused_small(src, "limit")

    def test_onnx_names(self):
        # a 10 MB `names` metadata value: ast.literal_eval took 2.5 GB
        need(ONNX11)
        names = "{" + ", ".join(f"{i}: 'class_{i}'" for i in range(600_000)) + "}"
        self.assertGreater(len(names), 10_000_000)
        entry = pb_field(14, pb_field(1, b"names") + pb_field(2, names.encode()))
        src = self.out("names.onnx")
        with open(src, "wb") as f:
            f.write(read_bytes(ONNX11) + entry)  # a repeated field appended: it replaces the real names
        self.assert_refused_small(src, "names", "limit")

    def test_onnx_nodes(self):
        # 10 MB of empty NodeProtos: 1.7 GB and 25 s before (onnx.load: 820 MB, 9.5 s)
        src = self.out("nodes.onnx")
        with open(src, "wb") as f:
            f.write(pb_field(1, 8) + pb_field(7, pb_field(1, b"") * 5_000_000))
        self.assert_refused_small(src, "nodes")


class OnnxMetadata(Tmp):
    """ONNX metadata that cannot be read is an error (or a warning), never a silent 640x640."""

    def _variant(self, old, new):
        need(ONNX11)
        data = read_bytes(ONNX11)
        self.assertEqual(data.count(old), 1, old)
        src = self.out("variant.onnx")
        with open(src, "wb") as f:
            f.write(data.replace(old, new))
        return src

    def test_malformed_imgsz_is_an_error(self):
        self.assert_refused(self._variant(b"[320, 320]", b"[320, 3x0]"), "imgsz")

    def test_imgsz_must_match_the_graph_input(self):
        self.assert_refused(self._variant(b"[320, 320]", b"[640, 640]"), "differs from the graph input 320x320")

    def test_missing_imgsz_comes_from_the_graph_input(self):
        src = self._variant(b"\n\x05imgsz\x12", b"\n\x05imgsx\x12")
        code, out, err = run_export(src, self.out("m.y12"))
        self.assertEqual(code, 0, err)
        h, _ = read_y12(self.out("m.y12"))
        self.assertEqual(h["imgsz"], [320, 320])

    def test_malformed_names_is_an_error(self):
        self.assert_refused(self._variant(b"{0: 'person'", b"{0: 'person "), "names")


# --- ONNX ------------------------------------------------------------------------------------------

class Onnx(Tmp):
    def _export(self, src, family, detect_from, legacy):
        need(src)
        dst = self.out("m.y12")
        code, out, err = run_export(src, dst)
        self.assertEqual(code, 0, err)
        h, t = read_y12(dst)
        self.assertEqual((h["family"], h["nc"], h["source"]["format"], h["dtype"]), (family, 80, "onnx", "f32"))
        self.assertEqual(h["names"][0], "person")
        self.assertEqual(h["names"][79], "toothbrush")
        self.assertEqual(h["strides"], [8, 16, 32])
        self.assertEqual(h["imgsz"], [320, 320])
        d = h["layers"][-1]
        self.assertEqual((d["type"], d["from"], d["legacy"]), ("Detect", detect_from, legacy))
        self.assertEqual(h["layers"][0]["from"], [-1])
        self.assertFalse(any("dfl" in n for n in t))
        return h, t

    def test_yolo11n_int8(self):
        h, t = self._export(ONNX11, "yolo11", [16, 19, 22], False)
        kinds = [L["type"] for L in h["layers"]]
        self.assertEqual(kinds.count("C3k2"), 8)
        self.assertEqual(kinds.count("C2PSA"), 1)
        self.assertEqual(kinds.count("SPPF"), 1)
        self.assertEqual(h["layers"][12]["from"], [11, 6])
        self.assertEqual(list(t["model.10.m.0.attn.qkv.conv.weight"].shape), [256, 128, 1, 1])
        self.assertEqual(list(t["model.23.cv3.0.0.0.conv.weight"].shape), [64, 1, 3, 3])
        # int8 weights dequantized: each output-channel tensor takes at most 256 distinct values
        w = t["model.2.m.0.cv1.conv.weight"]
        self.assertLessEqual(len(np.unique(w)), 256)
        self.assertGreater(np.abs(w).max(), 1e-3)

    def test_yolov8n_int8(self):
        h, t = self._export(ONNX8, "yolov8", [15, 18, 21], True)
        kinds = [L["type"] for L in h["layers"]]
        self.assertEqual(kinds.count("C2f"), 8)
        self.assertEqual(list(t["model.22.cv3.0.0.conv.weight"].shape), [80, 64, 3, 3])
        self.assertGreater(np.abs(t["model.22.cv3.0.2.bias"]).max(), 1.0)

    def test_unsupported_onnx_head(self):
        # an extra branch name in the head (as a segmentation head would have): refused by name
        need(ONNX11)
        data = read_bytes(ONNX11)
        src = self.out("seg.onnx")
        with open(src, "wb") as f:
            f.write(data.replace(b"model.23.cv3.0.2.", b"model.23.cv4.0.2."))
        line = self.assert_refused(src, "model.23")
        self.assertIn("cv4", line)

    def test_garbage_onnx(self):
        src = self.out("garbage.onnx")
        with open(src, "wb") as f:
            f.write(bytes(range(256)) * 8)
        self.assert_refused(src, "garbage.onnx")

    def test_truncated_onnx(self):
        need(ONNX11)
        data = read_bytes(ONNX11)
        src = self.out("cut.onnx")
        with open(src, "wb") as f:
            f.write(data[: len(data) // 3])
        self.assert_refused(src, "cut.onnx")


def main():
    result = unittest.main(exit=False, verbosity=2).result
    if result.failures or result.errors:
        sys.exit(1)
    if result.skipped:
        sys.exit(77)
    sys.exit(0)


if __name__ == "__main__":
    main()
