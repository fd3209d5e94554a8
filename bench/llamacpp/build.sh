#!/usr/bin/env bash
# bench/llamacpp/build.sh - build llama.cpp's benchmark/reference tools, the
# comparison baseline for Brisk, from the llama-cpp-python sdist (its
# vendor/llama.cpp directory is the full llama.cpp source tree).
#
# Nothing from llama.cpp is stored in this repository: the sdist, the
# extracted source, the build tree and the binaries all live in
#   ${BRISK_CACHE:-~/.cache/brisk}/llama.cpp-$LCP_VERSION/
#     sdist/    llama_cpp_python-$LCP_VERSION.tar.gz (cached download)
#     src/      extracted sdist
#     build/    cmake build tree
#     bin/      llama-bench llama-batched-bench llama-quantize llama-server llama-cli
#               llama-perplexity (KL divergence anchor of brisk eval kld)
#     BUILD_INFO  cmake flags, compiler, build time
#
# Usage: bench/llamacpp/build.sh            (idempotent: skips when bin/ is complete)
#        FORCE=1 bench/llamacpp/build.sh    (rebuild)
#        JOBS=N LCP_VERSION=x.y.z bench/llamacpp/build.sh
# Needs: cmake >= 3.18, a C/C++ compiler, pip (only if the sdist is not cached;
# an sdist already at /tmp/lcp/ or in the cache is used as is).
# Prints the bin/ directory on the last line; other scripts use
#   LLAMA_BIN="$(bench/llamacpp/build.sh | tail -1)"
#
# Flags: -DGGML_NATIVE=ON (tuned to this CPU, e.g. AVX-512), Release, static
# libraries, LLAMA_CURL/OPENSSL off (no network), no tests/examples, and no web
# UI (neither npm nor the Hugging Face download is reachable here).
set -euo pipefail

LCP_VERSION="${LCP_VERSION:-0.3.36}"
JOBS="${JOBS:-2}"
CACHE="${BRISK_CACHE:-$HOME/.cache/brisk}/llama.cpp-${LCP_VERSION}"
SDIST_NAME="llama_cpp_python-${LCP_VERSION}.tar.gz"
TARGETS=(llama-bench llama-batched-bench llama-quantize llama-server llama-cli llama-perplexity)

mkdir -p "$CACHE/sdist" "$CACHE/bin"

have_all() {
  for t in "${TARGETS[@]}"; do
    [[ -x "$CACHE/bin/$t" ]] || return 1
  done
}

# A target that this llama.cpp version lacks is recorded in bin/MISSING so that
# a complete build is still detected on the next run.
have_all_or_missing() {
  for t in "${TARGETS[@]}"; do
    [[ -x "$CACHE/bin/$t" ]] && continue
    grep -qx "$t" "$CACHE/bin/MISSING" 2>/dev/null && continue
    return 1
  done
}

if [[ -z "${FORCE:-}" ]] && have_all_or_missing; then
  echo "llama.cpp tools already built in $CACHE/bin" >&2
  echo "$CACHE/bin"
  exit 0
fi

# 1. the sdist
SDIST="$CACHE/sdist/$SDIST_NAME"
if [[ ! -f "$SDIST" ]]; then
  if [[ -f "/tmp/lcp/$SDIST_NAME" ]]; then
    cp "/tmp/lcp/$SDIST_NAME" "$SDIST"
  else
    echo "downloading $SDIST_NAME with pip" >&2
    python3 -m pip download --no-deps --no-binary :all: -d "$CACHE/sdist" \
      "llama-cpp-python==${LCP_VERSION}" >&2
  fi
fi

# 2. extract (once)
SRC="$CACHE/src/llama_cpp_python-${LCP_VERSION}/vendor/llama.cpp"
if [[ ! -f "$SRC/CMakeLists.txt" ]]; then
  rm -rf "$CACHE/src"
  mkdir -p "$CACHE/src"
  tar xzf "$SDIST" -C "$CACHE/src"
fi
[[ -f "$SRC/CMakeLists.txt" ]] || { echo "no llama.cpp source in $SDIST" >&2; exit 1; }

# 3. configure
BUILD="$CACHE/build"
CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release
  -DGGML_NATIVE=ON
  -DLLAMA_CURL=OFF
  -DLLAMA_OPENSSL=OFF
  -DBUILD_SHARED_LIBS=OFF
  -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_TOOLS=ON
  -DLLAMA_BUILD_SERVER=ON
  -DLLAMA_BUILD_UI=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF
)
t0=$(date +%s)
cmake -S "$SRC" -B "$BUILD" "${CMAKE_FLAGS[@]}" >"$CACHE/cmake-configure.log" 2>&1 || {
  tail -40 "$CACHE/cmake-configure.log" >&2; exit 1; }

# 4. build the targets this version has
available="$(cmake --build "$BUILD" --target help 2>/dev/null || true)"
want=()
: > "$CACHE/bin/MISSING"
for t in "${TARGETS[@]}"; do
  if grep -qE "(^|[ .:])${t}(\$|[ :])" <<<"$available"; then
    want+=("$t")
  else
    echo "note: target $t does not exist in this llama.cpp version" >&2
    echo "$t" >> "$CACHE/bin/MISSING"
  fi
done
[[ ${#want[@]} -gt 0 ]] || { echo "none of ${TARGETS[*]} exist" >&2; exit 1; }
echo "building ${want[*]} with -j$JOBS (log: $CACHE/cmake-build.log)" >&2
cmake --build "$BUILD" --config Release -j "$JOBS" --target "${want[@]}" >"$CACHE/cmake-build.log" 2>&1 || {
  tail -60 "$CACHE/cmake-build.log" >&2; exit 1; }
t1=$(date +%s)

# 5. collect binaries
for t in "${want[@]}"; do
  f="$(find "$BUILD" -type f -name "$t" -perm -u+x | head -1)"
  [[ -n "$f" ]] || { echo "built $t but cannot find the binary" >&2; exit 1; }
  cp -f "$f" "$CACHE/bin/$t"
done

{
  echo "llama-cpp-python sdist: $LCP_VERSION"
  grep -m1 -E 'LLAMA_BUILD_NUMBER|BUILD_COMMIT' "$BUILD/common/build-info.cpp" 2>/dev/null || true
  "$CACHE/bin/${want[0]}" --version 2>&1 | head -3 || true
  echo "cmake flags: ${CMAKE_FLAGS[*]}"
  echo "compiler: $(${CXX:-c++} --version | head -1)"
  echo "jobs: $JOBS  build seconds: $((t1 - t0))  date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
} > "$CACHE/BUILD_INFO"
cat "$CACHE/BUILD_INFO" >&2
echo "$CACHE/bin"
