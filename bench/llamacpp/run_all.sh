#!/usr/bin/env bash
# bench/llamacpp/run_all.sh - the full llama.cpp baseline: membw + llama-bench +
# llama-batched-bench for every test model present, at 1 and 2 threads.
# Usage: bench/llamacpp/run_all.sh [MODEL ...]
#   default models: models/SmolLM2-135M-Instruct.Q4_1.gguf and, when present,
#   models/smollm2-135m.Q8_0.gguf, models/smollm2-135m.Q4_0.gguf (tools/make_test_models.sh)
# Results: bench/results/membw.json, bench/results/llamacpp-<model>-t<N>.json
# Takes ~10-20 minutes on 2 cores; do not run while builds are running.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$REPO"
models=("$@")
if [[ ${#models[@]} -eq 0 ]]; then
  for m in models/SmolLM2-135M-Instruct.Q4_1.gguf models/smollm2-135m.Q8_0.gguf models/smollm2-135m.Q4_0.gguf; do
    [[ -f "$m" ]] && models+=("$m")
  done
fi
"$HERE/build.sh" >/dev/null
bench/membw.sh 2
for m in "${models[@]}"; do
  for t in 1 2; do
    "$HERE/run_llamacpp.sh" "$m" "$t"
  done
done
