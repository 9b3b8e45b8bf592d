#!/usr/bin/env bash
# tools/dev/call_attention_ab.sh - one GPU call for a change to the area-attention kernels, against the build before it.
# Here: tools/dev/attention_check.sh build build-attn (the change) and, from the earlier attention.cu, build-attn-old;
# strip both, and pack them: tar -cf - build-attn build-attn-old | xz -9 > .carry/attn/attn_ab.tar.xz (14 MB of
# binaries, under 1 MB packed). There (carry .carry/attn): the new binary's tests and memcheck (attention_check.sh run),
# then the "[bench]" timings of old and new alternated, ROUNDS (2) rounds; into $OUT/attn_new/ and
# $OUT/attn_bench.txt.
set -u
cd "$(dirname "$0")/../.." || exit 1
out=${OUT:-out/attn}
mkdir -p "$out/attn_new"
[ -f .carry/attn/attn_ab.tar.xz ] && { tar -xJf .carry/attn/attn_ab.tar.xz || exit 1; }
OUT=$out/attn_new timeout 330 tools/dev/attention_check.sh run build-attn > "$out/attn_new/run.txt" 2>&1
echo "new: rc=$? $(grep -E 'test exit code|memcheck' "$out/attn_new/run.txt" | tr '\n' ' ')"
for round in $(seq "${ROUNDS:-2}"); do
  for b in build-attn-old build-attn; do
    echo "round $round $b"
    timeout 150 "$b/test_attention" "[bench]" -s 2>&1 | grep -E "^BENCH.*flash"
  done
done > "$out/attn_bench.txt"
grep -E "B=32.*flash_f16 " "$out/attn_bench.txt" | head -20
