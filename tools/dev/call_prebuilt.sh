#!/usr/bin/env bash
# tools/dev/call_prebuilt.sh - a GPU call with no build on the GPU machine, for a session with little device time left.
#
#   tools/dev/call_prebuilt.sh pack BUILD   here: strip yolo12-bench, yolo12-multi-bench and tests/test_preprocess of a
#                                           CUDA build folder
#                                           (e.g. the one `bash .ci/run` leaves in a clean clone: sm_90a, the CUDA
#                                           runtime static, no spdlog) into .carry/prebuilt (yolo12-bench xz-compressed:
#                                           54 MB stripped, 10 MB packed, so it fits the 64 MiB a call carries)
#   tools/dev/call_prebuilt.sh bundle BUILD [TEST...]  here: yolo12-bench and the named GPU tests of a CUDA build
#                                           folder, stripped, in one archive .carry/prebuilt/ab.tar.xz (they share
#                                           most of their code: seven tests and the bench pack to 12.8 MB), for `test`
#                                           and `bench` there
#   tools/dev/call_prebuilt.sh run          there (carry .carry/prebuilt): test_preprocess's GPU cases, its packing
#                                           bench on that machine's cores, and yolo12-bench on the yolo12n fixture
#                                           end to end on 3840x2160 frames with YOLO12_STAGING_HALVES on and off, then
#                                           on 1280x720 frames; output into $OUT/prebuilt_call.txt
#   tools/dev/call_prebuilt.sh multi        there (carry .carry/prebuilt and .whl): yolo12-multi-bench on yolo12n with
#                                           the peer's random weights (bench/torch_peer.py save), 1280x720 host frames,
#                                           3 and 4 detectors at batch 32, 2 and 3 at batch 1; into
#                                           $OUT/prebuilt_multi.txt
#   tools/dev/call_prebuilt.sh spin         there (carry .carry/prebuilt and .whl): the staging pools' poll
#                                           (YOLO12_STAGING_SPIN_US 0 against the default) on yolo12n with the peer's
#                                           random weights and 1280x720 host frames: one detect() at batch 1 and 32
#                                           (yolo12-bench, the two settings alternated twice), yolo12-multi-bench with 1-3
#                                           detectors at batch 1 and 3 at batch 32; into $OUT/prebuilt_spin.txt
#   tools/dev/call_prebuilt.sh tune SCALE   there (carry .carry/prebuilt with yolo12-bench.xz, and .whl): yolo12-bench on
#                                           yolo12SCALE with the peer's random weights, fp16, batch 1 and 32, under the
#                                           defaults, then with kernel tuning and its log (YOLO12_CONV_TUNE=1
#                                           YOLO12_CONV_TUNE_LOG=1, the per-op profile): the `tune` lines for
#                                           tools/dev/tune_log_report.py and yolo12-rule-replay; into
#                                           $OUT/bench_SCALE_default.log and $OUT/profile_SCALE_tuned.log
#                                           (TUNE_BENCH_VARIANTS="+a -b ...": a bench run under each edit of the
#                                           default conv variants too, into $OUT/bench_SCALE_variants.log)
#   tools/dev/call_prebuilt.sh ab SCALES    there (carry .whl, and .carry/prebuilt with both builds in ab.tar.xz, or one
#                                           of them as NAME.xz and the other left in /tmp by the call before on the
#                                           same warm machine): the two builds
#                                           of yolo12-bench alternated twice on each yolo12SCALE of the comma list
#                                           with the peer's random weights, fp16, batch 1 and 32; an A/B of a kernel
#                                           change built here (pack by hand: strip both builds' yolo12-bench to
#                                           yolo12-bench and yolo12-bench-b, tar -cf - both | xz -9e > ab.tar.xz);
#                                           into $OUT/prebuilt_ab.txt
#   tools/dev/call_prebuilt.sh bench SCALES there: one build of yolo12-bench (BIN, default /tmp/yolo12-bench, else the
#                                           carried one; several space-separated builds are alternated, an A/B; an
#                                           entry EDITS@PATH runs PATH under YOLO12_CONV_VARIANTS=EDITS) on
#                                           each yolo12SCALE of the comma list, ROUNDS (2) runs of
#                                           batch 1 and 32 each, fp16, the peer's random weights (carry .whl); into
#                                           $OUT/bench.txt (e.g. after `tools/gpu_check.sh test`, with
#                                           BIN=build-check/yolo12-bench)
#   tools/dev/call_prebuilt.sh test NAME [ARGS]  there (carry .carry/prebuilt with NAME.xz: a GPU test binary built here,
#                                           e.g. tests/test_dw_branch stripped and xz-compressed): the test with the
#                                           Catch2 ARGS, on the fixture models (tests/data/*.pt) exported there, the
#                                           source tree and a scratch binary folder given by environment; under
#                                           compute-sanitizer --tool SANITIZER where that is set (memcheck,
#                                           racecheck); into $OUT/NAME[_SANITIZER].log
#   tools/dev/call_prebuilt.sh profile SCALES  there (carry .carry/prebuilt with yolo12-bench.xz, and .whl): the per-op
#                                           profile (--profile-ops, every op, with the roofline) of each yolo12SCALE of
#                                           the comma list under the default kernels, fp16, batch BATCH (1,32), the
#                                           peer's random weights; into $OUT/profile_SCALE_default.log
#   tools/dev/call_prebuilt.sh ncu SCALE REGEX  there (carry .carry/prebuilt with yolo12-bench.xz, and .whl): Nsight
#                                           Compute on the first COUNT (4) kernels whose names match REGEX (after SKIP)
#                                           in yolo12SCALE at batch BATCH (32), one stream: speed of light, occupancy,
#                                           warp states, pipe use, instruction mix, memory, and the stall reasons of
#                                           tools/dev/ncu_stall_metrics.txt; into $OUT/ncu_SCALE.txt
#
# Binaries built on Debian 12 run on the GPU machine's newer system (twenty-sixth session: the call took 16 s and
# about 45 s of device time with the start). The figures are only as new as the build folder: say which commit
# built it.
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=.carry/prebuilt
# The peer's random weights of yolo12SCALE for each SCALE of a comma list (bench/torch_peer.py save, the carried
# wheels), exported to /tmp/yolo12SCALE_peer.y12; the save's log into $out/peer_save.log.
peer_model() {
  local todo="" s
  for s in ${1//,/ }; do [ -s "/tmp/yolo12${s}_peer.y12" ] || todo="$todo${todo:+,}$s"; done
  [ -z "$todo" ] && return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl &&
    export PYTHONPATH=/tmp/site
  YOLO_OFFLINE=1 timeout 180 python3 bench/torch_peer.py save --save-dir /tmp/peer --scales "$todo" > "$out/peer_save.log" 2>&1 ||
    return 1
  for s in ${todo//,/ }; do
    python3 exporter/export.py "/tmp/peer/yolo12${s}_peer.pt" -o "/tmp/yolo12${s}_peer.y12" > /dev/null || return 1
  done
}
# /tmp/NAME from .carry/prebuilt/NAME.xz, or from .carry/prebuilt/ab.tar.xz (two builds of yolo12-bench in one archive:
# tar -cf - yolo12-bench yolo12-bench-b | xz -9e; 17 MB where two .xz files take 21, which with the tree is over the
# carry limit).
unpack() {
  # Neither archive carried: a build already in /tmp (copied there by this call, or left by the call before on a warm
  # machine) is used as it is.
  [ ! -f "$dir/$1.xz" ] && [ ! -f "$dir/ab.tar.xz" ] && [ -x "/tmp/$1" ] && return 0
  if [ ! -f "$dir/$1.xz" ] && [ -f "$dir/ab.tar.xz" ]; then
    tar -xJf "$dir/ab.tar.xz" -C /tmp "$1" && chmod +x "/tmp/$1"
    return
  fi
  python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('$dir/$1.xz'), open('/tmp/$1', 'wb'))" && chmod +x "/tmp/$1"
}
# ROUNDS (2) rounds on each yolo12SCALE of the comma list $1, each round every build of yolo12-bench given after it in
# turn: fp16, batch 1 and 32, the peer's random weights (peer_model first). A build given as EDITS@PATH runs with
# YOLO12_CONV_VARIANTS=EDITS (e.g. +f16_stem_mma_wide@build-check/yolo12-bench: a variant against the defaults).
bench_exe() { echo "${1#*@}"; }
# The carried yolo12-bench in /tmp and the peer's weights of the comma list $1 (the modes that run one build).
carried_bench_on() { unpack yolo12-bench && peer_model "$1"; }
bench_rounds() {
  local scales=$1 sc round bin exe edits
  shift
  nvidia-smi -L
  for sc in ${scales//,/ }; do
    for round in $(seq "${ROUNDS:-2}"); do
      for bin in "$@"; do
        echo "yolo12$sc round $round $bin"
        exe=$(bench_exe "$bin")
        edits=""
        [ "$bin" != "$exe" ] && edits=${bin%%@*}
        env ${edits:+YOLO12_CONV_VARIANTS=$edits} timeout 90 "$exe" "/tmp/yolo12${sc}_peer.y12" \
          --batch 1,32 --precision fp16 --iters 100 2>&1 | grep "fp16 b"
      done
    done
  done
}
out=${OUT:-out/prebuilt}  # every mode's output folder but pack's
[ "${1:-}" = pack ] || mkdir -p "$out"
case "${1:-}" in
  pack)
    build=${2:?usage: $0 pack BUILD}
    mkdir -p "$dir"
    strip -o "$dir/test_preprocess" "$build/tests/test_preprocess" || exit 1
    for b in yolo12-bench yolo12-multi-bench; do strip -o "$dir/$b" "$build/$b" && xz -f -6 "$dir/$b" || exit 1; done
    ls -la "$dir"
    ;;
  bundle)
    # yolo12-bench and the GPU tests named (e.g. test_conv test_model_gpu) of a CUDA build folder, stripped, in one
    # archive $dir/ab.tar.xz, which unpack() reads: they share most of their code, so one xz stream holds them in
    # little more than one (fortieth session: yolo12-bench and seven GPU tests, 441 MB stripped, 12.8 MB packed).
    build=${2:?usage: $0 bundle BUILD [TEST...]}
    shift 2
    tmp=$(mktemp -d) && mkdir -p "$dir" || exit 1
    for n in yolo12-bench "$@"; do rm -f "$dir/$n.xz"; done  # unpack() prefers NAME.xz: none left from `pack`
    strip -o "$tmp/yolo12-bench" "$build/yolo12-bench" || exit 1
    for t in "$@"; do strip -o "$tmp/$t" "$build/tests/$t" || exit 1; done
    (cd "$tmp" && tar -cf - -- *) | xz -T2 --lzma2=preset=6,dict=512MiB > "$dir/ab.tar.xz" || exit 1
    rm -rf "$tmp"
    ls -la "$dir"
    ;;
  run)
    unpack yolo12-bench && chmod +x "$dir/test_preprocess" || exit 1
    python3 exporter/export.py tests/data/yolo12n_rand.pt -o /tmp/yolo12n_rand.y12 > /dev/null || exit 1
    {
      nvidia-smi -L
      timeout 40 "$dir/test_preprocess" "[gpu]" 2>&1 | tail -3
      timeout 60 "$dir/test_preprocess" "[.bench]" 2>&1 | grep staging
      for v in 1 0; do
        echo "YOLO12_STAGING_HALVES=$v 3840x2160"
        YOLO12_STAGING_HALVES=$v timeout 40 /tmp/yolo12-bench /tmp/yolo12n_rand.y12 --batch 1,32 --precision fp16 \
          --image 3840x2160 --iters 50 --warmup 10 2>&1 | grep "fp16 b"
      done
      echo "1280x720 defaults"
      timeout 30 /tmp/yolo12-bench /tmp/yolo12n_rand.y12 --batch 1 --precision fp16 --iters 200 2>&1 | grep "fp16 b"
    } 2>&1 | tee "$out/prebuilt_call.txt"
    ;;
  tune)
    sc=${2:?usage: $0 tune SCALE}
    carried_bench_on "$sc" || exit 1
    nvidia-smi -L | tee "$out/gpu.txt"
    timeout 60 /tmp/yolo12-bench "/tmp/yolo12${sc}_peer.y12" --batch 1,32 --precision fp16 --iters 100 \
      > "$out/bench_${sc}_default.log" 2>&1
    grep "fp16 b" "$out/bench_${sc}_default.log"
    for v in ${TUNE_BENCH_VARIANTS:-}; do  # e.g. "+f16_wide_tiles +f16_stem_mma": edits of the defaults, one run each
      echo "YOLO12_CONV_VARIANTS=$v"
      YOLO12_CONV_VARIANTS=$v timeout 60 /tmp/yolo12-bench "/tmp/yolo12${sc}_peer.y12" --batch 1,32 --precision fp16 \
        --iters 100 2>&1 | grep "fp16 b"
    done 2>&1 | tee "$out/bench_${sc}_variants.log"
    YOLO12_CONV_TUNE=1 YOLO12_CONV_TUNE_LOG=1 timeout "${TUNE_TIMEOUT:-240}" /tmp/yolo12-bench "/tmp/yolo12${sc}_peer.y12" --batch 1,32 \
      --precision fp16 --iters 50 --warmup 10 --profile-ops 40 > "$out/profile_${sc}_tuned.log" 2>&1
    echo "tuned run: rc=$? ($(grep -c '^tune' "$out/profile_${sc}_tuned.log") tune lines)"
    grep "fp16 b" "$out/profile_${sc}_tuned.log"
    ;;
  ab)
    scales=${2:?usage: $0 ab SCALES}
    # Each binary from the carry, or left in /tmp by the call before on a warm machine (both do not fit one carry
    # beside the tree).
    for bin in yolo12-bench yolo12-bench-b; do
      if [ -f "$dir/$bin.xz" ] || [ -f "$dir/ab.tar.xz" ]; then unpack $bin || exit 1; fi
      [ -x "/tmp/$bin" ] || { echo "ab: no $bin in $dir or /tmp" >&2; exit 1; }
    done
    peer_model "$scales" || exit 1
    ROUNDS=2 bench_rounds "$scales" /tmp/yolo12-bench /tmp/yolo12-bench-b 2>&1 | tee "$out/prebuilt_ab.txt"
    ;;
  bench)
    # One build of yolo12-bench (BIN, default /tmp/yolo12-bench: unpacked from the carry, or copied there from a
    # build folder of this call) on each yolo12SCALE of the comma list, ROUNDS (2) runs each; into $OUT/bench.txt.
    scales=${2:?usage: $0 bench SCALES}
    bins=${BIN:-/tmp/yolo12-bench}  # several, space-separated: alternated in each round (an A/B of two builds)
    for bin in $bins; do  # the default one from the carry where the call before left none
      exe=$(bench_exe "$bin")
      if [ "$exe" = /tmp/yolo12-bench ] && [ ! -x "$exe" ]; then unpack yolo12-bench || exit 1; fi
      [ -x "$exe" ] || { echo "bench: no $exe" >&2; exit 1; }
    done
    peer_model "$scales" || exit 1
    bench_rounds "$scales" $bins 2>&1 | tee "$out/bench.txt"
    ;;
  test)
    name=${2:?usage: $0 test NAME [ARGS]}
    shift 2
    mkdir -p /tmp/models /tmp/test_bin
    [ -x "/tmp/$name" ] || unpack "$name" || exit 1
    for pt in tests/data/*.pt; do
      y12=/tmp/models/$(basename "${pt%.*}").y12
      [ -f "$y12" ] || timeout 120 python3 exporter/export.py "$pt" -o "$y12" > /dev/null 2>&1 || echo "export of $pt FAILED"
    done
    log=$out/$name${SANITIZER:+_$SANITIZER}.log
    YOLO12_SOURCE_DIR=$PWD YOLO12_BINARY_DIR=/tmp/test_bin YOLO12_TEST_MODELS=/tmp/models timeout "${TEST_TIMEOUT:-300}" \
      ${SANITIZER:+compute-sanitizer --tool "$SANITIZER" --error-exitcode 3} "/tmp/$name" "$@" > "$log" 2>&1
    echo "$name${SANITIZER:+ under $SANITIZER}: rc=$?"
    tail -6 "$log"
    ;;
  profile)
    # The per-op profile (yolo12-bench --profile-ops) of each yolo12SCALE of the comma list under the defaults.
    scales=${2:?usage: $0 profile SCALES}
    carried_bench_on "$scales" || exit 1
    for sc in ${scales//,/ }; do
      timeout 90 /tmp/yolo12-bench "/tmp/yolo12${sc}_peer.y12" --batch "${BATCH:-1,32}" \
        --precision fp16 --iters 50 --warmup 10 --profile-ops 200 > "$out/profile_${sc}_default.log" 2>&1 ||
        echo "profile yolo12$sc: FAILED"
      grep "fp16 b" "$out/profile_${sc}_default.log"
    done
    ;;
  ncu)
    sc=${2:?usage: $0 ncu SCALE REGEX}
    regex=${3:?usage: $0 ncu SCALE REGEX}
    carried_bench_on "$sc" || exit 1
    YOLO12_CUDA_STREAMS=1 timeout "${NCU_TIMEOUT:-150}" ncu --clock-control none --kernel-name "regex:$regex" \
      --launch-skip "${SKIP:-0}" --launch-count "${COUNT:-4}" --section SpeedOfLight --section Occupancy \
      --section WarpStateStats --section ComputeWorkloadAnalysis --section InstructionStats \
      --section MemoryWorkloadAnalysis --section LaunchStats \
      --metrics "$(grep -v '^#' tools/dev/ncu_stall_metrics.txt | tr -s ' \n' ',' | sed 's/^,//; s/,$//')" \
      /tmp/yolo12-bench "/tmp/yolo12${sc}_peer.y12" --batch "${BATCH:-32}" --precision fp16 --iters 2 --warmup 0 \
      > "$out/ncu_${sc}.txt" 2>&1
    echo "ncu: rc=$? $(grep -c 'GPU Speed Of Light' "$out/ncu_${sc}.txt") kernels"
    ;;
  multi | spin)
    unpack yolo12-multi-bench || exit 1
    [ "$1" = spin ] && { unpack yolo12-bench || exit 1; }
    peer_model n || exit 1
    if [ "$1" = spin ]; then
      {
        nvidia-smi -L
        for round in 1 2; do
          for spin in 0 default; do
            env=(); [ $spin = 0 ] && env=(YOLO12_STAGING_SPIN_US=0)
            echo "round $round, YOLO12_STAGING_SPIN_US=$spin: yolo12-bench, 1280x720 host frames"
            env "${env[@]}" timeout 60 /tmp/yolo12-bench /tmp/yolo12n_peer.y12 --batch 1,32 --precision fp16 \
              --image 1280x720 --iters 200 2>&1 | grep "fp16 b"
          done
        done
        for spin in 0 default; do
          env=(); [ $spin = 0 ] && env=(YOLO12_STAGING_SPIN_US=0)
          echo "YOLO12_STAGING_SPIN_US=$spin: yolo12-multi-bench"
          env "${env[@]}" timeout 60 /tmp/yolo12-multi-bench /tmp/yolo12n_peer.y12 --devices 0 --devices 0,0 \
            --devices 0,0,0 --batch 1 --half --seconds 4 --warmup 2 --input host 2>&1 | grep "img/s"
          env "${env[@]}" timeout 60 /tmp/yolo12-multi-bench /tmp/yolo12n_peer.y12 --devices 0,0,0 --batch 32 --half \
            --seconds 4 --warmup 2 --input host 2>&1 | grep "img/s"
        done
      } 2>&1 | tee "$out/prebuilt_spin.txt"
      exit 0
    fi
    {
      nvidia-smi -L
      timeout 60 /tmp/yolo12-multi-bench /tmp/yolo12n_peer.y12 --devices 0,0,0 --devices 0,0,0,0 --batch 32 --half \
        --seconds 4 --warmup 2 --input host 2>&1 | grep "img/s"
      timeout 60 /tmp/yolo12-multi-bench /tmp/yolo12n_peer.y12 --devices 0,0 --devices 0,0,0 --batch 1 --half \
        --seconds 4 --warmup 2 --input host 2>&1 | grep "img/s"
    } 2>&1 | tee "$out/prebuilt_multi.txt"
    ;;
  *) echo "usage: $0 pack BUILD | run | multi | spin | tune SCALE | ab SCALES | bench SCALES | ncu SCALE REGEX" >&2; exit 2 ;;
esac
