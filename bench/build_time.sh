#!/usr/bin/env bash
# Clean-build wall time of one target (default: brisk, the README's main-job
# build) with ccache off, for each CMake flag set given, in this order:
#   bash bench/build_time.sh "" "-DBRISK_UNITY_MODULES="   (unity batches, then none)
# Each set gets a fresh build directory under ${BUILD_TIME_DIR:-/tmp/build-time}.
# Prints one line per set: the flags, wall seconds, and the CPU seconds of the
# compile jobs (from .ninja_log). BENCHMARKS.md, "Build time", has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${BUILD_TIME_TARGET:-brisk}
root=${BUILD_TIME_DIR:-/tmp/build-time}
export CCACHE_DISABLE=1
i=0
for flags in "$@"; do
  d=$root/$i
  rm -rf "$d"
  # shellcheck disable=SC2086
  cmake -S . -B "$d" -G Ninja -DCMAKE_BUILD_TYPE=Release $flags > /dev/null
  s=$(date +%s.%N)
  cmake --build "$d" -j"$(nproc)" --target "$target" > "$d.log" 2>&1
  e=$(date +%s.%N)
  cpu=$(awk 'NR>1 {t+=$2-$1} END {printf "%.0f", t/1000}' "$d/.ninja_log")
  printf '%s\twall %.0f s\tcompile CPU %s s\n' "${flags:-(defaults)}" "$(echo "$e - $s" | bc)" "$cpu"
  i=$((i + 1))
done
