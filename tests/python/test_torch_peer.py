#!/usr/bin/env python3
"""bench/torch_peer.py without a GPU: which PyTorch fp16 mode counts as the peer (both memory formats), the
table's cells and speed-up, and, where torch is installed, the channels_last runs of a row on a tiny CPU
model (the CUDA graph and the timing stubbed out).

    python3 tests/python/test_torch_peer.py     # exit 0 pass, 1 fail
"""
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

SOURCE_DIR = os.environ.get("YOLO12_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
spec = importlib.util.spec_from_file_location("torch_peer", os.path.join(SOURCE_DIR, "bench", "torch_peer.py"))
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)


def ms(v):
    return {"median_ms": v, "p90_ms": v * 1.1}


class PickTest(unittest.TestCase):
    def test_best_fp16_takes_the_fastest_mode_of_either_format(self):
        modes = {"fp32_graph": ms(0.5), "fp16_eager": ms(9.0), "fp16_graph": ms(1.5), "fp16_graph_cl": ms(1.2),
                 "fp16_compile_graph": ms(1.0), "fp16_compile_graph_cl": {"error": "boom"}}
        self.assertEqual(peer.best_fp16(modes), {"mode": "fp16_compile_graph", "median_ms": 1.0})
        modes["fp16_compile_graph_cl"] = ms(0.9)
        self.assertEqual(peer.best_fp16(modes)["mode"], "fp16_compile_graph_cl")
        self.assertIsNone(peer.best_fp16({"fp32_graph": ms(1.0), "fp16_graph": {"error": "x"}}))

    def test_better_format(self):
        self.assertEqual(peer._better_format({"fp16_graph": ms(2.0), "fp16_graph_cl": ms(1.0)}, "fp16_graph"),
                         (ms(1.0), True))
        self.assertEqual(peer._better_format({"fp16_graph": ms(1.0), "fp16_graph_cl": ms(2.0)}, "fp16_graph"),
                         (ms(1.0), False))
        self.assertEqual(peer._better_format({"fp16_graph_cl": {"error": "x"}, "fp16_graph": ms(3.0)}, "fp16_graph"),
                         (ms(3.0), False))
        self.assertEqual(peer._better_format({}, "fp16_compile_graph"), (None, False))


class TableTest(unittest.TestCase):
    def test_table_shows_the_better_format_and_the_speed_up_against_it(self):
        with tempfile.TemporaryDirectory() as d:
            doc = {"device": "H200", "torch": "2.11", "ultralytics": "8.4", "iters": 50, "results": [
                {"scale": "n", "batch": 32, "modes": {"fp16_graph": ms(9.0), "fp16_graph_cl": ms(8.0),
                                                      "fp16_compile_graph": ms(4.6), "fp16_compile_graph_cl": ms(4.0),
                                                      "fp32_graph": ms(12.0), "fp16_eager": ms(15.0)}},
                {"scale": "n", "batch": 1, "modes": {"fp16_graph": ms(1.5), "fp16_graph_cl": ms(1.7)}}]}
            ours = {"scale": "n", "results": [
                {"precision": "fp16", "batch": b, "network_graph": ms(t), "preprocess": ms(0.1), "network": ms(t),
                 "postprocess": ms(0.1), "end_to_end": ms(t + 1)} for b, t in ((32, 2.0), (1, 0.5))]}
            with open(os.path.join(d, "peer.json"), "w") as f:
                json.dump(doc, f)
            with open(os.path.join(d, "ours.json"), "w") as f:
                json.dump(ours, f)
            args = type("A", (), {"peer": os.path.join(d, "peer.json"), "ours": [os.path.join(d, "ours.json")],
                                  "command": "test"})()
            out = io.StringIO()
            with redirect_stdout(out):
                peer.cmd_table(args)
        rows = {line.split("|")[2].strip(): line for line in out.getvalue().splitlines()
                if line.startswith("| yolo12n |")}
        b32 = [c.strip() for c in rows["32"].split("|")]
        self.assertEqual(b32[5], "8.00 ms (4000 img/s) (cl)")   # graph: channels_last won
        self.assertEqual(b32[6], "4.00 ms (8000 img/s) (cl)")   # compile+graph: channels_last won
        self.assertEqual(b32[10], "2.00x vs compile+graph cl")
        b1 = [c.strip() for c in rows["1"].split("|")]
        self.assertEqual(b1[5], "1.50 ms")                       # contiguous won
        self.assertEqual(b1[6], "")
        self.assertEqual(b1[10], "3.00x vs graph")


class ChannelsLastRunTest(unittest.TestCase):
    def test_channels_last_modes_are_run_and_recorded(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        seen = []

        def fake_graphed(model, x, torch_module):
            seen.append(x.is_contiguous(memory_format=torch.channels_last) and x.dim() == 4)
            return lambda: model(x)

        def fake_time(fn, iters, warmup, torch_module):
            fn()
            return ms(1.0 + len(seen))

        saved = peer._graphed, peer._time
        peer._graphed, peer._time = fake_graphed, fake_time
        try:
            model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.SiLU()).eval()
            x = torch.rand(2, 3, 8, 8)
            row = {"modes": {}}
            with torch.inference_mode():
                peer._fast_fp16_modes(row, model, x, False, {"graph", "compile"}, 3, torch)
        finally:
            peer._graphed, peer._time = saved
        self.assertEqual(list(row["modes"]), ["fp16_graph_cl"])  # no compile asked for: only the graph in cl
        self.assertIn("median_ms", row["modes"]["fp16_graph_cl"])
        self.assertEqual(seen, [True])
        self.assertTrue(x.is_contiguous())  # the caller's input is left as it was


class SplitRunTest(unittest.TestCase):
    def test_compile_plan_is_what_run_compiles(self):
        args = type("A", (), {"scales": "n,s,x", "batches": "1,32", "compile": "s,x,l", "channels_last": "graph,compile"})()
        self.assertEqual(peer._compile_plan(args), [("s", 1, (False, True)), ("s", 32, (False, True)),
                                                    ("x", 1, (False, True)), ("x", 32, (False, True))])
        args.channels_last, args.batches = "graph", "32"
        self.assertEqual(peer._compile_plan(args), [("s", 32, (False,)), ("x", 32, (False,))])
        args.compile = ""
        self.assertEqual(peer._compile_plan(args), [])

    def test_merge_keeps_only_the_rows_not_measured_again(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "peer.json")
            self.assertEqual(peer._kept_rows(path, ["n"], [1]), [])  # no earlier file
            rows = [{"scale": s, "batch": b, "modes": {}} for s in ("n", "s", "x") for b in (1, 32)]
            with open(path, "w") as f:
                json.dump({"results": rows}, f)
            kept = peer._kept_rows(path, ["x"], [32])
        self.assertEqual([(r["scale"], r["batch"]) for r in kept], [("n", 1), ("n", 32), ("s", 1), ("s", 32), ("x", 1)])


class SaveTest(unittest.TestCase):
    def test_save_writes_the_weights_run_would_time(self):
        try:
            import torch
            import ultralytics  # noqa: F401
        except ImportError:
            self.skipTest("torch or ultralytics is not installed")
        os.environ.setdefault("YOLO_OFFLINE", "1")
        with tempfile.TemporaryDirectory() as d:
            with redirect_stdout(io.StringIO()) as out:
                self.assertEqual(peer.main_with(["save", "--save-dir", d, "--scales", "n"]), 0)
            pt = os.path.join(d, "yolo12n_peer.pt")
            self.assertIn(pt, out.getvalue())
            first = torch.load(pt, map_location="cpu", weights_only=False)["model"].state_dict()
            peer._peer_model("n", d)  # what `run` saves: the same seed, the same weights
            again = torch.load(pt, map_location="cpu", weights_only=False)["model"].state_dict()
        self.assertGreater(len(first), 100)
        for k, v in first.items():
            self.assertTrue(torch.equal(v, again[k]), k)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=1).result
    sys.exit(0 if result.wasSuccessful() else 1)
