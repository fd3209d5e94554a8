#!/usr/bin/env bash
# The README's test command: set-up (idempotent), build, every test
# (GoogleTest through ctest, then the end-to-end pytest suite on the real binary).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on relative paths, so a fresh clone elsewhere reuses the cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
phase() { echo "== test phase '$1' done at ${SECONDS}s"; }
bash scripts/setup.sh --test
phase setup
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j"$(nproc)"
phase build
(cd build && ctest --output-on-failure -j"$(nproc)")
phase ctest
BRISK_BIN=build/brisk python3 -m pytest -q tests/e2e
phase e2e
