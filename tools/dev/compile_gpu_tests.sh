#!/usr/bin/env bash
# tools/dev/compile_gpu_tests.sh [FILE.cu...] - compile the GPU tests (default: tests/gpu/test_*.cu and
# tests/ops/test_*.cu) for sm_90a on this machine, without a GPU and without linking, each under a time limit, with
# the Catch2 the GPU machine has (v3) where CATCH2_V3_INCLUDE names its headers. Prints each file's seconds, or
# TIMEOUT / FAILED. Catches what only the GPU machine's build would show: in the twenty-fifth session nvcc 13.0's
# cudafe++ never finished test_halo_pair.cu with Catch2 v3 (REQUIRE in a non-template inline member function),
# while Debian 12's Catch2 v2 compiled it in 11 s; the GPU call spent its whole time in the build.
#
#   CATCH2_V3_INCLUDE  a folder holding catch2/catch_all.hpp of Catch2 v3 (e.g. unpacked, with `dpkg -x`, from
#                      Debian 13's libcatch2-dev package fetched by `apt-get download` with a trixie apt source)
#   HOST_CXX           the host compiler for nvcc (default: the PATH's g++; the GPU machine has g++ 13)
#   COMPILE_TIMEOUT    seconds per file (default 120)
#   JOBS               files compiled at once (default: the CPU count)
set -u
cd "$(dirname "$0")/../.." || exit 1
files=("$@")
[ ${#files[@]} -gt 0 ] || files=(tests/gpu/test_*.cu tests/ops/test_*.cu)
inc=(-I include -I src -I tests -I bench)
if [ -n "${CATCH2_V3_INCLUDE:-}" ]; then
  [ -f "$CATCH2_V3_INCLUDE/catch2/catch_all.hpp" ] || { echo "no catch2/catch_all.hpp under $CATCH2_V3_INCLUDE" >&2; exit 2; }
  inc=(-I "$CATCH2_V3_INCLUDE" "${inc[@]}")
  echo "Catch2 v3 from $CATCH2_V3_INCLUDE"
else
  echo "Catch2: this machine's (v2 on Debian 12; the GPU machine has v3: set CATCH2_V3_INCLUDE)"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() {
  local f=$1 t0=$SECONDS rc
  timeout "${COMPILE_TIMEOUT:-120}" nvcc -ccbin "${HOST_CXX:-g++}" "${inc[@]}" -O3 -DNDEBUG -std=c++17 \
    --generate-code=arch=compute_90a,code=[sm_90a] -DYOLO12_HAVE_CUDA=1 --expt-relaxed-constexpr \
    -c "$f" -o "$tmp/$(basename "$f").o" > "$tmp/$(basename "$f").log" 2>&1
  rc=$?
  case $rc in
    0) echo "ok       $((SECONDS - t0)) s  $f" ;;
    124) echo "TIMEOUT  $((SECONDS - t0)) s  $f (limit ${COMPILE_TIMEOUT:-120} s)" ;;
    *) echo "FAILED   rc=$rc  $f"; head -5 "$tmp/$(basename "$f").log" ;;
  esac
  [ $rc = 0 ]
}
fail=0
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
running=0
for f in "${files[@]}"; do
  one "$f" &
  running=$((running + 1))
  if [ $running -ge "$jobs" ]; then wait -n || fail=1; running=$((running - 1)); fi
done
while [ $running -gt 0 ]; do wait -n || fail=1; running=$((running - 1)); done
exit $fail
