#!/usr/bin/env bash
# fuzz/run.sh - runs every libFuzzer target of a build on a copy of its committed seed corpus.
#   bash fuzz/run.sh BUILD_DIR                      smoke: SECONDS_PER_TARGET (default 12) each (CI)
#   bash fuzz/run.sh BUILD_DIR --runs N [--workers W]
#                                                   N executions per target in all, split over W
#                                                   processes (default 1) with distinct seeds that
#                                                   share one corpus folder (docs/hardening.md: 10^6);
#                                                   MAX_SECONDS caps each process's time as well
# BUILD_DIR was configured with CXX=clang++ -DYOLO12_BUILD_FUZZERS=ON -DYOLO12_SANITIZE=address,undefined.
# A finding (crash, sanitizer report, timeout, memory over the limit) stops that process, leaves the
# input in WORK_DIR (default: a temporary folder, printed) and makes the script exit 1.
set -uo pipefail
build=$(cd "${1:?usage: fuzz/run.sh BUILD_DIR [--runs N [--workers W]]}" && pwd)
shift
limit=(-max_total_time="${SECONDS_PER_TARGET:-12}")
runs="" workers=1
[ "${1:-}" = "--runs" ] && runs=${2:?--runs N}
[ "${3:-}" = "--workers" ] && workers=${4:?--workers W}
here=$(cd "$(dirname "$0")" && pwd)
work=${WORK_DIR:-$(mktemp -d)}
status=0
# target  corpus folder  max input length
for spec in "fuzz_model_file model_file 81920" "fuzz_model_header model_header 32768" \
            "fuzz_npy npy 4096" "fuzz_image_header image_header 4096"; do
  set -- $spec
  exe="$build/fuzz/$1"
  [ -n "${TARGETS:-}" ] && [[ " $TARGETS " != *" $1 "* ]] && continue  # TARGETS="a b": only these
  [ -x "$exe" ] || { echo "fuzz: $1 not built, skipped"; continue; }
  mkdir -p "$work/$2"
  cp "$here/corpus/$2/"* "$work/$2/"
  [ -n "$runs" ] && limit=(-runs=$(( (runs + workers - 1) / workers )))
  [ -n "$runs" ] && [ -n "${MAX_SECONDS:-}" ] && limit+=(-max_total_time="$MAX_SECONDS")  # a time cap too
  start=$(date +%s)
  pids=()
  for w in $(seq 1 "$workers"); do
    (cd "$work" && exec "$exe" "${limit[@]}" -seed="$w" -rss_limit_mb=2048 -timeout=20 -max_len="$3" \
       -print_final_stats=1 -artifact_prefix="$work/$1-" "$work/$2" >"$work/$1.$w.log" 2>&1) &
    pids+=($!)
  done
  failed=0 total=0
  for w in $(seq 1 "$workers"); do
    wait "${pids[$((w - 1))]}" || failed=$((failed + 1))
    n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/$1.$w.log" | grep -o '[0-9]*$' | tail -1)
    total=$((total + ${n:-0}))
  done
  echo "fuzz: $1: $total executions in $workers process(es), $(( $(date +%s) - start )) s, $failed failed"
  if [ $failed -ne 0 ]; then
    grep -hE "ERROR|SUMMARY|runtime error|Test unit written" "$work/$1".*.log | head -5
    status=1
  fi
done
[ $status -eq 0 ] || echo "fuzz: findings above; logs and inputs in $work"
exit $status
