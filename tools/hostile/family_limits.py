#!/usr/bin/env python3
"""tools/hostile/family_limits.py - the largest real values behind src/model/limits.hpp.

    python3 tools/hostile/family_limits.py

Builds YOLOv8, YOLO11 and YOLO12 at scales n..x, and YOLOv8-P6 (from the yaml files shipped with the
installed ultralytics package; no weights are downloaded) and prints, over all of them, the largest
layer count, repeats of one block and in total, channel count, kernel, stride, padding, the number of
detection levels and of tensors (folded convs x 2), and the float32 parameter bytes. Needs torch and
ultralytics.
"""
import torch
from ultralytics.nn.tasks import DetectionModel


def main():
    worst = {}

    def keep(key, value, who):
        if value > worst.get(key, (-1, ""))[0]:
            worst[key] = (value, who)

    for family in ("yolov8", "yolo11", "yolo12", "yolov8-p6"):
        for scale in "nsmlx":
            name = family.replace("-p6", f"{scale}-p6") if "p6" in family else f"{family}{scale}"
            model = DetectionModel(f"{name}.yaml", verbose=False)
            layers = list(model.model)
            keep("layers", len(layers), name)
            keep("levels", len(model.stride), name)
            keep("stride", int(max(model.stride)), name)
            total = 0
            for layer in layers:
                blocks = getattr(layer, "m", None)
                n = len(blocks) if isinstance(blocks, (torch.nn.ModuleList, torch.nn.Sequential)) else 0
                keep("repeats", n, name)
                total += n
            keep("total repeats", total, name)
            convs = 0
            for m in model.modules():
                if isinstance(m, torch.nn.Conv2d):
                    convs += 1
                    keep("channels", max(m.in_channels, m.out_channels), name)
                    keep("kernel", m.kernel_size[0], name)
                    keep("conv stride", m.stride[0], name)
                    keep("padding", m.padding[0] if isinstance(m.padding, tuple) else 0, name)
                    keep("dilation", m.dilation[0], name)
            keep("tensors", 2 * convs, name)
            keep("f32 bytes", 4 * sum(p.numel() for p in model.parameters()), name)
    for key, (value, who) in worst.items():
        print(f"{key:14s} {value:>12,}  ({who})")


if __name__ == "__main__":
    main()
