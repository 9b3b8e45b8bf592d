# tools/dev/bench_build.sh - sourced, from the repository's root, by the short GPU-call scripts (ncu_kernels.sh,
# tune_quick.sh, call_stem_pair_quick.sh) and by tools/gpu_check.sh (catch2_args).
#
# catch2_args ROOT: prints -DCatch2_DIR=... for the carried Catch2 v2 package (ROOT/.carry/catch2, made by
# `tools/gpu_check.sh prepare-catch2`) where the machine has no Catch2 package of its own; nothing otherwise.
catch2_args() {
  local f
  for f in /usr/lib/cmake/Catch2/Catch2Config.cmake /usr/lib/*/cmake/Catch2/Catch2Config.cmake \
           /usr/lib64/cmake/Catch2/Catch2Config.cmake /usr/local/lib/cmake/Catch2/Catch2Config.cmake; do
    [ -f "$f" ] && return 0
  done
  [ -d "$1/.carry/catch2" ] && echo "-DCatch2_DIR=$1/.carry/catch2/lib/cmake/Catch2"
  return 0
}

# dev_build BUILD OUT TARGET TESTS: configures a minimal build (sm_90a, Release, no CLI; the tests ON or OFF, with the
# carried Catch2 where needed) and builds TARGET, logging into OUT (configure.log, build.log); prints the build's
# seconds, or which step failed and returns 1.
dev_build() {
  local build=$1 out=$2 target=$3 tests=$4 start=$SECONDS c2
  [ -x /usr/local/cuda/bin/nvcc ] && export PATH=/usr/local/cuda/bin:$PATH
  local args=(-DCMAKE_BUILD_TYPE=Release -DYOLO12_BUILD_CLI=OFF -DYOLO12_BUILD_TESTS="$tests"
              -DCMAKE_CUDA_ARCHITECTURES=90a-real "-DCMAKE_CUDA_COMPILER_LAUNCHER=timeout;${COMPILE_TIMEOUT:-240}")
  c2=$(catch2_args "$PWD")
  [ "$tests" = ON ] && [ -n "$c2" ] && args+=("$c2")
  timeout 120 cmake -S . -B "$build" "${args[@]}" > "$out/configure.log" 2>&1 || { echo "configure FAILED"; return 1; }
  timeout 400 cmake --build "$build" -j"$(nproc)" --target "$target" > "$out/build.log" 2>&1 ||
    { echo "build FAILED"; grep -m5 error "$out/build.log"; return 1; }
  echo "build: $((SECONDS - start)) s"
}

# bench_build BUILD OUT CHECKPOINT MODEL: dev_build of the library and yolo12-bench (no tests), then CHECKPOINT
# exported to MODEL (OUT/export.log).
bench_build() {
  local build=$1 out=$2 pt=$3 model=$4
  dev_build "$build" "$out" yolo12-bench OFF || return 1
  timeout 120 python3 exporter/export.py "$pt" -o "$model" > "$out/export.log" 2>&1 || { echo "export FAILED"; return 1; }
}
