#!/usr/bin/env bash
# bench/dram_shapes.sh - random-weight GGUF files of real model shapes, big
# enough that decode streams the weights from DRAM rather than from the L3
# cache that holds the 135M default model (BENCHMARKS.md, "Models bigger than the
# cache").
#
# Writes into ${BRISK_CACHE:-~/.cache/brisk}/dram-shapes/ (never the repo):
#   llama-1b.Q4_K_M.gguf    Llama 3.2 1B shape: d 2048, 32/8 heads, head_dim 64,
#   llama-1b.Q8_0.gguf        ff 8192, 16 layers, vocab 128256, tied embeddings
#   qwen2-1.5b.Q4_K_M.gguf  Qwen2.5 1.5B shape: d 1536, 12/2 heads, ff 8960,
#                             28 layers, vocab 151936, tied, q/k/v biases
#   llama-3b.Q4_K_M.gguf    Llama 3.2 3B shape: d 3072, 24/8 heads, head_dim 128,
#                             ff 8192, 28 layers, vocab 128256, tied
# Each shape is written once as F16 by tools/make_random_gguf.py (numpy, one
# tensor at a time), converted by `build/brisk quantize` (llama.cpp's q4_k_m
# recipe), and the F16 file deleted. Files that exist are skipped.
# The weights are random: speed only, the text they generate is noise.
#
# Usage: bench/dram_shapes.sh [SHAPE...]   SHAPE: llama-1b qwen2-1.5b llama-3b
#                                          (default: all three)
# Prints NAME=PATH lines (the --models argument of bench/compare_engine.py) last.
# Needs: build/brisk, python3 with numpy and gguf. Disk: the 3B F16 intermediate
# is 6.4 GB; the finished files total ~5.1 GB. Time on 2 busy cores (F16 file +
# quantization): llama-1b 2.5 min, qwen2-1.5b 4 min, llama-3b 7 min; ~3 GB RAM.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
DIR="${BRISK_CACHE:-$HOME/.cache/brisk}/dram-shapes"
BRISK="${BRISK:-$REPO/build/brisk}"
mkdir -p "$DIR"
[[ $# -gt 0 ]] && SHAPES=("$@") || SHAPES=(llama-1b qwen2-1.5b llama-3b)

# shape -> make_random_gguf.py flags, and the types to quantize it to.
declare -A FLAGS TYPES
FLAGS[llama-1b]="--arch llama --hidden 2048 --heads 32 --kv-heads 8 --ff 8192 --layers 16 --vocab 128256 --rope-theta 500000"
TYPES[llama-1b]="Q4_K_M Q8_0"
FLAGS[qwen2-1.5b]="--arch qwen2 --hidden 1536 --heads 12 --kv-heads 2 --ff 8960 --layers 28 --vocab 151936 --rope-theta 1000000"
TYPES[qwen2-1.5b]="Q4_K_M"
FLAGS[llama-3b]="--arch llama --hidden 3072 --heads 24 --kv-heads 8 --head-dim 128 --ff 8192 --layers 28 --vocab 128256 --rope-theta 500000"
TYPES[llama-3b]="Q4_K_M"

free_gb() { df -Pk "$DIR" | awk 'NR==2 {printf "%d", $4 / 1048576}'; }

MANIFEST=()
for shape in "${SHAPES[@]}"; do
  [[ -n "${FLAGS[$shape]:-}" ]] || { echo "unknown shape $shape" >&2; exit 2; }
  todo=()
  for t in ${TYPES[$shape]}; do
    out="$DIR/$shape.$t.gguf"
    MANIFEST+=("$shape-$t=$out")
    [[ -f "$out" ]] && echo "have $out" >&2 || todo+=("$t")
  done
  [[ ${#todo[@]} -eq 0 ]] && continue
  if (( $(free_gb) < 12 )); then
    echo "only $(free_gb) GB free in $DIR: need ~12 GB for $shape (F16 + quantized)" >&2
    exit 1
  fi
  f16="$DIR/$shape.F16.gguf"
  if [[ ! -f "$f16" ]]; then
    echo "writing $f16" >&2
    start=$SECONDS
    # shellcheck disable=SC2086  # FLAGS holds several words on purpose
    python3 "$REPO/tools/make_random_gguf.py" ${FLAGS[$shape]} --type F16 --embd-type F16 \
      --out "$f16" >&2
    echo "  $((SECONDS - start)) s" >&2
  fi
  for t in "${todo[@]}"; do
    start=$SECONDS
    lower="$(echo "$t" | tr '[:upper:]' '[:lower:]')"
    "$BRISK" quantize "$f16" "$DIR/$shape.$t.gguf" --type "$lower" 2>&1 | tail -1 >&2
    echo "  $((SECONDS - start)) s" >&2
  done
  rm -f "$f16"  # only the quantized files are benchmarked
done
ls -l "$DIR"/*.gguf >&2
IFS=,; echo "${MANIFEST[*]}"
