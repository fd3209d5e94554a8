#!/usr/bin/env python3
"""Greedy path agreement with the exact model.

The first reading: on 124 prompts, Brisk's greedy continuations of the
default model stayed on the exact model's path for 52% of their length on
average, llama.cpp's for 59%. This measures it and splits the error:

  exact      the F32 copy of the default model file (bench/kld_vs_llamacpp.py
             makes it) served by Brisk with an F32 KV cache: f32 weights, f32
             activations, f32 KV. The reference path.
  default    the Q4_1 file, default settings (f16 KV, 8-bit activations in
             the quantized matmuls).
  kv-f32     the Q4_1 file with --kv-precision f32 (KV rounding removed).
  prec-f32   the Q4_1 file with --precision f32 (weights dequantized at load:
             the exact model's weight values, f32 activations, f16 KV): what
             f16 KV and accumulation order cost by themselves.
  llama.cpp  llama-server on the Q4_1 file (greedy, no prompt cache).

Every configuration is a server given the same raw prompts on the completions
endpoint (no chat template), greedy, max_tokens 64, one request at a time.
Every request sets ignore_eos, so every continuation is 64 tokens long. A
second reading lets an end token end a path: each path is cut after its first
special token (greedy decoding is the same up to that token with or without
ignore_eos), the end token kept, so ending early or late is a divergence.

Per prompt: the longest common prefix of the generated tokens with the exact
model's, divided by the exact model's generated length. Tokens are compared by
their text pieces (Brisk's completions logprobs give the pieces, llama-server
gives them too, with ids); the tokenizer's pieces are distinct, so this is the
token-id comparison, except that all special tokens (<|im_end|>, ...) count as
one (older Brisk answers rendered them all as "").

    python3 bench/greedy_path.py [--n 124] [--configs exact,default,kv-f32,prec-f32,llama.cpp]
        [--threads 1] [--out bench/results/greedy_path.json]
    python3 bench/greedy_path.py --from-json bench/results/greedy_path.json   # tables again
    python3 bench/greedy_path.py --merge --configs llama.cpp   # rerun one, keep the others
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from server_process import ServerProcess, free_port  # noqa: E402

MODEL = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
EXACT = os.path.join(os.path.expanduser("~"), ".cache", "brisk", "kld",
                     "SmolLM2-135M-Instruct.Q4_1.F32.gguf")
LLAMA_BIN = os.path.join(os.path.expanduser("~"), ".cache", "brisk", "llama.cpp-0.3.36", "bin")

# name -> (model file, extra `brisk serve` arguments); "llama.cpp" is special.
BRISK_CONFIGS = {
    "exact": (EXACT, ["--kv-precision", "f32", "--allow-ungated"]),
    "default": (MODEL, []),
    "kv-f32": (MODEL, ["--kv-precision", "f32", "--allow-ungated"]),
    "prec-f32": (MODEL, ["--precision", "f32", "--allow-ungated"]),
}
LABELS = {
    "exact": "exact (F32 weights, F32 KV)",
    "default": "Brisk default (Q4_1, f16 KV, 8-bit activations)",
    "kv-f32": "Brisk Q4_1, --kv-precision f32",
    "prec-f32": "Brisk Q4_1, --precision f32 (f16 KV)",
    "llama.cpp": "llama.cpp llama-server, Q4_1",
}


def prompts(n):
    """`n` prompts, deterministically: the completion (`prompt`) cases of the
    golden sets, then sentence beginnings (8 to 12 words) cut from the KLD
    text."""
    out, seen = [], set()

    def add(p):
        p = p.strip()
        if p and p not in seen and len(out) < n:
            seen.add(p)
            out.append(p)

    for path in sorted(glob.glob(os.path.join(ROOT, "bench", "golden", "*.jsonl"))):
        for line in open(path, encoding="utf-8"):
            if line.strip():
                row = json.loads(line)
                if isinstance(row.get("prompt"), str):
                    add(row["prompt"])
    text = open(os.path.join(ROOT, "bench", "golden", "kld_text.txt"), encoding="utf-8").read()
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s]
    for i, s in enumerate(sentences):
        words = s.split()
        k = 8 + i % 5
        if len(words) > k:
            add(" ".join(words[:k]))
    if len(out) < n:
        sys.exit(f"only {len(out)} prompts could be built, {n} asked")
    return out


def post(url, body, timeout=300):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def brisk_generate(base, prompt, max_tokens, ignore_eos):
    body = {"prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "logprobs": 0,
            "skip_special_tokens": False, "ignore_eos": ignore_eos}
    c = post(base + "/v1/completions", body)["choices"][0]
    return c["logprobs"]["tokens"]


def llama_generate(base, prompt, max_tokens, ignore_eos):
    """llama-server's ignore_eos bans the end tokens (their logits -inf) rather
    than going on past them, so it is never set: an end token ends the path,
    and it is put back on the end ("", as Brisk renders it) so that the
    end-token reading compares like with like. Only that reading holds for
    llama.cpp."""
    del ignore_eos
    body = {"prompt": prompt, "n_predict": max_tokens, "temperature": 0, "top_k": 1, "seed": 0,
            "n_probs": 1, "cache_prompt": False, "ignore_eos": False, "return_tokens": True}
    j = post(base + "/completion", body)
    tokens = [p["token"] for p in j["completion_probabilities"]]
    if j.get("stop_type") == "eos" and (not tokens or not SPECIAL.match(tokens[-1])):
        tokens.append("")
    return tokens


def start_llama(threads):
    exe = os.path.join(LLAMA_BIN, "llama-server")
    if not os.path.exists(exe):
        return None
    port = free_port()
    return ServerProcess([exe, "-m", MODEL, "-t", str(threads), "-tb", str(threads), "-c", "2048",
                          "-np", "1", "--host", "127.0.0.1", "--port", str(port), "--no-webui"],
                         port=port, ready_path="/health", timeout=60)


def run_config(name, a, ps):
    t0 = time.time()
    if name == "llama.cpp":
        p = start_llama(a.threads)
        if p is None:
            print("llama-server not found; skipping llama.cpp", file=sys.stderr)
            return None
        gen = llama_generate
    else:
        model, extra = BRISK_CONFIGS[name]
        if not os.path.exists(model):
            sys.exit(f"missing {model} (bench/kld_vs_llamacpp.py makes the F32 copy)")
        p = ServerProcess([a.brisk, "serve", "--model", model, "--port", "0",
                           "--threads", str(a.threads)] + extra)
        gen = brisk_generate
    try:
        outs = [gen(p.url, q, a.max_tokens, True) for q in ps]
    finally:
        p.stop(timeout=10)
    print(f"{name}: {len(ps)} prompts in {time.time() - t0:.0f} s", file=sys.stderr)
    return outs


SPECIAL = re.compile(r"^<\|[A-Za-z0-9_]+\|>$")


def norm(tokens):
    """All special tokens as "" (how Brisk renders them with skip_special_tokens)."""
    return ["" if SPECIAL.match(t) else t for t in tokens]


def cut_at_end(tokens):
    """The path an end token would have ended: up to its first special token, kept."""
    for i, t in enumerate(tokens):
        if t == "":
            return tokens[:i + 1]
    return tokens


def lcp(x, y):
    n = 0
    for u, v in zip(x, y):
        if u != v:
            break
        n += 1
    return n


def score(ref, gen, eos):
    shares, same = [], 0
    for r, g in zip(ref, gen):
        r, g = norm(r), norm(g)
        if eos:
            r, g = cut_at_end(r), cut_at_end(g)
        k = lcp(r, g)
        shares.append(k / len(r) if r else 1.0)
        same += k == len(r) == len(g)
    return {"mean_share": statistics.mean(shares), "median_share": statistics.median(shares),
            "identical": same, "prompts": len(shares), "shares": shares}


def tables(result):
    gens = result["generations"]
    ref = gens["exact"]
    rows = []
    for name, gen in gens.items():
        if name == "exact":
            continue
        rows.append({"config": name, "label": LABELS[name],
                     "ignore_eos": None if name == "llama.cpp" else score(ref, gen, False),
                     "eos_ends": score(ref, gen, True)})
    # every configuration against every other (end-token reading, row = reference):
    # how far apart the rounded configurations are from each other
    result["pairwise_eos_mean_share"] = {
        a: {b: round(score(gens[a], gens[b], True)["mean_share"], 4) for b in gens if b != a}
        for a in gens}
    lens = [len(cut_at_end(norm(r))) for r in ref]
    n = len(ref)
    for key, title in (("ignore_eos", f"all {result['max_tokens']} tokens (ignore_eos; "
                        "not for llama.cpp, whose ignore_eos bans end tokens)"),
                       ("eos_ends", "an end token ends a path (exact path: mean "
                        f"{statistics.mean(lens):.1f} tokens, {sum(x < result['max_tokens'] for x in lens)}"
                        f"/{n} end early)")):
        print(f"\n{n} prompts, greedy; {title}; reference: {LABELS['exact']}\n")
        print("| configuration | mean share of the exact path | median | identical prompts |")
        print("|---|---|---|---|")
        for r in rows:
            if key == "ignore_eos" and r["config"] == "llama.cpp":
                continue
            m = r[key]
            print(f"| {r['label']} | {100 * m['mean_share']:.1f}% | {100 * m['median_share']:.1f}% "
                  f"| {m['identical']}/{m['prompts']} |")
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", default=os.path.join(ROOT, "build", "brisk"))
    ap.add_argument("--n", type=int, default=124, help="prompts")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--configs", default="exact,default,kv-f32,prec-f32,llama.cpp")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--merge", action="store_true",
                    help="run only --configs and put their paths into the saved --out run")
    ap.add_argument("--from-json", help="print the tables of a saved run (and rewrite its results)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "greedy_path.json"))
    a = ap.parse_args()
    if a.from_json:
        result = json.load(open(a.from_json, encoding="utf-8"))
        result["results"] = tables(result)
        with open(a.from_json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1, ensure_ascii=False)
        return
    ps = prompts(a.n)
    names = [c for c in a.configs.split(",") if c]
    gens = {}
    if a.merge:
        saved = json.load(open(a.out, encoding="utf-8"))
        if saved["prompts"] != ps or saved["max_tokens"] != a.max_tokens:
            sys.exit(f"{a.out} holds other prompts or max_tokens; run all configurations")
        gens = saved["generations"]
    elif "exact" not in names:
        names.insert(0, "exact")
    for name in names:
        g = run_config(name, a, ps)
        if g is not None:
            gens[name] = g
    result = {"prompts": ps, "max_tokens": a.max_tokens, "threads": a.threads,
              "compared": "token pieces (special tokens all as one)", "generations": gens}
    result["results"] = tables(result)
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, ensure_ascii=False)
    print(f"\nwrote {os.path.relpath(a.out, ROOT)}")


if __name__ == "__main__":
    main()
