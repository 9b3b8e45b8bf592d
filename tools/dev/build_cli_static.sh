#!/usr/bin/env bash
# tools/dev/build_cli_static.sh - a self-contained yolo12-infer (CUDA sm_90a + CPU) for the GPU machine.
#
#   tools/dev/build_cli_static.sh [all|opencv|cli]        default: all
#
# What it makes: .carry/cli/yolo12-infer, the command-line tool of docs/cli.md built with the CUDA
# backend (sm_90a code, CUDA runtime linked statically: libcuda is opened at run time, so the binary
# also runs, CPU only, where there is no driver) and with a minimal OpenCV linked statically. Its only
# shared-library dependencies are the C/C++ runtime (libc, libm, libstdc++, libgcc_s, ld-linux, and
# libdl/libpthread/librt where the toolchain names them); the script checks that with readelf and fails
# otherwise.
#
# Why: the lent GPU machine (Ubuntu 24.04, CUDA 13) has no OpenCV C++ library and no network, so the
# CLI cannot be built there. It is built here on Debian 12 instead, whose glibc (2.36) and libstdc++ are
# older than Ubuntu 24.04's (glibc 2.39, g++ 13), so the binary runs there; tools/gpu_check.sh (step
# "cli") runs it when .carry/cli is carried.
#
# How:
#   1. OpenCV source: the opencv-python-headless source distribution (fetched with
#      `pip download --no-binary`), which holds the full OpenCV tree under opencv/. Or point
#      OPENCV_SRC at an unpacked OpenCV source tree and nothing is fetched.
#   2. A static OpenCV with only core, imgproc, imgcodecs, videoio; zlib, libjpeg-turbo and libpng
#      built from OpenCV's bundled copies; no IPP, OpenCL, FFmpeg, GStreamer, V4L, TIFF, WebP,
#      OpenEXR, JPEG 2000, protobuf, Eigen, LAPACK, GUI, tests, apps, bindings; CPU dispatch limited to
#      AVX2 (baseline SSE3); libjpeg-turbo's SIMD code only where nasm is installed (without it
#      decoding is slower; the detections matched a normal build's). Installed into $WORK/install.
#   3. This project, configured with OpenCV_DIR pointing at that install, CUDA architecture 90a-real,
#      no tests, and without spdlog (Debian's spdlog/fmt are shared libraries the GPU machine lacks;
#      the library then logs to stderr itself), in $WORK/build-yolo12.
#   4. The binary is stripped and copied to .carry/cli/yolo12-infer (ignored by git).
#
# Images only: video files and streams are decoded by OpenCV's FFmpeg backend, which this build
# leaves out. For a video the carried CLI prints
#   error: clip.mp4: cannot open video (not a video, or a codec this OpenCV build lacks)
# and goes on with the other inputs (exit status 1). Saving annotated images (--save) works.
#
# Knobs (environment):
#   WORK            scratch folder (default build-cli-static, ignored by git; about 0.5 GB). Not
#                   under .carry/, which is at times carried to the GPU machine whole.
#   OPENCV_VERSION  opencv-python-headless version whose source is used (default 4.10.0.84)
#   OPENCV_SRC      an unpacked OpenCV source tree to use instead of fetching one
#   JOBS            parallel build jobs (default: nproc)
#   CLEAN=1         remove $WORK/build-opencv and $WORK/src after a successful build (keeps the
#                   install, which a later run reuses)
# Takes about 20 minutes on 2 cores (OpenCV 15, the project 5). The result here: 19 MB, NEEDED
# libstdc++, libm, libgcc_s, libc, ld-linux; the same detections on the CPU as a normal build.
# Needs: cmake >= 3.24, g++, nvcc (made here with CUDA 13), python3 + pip (to fetch the source),
# and the Debian packages CLI11 and nlohmann-json (headers only).
# On the GPU machine:  .carry/cli/yolo12-infer --model M.y12 --device cuda --json out.jsonl bus.jpg
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
mode=${1:-all}
work=${WORK:-$root/build-cli-static}
mkdir -p "$work"
work=$(cd "$work" && pwd)
version=${OPENCV_VERSION:-4.10.0.84}
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
prefix=$work/install
log() { echo "[build_cli_static] $*"; }

# ---- 1. OpenCV source ----------------------------------------------------------------------------
opencv_source() {
  if [ -n "${OPENCV_SRC:-}" ]; then
    src=$OPENCV_SRC
    return
  fi
  src=$work/src/opencv-python-headless-$version/opencv
  [ -f "$src/CMakeLists.txt" ] && return
  mkdir -p "$work/src"
  local sdist=$work/src/opencv-python-headless-$version.tar.gz
  if [ ! -f "$sdist" ]; then
    log "fetching the opencv-python-headless $version source distribution"
    # --no-binary for this one package only: its build requirements (needed to read its metadata)
    # may come as wheels.
    python3 -m pip download --no-deps --no-binary opencv-python-headless \
      "opencv-python-headless==$version" -d "$work/src"
  fi
  log "unpacking the OpenCV tree"
  tar -xzf "$sdist" -C "$work/src" --wildcards "opencv-python-headless-$version/opencv/*"
}

# ---- 2. static OpenCV ----------------------------------------------------------------------------
build_opencv() {
  if [ -f "$prefix/.done" ]; then
    log "static OpenCV already installed in $prefix (remove it to rebuild)"
    return
  fi
  opencv_source
  local b=$work/build-opencv
  local off=()
  for w in IPP OPENCL OPENCL_SVM OPENCLAMDFFT OPENCLAMDBLAS VA VA_INTEL FFMPEG GSTREAMER V4L 1394 \
           TIFF WEBP OPENEXR JASPER OPENJPEG AVIF PROTOBUF EIGEN LAPACK TBB OPENMP HPX ITT CUDA \
           GTK QT VTK OPENGL GDAL GDCM GPHOTO2 XINE ARAVIS XIMEA PVAPI OBSENSOR OPENVX QUIRC ADE \
           IMGCODEC_GIF FLATBUFFERS KLEIDICV CAROTENE ONNX; do
    off+=("-DWITH_$w=OFF")
  done
  log "configuring OpenCV ($src) into $b"
  cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DBUILD_LIST=core,imgproc,imgcodecs,videoio \
    -DOPENCV_FORCE_3RDPARTY_BUILD=ON -DBUILD_ZLIB=ON -DBUILD_JPEG=ON -DBUILD_PNG=ON \
    -DWITH_ZLIB=ON -DWITH_JPEG=ON -DWITH_PNG=ON -DWITH_SPNG=OFF \
    "${off[@]}" \
    -DBUILD_TESTS=OFF -DBUILD_PERF_TESTS=OFF -DBUILD_EXAMPLES=OFF -DBUILD_opencv_apps=OFF \
    -DBUILD_DOCS=OFF -DBUILD_JAVA=OFF -DBUILD_opencv_java=OFF -DBUILD_opencv_python2=OFF \
    -DBUILD_opencv_python3=OFF -DBUILD_opencv_js=OFF -DBUILD_IPP_IW=OFF -DBUILD_ITT=OFF \
    -DVIDEOIO_ENABLE_PLUGINS=OFF -DHIGHGUI_ENABLE_PLUGINS=OFF -DOPENCV_GENERATE_PKGCONFIG=OFF \
    -DCPU_BASELINE=SSE3 -DCPU_DISPATCH=AVX2 -DENABLE_PRECOMPILED_HEADERS=OFF \
    > "$work/opencv-configure.log" 2>&1 || { tail -30 "$work/opencv-configure.log"; exit 1; }
  sed -n '/To be built:/p;/CPU\/HW features:/,/^-- *$/p;/Media I\/O:/,/Parallel framework/p' "$work/opencv-configure.log"
  log "building OpenCV (-j$jobs; about 10-20 minutes on 2 cores)"
  cmake --build "$b" -j"$jobs" > "$work/opencv-build.log" 2>&1 || { tail -30 "$work/opencv-build.log"; exit 1; }
  cmake --install "$b" > "$work/opencv-install.log" 2>&1
  touch "$prefix/.done"
  log "installed static OpenCV into $prefix"
}

# ---- 3. the project ------------------------------------------------------------------------------
build_cli() {
  local config
  config=$(find "$prefix" -name OpenCVConfig.cmake -path '*opencv4*' | head -1)
  [ -n "$config" ] || { echo "no OpenCVConfig.cmake under $prefix: run the opencv step first" >&2; exit 1; }
  local b=$work/build-yolo12
  log "configuring yolo12 (OpenCV_DIR=$(dirname "$config")) into $b"
  cmake -S "$root" -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    -DYOLO12_WITH_CUDA=ON -DYOLO12_BUILD_TESTS=OFF -DYOLO12_BUILD_BENCH=OFF -DYOLO12_BUILD_CLI=ON \
    -DOpenCV_DIR="$(dirname "$config")" -DCMAKE_DISABLE_FIND_PACKAGE_spdlog=ON \
    > "$work/yolo12-configure.log" 2>&1 || { tail -30 "$work/yolo12-configure.log"; exit 1; }
  grep -E "yolo12:|OpenCV" "$work/yolo12-configure.log" || true
  log "building yolo12-infer (-j$jobs; the CUDA kernels take a few minutes)"
  cmake --build "$b" -j"$jobs" --target yolo12-infer > "$work/yolo12-build.log" 2>&1 ||
    { grep -E "error" "$work/yolo12-build.log" | head -20; tail -20 "$work/yolo12-build.log"; exit 1; }

  # ---- 4. check, strip, copy ---------------------------------------------------------------------
  local bin=$b/yolo12-infer
  local needed bad=()
  needed=$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  for lib in $needed; do
    case "$lib" in
      libc.so.*|libm.so.*|libstdc++.so.*|libgcc_s.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*.so.*) ;;
      *) bad+=("$lib") ;;
    esac
  done
  log "NEEDED: $(echo $needed)"
  if [ ${#bad[@]} -gt 0 ]; then
    echo "yolo12-infer needs libraries the GPU machine may lack: ${bad[*]}" >&2
    exit 1
  fi
  # The newest glibc / libstdc++ symbol versions it asks for (must be <= Ubuntu 24.04's 2.39 / 3.4.32).
  log "newest symbol versions: $(objdump -T "$bin" | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -1)," \
      "$(objdump -T "$bin" | grep -oE 'GLIBCXX_[0-9.]+' | sort -uV | tail -1)"
  mkdir -p "$root/.carry/cli"
  strip -o "$root/.carry/cli/yolo12-infer" "$bin"
  chmod +x "$root/.carry/cli/yolo12-infer"
  "$root/.carry/cli/yolo12-infer" --version
  log "wrote .carry/cli/yolo12-infer ($(du -h "$root/.carry/cli/yolo12-infer" | cut -f1)," \
      "$(stat -c %s "$root/.carry/cli/yolo12-infer") bytes)"
  if [ "${CLEAN:-0}" = 1 ]; then
    rm -rf "$work/build-opencv" "$work/src"
  fi
}

case "$mode" in
  all) build_opencv; build_cli ;;
  opencv) build_opencv ;;
  cli) build_cli ;;
  *) echo "usage: $0 [all|opencv|cli]" >&2; exit 2 ;;
esac
