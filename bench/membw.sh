#!/usr/bin/env bash
# bench/membw.sh - build bench/membw.c natively and measure memory read bandwidth.
#
# Usage: bench/membw.sh [THREADS_MAX=2] [REPS=5]
# Builds into ~/.cache/brisk/membw/ (outside the repo) with
#   cc -O3 -march=native -fopenmp
# then runs it for array sizes 1024 MiB (DRAM), 128, 64 and 32 MiB (can be
# L3-resident on big-LLC parts: the 135M Q4_1 model is ~90 MB, so decode may run
# from L3 rather than DRAM there) and writes bench/results/membw.json:
#   {"host":..., "cpu":..., "runs":[{"size_mib":1024, ...membw output...}, ...]}
# Do not run while a build or another benchmark is using the cores.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
THREADS="${1:-2}"
REPS="${2:-5}"
CACHE="${BRISK_CACHE:-$HOME/.cache/brisk}/membw"
mkdir -p "$CACHE" "$REPO/bench/results"
BIN="$CACHE/membw"
if [[ ! -x "$BIN" || "$REPO/bench/membw.c" -nt "$BIN" ]]; then
  ${CC:-cc} -O3 -march=native -fopenmp -o "$BIN" "$REPO/bench/membw.c"
fi
OUT="$REPO/bench/results/membw.json"
cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
{
  printf '{"host":"%s","cpu":"%s","nproc":%s,"date":"%s","runs":[' \
    "$(hostname)" "$cpu" "$(nproc)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  sep=""
  for mib in 1024 128 64 32; do
    res="$(OMP_PROC_BIND=spread OMP_PLACES=cores timeout 300 "$BIN" "$mib" "$REPS" "$THREADS")"
    printf '%s{"size_mib":%s,"membw":%s}' "$sep" "$mib" "$res"
    sep=","
  done
  printf ']}\n'
} > "$OUT.tmp"
mv "$OUT.tmp" "$OUT"
cat "$OUT"
