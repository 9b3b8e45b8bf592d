#!/usr/bin/env bash
# tools/dev/rule_replay_all.sh - yolo12-rule-replay (tools/dev/rule_replay.cu) on every kernel-tuning log kept in
# docs/results (the per-op profiles written with YOLO12_CONV_TUNE_LOG=1 that hold `tune conv f16` lines): per log, the
# summed conv time of the logged rule, the replayed rule and the fastest candidates at each batch size. A change of the
# selection rules is fitted by running this before and after it (thirty-first session: "kept only where no log got
# worse"). Runs on any machine; YOLO12_CONV_VARIANTS edits the rules' variants as for the tool itself.
#
#   tools/dev/rule_replay_all.sh [BUILD]    BUILD: a CUDA build folder with yolo12-rule-replay (default build)
set -u
cd "$(dirname "$0")/../.." || exit 1
replay=${1:-build}/yolo12-rule-replay
[ -x "$replay" ] || { echo "rule_replay_all: no $replay (build the target yolo12-rule-replay)" >&2; exit 1; }
found=0
while IFS= read -r log; do
  grep -q "^tune conv f16 " "$log" || continue
  found=1
  echo "== ${log#docs/results/}"
  "$replay" "$log" --top 0 2>&1 | grep "^batch" | sed 's/; 0 plans changed, 0 untimed$//'
done < <(find docs/results -name "profile*tuned*.log" | sort)
[ "$found" = 1 ] || { echo "rule_replay_all: no tuning log with tune lines under docs/results" >&2; exit 1; }
