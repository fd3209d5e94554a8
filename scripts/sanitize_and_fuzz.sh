#!/usr/bin/env bash
# CI extras: every test again under AddressSanitizer + UndefinedBehaviorSanitizer,
# then each libFuzzer target for a bounded time (FUZZ_SECONDS, default 60).
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache keys on relative paths, so a fresh clone elsewhere reuses the cache.
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
phase() { echo "== sanitize/fuzz phase '$1' done at ${SECONDS}s"; }

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRISK_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" > /dev/null
cmake --build build-asan -j"$(nproc)"
phase asan-build
# The reference-logit comparisons and the 32-request equality run are numeric
# checks of code paths the other model, engine and scheduler tests already
# drive; under ASan they only cost minutes. So are speculation's equality runs
# on Gemma 3 (the drafters, verification and rollback are model-independent
# and run under ASan on the default model) and the draft model's batch-1 run
# (its batch-16 run with preemption drives the same paths and more).
(cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --output-on-failure -j"$(nproc)" \
  -E 'ReferenceLogitsTest|Gemma3ReferenceTest\.(Reference|FastPath|Greedy)|ThirtyTwoConcurrent|EngineSpeculativeGemmaTest|EngineDraftModelTest\.GreedyIsIdenticalAtBatch1$')
phase asan-ctest
# The server under ASan/UBSan with the real openai client and the robustness
# tests (disconnects, overload, bad input): memory errors on the HTTP and
# streaming paths show up here. The gateway's tests run its proxy, retry,
# cancel and ledger paths over ASan engines.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 BRISK_BIN=build-asan/brisk \
  BRISK_E2E_TIME_SCALE=4 \
  python3 -m pytest -q tests/e2e/test_openai_api.py tests/e2e/test_server_robustness.py tests/e2e/test_hostile_input.py \
  tests/e2e/test_gateway.py tests/e2e/test_gateway_failover.py
phase asan-e2e

cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBRISK_FUZZ=ON \
  -DBRISK_TESTS=OFF -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" > /dev/null
targets=$(cd src && ls */*_fuzz.cc | xargs -n1 basename | sed 's/\.cc$//')
# shellcheck disable=SC2086
cmake --build build-fuzz -j"$(nproc)" --target $targets
phase fuzz-build

# One target for FUZZ_SECONDS; its log under build-fuzz/. A finding prints the
# sanitizer's report and the input (as a crash-* artifact under build-fuzz/,
# named after the target), not just the final stats.
fuzz_one() {
  local t=$1 corpus=build-fuzz/corpus-$1 seeds=tests/fuzz_seeds/$1 log=build-fuzz/$1.log
  mkdir -p "$corpus"
  echo "fuzzing $t for ${FUZZ_SECONDS}s"
  if ! ./build-fuzz/"$t" -max_total_time="$FUZZ_SECONDS" -max_len=65536 -rss_limit_mb=2048 \
    -artifact_prefix=build-fuzz/"$t"- -print_final_stats=1 "$corpus" \
    $( [ -d "$seeds" ] && echo "$seeds" ) > "$log" 2>&1; then
    echo "FUZZ FINDING in $t:"
    grep -m1 -B4 -A60 -E 'ERROR|^==[0-9]+==|terminate called|deadly signal' "$log" || tail -80 "$log"
    for a in build-fuzz/"$t"-crash-* build-fuzz/"$t"-leak-* build-fuzz/"$t"-oom-* build-fuzz/"$t"-timeout-*; do
      [ -f "$a" ] && { echo "artifact $a (base64):"; base64 "$a" | head -40; }
    done
    return 1
  fi
  tail -5 "$log"
}
export -f fuzz_one
export FUZZ_SECONDS
# The targets are single-threaded: one per core at a time, each for its full
# FUZZ_SECONDS. Any finding fails the run (after every target has run).
# shellcheck disable=SC2086
printf '%s\n' $targets | xargs -P "$(nproc)" -I{} bash -c 'fuzz_one {}'
phase fuzz
