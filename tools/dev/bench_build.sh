# tools/dev/bench_build.sh - sourced by the short GPU-call scripts (ncu_kernels.sh, tune_quick.sh), from the
# repository's root. bench_build BUILD OUT CHECKPOINT MODEL: configures a minimal build (the library and yolo12-bench,
# sm_90a, no tests or CLI), builds it and exports CHECKPOINT to MODEL, logging into OUT (configure.log, build.log,
# export.log); prints the build's seconds, or which step failed and returns 1.
bench_build() {
  local build=$1 out=$2 pt=$3 model=$4 start=$SECONDS
  [ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
  timeout 120 cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DYOLO12_BUILD_CLI=OFF -DYOLO12_BUILD_TESTS=OFF \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real > "$out/configure.log" 2>&1 || { echo "configure FAILED"; return 1; }
  timeout 400 cmake --build "$build" -j"$(nproc)" --target yolo12-bench > "$out/build.log" 2>&1 ||
    { echo "build FAILED"; grep -m5 error "$out/build.log"; return 1; }
  echo "build: $((SECONDS - start)) s"
  timeout 120 python3 exporter/export.py "$pt" -o "$model" > "$out/export.log" 2>&1 || { echo "export FAILED"; return 1; }
}
