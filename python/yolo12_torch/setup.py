"""Builds yolo12_torch._C, the yolo12 operators, against the installed torch.

    pip install --no-build-isolation python/yolo12_torch          # into the environment
    python3 python/yolo12_torch/setup.py build_ext --inplace      # in the source tree (the tests use this)

The extension compiles the engine's kernels from this repository (src/backends/cpu, src/backends/cuda),
so it builds from a checkout, not from an sdist. The CUDA kernels are built when torch is a CUDA build
and nvcc is found (CUDA_HOME or PATH); otherwise, or with YOLO12_TORCH_CUDA=0, a CPU-only extension is
built. YOLO12_TORCH_CUDA=1 makes a missing toolkit an error. CUDA code is built for sm_90a (the H200)
unless TORCH_CUDA_ARCH_LIST says otherwise; MAX_JOBS sets the parallel compile jobs (ninja).
"""

import os
import sys

from setuptools import setup

try:
    import torch
    from torch.utils import cpp_extension
except ImportError:  # pragma: no cover - a one-line message instead of a traceback
    sys.exit("yolo12_torch: torch must be installed first (and use pip's --no-build-isolation)")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))

# Engine sources compiled into the extension (absolute paths keep the objects inside the build folder):
# the kernel files of the three op families and what they call, not the executors (csrc/engine_link.cpp
# says why the CPU files link without theirs).
ENGINE_CPU = ["src/backends/cpu/" + f for f in ("conv.cpp", "attention.cpp", "detect_head.cpp", "gemm_tile.cpp",
                                                "thread_pool.cpp")]
ENGINE_CUDA = ["src/backends/cuda/" + f for f in ("conv.cu", "conv_implicit_gemm.cu", "conv_depthwise.cu",
                                                  "conv_direct.cu", "conv_narrow.cu", "conv_stem.cu", "conv_tune.cu",
                                                  "conv_wgmma.cu",
                                                  "attention.cu", "detect.cu",
                                                  "device.cu", "conv_backward.cu", "attention_backward.cu",
                                                  "detect_backward.cu")]
ENGINE_CUDA += ["src/post/nms.cpp", "src/pre/letterbox.cpp"]  # the NMS threshold that detect.cu's head reads
GLUE = ["checks.cpp", "ops.cpp", "cpu_ops.cpp", "engine_link.cpp", "module.cpp"]
GLUE_CUDA = ["cuda_ops.cpp"]


def src(*parts):
    return os.path.join(REPO, *parts)


def want_cuda():
    mode = os.environ.get("YOLO12_TORCH_CUDA", "auto")
    have = torch.version.cuda is not None and cpp_extension.CUDA_HOME is not None
    if mode == "0":
        return False
    if mode == "1" and not have:
        sys.exit("yolo12_torch: YOLO12_TORCH_CUDA=1 but torch %s is not a CUDA build or nvcc was not found "
                 "(set CUDA_HOME)" % torch.__version__)
    return have


def extension():
    if not os.path.isfile(src("src", "backends", "cpu", "conv.cpp")):
        sys.exit("yolo12_torch: the engine sources are not at %s; build from a yolo12 checkout" % src("src"))
    sources = [src(f) for f in ENGINE_CPU] + [os.path.join(HERE, "csrc", f) for f in GLUE]
    include_dirs = [src("include"), src("src"), os.path.join(HERE, "csrc")]
    # C++20: torch's own headers need it since torch 2.15 (ATen.h stops with an #error under C++17); the engine's
    # sources build as either. -g0: no debug info (a faster build, a smaller module).
    cxx = ["-O3", "-g0", "-std=c++20"]
    if not want_cuda():
        return cpp_extension.CppExtension("yolo12_torch._C", sources, include_dirs=include_dirs,
                                          extra_compile_args={"cxx": cxx})
    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0a")
    sources += [src(f) for f in ENGINE_CUDA]
    sources += [os.path.join(HERE, "csrc", f) for f in GLUE_CUDA]
    # torch compiles .cu files with the half/bf16 operators and conversions switched off; the engine's
    # kernels use them, so switch them back on.
    nvcc = ["-O3", "-std=c++17", "-lineinfo", "--expt-relaxed-constexpr",  # the engine's CMake flags
            "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__",
            "-U__CUDA_NO_HALF2_OPERATORS__"]
    return cpp_extension.CUDAExtension("yolo12_torch._C", sources, include_dirs=include_dirs,
                                       define_macros=[("YOLO12_TORCH_WITH_CUDA", "1")],
                                       extra_compile_args={"cxx": cxx + ["-DYOLO12_TORCH_WITH_CUDA=1"], "nvcc": nvcc})


setup(
    name="yolo12_torch",
    version="0.1.0",
    description="yolo12's CUDA/CPU kernels as PyTorch operators with backward passes; patching of Ultralytics models",
    packages=["yolo12_torch"],
    ext_modules=[extension()],
    cmdclass={"build_ext": cpp_extension.BuildExtension},
    python_requires=">=3.9",
)
