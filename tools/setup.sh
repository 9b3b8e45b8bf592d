#!/usr/bin/env bash
# tools/setup.sh - the README's two commands.
#   bash tools/setup.sh demo   install what is missing, build the library and yolo12-infer only (CPU:
#                              the demo needs no CUDA kernel), run yolo12-infer on a sample image
#   bash tools/setup.sh test   install what is missing, build everything (CUDA where the toolkit is),
#                              run every test (CI runs this)
# Works as root on a fresh Debian 12 machine with the CUDA toolkit (or without it: the CUDA backend
# is then left out). BUILD_DIR (default build) and JOBS (default nproc) can be set; YOLO12_WITH_CUDA
# (ON, OFF, AUTO) overrides the choice of either mode (demo: OFF, test: AUTO).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-test}
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}

need_pkgs=()
for p in cmake g++ make pkg-config libopencv-dev nlohmann-json3-dev libspdlog-dev catch2 libcli11-dev libavformat-dev libavutil-dev gzip ffmpeg; do
  dpkg -s "$p" >/dev/null 2>&1 || need_pkgs+=("$p")
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${need_pkgs[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi
# The exporter and the Python tests need python3 with numpy: pip where it may install (a
# user-managed Python), else Debian's python3-numpy (Debian's own python3 refuses pip installs).
if ! python3 -c "import numpy" 2>/dev/null; then
  echo "setup: installing numpy for the exporter"
  python3 -m pip install -q numpy 2>/dev/null || {
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3 python3-numpy >/dev/null
  }
fi
[ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH

# ---- sanitizers and fuzz smoke (docs/hardening.md) -------------------------------------------------
# After the tests: a second build folder ($BUILD_DIR-san) with clang, ASan + UBSan, no CUDA, of the
# library, the CLI, the unit tests and the libFuzzer targets only; its unit tests and the CLI's
# Python test, then fuzz/run.sh's smoke (12 s per target on the committed seeds). SANITIZER_CI=0
# skips it all.
sanitizer_ci() {
  [ "${SANITIZER_CI:-1}" = 0 ] && return 0
  local p pkgs=() san="$BUILD_DIR-san" targets=(yolo12-infer fuzz_model_file fuzz_model_header fuzz_npy)
  for p in clang libclang-rt-14-dev; do dpkg -s "$p" >/dev/null 2>&1 || pkgs+=("$p"); done
  if [ ${#pkgs[@]} -gt 0 ]; then
    echo "setup: installing ${pkgs[*]}"
    local SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  fi
  for p in tests/unit/test_*.cpp tests/ops/test_*.cpp; do targets+=("$(basename "$p" .cpp)"); done
  [ -f cli/image_header.cpp ] && targets+=(fuzz_image_header)
  [ -f cli/tests/test_cli_units.cpp ] && targets+=(test_cli_units)  # the CLI's unit tests (label cpu) too
  CXX=clang++ CC=clang cmake -S . -B "$san" -DCMAKE_BUILD_TYPE=Release -DYOLO12_WITH_CUDA=OFF \
    -DYOLO12_BUILD_BENCH=OFF -DYOLO12_SANITIZE=address,undefined -DYOLO12_BUILD_FUZZERS=ON >/dev/null
  cmake --build "$san" -j "$JOBS" --target "${targets[@]}"
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$san" --output-on-failure -j "$JOBS" -L cpu -LE "opencv|python"
  ctest --test-dir "$san" --output-on-failure -R '^py_test_cli$'
  bash fuzz/run.sh "$san"
}

# ---- PyTorch operators (python/yolo12_torch, docs/torch.md); test mode only ----------------------
# torch and ultralytics from PyPI when missing (PyPI's torch is the CUDA build: 5.9 GB installed, about
# 9 minutes on the development machine; YOLO12_NO_TORCH=1 skips all of this and the torch tests then
# report "skipped"), then yolo12_torch built in place, CPU-only unless a GPU is visible.
# An install that fails (no network, a slow or refusing index, a full disk, YOLO12_TORCH_INSTALL_TIMEOUT
# seconds passed, default 1800) is no test failure: the torch tests then report "skipped". Once torch
# and ultralytics import, a failing extension build stops the setup (set -e) and the tests must pass.
torch_install() {  # returns 1 when torch, ultralytics or Python's headers could not be installed
  local SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  if ! python3 -c "import torch, ultralytics" 2>/dev/null; then
    echo "setup: installing torch and ultralytics for the yolo12_torch tests (a large download)"
    if ! python3 -m pip --version >/dev/null 2>&1; then
      $SUDO apt-get update -qq || return 1
      DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip >/dev/null ||
        return 1
    fi
    # Debian's python3 is "externally managed": allow pip to install beside its packages. No cache: the
    # wheels would take the disk twice.
    PIP_BREAK_SYSTEM_PACKAGES=1 timeout "${YOLO12_TORCH_INSTALL_TIMEOUT:-1800}" \
      python3 -m pip install -q --progress-bar off --no-cache-dir torch ultralytics || return 1
    python3 -c "import torch, ultralytics" || return 1
  fi
  if ! python3 -c "import os, sysconfig; assert os.path.isfile(sysconfig.get_paths()['include'] + '/Python.h')" 2>/dev/null; then
    $SUDO apt-get update -qq || return 1  # the extension build needs Python's headers
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-dev >/dev/null ||
      return 1
  fi
}
if [ "$mode" = test ] && [ "${YOLO12_NO_TORCH:-0}" != 1 ]; then
  if torch_install; then
    torch_cuda=0
    nvidia-smi -L >/dev/null 2>&1 && torch_cuda=auto
    torch_tmp=$BUILD_DIR/yolo12_torch  # the objects; the module lands in python/yolo12_torch/yolo12_torch
    case $torch_tmp in /*) ;; *) torch_tmp=$PWD/$torch_tmp ;; esac
    echo "setup: building yolo12_torch (CUDA kernels: $torch_cuda)"
    (cd python/yolo12_torch && YOLO12_TORCH_CUDA=$torch_cuda MAX_JOBS=$JOBS \
       python3 setup.py -q build_ext --inplace --build-temp "$torch_tmp" >/dev/null)
    export YOLO12_TORCH_REQUIRED=1  # the torch tests now fail, not skip, when the package does not import
  else
    echo "setup: torch install failed; the yolo12_torch tests will report skipped"
  fi
fi

# Both modes configure every switch they depend on, so that a demo build and a test build can share
# BUILD_DIR: on a machine without CUDA the test build reuses the demo's objects.
case "$mode" in
  test)
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DYOLO12_WITH_CUDA="${YOLO12_WITH_CUDA:-AUTO}" \
      -DYOLO12_BUILD_TESTS=ON -DYOLO12_BUILD_BENCH=ON -DYOLO12_BUILD_CLI=ON >/dev/null
    cmake --build "$BUILD_DIR" -j "$JOBS"
    ctest --test-dir "$BUILD_DIR" --output-on-failure -j "$JOBS"
    sanitizer_ci
    ;;
  demo)
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DYOLO12_WITH_CUDA="${YOLO12_WITH_CUDA:-OFF}" \
      -DYOLO12_BUILD_TESTS=OFF -DYOLO12_BUILD_BENCH=OFF -DYOLO12_BUILD_CLI=ON >/dev/null
    cmake --build "$BUILD_DIR" -j "$JOBS" --target yolo12-infer
    bash tools/demo.sh "$BUILD_DIR"
    ;;
  *) echo "usage: $0 demo|test" >&2; exit 2 ;;
esac
