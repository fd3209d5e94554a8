#!/usr/bin/env python3
"""Exact (float64) reference logits for Gemma 3 270M, written from the GGUF and
gemma3 architecture facts alone with numpy: weights dequantized by the `gguf`
package (its numpy dequantizers, independent of Brisk's kernels), every
activation in float64, no quantized activations, no f16 KV cache.

The gemma3 recipe as written here: embeddings x sqrt(d_model); per layer
RMSNorm -> q/k/v, RMSNorm of each q and k head, NeoX RoPE (base 10,000 on the
sliding-window layers, the file's base on every sixth, global, layer), softmax
attention scaled by 1/sqrt(head_dim) over a window of `sliding_window`
positions on local layers, output projection, RMSNorm, residual; RMSNorm ->
gelu(tanh)(gate) * up -> down, RMSNorm, residual; final RMSNorm and the tied
output. GGUF norm weights already carry Gemma's +1.

Prompts: the reference tokenizations in tests/fixtures/tokenizer_gemma3.json
(llama.cpp's), BOS prepended, so Brisk's tokenizer is not involved.

Usage: python3 tools/make_exact_reference_gemma3.py   (needs numpy, gguf; a few minutes)
Writes tests/fixtures/gemma3_exact.json: per prompt position the top-10 (id,
log-prob) of the exact model. One more prompt of LONG tokens (every case's ids
in turn) crosses the 512-position sliding window; only its last positions'
logits are kept ("from": the first position recorded).
"""
import json
import os
import sys

import gguf
import numpy as np

from make_exact_reference import load  # same directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
TOKENIZER = os.path.join(ROOT, "tests", "fixtures", "tokenizer_gemma3.json")
OUT = os.path.join(ROOT, "tests", "fixtures", "gemma3_exact.json")
BOS = 2
MAX_TOKENS = 48  # per prompt (with BOS), to keep the run short
N_PROMPTS = 24
LONG = 700    # tokens of the long prompt (past the 512-position window)
LONG_TAIL = 64  # its positions whose logits are recorded


def forward(f, W, toks, last=None):
    L = f["gemma3.block_count"]
    nh = f["gemma3.attention.head_count"]
    nkv = f["gemma3.attention.head_count_kv"]
    d = f["gemma3.embedding_length"]
    hd = f["gemma3.attention.key_length"]
    eps = f["gemma3.attention.layer_norm_rms_epsilon"]
    base_global = f["gemma3.rope.freq_base"]
    window = f["gemma3.attention.sliding_window"]
    n = len(toks)
    x = W["token_embd.weight"][toks] * np.sqrt(d)  # [n, d]

    def rope_tables(base):
        inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
        ang = np.arange(n)[:, None] * inv[None, :]
        return np.cos(ang), np.sin(ang)

    tables = {"global": rope_tables(base_global), "local": rope_tables(10000.0)}

    def rms(v, w):
        return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps) * w

    def rope(v, kind):  # v [n, heads, hd]; NeoX RoPE: pairs (i, i + hd/2)
        cos, sin = tables[kind]
        c, s = cos[:, None, :], sin[:, None, :]
        a, b = v[..., : hd // 2], v[..., hd // 2:]
        return np.concatenate([a * c - b * s, a * s + b * c], axis=-1)

    i = np.arange(n)
    causal = np.where(i[None, :] <= i[:, None], 0.0, -np.inf)
    local_mask = np.where((i[None, :] <= i[:, None]) & (i[:, None] - i[None, :] < window),
                          0.0, -np.inf)
    for l in range(L):
        b = f"blk.{l}."
        kind = "global" if (l + 1) % 6 == 0 else "local"
        mask = causal if kind == "global" else local_mask
        h = rms(x, W[b + "attn_norm.weight"])
        q = (h @ W[b + "attn_q.weight"].T).reshape(n, nh, hd)
        k = (h @ W[b + "attn_k.weight"].T).reshape(n, nkv, hd)
        v = (h @ W[b + "attn_v.weight"].T).reshape(n, nkv, hd)
        q = rope(rms(q, W[b + "attn_q_norm.weight"]), kind)
        k = rope(rms(k, W[b + "attn_k_norm.weight"]), kind)
        out = np.empty((n, nh, hd))
        for hh in range(nh):
            g = hh // (nh // nkv)
            s = q[:, hh, :] @ k[:, g, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, hh, :] = s @ v[:, g, :]
        a = out.reshape(n, nh * hd) @ W[b + "attn_output.weight"].T
        x = x + rms(a, W[b + "post_attention_norm.weight"])
        h = rms(x, W[b + "ffn_norm.weight"])
        gt = h @ W[b + "ffn_gate.weight"].T
        up = h @ W[b + "ffn_up.weight"].T
        gelu = 0.5 * gt * (1 + np.tanh(np.sqrt(2 / np.pi) * (gt + 0.044715 * gt ** 3)))
        m = (gelu * up) @ W[b + "ffn_down.weight"].T
        x = x + rms(m, W[b + "post_ffw_norm.weight"])
    h = rms(x, W["output_norm.weight"])
    if last:
        h = h[-last:]
    out_w = W.get("output.weight", W["token_embd.weight"])
    return h @ out_w.T  # [n, vocab]


def main():
    cases = [c for c in json.load(open(TOKENIZER))["cases"] if c["ids"]]
    f, W = load(MODEL)
    prompts = []
    long_ids = [BOS]
    while len(long_ids) < LONG:
        for c in cases:
            long_ids += c["ids"]
    runs = [(c["text"], [BOS] + c["ids"][: MAX_TOKENS - 1], 0) for c in cases[:N_PROMPTS]]
    runs.append(("(long: every case in turn)", long_ids[:LONG], LONG - LONG_TAIL))
    for text, toks, start in runs:
        logits = forward(f, W, toks, last=len(toks) - start)
        m = logits.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
        top = np.argsort(-logits, axis=1, kind="stable")[:, :10]
        lp = np.take_along_axis(logits, top, axis=1) - lse[:, None]
        prompts.append({"text": text, "tokens": toks, "from": start, "top_ids": top.tolist(),
                        "top_logprobs": np.round(lp, 4).tolist()})
        print(len(prompts), len(toks), repr(text[:40]), file=sys.stderr)
    meta = {"description": "float64 numpy reference (tools/make_exact_reference_gemma3.py)",
            "model": os.path.basename(MODEL), "gguf_version": gguf.__version__ if hasattr(
                gguf, "__version__") else "", "n_positions": sum(len(p["top_ids"]) for p in prompts)}
    json.dump({"meta": meta, "prompts": prompts}, open(OUT, "w"), separators=(",", ":"))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
