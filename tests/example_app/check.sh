#!/usr/bin/env bash
# Installs the library built in BUILD_DIR into a temporary prefix, builds tests/example_app against
# it with find_package(yolo12), and runs it on a model. Usage: check.sh BUILD_DIR MODEL [cpu|cuda]
set -euo pipefail
build=$1; model=$2; device=${3:-cpu}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" -j 2 >/dev/null
"$work/build/yolo12_example" "$model" "$device"
