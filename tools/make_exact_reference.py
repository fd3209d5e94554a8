#!/usr/bin/env python3
"""Exact (float64) reference logits for the default model, written from the
GGUF/llama architecture facts alone with numpy: weights dequantized by the
`gguf` package, every activation in float64, no quantized activations, no
f16 KV cache. It complements tests/fixtures/smollm2_reference.json
(llama.cpp, which rounds activations to 8 bits and K/V to fp16): both
implementations are compared with exact math, so a disagreement between
them can be attributed.

Usage: python3 tools/make_exact_reference.py  (needs numpy, gguf; ~1 min)
Reads the prompts' token ids from smollm2_reference.json and writes
tests/fixtures/smollm2_exact.json: per position the top-10 (id, log-prob)
of the exact model, and the llama.cpp fixture's agreement with it.
"""
import json
import os
import sys

import gguf
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
LLAMA = os.path.join(ROOT, "tests", "fixtures", "smollm2_reference.json")
OUT = os.path.join(ROOT, "tests", "fixtures", "smollm2_exact.json")


def load(path=MODEL):
    """The file's metadata (tokenizer keys left out) and every tensor dequantized
    to float64 by the gguf package, shaped as in the file (rows outermost)."""
    r = gguf.GGUFReader(path)
    f = {k: v.contents() for k, v in r.fields.items() if not k.startswith("tokenizer.")}
    W = {}
    for t in r.tensors:
        a = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float64)
        W[t.name] = a.reshape([int(x) for x in reversed(t.shape)])
    return f, W


def forward(f, W, toks):
    L = f["llama.block_count"]
    nh = f["llama.attention.head_count"]
    nkv = f["llama.attention.head_count_kv"]
    d = f["llama.embedding_length"]
    hd = d // nh
    eps = f["llama.attention.layer_norm_rms_epsilon"]
    base = f["llama.rope.freq_base"]
    n = len(toks)
    x = W["token_embd.weight"][toks]  # [n, d]
    inv = base ** (-np.arange(0, hd, 2, dtype=np.float64) / hd)
    ang = np.arange(n)[:, None] * inv[None, :]
    cos, sin = np.cos(ang), np.sin(ang)

    def rms(v, w):
        return v / np.sqrt(np.mean(v * v, axis=-1, keepdims=True) + eps) * w

    def rope(v):  # v [n, heads, hd]; llama "normal" RoPE: pairs (2i, 2i+1)
        a, b = v[..., 0::2], v[..., 1::2]
        c, s = cos[:, None, :], sin[:, None, :]
        out = np.empty_like(v)
        out[..., 0::2] = a * c - b * s
        out[..., 1::2] = a * s + b * c
        return out

    mask = np.triu(np.full((n, n), -np.inf), 1)
    for l in range(L):
        b = f"blk.{l}."
        h = rms(x, W[b + "attn_norm.weight"])
        q = rope((h @ W[b + "attn_q.weight"].T).reshape(n, nh, hd))
        k = rope((h @ W[b + "attn_k.weight"].T).reshape(n, nkv, hd))
        v = (h @ W[b + "attn_v.weight"].T).reshape(n, nkv, hd)
        out = np.empty((n, nh, hd))
        for hh in range(nh):
            g = hh // (nh // nkv)
            s = q[:, hh, :] @ k[:, g, :].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(axis=1, keepdims=True))
            s /= s.sum(axis=1, keepdims=True)
            out[:, hh, :] = s @ v[:, g, :]
        x = x + out.reshape(n, d) @ W[b + "attn_output.weight"].T
        h = rms(x, W[b + "ffn_norm.weight"])
        gt = h @ W[b + "ffn_gate.weight"].T
        up = h @ W[b + "ffn_up.weight"].T
        x = x + (gt / (1 + np.exp(-gt)) * up) @ W[b + "ffn_down.weight"].T
    h = rms(x, W["output_norm.weight"])
    out_w = W.get("output.weight", W["token_embd.weight"])
    return h @ out_w.T  # [n, vocab]


def main():
    f, W = load()
    ref = json.load(open(LLAMA))
    prompts, agree, total = [], 0, 0
    for p in ref["prompts"]:
        logits = forward(f, W, p["tokens"])
        m = logits.max(axis=1, keepdims=True)
        lse = (m + np.log(np.exp(logits - m).sum(axis=1, keepdims=True)))[:, 0]
        top = np.argsort(-logits, axis=1, kind="stable")[:, :10]
        lp = np.take_along_axis(logits, top, axis=1) - lse[:, None]
        agree += int(sum(int(top[i, 0]) == p["top_ids"][i][0] for i in range(len(top))))
        total += len(top)
        prompts.append({"name": p["name"], "tokens": p["tokens"],
                        "top_ids": top.tolist(),
                        "top_logprobs": np.round(lp, 4).tolist()})
        print(p["name"], len(p["tokens"]), file=sys.stderr)
    meta = {"description": "float64 numpy reference (tools/make_exact_reference.py)",
            "model_sha256": ref["meta"]["model_sha256"],
            "llama_cpp_top1_agreement_with_exact": agree / total, "n_positions": total}
    json.dump({"meta": meta, "prompts": prompts}, open(OUT, "w"), separators=(",", ":"))
    print(json.dumps(meta))


if __name__ == "__main__":
    main()
