#!/usr/bin/env bash
# bench/interleaved_tg.sh - single-stream decode (tg128, 2 threads) of llama.cpp
# and Brisk on the same GGUF files, run one after the other in rounds: llama-bench
# (-r 1), then `brisk bench-model` (-r 1), then optionally a second Brisk binary,
# then the next round. On a shared host whose memory bandwidth drifts by 10-20%
# within minutes, back-to-back medians of several rounds compare the engines
# better than one long run of each (bench/compare_engine.py).
#
# Usage: bench/interleaved_tg.sh [-n ROUNDS] [-b OTHER_BRISK] MODEL.gguf...
# Prints one line per round and model: llama=<tok/s> brisk=<tok/s> [other=<tok/s>],
# then the medians. Needs bench/llamacpp/build.sh and build/brisk.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
ROUNDS=4
OTHER=""
while getopts "n:b:" opt; do
  case "$opt" in
    n) ROUNDS="$OPTARG" ;;
    b) OTHER="$OPTARG" ;;
    *) exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -gt 0 ]] || { echo "usage: $0 [-n ROUNDS] [-b OTHER_BRISK] MODEL.gguf..." >&2; exit 2; }
LLAMA_BIN="$("$HERE/llamacpp/build.sh" | tail -1)"
BRISK="${BRISK:-$REPO/build/brisk}"

brisk_tg() {  # binary model -> tok/s
  "$1" bench-model -m "$2" -t 2 -p 0 -n 128 -r 1 --parallel 1 --npp 1 --ntg 1 2>&1 |
    awk '/^tg128/{print $2}'
}
llama_tg() {
  "$LLAMA_BIN/llama-bench" -m "$1" -t 2 -p 0 -n 128 -r 1 -fa 0 -o json 2>/dev/null |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)[0]["avg_ts"], 2))'
}

for model in "$@"; do
  rows=()
  for ((r = 1; r <= ROUNDS; r++)); do
    line="llama=$(llama_tg "$model") brisk=$(brisk_tg "$BRISK" "$model")"
    [[ -n "$OTHER" ]] && line+=" other=$(brisk_tg "$OTHER" "$model")"
    echo "$(basename "$model") round $r: $line"
    rows+=("$line")
  done
  printf '%s\n' "${rows[@]}" | python3 -c '
import statistics, sys
cols = {}
for line in sys.stdin:
    for kv in line.split():
        k, v = kv.split("=")
        cols.setdefault(k, []).append(float(v))
med = {k: statistics.median(v) for k, v in cols.items()}
ratio = med["brisk"] / med["llama"]
print(sys.argv[1], "medians:", " ".join(f"{k}={v:.2f}" for k, v in med.items()),
      f"brisk/llama={ratio:.2f}x")' "$(basename "$model")"
done
