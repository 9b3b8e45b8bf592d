#!/usr/bin/env bash
# tools/gpu_check.sh - the whole GPU check in one call on a machine with an NVIDIA GPU (sm_90a).
#
#   tools/gpu_check.sh [all|test|sanitize|bench|peer|ours|cli|perf]    default: all
#
#   test   configure + build (Release, sm_90a, -j$(nproc)), export the fixture models, run the GPU
#          tests (ctest -L gpu), compute-sanitizer memcheck and racecheck on every GPU test (in
#          parallel, one process per test and tool; the fused kernels' whole-model cases, too big for
#          one process, are named in a note for a `sanitize` call: san_whole_filter), build + run the
#          example application against an install of the library (find_package), and a per-op profile
#          of yolo12n (yolo12-bench --profile-ops) under each conv-variant setting of PROFILE_VARIANTS.
#   sanitize  only the sanitizer step of `test`: build the library and the SANITIZE_TESTS tests (default
#          test_model_gpu), export the fixture models, run their compute-sanitizer processes (no ctest, no
#          example app, no profile), so that a long SANITIZE_TIMEOUT fits one call. An entry TEST:TAG runs
#          only that tag's cases of TEST (memcheck and racecheck, one process each, e.g. test_conv:splitk).
#          SANITIZE_TOOLS="racecheck" (or memcheck) runs one tool only.
#   bench  ours + peer (ours first, so that a peer cut by its time limit still leaves ours), then the table:
#   peer   the PyTorch peer (bench/torch_peer.py: Ultralytics YOLO12 n/s/m/l/x, random weights);
#          its JSON is kept in the build folder for a later `ours` call on the same warm machine;
#   ours   yolo12-bench on the very same weights (exported from the peer's .pt files), then one
#          side-by-side markdown table.
#   perf   the kernel-performance call, about 8 minutes (PERF_BUDGET seconds, default 470, from the start):
#          build the library, test_conv, test_preprocess, test_roofline and yolo12-bench; run those three
#          tests; the per-op profile of yolo12n fp16 at batch 1 and 32 under each setting of
#          PERF_VARIANTS (the defaults, and the newest variants off one group at a time); yolo12-bench
#          fp16 at batch 1 and 32 on yolo12n and yolo12s (PERF_SCALES; the peer's random weights,
#          `bench/torch_peer.py save`) under each setting of PERF_BENCH_VARIANTS (default: the defaults,
#          one stream, programmatic launches on); then, in the time left,
#          compute-sanitizer memcheck and racecheck on the new kernels' test cases (the tags of PERF_SAN_TAGS,
#          default "narrow dwtiled": one process each; "test:tag" for a tag of another GPU test than test_conv),
#          memcheck on the roofline probes and on test_preprocess.
#   cli    only the carried CLI step (no build): .carry/cli/yolo12-infer, made elsewhere by
#          tools/dev/build_cli_static.sh, on the shared images with the real YOLO11n and YOLOv8n on the
#          CPU, on CUDA and on CUDA in FP16, compared by tools/dev/compare_detections.py (`test` and
#          `all` run it too, after the example app).
# Logs go to $OUT (default ./out/gpu_check); a short summary is printed last. Each step has its own
# timeout so one hang cannot eat the whole call.
#
# Inputs that are not in the repository (docs/benchmarks-gpu.md says how to prepare them):
#   .carry/weights/*.onnx   the real COCO weights (yolo11n / yolov8n int8 ONNX) for the detection tests
#   .whl/*.whl              Ultralytics + ultralytics-thop wheels, where Ultralytics is not installed
#   .carry/catch2/          a Catch2 package to use when the machine has none (see `prepare-catch2`)
#   .carry/shared/fixtures/ the shared data folder's fixtures (the turbo YOLOv12 fixture)
#   .carry/shared/images/   the shared images (bus.jpg, zidane.jpg) for the real-weight detection test
#   .carry/cli/yolo12-infer the self-contained CLI for the `cli` step (tools/dev/build_cli_static.sh)
#   tools/gpu_check.sh prepare-catch2    (run where Debian's Catch2 v2 is installed) builds that folder.
set -u
cd "$(dirname "$0")/.."
root=$PWD
mode=${1:-all}
out=${OUT:-$root/out/gpu_check}
build=${BUILD:-$root/build-check}
models=$build/models
started=$SECONDS
time_left() { echo $(( ${PERF_BUDGET:-470} - (SECONDS - started) )); }
jobs=$(nproc 2>/dev/null || echo 4)
mkdir -p "$out" "$models"
summary=()
note() { summary+=("$1"); echo "[gpu_check] $1"; }
# The summary and the log bundle, also when the call is stopped early (an outer `timeout` sends TERM to the whole
# process group: the step running dies, then this runs; the twenty-fifth session lost every sanitizer log so).
finish() {
  trap - EXIT TERM INT
  echo
  echo "==== gpu_check summary ($mode)"
  for s in "${summary[@]}"; do echo "  $s"; done
  grep -E "FAILED|failed" "$out/ctest.log" 2>/dev/null | head -10
  printf '%s\n' "${summary[@]}" > "$out/summary.txt"
  # The device tool brings back at most 8 files: with BUNDLE_LOGS=1 (the default where $OUT is set) every
  # log goes into one archive, beside the summary and the benchmark table.
  if [ "${BUNDLE_LOGS:-$([ -n "${OUT:-}" ] && echo 1 || echo 0)}" = 1 ]; then
    tmp=$(mktemp -d)
    tar -czf "$tmp/logs_$mode.tar.gz" -C "$out" . && find "$out" -mindepth 1 -maxdepth 1 \
      ! -name summary.txt ! -name benchmarks-table.md ! -name peer.json -exec rm -rf {} + && mv "$tmp/logs_$mode.tar.gz" "$out/"
    rmdir "$tmp" 2>/dev/null
  fi
}


if [ "$mode" = prepare-catch2 ]; then
  # Catch2 v2 single header + its compiled implementation + a CMake package, in .carry/catch2. The
  # header is also offered as catch2/catch_all.hpp so tests/catch.hpp picks it before any v3 header.
  set -e
  dst=$root/.carry/catch2
  mkdir -p "$dst/include/catch2" "$dst/lib/cmake/Catch2"
  cp /usr/include/catch2/catch.hpp "$dst/include/catch2/catch.hpp"
  # v2 declares Catch::Session only where its implementation is compiled; tests/test_main.cpp only
  # needs Session().run(argc, argv), forwarded here to the precompiled implementation.
  cat > "$dst/include/catch2/catch_all.hpp" <<'EOF'
#pragma once
#include "catch.hpp"
namespace Catch {
int yolo12_run_session(int argc, char** argv);
struct Session {
  int run(int argc, char** argv) { return yolo12_run_session(argc, argv); }
};
}  // namespace Catch
EOF
  cat > "$dst/impl.cpp" <<'EOF'
#define CATCH_CONFIG_RUNNER
#include "catch2/catch.hpp"
namespace Catch {
int yolo12_run_session(int argc, char** argv) { return Session().run(argc, argv); }
}  // namespace Catch
EOF
  g++ -std=c++17 -O1 -fPIC -I "$dst/include" -c "$dst/impl.cpp" -o "$dst/impl.o"
  ar rcs "$dst/lib/libcatch2_impl.a" "$dst/impl.o"
  rm -f "$dst/impl.cpp" "$dst/impl.o"
  cat > "$dst/lib/cmake/Catch2/Catch2Config.cmake" <<'EOF'
# Catch2 v2 (single header) with its implementation precompiled; made by tools/gpu_check.sh prepare-catch2.
get_filename_component(_c2_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET Catch2::Catch2)
  add_library(Catch2::Catch2 STATIC IMPORTED)
  set_target_properties(Catch2::Catch2 PROPERTIES
    IMPORTED_LOCATION "${_c2_root}/lib/libcatch2_impl.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_c2_root}/include")
endif()
set(Catch2_FOUND TRUE)
EOF
  echo "prepared $dst"
  exit 0
fi
trap 'finish' EXIT
trap 'note "stopped by a signal after $((SECONDS - started)) s (a timeout?): the steps after it did not run"; exit 143' TERM INT

nvidia-smi -L 2>&1 | tee "$out/gpu.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >> "$out/gpu.txt" 2>&1

# ---- build ---------------------------------------------------------------------------------------
# One nvcc process may take at most COMPILE_TIMEOUT seconds (default 240; the slowest file takes about a minute):
# a compile that never ends (nvcc 13.0's cudafe++ on one test, twenty-fifth session) then fails its target instead
# of eating the call.
cmake_args=(-DCMAKE_BUILD_TYPE=Release -DYOLO12_BUILD_CLI=OFF -DCMAKE_CUDA_ARCHITECTURES=90a-real
            "-DCMAKE_CUDA_COMPILER_LAUNCHER=timeout;${COMPILE_TIMEOUT:-240}")
# The machine's Catch2 package where it has one; else the carried one (tools/dev/bench_build.sh: catch2_args).
. "$root/tools/dev/bench_build.sh"
c2=$(catch2_args "$root")
if [ -n "$c2" ]; then
  cmake_args+=("$c2")
  note "Catch2: carried v2 package (.carry/catch2)"
fi
# EXTRA_CMAKE_ARGS: more -D options, split on spaces (e.g. -DCMAKE_DISABLE_FIND_PACKAGE_spdlog=ON).
# shellcheck disable=SC2206
cmake_args+=(${EXTRA_CMAKE_ARGS:-})
# OURS_BENCH (bench and ours modes): a yolo12-bench built elsewhere (e.g. a CI build unpacked from the carry) for the `ours`
# rows; nothing is configured or built, so the call is the peer and that binary only.
ours_bench=${OURS_BENCH:-$build/yolo12-bench}
prebuilt_ours=0
{ [ "$mode" = bench ] || [ "$mode" = ours ]; } && [ -n "${OURS_BENCH:-}" ] && prebuilt_ours=1
[ "$mode" != cli ] && [ $prebuilt_ours = 0 ] && { timeout 120 cmake -S "$root" -B "$build" "${cmake_args[@]}" > "$out/configure.log" 2>&1 || note "configure FAILED (see configure.log)"; }
gpu_tests=()
for f in tests/gpu/test_*.cpp tests/gpu/test_*.cu tests/ops/test_*.cu; do [ -f "$f" ] && gpu_tests+=("$(basename "${f%.*}")"); done
targets=(yolo12)
case "$mode" in
  all|test) targets+=("${gpu_tests[@]}") ;;
  sanitize) for t in ${SANITIZE_TESTS:-test_model_gpu}; do targets+=("${t%%:*}"); done
            for r in ${SANITIZE_PLAIN_RUNS:-}; do targets+=("${r%%:*}"); done ;;
  perf) if [ -n "${PERF_TESTS:-}" ]; then targets+=($PERF_TESTS)  # only these GPU tests
        elif [ "${PERF_ALL_TESTS:-0}" = 1 ]; then targets+=("${gpu_tests[@]}"); else targets+=(test_conv test_preprocess test_roofline); fi ;;
esac
[ -f bench/bench.cpp ] && targets+=(yolo12-bench)
# The example app installs the library: with a static CUDA build that installs the merged archive
# (yolo12_merged, built by `all` only), so test/all build it too where the build has it.
if [ "$mode" = all ] || [ "$mode" = test ]; then
  cmake --build "$build" --target help 2>/dev/null | grep -q yolo12_merged && targets+=(yolo12_merged)
fi
[ "$mode" = perf ] && [ -f bench/multi_device_bench.cpp ] && targets+=(yolo12-multi-bench)
# BASELINE_SRC (perf mode): a source archive of an earlier commit (`git archive COMMIT | gzip`), built
# beside this one (its yolo12-bench only) and timed on the same models in the same call, so a change's
# speed is compared with what it replaced on the same machine and day (issue 10's "within 5%").
baseline_src=${BASELINE_SRC:-}
baseline_dir=/tmp/yolo12-baseline
if [ "$mode" = perf ] && [ -n "$baseline_src" ] && [ -f "$baseline_src" ]; then
  rm -rf "$baseline_dir" && mkdir -p "$baseline_dir/src" && tar -xzf "$baseline_src" -C "$baseline_dir/src"
  ( timeout 120 cmake -S "$baseline_dir/src" -B "$baseline_dir/build" "${cmake_args[@]}" -DYOLO12_BUILD_TESTS=OFF \
      > "$out/baseline_build.log" 2>&1 &&
    timeout 420 nice cmake --build "$baseline_dir/build" -j"$(( jobs / 2 > 1 ? jobs / 2 : 1 ))" --target yolo12-bench \
      >> "$out/baseline_build.log" 2>&1; echo "rc=$?" >> "$out/baseline_build.log" ) &
  baseline_pid=$!
fi
use_wheels() {  # Ultralytics from the carried wheels (.whl), where the machine has none
  if ! python3 -c "import ultralytics" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/yolo12-site .whl/*.whl \
      > "$out/pip.log" 2>&1 && export PYTHONPATH=/tmp/yolo12-site${PYTHONPATH:+:$PYTHONPATH}
  fi
}
peer_dir=$build/peer
mkdir -p "$peer_dir"
# The peer's compiles, made beforehand while this engine builds (bench and peer modes): PEER_WARM_JOBS processes at
# once (default 4; 0 skips it), one process per compile in the order the peer needs them, fill Inductor's on-disk
# caches, so the peer's own compiles (20-40 s each, one after another) mostly hit them. It is waited for before the
# peer times anything: nothing else runs while it does. (Thirty-second session, H100: ten processes beside the
# build, one per scale and batch, ended no channels_last compile in 240 s; the contiguous ones they ended took the
# peer 3-12 s instead of 20-30.)
warm_pid=""
if { [ "$mode" = bench ] || [ "$mode" = peer ]; } && [ "${PEER_WARM_JOBS:-4}" != 0 ] && [ -n "${PEER_COMPILE:-n}" ]; then
  use_wheels
  rm -rf /tmp/yolo12-peer-warm  # its logs are counted below: none from an earlier call on a warm machine
  ( PYTHONUNBUFFERED=1 YOLO_OFFLINE=1 timeout "${PEER_WARM_TIMEOUT:-300}" python3 bench/torch_peer.py warm \
      --save-dir /tmp/yolo12-peer-warm --scales "${PEER_SCALES:-n,s,m,l,x}" --batches "${PEER_BATCHES:-1,32}" \
      --compile "${PEER_COMPILE:-n}" --jobs "${PEER_WARM_JOBS:-4}" > "$out/peer_warm.log" 2>&1
    echo "rc=$?" >> "$out/peer_warm.log" ) &
  warm_pid=$!
fi
build_rc=0
[ "$mode" != peer ] && [ "$mode" != cli ] && [ $prebuilt_ours = 0 ] && { timeout 420 cmake --build "$build" -j"$jobs" --target "${targets[@]}" > "$out/build.log" 2>&1; build_rc=$?; }
if [ $build_rc -ne 0 ]; then
  # Build what does build: one target at a time, so one broken test does not hide the others.
  for t in "${targets[@]}"; do timeout 300 cmake --build "$build" -j"$jobs" --target "$t" >> "$out/build.log" 2>&1 || note "build of $t FAILED"; done
elif [ $prebuilt_ours = 1 ]; then
  note "no build: ours from OURS_BENCH=$OURS_BENCH"
elif [ "$mode" != peer ] && [ "$mode" != cli ]; then
  note "build ok (${#targets[@]} targets)"
fi
grep -E "error" "$out/build.log" 2>/dev/null | head -20
# WHILE_WARM: a command run after the build and before ours or the peer times anything, e.g. the GPU tests of a
# carried build (tools/dev/call_prebuilt.sh test NAME). In bench and peer modes it runs while the peer's warm step
# compiles, which leaves the GPU mostly idle for its 200-240 s (only the compiles' speed is shared).
if [ -n "${WHILE_WARM:-}" ]; then
  bash -c "$WHILE_WARM" > "$out/while_warm.log" 2>&1
  note "while warm: rc=$? ($out/while_warm.log)"
fi

# ---- models --------------------------------------------------------------------------------------
export_model() {  # src dst
  [ -f "$2" ] && return 0
  timeout 120 python3 exporter/export.py "$1" -o "$2" >> "$out/export.log" 2>&1 || note "export of $1 FAILED"
}
# The fixture models and images of the whole GPU suite: for test/all, and for perf with PERF_ALL_TESTS=1.
full_suite=0
{ [ "$mode" = all ] || [ "$mode" = test ] || [ "$mode" = sanitize ] || { [ "$mode" = perf ] && [ "${PERF_ALL_TESTS:-0}" = 1 ]; }; } && full_suite=1
if [ $full_suite = 1 ]; then
  for pt in tests/data/*.pt; do [ -f "$pt" ] && export_model "$pt" "$models/$(basename "${pt%.*}").y12"; done
  # Fixtures that live in the shared data folder (root "shared" in fixtures.json), if carried.
  if [ -d .carry/shared ]; then
    export YOLO12_SHARED_DATA=$root/.carry/shared
    for pt in .carry/shared/fixtures/*.pt; do [ -f "$pt" ] && export_model "$pt" "$models/$(basename "${pt%.*}").y12"; done
  fi
  # The shared images, decoded to uint8 BGR .npy.gz for test_model_gpu (no OpenCV C++ here; the
  # Python cv2 decodes them exactly as OpenCV does on the CPU side).
  if [ -d .carry/shared/images ]; then
    export YOLO12_DECODED_DIR=$build/decoded
    mkdir -p "$YOLO12_DECODED_DIR"
    timeout 60 python3 - .carry/shared/images "$YOLO12_DECODED_DIR" >> "$out/export.log" 2>&1 <<'PY' || note "decoding the shared images FAILED"
import gzip, os, sys
import cv2
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
for name in ("bus", "zidane"):
    bgr = cv2.imread(os.path.join(src, name + ".jpg"), cv2.IMREAD_COLOR)
    with gzip.open(os.path.join(dst, name + "_bgr.npy.gz"), "wb") as f:
        np.save(f, np.ascontiguousarray(bgr))
PY
  fi
fi
if [ $full_suite = 1 ] || [ "$mode" = cli ]; then
  for onnx in .carry/weights/*.onnx; do [ -f "$onnx" ] && export_model "$onnx" "$models/$(basename "${onnx%.*}").y12"; done
  ls "$models" > "$out/models.txt" 2>&1
  note "models: $(ls "$models" | tr '\n' ' ')"
fi

# ---- the carried CLI -----------------------------------------------------------------------------
# .carry/cli/yolo12-infer is built elsewhere (tools/dev/build_cli_static.sh: static OpenCV, static CUDA
# runtime), since this machine has no OpenCV C++. It runs on the shared images with the real YOLO11n and
# YOLOv8n on the CPU, on CUDA and on CUDA in FP16; tools/dev/compare_detections.py compares the JSON Lines.
cli_check() {
  local cli=$root/.carry/cli/yolo12-infer imgs=() m y12 run name label rc
  for f in .carry/shared/images/*.jpg; do [ -f "$f" ] && imgs+=("$f"); done
  if [ ! -x "$cli" ]; then
    note "cli: skipped (no .carry/cli/yolo12-infer: build it with tools/dev/build_cli_static.sh and carry .carry/cli)"
    return
  fi
  if [ ${#imgs[@]} = 0 ]; then
    note "cli: skipped (no .carry/shared/images/*.jpg)"
    return
  fi
  timeout 30 "$cli" --version > "$out/cli_version.log" 2>&1
  rc=$?
  note "cli: $(head -1 "$out/cli_version.log") (--version rc=$rc)"
  for m in yolo11n yolov8n; do
    y12=$models/${m}_coco_int8dyn_320.y12
    if [ ! -f "$y12" ]; then
      note "cli $m: skipped (no $(basename "$y12"): carry .carry/weights)"
      continue
    fi
    timeout 30 "$cli" --model "$y12" --info > "$out/cli_info_$m.log" 2>&1
    rc=$?
    note "cli $m --info: rc=$rc $(grep -m1 -E '^family' "$out/cli_info_$m.log")"
    for run in "cpu:--device cpu" "cuda:--device cuda" "cuda_half:--device cuda --half"; do
      name=${run%%:*}
      # shellcheck disable=SC2086
      timeout 120 "$cli" --model "$y12" ${run#*:} --verbose --json "$out/cli_${m}_$name.jsonl" "${imgs[@]}" \
        > "$out/cli_${m}_$name.log" 2>&1
      rc=$?
      [ $rc = 0 ] || note "cli $m $name: rc=$rc $(grep -m1 -E 'error' "$out/cli_${m}_$name.log")"
    done
    for run in "cuda:cuda fp32:" "cuda_half:cuda fp16:--min-score 0.3 --box-tol 2"; do
      name=${run%%:*}
      label=${run#*:}
      label="cli $m ${label%%:*} vs cpu"
      if [ ! -s "$out/cli_${m}_cpu.jsonl" ] || [ ! -s "$out/cli_${m}_$name.jsonl" ]; then
        note "$label: not compared (a run wrote no JSON Lines)"
        continue
      fi
      # shellcheck disable=SC2086
      note "$(timeout 60 python3 tools/dev/compare_detections.py --label "$label" ${run##*:} \
        "$out/cli_${m}_cpu.jsonl" "$out/cli_${m}_$name.jsonl" 2>&1 | tail -1)"
    done
  done
}

# ---- tests ---------------------------------------------------------------------------------------
san_jobs=()
# The whole-model fixtures the sanitizer processes take one at a time (the random yolo12n and the narrow yolo12l at
# 320, which between them use every kernel the model executor has), and the test_roofline case they leave out: it
# checks the measured ceilings' plausibility, and under a sanitizer the copy and MMA loops ran 14-400 times slower
# (thirty-fifth session), so its lower bounds failed with nothing wrong.
san_fixtures_default="yolo12n_rand_bus_320 yolo12l_narrow_rand_bus_320"
roofline_timing_case="measure_roofline*"
# The test runs inside a shell that prints its exit status ("[test exit status N]": 128 + N for signal N), so a process
# that ends without Catch2's summary (test_conv_chain's whole-model case under racecheck, fifteenth and sixteenth
# sessions) says how it ended; where GNU time is installed, sanitizer_<tool>_<name>.time has the peak memory
# (Maximum resident set size) of the sanitizer and the test. san_report adds both to the summary, and the kernel's
# out-of-memory kills, if any, to dmesg_oom.txt.
san_job() {  # tool test name catch-filter [env VAR=value ...]: one sanitizer process in the background
  local tool=$1 t=$2 name=$3 catch_filter=$4; shift 4
  # SANITIZE_TOOLS (default both): e.g. racecheck alone, where memcheck of the same cases is already clean.
  case " ${SANITIZE_TOOLS:-memcheck racecheck} " in *" $tool "*) ;; *) return 0 ;; esac
  local timev=()
  [ -x /usr/bin/time ] && timev=(/usr/bin/time -v -o "$out/sanitizer_${tool}_$name.time")
  ( timeout "${SANITIZE_TIMEOUT:-360}" "$@" "${timev[@]}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
      --target-processes all sh -c '"$0" "$@"; s=$?; echo "[test exit status $s]"; exit $s' "$build/tests/$t" \
      "${SANITIZE_FILTER:-$catch_filter}" > "$out/sanitizer_${tool}_$name.log" 2>&1; echo $? > "$out/sanitizer_${tool}_$name.rc" ) &
  san_jobs+=("$tool $name")
}
# tune_cache_run CACHE FIXTURE LOG TEST FILTER [VAR=value ...]: TEST's FILTER cases on FIXTURE without a sanitizer
# (under the VAR=value settings), so that kernel tuning writes its choices into CACHE for the sanitizer processes that
# follow to read; a note says how many entries CACHE holds then.
tune_cache_run() {
  local cache=$1 fx=$2 log=$3 t=$4 filter=$5
  shift 5
  env "$@" YOLO12_CONV_TUNE_CACHE="$cache" YOLO12_TEST_FIXTURE="$fx" timeout 180 "$build/tests/$t" "$filter" > "$log" 2>&1
  note "tune cache for $t on $fx: rc=$? ($(($(wc -l < "$cache" 2>/dev/null || echo 1) - 1)) entries in all)"
}
# The whole-model test under the sanitizers, split into processes that run at once, on the fixtures of
# SANITIZE_MODEL_FIXTURES (default the random yolo12n and the narrow yolo12l at 320, which between them
# use every kernel the model executor has). Each process prints where it got to ("[model] ... at N s").
#  - The tuned part's kernel choices are timed first without a sanitizer (a few seconds) into a tune
#    cache, $out/tune_cache.txt; the sanitizer processes take every tuned choice from it, so they run the
#    tuned kernels without timing every candidate (each candidate kernel is sanitized on its own in
#    test_conv '[tune]').
#  - racecheck: one process per fixture and part (fp32, serial, batch2, fp16, tuned: YOLO12_TEST_MODEL_PARTS),
#    the pinned/device-memory case in two processes (fp32 and the CPU refusal; fp16: YOLO12_TEST_PINNED_PARTS),
#    the refused-options case, and the real-image case narrowed to one model, image and size (YOLO11n on bus at
#    320 by default) in three processes (images, batch, clone: YOLO12_TEST_REAL_PARTS). The twenty-sixth session's
#    pinned and batch-and-clone processes, one each then, reached a 300 s limit among 18 processes on 16 cores.
#  - memcheck: one process per fixture (every part), one for the other cases, one for the real-image case.
# SANITIZE_MODEL_JOBS (default all: "fixtures pinned refused others real") picks these groups, e.g. "pinned real" with
# a long SANITIZE_TIMEOUT to give the slowest racecheck processes the machine.
san_model_jobs() {
  local fx part cache=$out/tune_cache.txt groups=" ${SANITIZE_MODEL_JOBS:-fixtures pinned refused others real} "
  rm -f "$cache"
  [[ $groups == *" fixtures "* ]] && for fx in ${SANITIZE_MODEL_FIXTURES:-$san_fixtures_default}; do
    tune_cache_run "$cache" "$fx" "$out/tune_cache_$fx.log" test_model_gpu "[fixture]" YOLO12_TEST_MODEL_PARTS=tuned
  done
  local real=("YOLO12_TEST_REAL_MODEL=${SANITIZE_REAL_MODEL:-yolo11n}" "YOLO12_TEST_REAL_SIZE=${SANITIZE_REAL_SIZE:-320}"
              "YOLO12_TEST_REAL_IMAGE=${SANITIZE_REAL_IMAGE:-bus}")
  [[ $groups == *" fixtures "* ]] && for fx in ${SANITIZE_MODEL_FIXTURES:-$san_fixtures_default}; do
    for part in fp32 serial batch2 fp16 tuned; do
      san_job racecheck test_model_gpu "test_model_gpu_${fx}_$part" "[fixture]~[big]" env "YOLO12_TEST_FIXTURE=$fx" \
        "YOLO12_TEST_MODEL_PARTS=$part" "YOLO12_CONV_TUNE_CACHE=$cache" YOLO12_CONV_TUNE_QUICK=1
    done
    san_job memcheck test_model_gpu "test_model_gpu_$fx" "[fixture]~[big]" env "YOLO12_TEST_FIXTURE=$fx" \
      "YOLO12_CONV_TUNE_CACHE=$cache" YOLO12_CONV_TUNE_QUICK=1
  done
  if [[ $groups == *" pinned "* ]]; then
    san_job racecheck test_model_gpu test_model_gpu_pinned_fp32 "CUDA backend: images in pinned*" env \
      YOLO12_TEST_PINNED_PARTS=fp32,cpu
    san_job racecheck test_model_gpu test_model_gpu_pinned_fp16 "CUDA backend: images in pinned*" env \
      YOLO12_TEST_PINNED_PARTS=fp16
  fi
  [[ $groups == *" refused "* ]] &&
    san_job racecheck test_model_gpu test_model_gpu_refused "CUDA backend: options and inputs it refuses"
  [[ $groups == *" others "* ]] && san_job memcheck test_model_gpu test_model_gpu_others "~[fixture]~[real]~[big]"
  if [[ $groups == *" real "* ]]; then
    san_job racecheck test_model_gpu test_model_gpu_real_images "[real]" env "${real[@]}" YOLO12_TEST_REAL_PARTS=images
    san_job racecheck test_model_gpu test_model_gpu_real_batch "[real]" env "${real[@]}" YOLO12_TEST_REAL_PARTS=batch
    san_job racecheck test_model_gpu test_model_gpu_real_clone "[real]" env "${real[@]}" YOLO12_TEST_REAL_PARTS=clone
    san_job memcheck test_model_gpu test_model_gpu_real "[real]" env "${real[@]}"
  fi
  return 0
}
san_report() {  # waits for the sanitizer processes, one summary line each
  wait
  local j rc summ passed
  for j in "${san_jobs[@]}"; do
    set -- $j
    rc=$(cat "$out/sanitizer_$1_$2.rc" 2>/dev/null || echo "?")
    summ=$(grep -m1 -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$1_$2.log")
    passed=$(grep -m1 -E 'All tests passed|test cases' "$out/sanitizer_$1_$2.log")
    local status mem=""
    status=$(grep -o '\[test exit status [0-9]*\]' "$out/sanitizer_$1_$2.log" | tail -1)
    [ -f "$out/sanitizer_$1_$2.time" ] && mem="| peak $(awk -F': ' '/Maximum resident set size/ {printf "%d MiB", $2 / 1024}' \
      "$out/sanitizer_$1_$2.time")"
    note "compute-sanitizer $1 $2: $([ "$rc" = 0 ] && echo clean || echo "rc=$rc") | $summ | $passed | ${status:-no exit status} $mem"
  done
  dmesg 2>/dev/null | grep -iE 'out of memory|oom-kill|killed process' | tail -20 > "$out/dmesg_oom.txt"
  [ -s "$out/dmesg_oom.txt" ] && note "dmesg: $(wc -l < "$out/dmesg_oom.txt") out-of-memory lines (dmesg_oom.txt)"
  return 0
}
# The environment of one entry of a variant list (sets envv and name): "name" leaves
# YOLO12_CONV_VARIANTS unset (the defaults), "name=value" sets it, "name:VAR=value[+VAR=value...]"
# sets those variables instead (e.g. serial:YOLO12_CUDA_STREAMS=1, nopdl:YOLO12_CUDA_PDL=0).
variant_env() {
  local pv=$1
  name=${pv%%[=:]*}
  if [ "$pv" = "$name" ]; then envv=(env -u YOLO12_CONV_VARIANTS)
  elif [ "${pv:${#name}:1}" = ":" ]; then local r=${pv#*:}; envv=(env -u YOLO12_CONV_VARIANTS ${r//+/ })
  else envv=(env "YOLO12_CONV_VARIANTS=${pv#*=}"); fi
}
# Per-op profile of a model fp16 at batch 1 and 32 (default yolo12n_rand.y12) under each conv-variant
# setting of the list (entries as variant_env reads them), into profile_<prefix><name>.log/json.
profile_variants() {
  local pv name envv model=${2:-$models/yolo12n_rand.y12} prefix=${3:-}
  [ -x "$build/yolo12-bench" ] && [ -f "$model" ] || { note "profile: skipped (no yolo12-bench or $(basename "$model"))"; return; }
  for pv in $1; do
    variant_env "$pv"
    local log=$out/profile_$prefix$name.log
    "${envv[@]}" timeout 120 "$build/yolo12-bench" "$model" --batch 1,32 --precision fp16 \
      --iters 50 --warmup 10 --profile-ops 40 --json "$out/profile_$prefix$name.json" > "$log" 2>&1
    note "profile ($prefix$name): $(grep -E '^[nsmlx] fp16' "$log" | tr -s ' ' | cut -c1-60 | tr '\n' ';')"
  done
}
# san_tag_jobs TEST TAG: memcheck and racecheck of TEST's cases tagged TAG (host-only cases left out), one process
# each. Kernel tuning inside a sanitizer runs each candidate once (YOLO12_CONV_TUNE_QUICK), as in the whole-model
# jobs: test_conv_chain's whole-model case tunes, and under racecheck it died while tuning (fifteenth session).
# SANITIZE_FIXTURES="name ...": a `model` tag (a fused kernel's whole-model case: test_dw_branch, test_halo_pair,
# test_stem_pair) is run per fixture instead (YOLO12_TEST_FIXTURE, which model_fixtures.hpp's for_each_model_fixture
# reads), as san_model_jobs runs test_model_gpu:
#  - its tuned choices first, without a sanitizer, into a tune cache per test and fixture, which the sanitized
#    processes read instead of timing every candidate;
#  - memcheck: one process per fixture, every part;
#  - racecheck: one process per fixture and part (SANITIZE_VARIANT_PARTS, default "plain on tuned steps":
#    YOLO12_TEST_VARIANT_PARTS, model_fixtures.hpp).
# Why: test_dw_branch's whole-model case under racecheck, both fixtures in one process, grew to 127 GB and was killed
# (thirty-second session); so did the narrow yolo12l fixture alone, every part in one process, at 130 GB after 240 s
# (thirty-fourth session). The yolo12n fixture at 320 alone passed clean.
san_tag_jobs() {
  local fx tool part cache
  if [ "$2" = model ] && [ -n "${SANITIZE_FIXTURES:-}" ]; then
    for fx in $SANITIZE_FIXTURES; do
      cache=$out/tune_cache_${1}_$fx.txt
      rm -f "$cache"
      tune_cache_run "$cache" "$fx" "$out/tune_cache_${1}_$fx.log" "$1" "[model]~[host]" YOLO12_CONV_TUNE_QUICK=1 \
        YOLO12_TEST_VARIANT_PARTS=tuned
      san_job memcheck "$1" "${1}_model_$fx" "[model]~[host]" env YOLO12_CONV_TUNE_QUICK=1 "YOLO12_TEST_FIXTURE=$fx" \
        "YOLO12_CONV_TUNE_CACHE=$cache"
      for part in ${SANITIZE_VARIANT_PARTS:-plain on tuned steps}; do
        san_job racecheck "$1" "${1}_model_${fx}_$part" "[model]~[host]" env YOLO12_CONV_TUNE_QUICK=1 \
          "YOLO12_TEST_FIXTURE=$fx" "YOLO12_CONV_TUNE_CACHE=$cache" "YOLO12_TEST_VARIANT_PARTS=$part"
      done
    done
    return
  fi
  for tool in memcheck racecheck; do
    san_job "$tool" "$1" "${1}_$2" "[$2]~[host]" env YOLO12_CONV_TUNE_QUICK=1
  done
}
san_start() {  # the sanitizer processes of the tests in $1 (started in the background; san_report waits)
  local t
  for t in $1; do
    case "$t" in  # "test:tag": that tag's cases only (e.g. test_conv:splitk)
      *:*) [ -x "$build/tests/${t%%:*}" ] && san_tag_jobs "${t%%:*}" "${t#*:}"
           continue ;;
    esac
    [ -x "$build/tests/$t" ] || continue
    if [ "$t" = test_model_gpu ]; then san_model_jobs; continue; fi
    local filter
    filter=$(san_whole_filter "$t")
    [[ $filter == *"~[model]"* ]] &&
      note "$t: its [model] cases left to SANITIZE_TESTS=$t:model SANITIZE_FIXTURES=\"$san_fixtures_default\" tools/gpu_check.sh sanitize"
    san_job memcheck "$t" "$t" "$filter"
    san_job racecheck "$t" "$t" "$filter"
  done
}
# The Catch2 filter of a whole test's sanitizer processes: every case but the [big] ones, and
#  - for the tests with whole-model cases ([model]: the fused kernels' and the chain kernel's), not those: with every
#    part in one process they outgrew the machine's memory under racecheck and ran past 500 s under memcheck
#    (thirty-fifth session: test_dw_branch killed at 114 GB, test_conv_chain at 100 GB). They run as `TEST:model`
#    entries with SANITIZE_FIXTURES instead (san_tag_jobs: one process per fixture and part), which san_start's note
#    names;
#  - for test_roofline, not $roofline_timing_case (above; the probes' other cases stay).
san_whole_filter() {
  case "$1" in
    test_dw_branch | test_halo_pair | test_stem_pair | test_conv_chain) echo "~[big]~[model]" ;;
    test_roofline) echo "~[big]~$roofline_timing_case" ;;
    *) echo "~[big]" ;;
  esac
}
if [ "$mode" = sanitize ]; then
  export YOLO12_TEST_MODELS=$models
  # SANITIZE_PLAIN_RUNS="test:filter ...": those tests run first without a sanitizer (e.g.
  # "test_conv:[cache] test_model_gpu:"; an empty filter runs the whole test), into plain_<test>.log.
  for r in ${SANITIZE_PLAIN_RUNS:-}; do
    t=${r%%:*} f=${r#*:}
    [ -x "$build/tests/$t" ] || { note "$t: not built"; continue; }
    timeout 300 "$build/tests/$t" ${f:+"$f"} > "$out/plain_$t.log" 2>&1
    note "$t ${f:-(all cases)}: rc=$? | $(grep -m1 -E 'All tests passed|test cases' "$out/plain_$t.log")"
  done
  san_start "${SANITIZE_TESTS:-test_model_gpu}"
  san_report
fi
if [ "$mode" = all ] || [ "$mode" = test ]; then
  export YOLO12_TEST_MODELS=$models
  (cd "$build" && timeout 900 ctest -L gpu ${CTEST_REGEX:+-R "$CTEST_REGEX"} --output-on-failure --timeout 400 > "$out/ctest.log" 2>&1)
  note "ctest -L gpu: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)"
  grep -E "^\[model\]|^\[real\]" -r "$build/Testing/Temporary/LastTest.log" 2>/dev/null | head -40 > "$out/model_numbers.txt"
  # compute-sanitizer, memcheck and racecheck, on every GPU test: one process per (test, tool), all at
  # once (the sanitizers are slow on the host side, the GPU is mostly idle), each under its own limit.
  # Cases tagged [big] (full-size heads, thousands of candidates) are left to the plain run. The example
  # application builds and runs meanwhile.
  san_start "${SANITIZE_TESTS:-"${gpu_tests[*]}"}"
  if [ "${EXAMPLE_APP:-1}" = 1 ] && [ -f tests/example_app/check.sh ] && [ -f "$models/yolo12n_rand.y12" ]; then
    timeout 300 bash tests/example_app/check.sh "$build" "$models/yolo12n_rand.y12" cuda > "$out/example_app.log" 2>&1
    note "example app (find_package, cuda): rc=$? $(tail -1 "$out/example_app.log")"
  fi
  cli_check
  san_report
  # Per-op profile of yolo12n under each conv-variant setting of PROFILE_VARIANTS: the defaults, the third
  # session's defaults (split-K on, the narrow and tiled depthwise kernels off), the plain kernels.
  profile_variants "${PROFILE_VARIANTS:-default prev=f16_bk64,dw_one_output,f16_split_k plain=none}"
fi

[ "$mode" = cli ] && cli_check

# ---- perf: the kernel-performance call -----------------------------------------------------------
# Timings first, on an otherwise idle GPU; the sanitizers last, in the time left (each process stops
# at PERF_BUDGET, its log says how far it got).
if [ "$mode" = perf ]; then
  export_model tests/data/yolo12n_rand.pt "$models/yolo12n_rand.y12"
  use_wheels
  scales=${PERF_SCALES:-n,s}
  PYTHONUNBUFFERED=1 YOLO_OFFLINE=1 timeout 120 python3 bench/torch_peer.py save --save-dir "$build/peer" \
    --scales "$scales" > "$out/peer_save.log" 2>&1 || note "torch_peer.py save FAILED (see peer_save.log)"
  for sc in ${scales//,/ }; do
    [ -f "$build/peer/yolo12${sc}_peer.pt" ] && export_model "$build/peer/yolo12${sc}_peer.pt" "$models/yolo12${sc}_peer.y12"
  done
  note "models: $(ls "$models" | tr '\n' ' ')"
  [ $full_suite = 1 ] && export YOLO12_TEST_MODELS=$models
  (cd "$build" && timeout 300 ctest -R "${CTEST_REGEX:-^test_(conv|preprocess|roofline)\$}" --output-on-failure --timeout 240 \
    > "$out/ctest.log" 2>&1)
  note "ctest: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1) ($((SECONDS - started)) s so far)"
  # The variants of this step (conv_detail.cuh): on by default; prev = the third session's defaults
  # (split-K on, the new kernels off); nonarrow / nodwtiled = one of the two new groups off.
  old_v=f16_bk64,dw_one_output,f16_split_k
  profile_variants "${PERF_VARIANTS:-default prev=$old_v nonarrow=$old_v,dw_tiled_f16 allnarrow=$old_v,f16_narrow,f16_narrow_wide,f16_narrow_stem,dw_tiled_f16}"
  # PERF_PROFILE_SCALES (e.g. "x"): the per-op profile of those scales too (the peer's weights), under each
  # setting of PERF_PROFILE_SCALE_VARIANTS (default: the defaults), into profile_yolo12<scale>_<name>.log/json.
  for sc in ${PERF_PROFILE_SCALES:-}; do
    profile_variants "${PERF_PROFILE_SCALE_VARIANTS:-default}" "$models/yolo12${sc}_peer.y12" "yolo12${sc}_"
  done
  for sc in ${scales//,/ }; do
    y12=$models/yolo12${sc}_peer.y12
    [ -f "$y12" ] || { note "yolo12-bench yolo12$sc: skipped (no $(basename "$y12"))"; continue; }
    for pv in ${PERF_BENCH_VARIANTS:-default serial:YOLO12_CUDA_STREAMS=1 nopdl:YOLO12_CUDA_PDL=0}; do
      variant_env "$pv"
      "${envv[@]}" timeout 90 "$build/yolo12-bench" "$y12" --batch 1,32 --precision fp16 --iters 100 \
        --json "$out/bench_yolo12${sc}_$name.json" > "$out/bench_yolo12${sc}_$name.log" 2>&1 || note "yolo12-bench yolo12$sc ($name) FAILED"
      note "bench yolo12$sc ($name): $(grep -F "net(graph)" "$out/bench_yolo12${sc}_$name.log" | tr -s ' ' | cut -c1-45 | tr '\n' ';')"
    done
  done
  # End to end over device lists (yolo12-multi-bench: DetectorPool, a worker per entry, synthetic
  # 1280x720 frames, batch 32, fp16): PERF_MULTI_DEVICES, default "0 0,0" (one GPU, then two detectors
  # on it: the pool's code paths; real scaling needs a second GPU, e.g. "0 0,1").
  if [ -x "$build/yolo12-multi-bench" ]; then
    mscales=${PERF_MULTI_SCALES:-$scales}
    for sc in ${mscales//,/ }; do
      y12=$models/yolo12${sc}_peer.y12
      [ -f "$y12" ] || [ "$sc" != n ] || y12=$models/yolo12n_rand.y12  # the fixture's yolo12n, if no peer weights
      [ -f "$y12" ] || continue
      margs=(); for l in ${PERF_MULTI_DEVICES:-0 0,0}; do margs+=(--devices "$l"); done
      for mb in ${PERF_MULTI_BATCHES:-32}; do
      for inp in ${PERF_MULTI_INPUTS:-host}; do  # where the frames are: host, pinned, device
      for pv in ${PERF_MULTI_VARIANTS:-default}; do  # settings as PERF_BENCH_VARIANTS'
        variant_env "$pv"
        sfx=$([ "$inp" = host ] || echo "_$inp")$([ "$mb" = 32 ] || echo "_b$mb")$([ "$name" = default ] || echo "_$name")
        "${envv[@]}" timeout 60 "$build/yolo12-multi-bench" "$y12" "${margs[@]}" --batch "$mb" --half --seconds 4 --warmup 2 \
          --input "$inp" --json "$out/multi_yolo12${sc}${sfx}.json" > "$out/multi_yolo12${sc}${sfx}.log" 2>&1 ||
          note "yolo12-multi-bench yolo12$sc ($inp, batch $mb, $name) FAILED"
        note "multi yolo12$sc ($inp, batch $mb, $name): $(tail -n 4 "$out/multi_yolo12${sc}${sfx}.log" | tr -s ' ' | tr '\n' ';' | cut -c1-200)"
      done
      done
      done
    done
  fi
  if [ -n "${baseline_pid:-}" ]; then
    wait "$baseline_pid"
    if [ -x "$baseline_dir/build/yolo12-bench" ]; then
      for sc in ${scales//,/ }; do
        pt=$build/peer/yolo12${sc}_peer.pt
        [ -f "$pt" ] || continue
        # The baseline reads its own format version: export with its own exporter.
        exp=$baseline_dir/src/exporter/export.py; [ -f "$exp" ] || exp=$baseline_dir/src/tools/export.py
        timeout 120 python3 "$exp" "$pt" -o "$baseline_dir/yolo12${sc}.y12" >> "$out/export.log" 2>&1
        timeout 90 "$baseline_dir/build/yolo12-bench" "$baseline_dir/yolo12${sc}.y12" --batch 1,32 --precision fp16 --iters 100 \
          --json "$out/bench_yolo12${sc}_baseline.json" > "$out/bench_yolo12${sc}_baseline.log" 2>&1 || note "baseline yolo12-bench yolo12$sc FAILED"
        note "bench yolo12$sc (baseline): $(grep -F "net(graph)" "$out/bench_yolo12${sc}_baseline.log" | tr -s ' ' | cut -c1-45 | tr '\n' ';')"
      done
    else
      note "baseline: build FAILED (see baseline_build.log)"
    fi
  fi
  # ncu_b32 FILE MODEL ARGS...: Nsight Compute's counters for yolo12-bench fp16 at batch 32 on one stream, the kernels
  # that ARGS (ncu options: --launch-count, -k) pick, into FILE; the caller's environment (YOLO12_CONV_VARIANTS) holds.
  ncu_b32() {
    local file=$1 model=$2
    shift 2
    YOLO12_CUDA_STREAMS=1 timeout "${PERF_NCU_TIMEOUT:-200}" ncu --clock-control none "$@" --section SpeedOfLight \
      --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats \
      "$build/yolo12-bench" "$model" --batch 32 --precision fp16 --iters 2 --warmup 0 > "$file" 2>&1
    local rc=$?
    echo "rc=$rc ($(grep -c 'GPU Speed Of Light' "$file") kernels, $((SECONDS - started)) s so far)"
  }
  # PERF_NCU=1: the first PERF_NCU_COUNT (default 16) kernels of yolo12n (the letterbox, then the network's ops in
  # order), into ncu_yolo12n_b32.txt.
  if [ "${PERF_NCU:-0}" = 1 ] && command -v ncu > /dev/null && [ -f "$models/yolo12n_rand.y12" ]; then
    note "ncu: $(ncu_b32 "$out/ncu_yolo12n_b32.txt" "$models/yolo12n_rand.y12" --launch-count "${PERF_NCU_COUNT:-16}")"
  fi
  # PERF_NCU_REGEX (e.g. gemm_tma): the first PERF_NCU_COUNT (default 3) kernels whose names match it, on each scale of
  # PERF_NCU_SCALES (default n; the peer's weights), with YOLO12_CONV_VARIANTS set to PERF_NCU_VARIANTS where given
  # (the scheduler's counters too), into ncu_<scale>_b32.txt.
  if [ -n "${PERF_NCU_REGEX:-}" ] && command -v ncu > /dev/null; then
    for sc in ${PERF_NCU_SCALES:-n}; do
      y12=$models/yolo12${sc}_peer.y12
      [ -f "$y12" ] || { note "ncu yolo12$sc: skipped (no $(basename "$y12"))"; continue; }
      note "ncu yolo12$sc ($PERF_NCU_REGEX): $(
        [ -n "${PERF_NCU_VARIANTS:-}" ] && export YOLO12_CONV_VARIANTS=$PERF_NCU_VARIANTS
        ncu_b32 "$out/ncu_${sc}_b32.txt" "$y12" -k "regex:$PERF_NCU_REGEX" --launch-count "${PERF_NCU_COUNT:-3}" \
          --section SchedulerStats)"
    done
  fi
  # PERF_GEMM_PROBE=1: cuBLAS on the GEMMs of yolo12's 1x1 convs (tools/dev/gemm_probe.cu), a reference for what
  # the GPU reaches on those shapes, into gemm_probe.txt.
  if [ "${PERF_GEMM_PROBE:-0}" = 1 ]; then
    nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
    if timeout 120 "$nvcc_bin" -O2 -std=c++17 -arch=sm_90a tools/dev/gemm_probe.cu -lcublas -o "$build/gemm_probe" > "$out/gemm_probe.txt" 2>&1; then
      timeout 60 "$build/gemm_probe" >> "$out/gemm_probe.txt" 2>&1
      note "gemm_probe: rc=$? ($(grep -c cublas "$out/gemm_probe.txt") shapes)"
    else
      note "gemm_probe: build FAILED (see gemm_probe.txt)"
    fi
  fi
  left=$(time_left)
  if [ "$left" -lt 30 ]; then
    note "compute-sanitizer: skipped (only ${left} s of PERF_BUDGET left)"
  else
    SANITIZE_TIMEOUT=${SANITIZE_TIMEOUT:-$left}
    for tag in ${PERF_SAN_TAGS:-narrow dwtiled}; do  # one process per kernel, so a slow one cannot leave the other unchecked
      san_test=test_conv  # "test:tag" for a tag of another GPU test (test_conv_chain:chain)
      case "$tag" in *:*) san_test=${tag%%:*}; tag=${tag#*:} ;; esac
      san_tag_jobs "$san_test" "$tag"
    done
    san_job memcheck test_roofline test_roofline "[roofline]~[host]~$roofline_timing_case"
    if [ -x "$build/tests/test_ops_gpu" ]; then  # the shared op suite (PERF_ALL_TESTS=1 builds it)
      san_job memcheck test_ops_gpu test_ops_gpu '*'
      san_job racecheck test_ops_gpu test_ops_gpu '*'
    fi
    san_job memcheck test_preprocess test_preprocess '*'
    if [ "${PERF_SAN_MODEL:-0}" = 1 ] && [ -x "$build/tests/test_model_gpu" ]; then
      export YOLO12_TEST_MODELS=$models  # PERF_SAN_MODEL=1: the whole-model test too, as `test` runs it
      san_model_jobs
    fi
    san_report
  fi
  note "perf: $((SECONDS - started)) s"
fi

# ---- benchmark -----------------------------------------------------------------------------------
# bench / all: this engine first (on the peer's weights, saved first where missing), then the peer, then the table,
# so that a peer stopped by its time limit still leaves ours of every scale (thirty-second session: the call's limit
# stopped the ours step that came after a long peer).
ours=()
ours_step() {
  # OURS_SCALES (in bench / all: the peer's scales by default): the peer weights of these scales are written first
  # where the peer has not saved them (before the peer runs, or on a fresh machine after `peer` ran in an earlier
  # call), so `ours` times every scale of a split peer run.
  local scales=${OURS_SCALES:-} missing pt y12 j
  [ "$mode" != ours ] && scales=${OURS_SCALES:-${PEER_SCALES:-n,s,m,l,x}}
  if [ -n "$scales" ]; then
    use_wheels
    missing=$(for sc in ${scales//,/ }; do [ -f "$peer_dir/yolo12${sc}_peer.pt" ] || printf '%s,' "$sc"; done)
    [ -n "$missing" ] && YOLO_OFFLINE=1 timeout 120 python3 bench/torch_peer.py save --save-dir "$peer_dir" \
      --scales "${missing%,}" >> "$out/peer_save.log" 2>&1
  fi
  for pt in "$peer_dir"/yolo12*_peer.pt; do
    [ -f "$pt" ] || continue
    y12=$models/$(basename "${pt%.*}").y12
    export_model "$pt" "$y12"
    [ -f "$y12" ] || continue
    j=$out/bench_$(basename "${pt%.*}").json
    timeout 240 "$ours_bench" "$y12" --batch "${PEER_BATCHES:-1,32}" --precision "${OURS_PRECISIONS:-fp16,fp32}" --iters 100 --json "$j" \
      >> "$out/bench.log" 2>&1 && ours+=("$j") || note "yolo12-bench $(basename "$y12") FAILED"
  done
  cat "$out/bench.log"
}
if [ "$mode" = all ] || [ "$mode" = bench ] || [ "$mode" = peer ]; then
  use_wheels
  if [ -n "$warm_pid" ]; then
    wait "$warm_pid"
    note "peer warm: $(grep -E '^warm:|^rc=' "$out/peer_warm.log" | tr '\n' ' ')($(grep -h '^warm ' /tmp/yolo12-peer-warm/warm_*.log 2>/dev/null | wc -l) compiles ended)"
    grep -h '^warm ' /tmp/yolo12-peer-warm/warm_*.log >> "$out/peer_warm.log" 2>/dev/null
  fi
fi
if [ "$mode" = all ] || [ "$mode" = bench ] || [ "$mode" = ours ]; then
  ours_step
fi
if [ "$mode" = all ] || [ "$mode" = bench ] || [ "$mode" = peer ]; then
  # PEER_MERGE=1: keep the rows of the JSON an earlier `peer` left in the build folder (a peer split over calls on
  # one warm machine ends in one table).
  PYTHONUNBUFFERED=1 YOLO_OFFLINE=1 timeout "${PEER_TIMEOUT:-420}" python3 bench/torch_peer.py run \
    --out "$peer_dir/peer.json" --save-dir "$peer_dir" --scales "${PEER_SCALES:-n,s,m,l,x}" \
    --batches "${PEER_BATCHES:-1,32}" --compile "${PEER_COMPILE:-n}" \
    $([ "${PEER_MERGE:-0}" = 1 ] && echo --merge) > "$out/peer.log" 2>&1
  note "torch peer: rc=$? ($(grep -c '^peer' "$out/peer.log") rows)"
  cp "$peer_dir/peer.json" "$out/peer.json" 2>/dev/null
  cat "$out/peer.log" | grep -E "^peer|Error" | head -20
fi
if { [ "$mode" = all ] || [ "$mode" = bench ] || [ "$mode" = ours ]; } && [ -f "$peer_dir/peer.json" ] && [ ${#ours[@]} -gt 0 ]; then
  cp "$peer_dir/peer.json" "$out/peer.json" 2>/dev/null
  python3 bench/torch_peer.py table --peer "$peer_dir/peer.json" --ours "${ours[@]}" \
    --command "${BENCH_COMMAND:-tools/gpu_check.sh $mode}" > "$out/benchmarks-table.md" 2> "$out/table.log"
  cat "$out/benchmarks-table.md"
fi
