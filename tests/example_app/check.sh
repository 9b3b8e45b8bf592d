#!/usr/bin/env bash
# Installs the library built in BUILD_DIR into a temporary prefix and builds tests/example_app
# against it the two ways an application would, then runs both on a model:
#   1. CMake, find_package(yolo12), in a project that cannot find spdlog or the CUDA toolkit;
#   2. pkg-config (--static for a static libyolo12), plain g++.
# Usage: check.sh BUILD_DIR MODEL [cpu|cuda]. Prints the install's cmake and pkg-config files too.
set -euo pipefail
build=$1; model=$2; device=${3:-cpu}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
pc=$(dirname "$(find "$work/prefix" -name yolo12.pc | head -1)")
echo "== installed package files"
cat "$work"/prefix/lib*/cmake/yolo12/yolo12Config.cmake "$work"/prefix/lib*/cmake/yolo12/yolo12Targets*.cmake "$pc/yolo12.pc" |
  grep -v '^#' | grep -E 'find_dependency|INTERFACE_LINK_LIBRARIES|IMPORTED_LOCATION|IMPORTED_LINK|^Libs|^Requires|^Cflags' || true

echo "== 1. find_package(yolo12) without spdlog or CUDA"
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_DISABLE_FIND_PACKAGE_spdlog=ON -DCMAKE_DISABLE_FIND_PACKAGE_fmt=ON \
  -DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
"$work/build/yolo12_example" "$model" "$device"

echo "== 2. pkg-config"
static=--static
[ -n "$(find "$work/prefix" -name 'libyolo12.so*' | head -1)" ] && static=""
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs $static yolo12)
echo "pkg-config --cflags --libs $static yolo12: $flags"
# shellcheck disable=SC2086
${CXX:-c++} -std=c++17 -O1 "$here/main.cpp" -o "$work/app_pc" $flags -Wl,-rpath,"$(dirname "$(find "$work/prefix" -name 'libyolo12.*' | head -1)")"
"$work/app_pc" "$model" "$device"
