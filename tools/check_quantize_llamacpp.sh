#!/usr/bin/env bash
# tools/check_quantize_llamacpp.sh - end-to-end check of `brisk quantize`
# against llama.cpp: quantize the default model with brisk to each type and
# load the result with llama-bench (exit code 0 = llama.cpp loads and runs it).
# For q4_k_m, when llama-quantize is there, also quantize with it and check
# that brisk's plan picks the same type for every tensor.
#
# Usage: tools/check_quantize_llamacpp.sh [TYPE ...]   default: q8_0 q4_0 q4_k_m
# Env:   BRISK (default build/brisk), LLAMA_BIN (default
#        ~/.cache/brisk/llama.cpp-0.3.36/bin), MODEL (default: the Q4_1 model).
# Exit:  0 all passed, 1 a check failed, 77 llama.cpp is not built (skipped).
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
BRISK="${BRISK:-$REPO/build/brisk}"
LLAMA_BIN="${LLAMA_BIN:-$HOME/.cache/brisk/llama.cpp-0.3.36/bin}"
MODEL="${MODEL:-$REPO/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
TYPES=("$@")
[[ ${#TYPES[@]} -gt 0 ]] || TYPES=(q8_0 q4_0 q4_k_m)

[[ -x "$BRISK" ]] || { echo "no brisk binary at $BRISK (set BRISK=)" >&2; exit 1; }
[[ -f "$MODEL" ]] || { echo "no model at $MODEL" >&2; exit 1; }
if [[ ! -x "$LLAMA_BIN/llama-bench" ]]; then
  echo "SKIP: no llama-bench in $LLAMA_BIN (bench/llamacpp/build.sh builds it)"
  exit 77
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0
for t in "${TYPES[@]}"; do
  out="$TMP/model.$t.gguf"
  if ! "$BRISK" quantize "$MODEL" "$out" --type "$t" 2>"$TMP/$t.log"; then
    echo "FAIL $t: brisk quantize failed:"; tail -5 "$TMP/$t.log"; fail=1; continue
  fi
  grep "brisk quantize: .* -> " "$TMP/$t.log" | tail -1
  if "$LLAMA_BIN/llama-bench" -m "$out" -p 16 -n 4 -r 1 -t 2 >"$TMP/$t.bench" 2>&1; then
    echo "PASS $t: llama-bench loads and runs it"
    grep -E "^\|" "$TMP/$t.bench" | tail -2
  else
    echo "FAIL $t: llama-bench exit $?:"; tail -8 "$TMP/$t.bench"; fail=1
  fi
done

# The same recipe in llama.cpp: every tensor's type must match brisk's plan.
# brisk quantize --dry-run on llama.cpp's output marks a tensor "(copied)"
# when brisk's plan gives it the type llama.cpp gave it.
if [[ -x "$LLAMA_BIN/llama-quantize" ]] && [[ " ${TYPES[*]} " == *" q4_k_m "* ]]; then
  ref="$TMP/llamacpp.q4_k_m.gguf"
  if "$LLAMA_BIN/llama-quantize" --allow-requantize "$MODEL" "$ref" Q4_K_M 2 >"$TMP/lq.log" 2>&1; then
    "$BRISK" quantize "$ref" "$TMP/unused.gguf" --type q4_k_m --dry-run >"$TMP/plan.txt" 2>/dev/null
    total=$(wc -l <"$TMP/plan.txt")
    differ=$(grep -vc "(copied)" "$TMP/plan.txt")
    if [[ "$differ" -eq 0 ]]; then
      echo "PASS q4_k_m recipe: brisk picks llama-quantize's type for all $total tensors"
    else
      echo "FAIL q4_k_m recipe: $differ of $total tensors differ (llama.cpp type -> brisk's):"
      grep -v "(copied)" "$TMP/plan.txt" | head -20; fail=1
    fi
  else
    echo "note: llama-quantize failed, recipe comparison skipped:"; tail -3 "$TMP/lq.log"
  fi
fi
exit $fail
