"""yolo12_torch: the yolo12 engine's kernels as PyTorch operators, with backward passes.

    import yolo12_torch
    y = yolo12_torch.conv2d(x, w, b, stride=1, padding=1, silu=True)   # torch.ops.yolo12.conv2d
    o = yolo12_torch.area_attention(q, k, v, area=4)                    # q, k, v: (B, N, heads, 32)
    model = yolo12_torch.patch(model)    # Ultralytics Conv, AAttn and Detect now call these operators
    yolo12_torch.unpatch(model)          # and back

The operators live under torch.ops.yolo12 (CPU and, in a CUDA build, CUDA kernels; autograd formulas
and fake kernels for torch.compile). docs/torch.md describes them, the layouts and how to train.
"""

import torch  # noqa: F401  (first: the extension links against torch's libraries)

try:
    from . import _C
except ImportError as e:  # the extension is not built
    raise ImportError("yolo12_torch._C is not built (%s); build it with "
                      "'python3 python/yolo12_torch/setup.py build_ext --inplace' or "
                      "'pip install --no-build-isolation python/yolo12_torch'" % e) from None

from .ops import HEAD_DIM, area_attention, conv2d, detect_decode  # noqa: E402
from .patch import is_patched, patch, unpatch  # noqa: E402

with_cuda = bool(_C.with_cuda)  # whether this build has the CUDA kernels

__all__ = ["HEAD_DIM", "area_attention", "conv2d", "detect_decode", "is_patched", "patch", "unpatch", "with_cuda"]
