"""y12export: converts Ultralytics YOLO checkpoints (.pt) and ONNX exports into yolo12 model files.

Python 3 + numpy only. See docs/exporter.md. Modules:
  errors      ExportError, the one-line failure every expected problem becomes
  pt_reader   restricted reader of PyTorch zip checkpoints (never executes code from the file)
  onnx_reader minimal protobuf wire-format decoder for ONNX models
  bn_fold     BatchNorm folding in float64
  pt_arch     architecture + tensors from a checkpoint's module tree (cross-checked with its yaml)
  modules     the table of module readers, one file per Ultralytics module family
  from_onnx   architecture + tensors reconstructed from an ONNX graph
  from_pt     header fields + tensors of a .pt checkpoint
  writer      the .y12 file writer (docs/model-format.md)
"""

EXPORTER_VERSION = "yolo12 export.py 1"
