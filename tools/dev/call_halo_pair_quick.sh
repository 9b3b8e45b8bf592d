#!/usr/bin/env bash
# tools/dev/call_halo_pair_quick.sh - the shortest GPU check of conv2d_halo_pair_f16 (variant f16_halo_pair): configure,
# build the library, test_halo_pair and yolo12-bench only, run its [kernel] cases (the kernel against the double
# reference and the two convs, slices, edges, refusals), its "[.bench]" timings (yolo12n's four kinds of pair against
# the two convs), then yolo12-bench on the yolo12n fixture (random weights; per-op profiles too) with the defaults
# and with +f16_halo_pair, fp16, batch 1 and 32. For a call with little device time left (about 3-4 minutes on a fresh machine, estimated
# from call_stem_pair_quick.sh's); the full call is tools/dev/call_halo_pair.sh. Logs into $OUT (default
# out/halo_pair_quick). Carry .carry/catch2 where the machine has no Catch2 package.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-out/halo_pair_quick}
build=${BUILD:-build-quick}
mkdir -p "$out"
nvidia-smi -L > "$out/gpu.txt" 2>&1
. tools/dev/bench_build.sh
dev_build "$build" "$out" test_halo_pair ON || exit 1
timeout 90 "$build/tests/test_halo_pair" "[kernel]" > "$out/kernel.txt" 2>&1
echo "test_halo_pair [kernel]: rc=$? $(grep -E 'All tests passed|test cases:' "$out/kernel.txt" | tail -1)"
grep -B2 -A8 FAILED "$out/kernel.txt" | head -40
timeout 60 "$build/tests/test_halo_pair" "[.bench]" > "$out/bench.txt" 2>&1
echo "test_halo_pair [.bench]: rc=$?"
grep "^halo_pair" "$out/bench.txt"
dev_build "$build" "$out" yolo12-bench ON || exit 1
model=$build/yolo12n_rand.y12
timeout 120 python3 exporter/export.py tests/data/yolo12n_rand.pt -o "$model" > "$out/export.log" 2>&1 || { echo "export FAILED"; exit 1; }
for v in default +f16_halo_pair; do
  name=${v#+}
  if [ "$v" = default ]; then env=(env); else env=(env "YOLO12_CONV_VARIANTS=$v"); fi
  "${env[@]}" timeout 90 "$build/yolo12-bench" "$model" --batch 1,32 --precision fp16 --iters 100 --profile-ops 40 \
    > "$out/bench_yolo12n_$name.log" 2>&1
  echo "yolo12-bench yolo12n ($name): $(grep -F "net(graph)" "$out/bench_yolo12n_$name.log" | tr -s ' ' | cut -c1-45 | tr '\n' ';')"
done
