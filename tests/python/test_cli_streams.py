#!/usr/bin/env python3
"""yolo12-infer against broken videos and misbehaving stream servers on 127.0.0.1 (issue 13;
docs/cli.md, "Video and streams"): truncated files, servers that stall or close on every
connection, Ctrl-C during a stalled open or read, UDP/MPEG-TS whose sender stops, the saved frame
rate of a stream, and FFmpeg's own messages kept out of the console.

Needs the built CLI, ../shared/data (COCO YOLO11n weights, the car video) and ffmpeg; exits 77
(skipped) without them.
"""
import json
import os
import signal
import socket
import subprocess
import threading
import time
import unittest

import test_cli as base
from test_cli_options import RunTest, run

VIDEO = base.VIDEO


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class MjpegServer:
    """Serves an MJPEG stream (multipart JPEG frames, as ffmpeg's mpjpeg) on every connection:
    `frames` JPEGs at `rate` per second, then, by `after`: "stall" (keep the connection, send
    nothing), "close" (close it), or "loop" (start again). mode "silent" accepts and never answers."""

    def __init__(self, frames, rate=10.0, after="close", mode="serve"):
        self.frames, self.rate, self.after, self.mode = frames, rate, after, mode
        self.connections = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/live.mjpg"
        self.open = []
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            conn.recv(65536)
            if self.mode == "silent":
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: multipart/x-mixed-replace;boundary=ffmpeg\r\n\r\n")
            while True:
                for jpeg in self.frames:
                    conn.sendall(b"--ffmpeg\r\nContent-Type: image/jpeg\r\nContent-Length: %d\r\n\r\n" % len(jpeg) +
                                 jpeg + b"\r\n")
                    time.sleep(1.0 / self.rate)
                if self.after != "loop":
                    break
            if self.after == "close":
                conn.close()
        except OSError:
            pass

    def stop(self):
        self.stopped = True
        self.sock.close()
        for c in self.open:
            try:
                c.close()
            except OSError:
                pass


class Streams(RunTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        folder = os.path.join(cls.tmp, "frames")
        os.makedirs(folder)
        subprocess.run(["ffmpeg", "-v", "error", "-i", VIDEO, "-ss", "16", "-frames:v", "20", "-vf", "scale=320:-2",
                        os.path.join(folder, "f%03d.jpg")], check=True, timeout=120)
        cls.jpegs = []
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as f:
                cls.jpegs.append(f.read())

    def server(self, **kw):
        s = MjpegServer(self.jpegs, **kw)
        self.addCleanup(s.stop)
        return s

    def test_truncated_video_file_is_an_error(self):
        clip, cut = os.path.join(self.tmp, "whole.mp4"), os.path.join(self.tmp, "cut.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-i", VIDEO, "-frames:v", "40", "-an", "-c:v", "mpeg4", "-movflags",
                        "+faststart", clip], check=True, timeout=120)
        with open(clip, "rb") as f:
            data = f.read()
        with open(cut, "wb") as f:
            f.write(data[: len(data) // 2])
        rc, out, err = run("--model", self.model, cut, "--imgsz", "160", "--json", "-", "-q")
        self.assertEqual(rc, 1, err)
        lines = [json.loads(l) for l in out.splitlines()]
        frames = [l["frame"] for l in lines if "frame" in l]
        self.assertTrue(0 < len(frames) < 40)
        self.assertRegex(lines[-1]["error"], r"video ended after \d+ of its 40 frames \(truncated or corrupt file\)")
        rc, _, err = run("--model", self.model, clip, "--imgsz", "160", "-q")
        self.assertEqual(rc, 0, err)  # the whole file is fine

    def test_stalls_end_within_the_stream_timeout(self):
        # A server that answers nothing: the open gives up after --stream-timeout.
        silent = self.server(mode="silent")
        start = time.monotonic()
        rc, out, err = run("--model", self.model, silent.url, "--stream-timeout", "2", "--json", "-", "-q")
        self.assertEqual(rc, 1)
        self.assertIn("cannot open stream", out)
        self.assertLess(time.monotonic() - start, 6)
        # A server that sends 20 frames (2 s) and then stalls: given up 2 s after the last frame.
        stall = self.server(after="stall")
        start = time.monotonic()
        rc, out, err = run("--model", self.model, stall.url, "--stream-timeout", "2", "--imgsz", "160", "--json", "-", "-q")
        seconds = time.monotonic() - start
        self.assertEqual(rc, 1, err)
        self.assertIn("no frame for 2.0 s (--stream-timeout)", json.loads(out.splitlines()[-1])["error"])
        self.assertLess(seconds, 2 + 2 + 4)

    def test_a_server_that_closes_every_connection_cannot_refill_the_budget(self):
        flaky = self.server(after="close", rate=50)
        start = time.monotonic()
        rc, out, err = run("--model", self.model, flaky.url, "--stream-retries", "3", "--imgsz", "160", "--json", "-",
                           "-q", timeout=120)
        self.assertEqual(rc, 1, err)
        self.assertIn("stream lost and could not be reopened after 3 tries", json.loads(out.splitlines()[-1])["error"])
        self.assertEqual(flaky.connections, 4)  # the first connection and 3 reopenings, each with frames
        self.assertLess(time.monotonic() - start, 30)

    def test_ctrl_c_interrupts_a_pending_open_or_read(self):
        for server in (self.server(mode="silent"), self.server(after="stall")):
            p = subprocess.Popen([base.CLI, "--model", self.model, server.url, "--stream-timeout", "60", "--imgsz", "160"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "YOLO12_CONFIG_DIR": RunTest.empty_config})
            time.sleep(4)  # the open is pending (silent), or the frames are over and the read waits (stall)
            sent = time.monotonic()
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 130, err)
            self.assertLess(time.monotonic() - sent, 1.5, err)

    def test_udp_mpegts_ends_after_the_sender_stops(self):
        port = free_port()
        url = f"udp://127.0.0.1:{port}"
        sender = subprocess.Popen(["ffmpeg", "-v", "error", "-re", "-i", VIDEO, "-t", "3", "-an", "-c:v", "mpeg2video",
                                   "-f", "mpegts", url], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.addCleanup(sender.kill)
        start = time.monotonic()
        rc, out, err = run("--model", self.model, url, "--stream-timeout", "3", "--imgsz", "160", "--json", "-", "-q",
                           timeout=60)
        self.assertEqual(rc, 1, err)
        self.assertLess(time.monotonic() - start, 3 + 3 + 8)
        self.assertIn("no frame for 3.0 s", json.loads(out.splitlines()[-1])["error"])

    def test_saved_stream_video_gets_the_measured_rate(self):
        steady = self.server(after="loop", rate=8)
        out = os.path.join(self.tmp, "rate")
        p = subprocess.Popen([base.CLI, "--model", self.model, steady.url, "--imgsz", "160", "--save", "--output", out, "-q"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "YOLO12_CONFIG_DIR": RunTest.empty_config})
        time.sleep(6)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 130, err)
        frames, w, h, rate = base.ffprobe_video(os.path.join(out, "live.mp4"))
        num, den = map(int, rate.split("/"))
        self.assertTrue(20 < frames, frames)
        self.assertTrue(6 <= num / den <= 10, f"saved at {rate} fps, the server sends 8")

    def test_ffmpeg_messages_only_with_verbose(self):
        fake = os.path.join(self.tmp, "not_a_video.mp4")
        with open(fake, "wb") as f:
            f.write(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 5000)  # an mp4 start without a moov atom
        for args, shown in (([], False), (["-q"], False), (["-v"], True)):
            rc, _, err = run("--model", self.model, fake, *args)
            self.assertEqual(rc, 1)
            self.assertIn(f"error: {fake}: cannot open video", err)
            self.assertEqual("moov atom not found" in err, shown, err)
            if shown:
                self.assertIn("debug: ffmpeg: ", err)
            else:
                self.assertTrue(all(l.startswith(("error:", "warning:")) for l in err.splitlines()), err)


if __name__ == "__main__":
    base.main(__file__, (base.CLI, base.WEIGHTS, VIDEO), ("ffmpeg",))
