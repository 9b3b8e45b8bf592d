#!/usr/bin/env bash
# tools/demo.sh BUILD_DIR - detect objects in a sample image with yolo12-infer (what
# `bash tools/setup.sh demo` runs after building). It exports its own model with exporter/export.py:
#   - with ../shared/data present: the COCO-pretrained YOLO11n weights found there (real detections)
#     on bus.jpg;
#   - without it: the committed random-weight YOLO12n test model (tests/data/yolo12n_rand.pt) on the
#     letterboxed bus fixture in tests/data (as a BMP). Its detections are meaningless; it only shows
#     the pipeline.
# The exporter records the model it writes as yolo12-infer's default (settings.json in the yolo12
# config folder), so the detection runs as the bare `yolo12-infer IMAGE`, and the demo ends by
# printing that command. Outputs go to runs/detect/demo: the annotated image and detections.jsonl.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cli="$build/yolo12-infer"
out=runs/detect/demo
shared=${YOLO12_SHARED_DATA:-../shared/data}  # the team's data folder, beside the repository

if [ ! -x "$cli" ]; then
  echo "demo: $cli was not built (it needs OpenCV and CLI11: run bash tools/setup.sh demo)" >&2
  exit 1
fi
mkdir -p models

if [ -f "$shared/weights/yolo11n_coco_int8dyn_320.onnx" ] && [ -f "$shared/images/bus.jpg" ]; then
  model=models/yolo11n_coco.y12
  image=$shared/images/bus.jpg
  echo "demo: model: YOLO11n pretrained on COCO (80 classes) by Ultralytics, from $shared/weights"
  echo "      (an int8 ONNX export, dequantized to float by exporter/export.py); input 320x320"
  python3 exporter/export.py "$shared/weights/yolo11n_coco_int8dyn_320.onnx" -o "$model"
else
  model=models/yolo12n_rand.y12
  image=$build/bus.bmp  # written below; the annotated copy goes to $out/bus.bmp
  echo "demo: $shared is not here, so the demo uses the committed RANDOM-WEIGHT YOLO12n test model"
  echo "      (tests/data/yolo12n_rand.pt). Its detections are meaningless: it was never trained."
  echo "      The run only shows the pipeline working: decode, letterbox, network, NMS, outputs."
  python3 exporter/export.py tests/data/yolo12n_rand.pt -o "$model"
  # The sample image: the committed letterboxed bus fixture (1, 3, 640, 640 RGB floats) as a BMP.
  python3 - "$image" <<'PY'
import gzip, sys
import numpy as np
x = np.load(gzip.open("tests/data/input_bus_640.npy.gz"))[0]  # (3, H, W) RGB in [0, 1]
bgr = np.ascontiguousarray((x[::-1].transpose(1, 2, 0) * 255.0).round().astype(np.uint8))
h, w, _ = bgr.shape
row = (w * 3 + 3) // 4 * 4  # BMP rows are padded to 4 bytes and stored bottom-up
pixels = np.zeros((h, row), np.uint8)
pixels[:, : w * 3] = bgr[::-1].reshape(h, w * 3)
header = b"BM" + (54 + pixels.size).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little")
info = (40).to_bytes(4, "little") + w.to_bytes(4, "little") + h.to_bytes(4, "little") + (1).to_bytes(2, "little")
info += (24).to_bytes(2, "little") + bytes(4) + pixels.size.to_bytes(4, "little") + bytes(16)
open(sys.argv[1], "wb").write(header + info + pixels.tobytes())
PY
fi

# The bare command, as a user types it, with the outputs of the demo. A YOLO12_MODEL in the
# environment would come before the default: then the model is named.
model_arg=()
if [ -n "${YOLO12_MODEL:-}" ]; then
  echo "demo: YOLO12_MODEL is set ($YOLO12_MODEL), so the demo names its model with --model"
  model_arg=(--model "$model")
fi
echo "demo: $cli ${model_arg[*]} $image --save --json $out/detections.jsonl --project runs/detect --name demo --exist-ok"
"$cli" "${model_arg[@]}" "$image" --save --json "$out/detections.jsonl" --project runs/detect --name demo --exist-ok
echo
echo "demo: outputs:"
echo "  annotated image: $out/$(basename "$image")"
echo "  detections:      $out/detections.jsonl (one JSON object per image; see docs/cli.md)"
echo
echo "next: $cli ${model_arg[*]:+${model_arg[*]} }$image"
