#!/usr/bin/env bash
# tools/dev/call_prebuilt.sh - a GPU call with no build on the GPU machine, for a session with little device time left.
#
#   tools/dev/call_prebuilt.sh pack BUILD   here: strip yolo12-bench and tests/test_preprocess of a CUDA build folder
#                                           (e.g. the one `bash .ci/run` leaves in a clean clone: sm_90a, the CUDA
#                                           runtime static, no spdlog) into .carry/prebuilt (yolo12-bench xz-compressed:
#                                           54 MB stripped, 10 MB packed, so it fits the 64 MiB a call carries)
#   tools/dev/call_prebuilt.sh run          there (carry .carry/prebuilt): test_preprocess's GPU cases, its packing
#                                           bench on that machine's cores, and yolo12-bench on the yolo12n fixture
#                                           end to end on 3840x2160 frames with YOLO12_STAGING_HALVES on and off, then
#                                           on 1280x720 frames; output into $OUT/prebuilt_call.txt
#
# Binaries built on Debian 12 run on the GPU machine's newer system (twenty-sixth session: the call took 16 s and
# about 45 s of device time with the start). The figures are only as new as the build folder: say which commit
# built it.
set -u
cd "$(dirname "$0")/../.." || exit 1
dir=.carry/prebuilt
case "${1:-}" in
  pack)
    build=${2:?usage: $0 pack BUILD}
    mkdir -p "$dir"
    strip -o "$dir/test_preprocess" "$build/tests/test_preprocess" || exit 1
    strip -o "$dir/yolo12-bench" "$build/yolo12-bench" && xz -f -6 "$dir/yolo12-bench" || exit 1
    ls -la "$dir"
    ;;
  run)
    out=${OUT:-out/prebuilt}
    mkdir -p "$out"
    python3 -c "import lzma, shutil; shutil.copyfileobj(lzma.open('$dir/yolo12-bench.xz'), open('/tmp/yolo12-bench', 'wb'))" &&
      chmod +x /tmp/yolo12-bench "$dir/test_preprocess" || exit 1
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
  *) echo "usage: $0 pack BUILD | run" >&2; exit 2 ;;
esac
