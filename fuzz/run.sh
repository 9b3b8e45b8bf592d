#!/usr/bin/env bash
# fuzz/run.sh - runs every libFuzzer target of a build on a copy of its committed seed corpus.
#   bash fuzz/run.sh BUILD_DIR                 smoke: SECONDS (default 12) per target (what CI runs)
#   bash fuzz/run.sh BUILD_DIR --runs N        N executions per target (docs/hardening.md: 10^6)
# BUILD_DIR was configured with CXX=clang++ -DYOLO12_BUILD_FUZZERS=ON -DYOLO12_SANITIZE=address,undefined.
# A finding (crash, sanitizer report, timeout, memory over the limit) stops that target, leaves the
# input in WORK_DIR (default: a temporary folder, printed) and makes the script exit 1.
set -uo pipefail
build=$(cd "${1:?usage: fuzz/run.sh BUILD_DIR [--runs N]}" && pwd)
shift
limit=(-max_total_time="${SECONDS_PER_TARGET:-12}")
[ "${1:-}" = "--runs" ] && limit=(-runs="${2:?--runs N}")
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK_DIR:-$(mktemp -d)}
status=0
# target  corpus folder  max input length
for spec in "fuzz_model_file model_file 81920" "fuzz_model_header model_header 32768" \
            "fuzz_npy npy 4096" "fuzz_image_header image_header 4096"; do
  set -- $spec
  exe="$build/fuzz/$1"
  [ -x "$exe" ] || { echo "fuzz: $1 not built, skipped"; continue; }
  mkdir -p "$work/$2"
  cp "$here/corpus/$2/"* "$work/$2/"
  log="$work/$1.log"
  start=$(date +%s)
  (cd "$work" && "$exe" "${limit[@]}" -rss_limit_mb=2048 -timeout=20 -max_len="$3" -print_final_stats=1 \
     "$work/$2" >"$log" 2>&1)
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  echo "fuzz: $1: ${runs:-?} executions in $(( $(date +%s) - start )) s, exit $rc"
  if [ $rc -ne 0 ]; then
    grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$log" | head -5
    status=1
  fi
done
[ $status -eq 0 ] || echo "fuzz: findings above; logs and inputs in $work"
exit $status
