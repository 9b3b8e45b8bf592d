"""Limits on what the exporter reads, checked before anything is allocated for it.

Each limit is a margin over the largest real input measured (docs/exporter.md, "Limits"): released
Ultralytics checkpoints up to the x scales of YOLOv8, YOLO11 and YOLO12, training checkpoints with an
optimizer state, and the Ultralytics ONNX exports. A file beyond a limit is refused with one line that
names the limit; none of them is near what a real detection model needs.
"""

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# --- any input --------------------------------------------------------------------------------------
MAX_INPUT_BYTES = 4 * GiB        # yolov8x.pt 137 MB; a training last.pt with optimizer ~0.7 GB
MAX_PARAMETERS = 256_000_000     # weights read and converted to float64; yolov8x has 68.2 M

# --- .pt (zip + pickle) -----------------------------------------------------------------------------
MAX_ZIP_DIRECTORY_BYTES = 16 * MiB  # the zip's central directory; yolo12x.pt: 78 KB for 1,255 members
MAX_PICKLE_BYTES = 16 * MiB      # data.pkl; yolo12x.pt: 312 KB
MAX_PICKLE_BUILT_BYTES = 64 * MiB  # what the allow-listed constructors may build (bytes, or 8 per item)
MAX_STORAGE_BYTES = 2 * GiB      # all tensor storages together; yolov8x.pt: 137 MB
MAX_EXPANSION = 100              # a compressed zip member: at most 1 MiB + 100 x its compressed size
                                 # (torch stores members uncompressed; deflated floats gain ~1.1x)

# --- .onnx (protobuf) -------------------------------------------------------------------------------
MAX_ONNX_BYTES = 2 * GiB         # protobuf's own message limit; yolov8x fp32 ONNX ~270 MB
MAX_ONNX_NODES = 50_000          # yolo11n int8 (dynamic quantization): 839; yolov8n int8: 610
MAX_ONNX_INITIALIZERS = 20_000   # yolo11n int8: 455
MAX_ONNX_GRAPH_IO = 64           # graph inputs and outputs; Ultralytics: 1 and 1
MAX_ONNX_NODE_FIELDS = 1_024     # inputs, outputs and attributes of one node; yolo11n int8: 10
MAX_ONNX_TENSOR_RANK = 16        # real: at most 4
MAX_ONNX_LIST_VALUES = 1 << 20   # values of a list attribute or a tensor's typed (non-raw) data
MAX_ONNX_DECODED = 4_000_000     # protobuf fields and list values decoded in all; yolo11n int8: 11,564
MAX_ONNX_METADATA_ENTRIES = 1_024  # Ultralytics: 15
MAX_ONNX_METADATA_BYTES = 1 * MiB  # one metadata value; COCO "names": 1,171 bytes
