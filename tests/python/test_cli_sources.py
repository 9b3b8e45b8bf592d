#!/usr/bin/env python3
"""yolo12-infer's sources (docs/cli.md, "Sources"): list files, stdin, image URLs served by a local
HTTP server, file://, camera devices, stream URLs; and the hostile inputs of issue 13: image bombs,
huge sparse files, corrupt JPEGs, .npy headers claiming gigabytes, batches that cannot fit.

Needs the built CLI and ../shared/data; exits 77 (skipped) without them. Servers listen on 127.0.0.1.
"""
import http.server
import json
import math
import os
import resource
import shutil
import socket
import struct
import subprocess
import threading
import time
import unittest
import zlib

import numpy as np

import test_cli as base
from test_cli_options import RunTest, run, detections

BUS = base.BUS


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def png_chunk(kind, body):
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def png(width, height, rows=None, extra=b""):
    """An RGB PNG; rows (filter byte + pixels each) default to a gradient."""
    if rows is None:
        rows = b"".join(b"\x00" + bytes((x + y) % 256 for x in range(width * 3)) for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + extra +
            png_chunk(b"IDAT", zlib.compress(rows)) + png_chunk(b"IEND", b""))


def max_child_rss_mb():
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


class Handler(http.server.BaseHTTPRequestHandler):
    """/bus.jpg?x=1 (the image), /stall.jpg (headers, then nothing), anything else 404."""

    def do_GET(self):
        path = self.path.split("?")[0]
        if path.endswith("/bus.jpg"):
            with open(BUS, "rb") as f:
                data = f.read()
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif path.endswith("/stall.jpg"):
            self.send_response(200)
            self.send_header("Content-Length", "1000000")
            self.end_headers()
            self.wfile.write(b"\xff\xd8\xff")
            self.wfile.flush()
            time.sleep(10)
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


class Lists(RunTest):
    def test_list_file_and_stdin(self):
        folder = self.folder("list")
        os.makedirs(os.path.join(folder, "sub"), exist_ok=True)
        shutil.copy(BUS, os.path.join(folder, "sub", "a.jpg"))
        shutil.copy(base.ZIDANE, os.path.join(folder, "b.jpg"))
        listing = os.path.join(folder, "sources.txt")
        with open(listing, "w") as f:
            # relative to the list's folder, a comment, a blank line, an absolute path, a nested list
            f.write("sub/a.jpg\n# a comment\n\n   b.jpg  \n" + BUS + "\nother.txt\n")
        rc, out, err = run("--model", self.model, listing, "--json", "-", "-q")
        self.assertEqual(rc, 1, err)
        lines = [json.loads(l) for l in out.splitlines()]
        self.assertEqual([os.path.basename(l["source"]) for l in lines], ["a.jpg", "b.jpg", "bus.jpg", "other.txt"])
        self.assertIn("lists do not nest", lines[3]["error"])
        # The same list on stdin ("-"); relative paths are then relative to the current folder.
        rc, out, err = run("--model", self.model, "-", "--json", "-", "-q", cwd=folder,
                           stdin="sub/a.jpg\nb.jpg\n")
        self.assertEqual(rc, 0, err)
        self.assertEqual([json.loads(l)["source"] for l in out.splitlines()], ["sub/a.jpg", "b.jpg"])


class Urls(RunTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.server.daemon_threads = True
        threading.Thread(target=cls.server.serve_forever, daemon=True).start()
        cls.base_url = f"http://127.0.0.1:{cls.server.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.server.shutdown()
        super().tearDownClass()

    def test_image_url_is_an_image(self):
        url = self.base_url + "/images/bus.jpg?size=large"
        out = os.path.join(self.tmp, "url_out")
        rc, stdout, err = run("--model", self.model, url, "--save", "--output", out, "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        line = json.loads(stdout)
        self.assertEqual((line["source"], line["width"], line["height"]), (url, 810, 1080))
        rc, local, _ = run("--model", self.model, BUS, "--json", "-", "-q")
        self.assertEqual(line["detections"], json.loads(local)["detections"])  # the same bytes, the same boxes
        self.assertEqual(os.listdir(out), ["bus.jpg"])  # saved as an image, named after the URL
        _, w, h, _ = base.ffprobe_video(os.path.join(out, "bus.jpg"))
        self.assertEqual((w, h), (810, 1080))

    def test_url_errors(self):
        rc, stdout, err = run("--model", self.model, self.base_url + "/missing.jpg", "--json", "-", "-q")
        self.assertEqual(rc, 1)
        self.assertIn("cannot download the image", json.loads(stdout)["error"])
        self.assertIn("404", err)
        start = time.monotonic()
        rc, stdout, err = run("--model", self.model, self.base_url + "/stall.jpg", "--stream-timeout", "1", "-q")
        self.assertEqual(rc, 1)
        self.assertLess(time.monotonic() - start, 8)
        self.assertIn("stall.jpg", err)

    def test_file_url_camera_device_and_stream(self):
        rc, out, err = run("--model", self.model, "file://" + os.path.abspath(BUS).replace(" ", "%20"), "--json", "-", "-q")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(json.loads(out)["detections"]), 5)
        rc, out, err = run("--model", self.model, "/dev/video99", "--json", "-", "-q")
        self.assertEqual(rc, 1)
        self.assertEqual(json.loads(out)["error"], "cannot open camera")
        start = time.monotonic()
        rc, out, err = run("--model", self.model, f"rtsp://127.0.0.1:{free_port()}/live", "--json", "-", "-q",
                           "--stream-timeout", "2")
        self.assertEqual(rc, 1)
        self.assertIn("cannot open stream", json.loads(out.splitlines()[-1])["error"])
        self.assertLess(time.monotonic() - start, 15)


class HostileImages(RunTest):
    def test_decompression_bomb_is_refused_before_decoding(self):
        folder = self.folder("bombs")
        bomb = os.path.join(folder, "bomb.png")
        with open(bomb, "wb") as f:  # 30000 x 30000, a few kilobytes of zeros compressed
            f.write(png(30000, 30000, rows=b"\x00" * 90001 * 10))
        start = time.monotonic()
        rc, out, err = run("--model", self.model, bomb, "--json", "-", "-q")
        self.assertEqual(rc, 1)
        self.assertIn("30000x30000 = 900000000 pixels, more than --max-pixels", json.loads(out)["error"])
        self.assertLess(time.monotonic() - start, 10)
        self.assertLess(max_child_rss_mb(), 1500, "the bomb was decoded")
        # The limit can be lowered and raised.
        small = os.path.join(folder, "small.png")
        with open(small, "wb") as f:
            f.write(png(400, 300))
        rc, out, err = run("--model", self.model, small, "--max-pixels", "100000", "--json", "-", "-q")
        self.assertEqual(rc, 1)
        self.assertIn("400x300 = 120000 pixels", out)
        rc, out, err = run("--model", self.model, small, "--max-pixels", "120000", "--json", "-", "-q")
        self.assertEqual(rc, 0, err)

    def test_huge_files_are_not_read_whole(self):
        folder = self.folder("sparse")
        zeros, claimed = os.path.join(folder, "zeros.jpg"), os.path.join(folder, "claimed.jpg")
        with open(zeros, "wb") as f:
            f.truncate(1 << 30)  # 1 GiB, sparse
        with open(BUS, "rb") as f:
            header = f.read(32768)  # past its frame header
        with open(claimed, "wb") as f:
            f.write(header)
            f.truncate(1 << 30)
        start = time.monotonic()
        rc, out, err = run("--model", self.model, zeros, claimed, "--json", "-", "-q")
        self.assertEqual(rc, 1)
        errors = [json.loads(l)["error"] for l in out.splitlines()]
        self.assertIn("not an image", errors[0])
        self.assertIn("more than a 810x1080 jpeg can need", errors[1])
        self.assertLess(time.monotonic() - start, 10)
        self.assertLess(max_child_rss_mb(), 1000, "a 1 GiB file was read")

    def test_corrupt_jpeg_is_a_warning_and_libpng_is_quiet(self):
        folder = self.folder("corrupt")
        with open(BUS, "rb") as f:
            data = bytearray(f.read())
        scan = data.find(b"\xff\xda")
        middle = scan + (len(data) - scan) // 2
        data[middle:middle + 200] = b"\x55" * 200
        garbled = os.path.join(folder, "garbled.jpg")
        with open(garbled, "wb") as f:
            f.write(data)
        iccp = os.path.join(folder, "iccp.png")  # an iCCP chunk libpng complains about
        with open(iccp, "wb") as f:
            f.write(png(64, 64, extra=png_chunk(b"iCCP", b"bad\x00\x00" + zlib.compress(b"not a profile"))))
        rc, out, err = run("--model", self.model, garbled, iccp, "--json", "-")
        self.assertEqual(rc, 0, err)
        lines = [json.loads(l) for l in out.splitlines()]
        self.assertIn("JPEG data is corrupt", lines[0]["warnings"][0])
        self.assertIn(f"warning: {garbled}: JPEG data is corrupt, the image may be decoded only in part (libjpeg: Corrupt JPEG data", err)
        self.assertNotIn("warnings", lines[1])
        self.assertNotIn("libpng", err)  # libpng's own line is not printed ...
        rc, out, err = run("--model", self.model, iccp, "-v")
        self.assertIn(f"debug: {iccp}: libpng warning: iCCP", err)  # ... except with --verbose


class Tensors(RunTest):
    def test_npy_header_claiming_gigabytes(self):
        path = os.path.join(self.tmp, "claims.npy")
        header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 32768, 32768), }"
        header += " " * (63 - (10 + len(header)) % 64) + "\n"
        with open(path, "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + b"\x00" * 1024)
        start = time.monotonic()
        rc, _, err = run("--model", self.model, "--input-tensor", path, "--dump-raw", os.path.join(self.tmp, "raw.npy"))
        self.assertEqual(rc, 1)
        self.assertIn("truncated .npy file: shape (1, 3, 32768, 32768) needs 12884901888 data bytes, the file has 1024", err)
        self.assertLess(time.monotonic() - start, 10)
        self.assertLess(max_child_rss_mb(), 1000)

    def test_batches_that_cannot_fit_and_lazy_planning(self):
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        batch = min(1024, math.ceil(memory / (28 * 8192 * 8192)) + 1)  # more than this machine holds
        listing = os.path.join(self.tmp, "many.txt")
        with open(listing, "w") as f:
            f.write((BUS + "\n") * batch)
        start = time.monotonic()
        rc, _, err = run("--model", self.model, listing, "--batch", batch, "--imgsz", "8192")
        self.assertEqual(rc, 2, err)
        self.assertRegex(err, rf"error: --batch {batch} at 8192x8192: not enough memory for the detector .* need [0-9.]+ GiB")
        self.assertLess(time.monotonic() - start, 30)
        # --batch 1024 for one image plans a batch of one.
        start = time.monotonic()
        rc, out, err = run("--model", self.model, BUS, "--batch", "1024", "-v")
        self.assertEqual(rc, 0, err)
        self.assertIn("planning for batches of 1 (the longest run of images), not --batch 1024", err)
        self.assertLess(time.monotonic() - start, 30)
        self.assertLess(max_child_rss_mb(), 1500)


if __name__ == "__main__":
    base.main(__file__, (base.CLI, base.WEIGHTS, BUS, base.ZIDANE), ("ffprobe",))
