#!/usr/bin/env python3
"""Converts an Ultralytics YOLO detection checkpoint into a yolo12 model file (.y12).

    python3 exporter/export.py yolo12n.pt [-o models/yolo12n.y12] [--fp32 | --fp16] [--no-set-default]
    python3 exporter/export.py yolo11n.onnx -o models/

Inputs: Ultralytics .pt checkpoints of YOLO12 (Ultralytics and the official "turbo" YOLOv12), YOLO11
and YOLOv8 detection models, and Ultralytics ONNX exports of YOLO11/YOLOv8 (fp32 or dynamically
quantized int8). Needs only Python 3 and numpy; never executes code from the input. Default dtype is
f32 (exact); --fp16 halves the file. Without -o the .y12 goes beside the input. The model written
becomes yolo12-infer's default (settings.json in the yolo12 config folder) unless --no-set-default;
the last line printed is the command to run next. See docs/exporter.md and docs/model-format.md.
Exit status: 0 on success, 1 with one line on stderr for any input it refuses, 2 for bad usage.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from y12export.cli import export, main  # noqa: E402,F401  (export: used by tests and tools)

if __name__ == "__main__":
    sys.exit(main())
