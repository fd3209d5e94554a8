#!/usr/bin/env python3
"""Brisk's Q6_K quantizer next to llama.cpp's llama-quantize, on the same F32
source.

    python3 bench/q6k_vs_llamaquantize.py [--models smol,gemma] [--kld brisk]
        [--threads 2] [--out bench/results/q6k_vs_llamaquantize.json]

For each model's F32 copy (~/.cache/brisk/kld/, exact values of the installed
file): `brisk quantize F32 OUT --type q6_k` and `llama-quantize --pure F32 OUT
Q6_K` (--pure: no k-quant mixture, every matrix Q6_K; no importance matrix for
either). Q6_K needs rows of a multiple of 256 values: both tools fall back for
the others (SmolLM2's 576-wide and Gemma's 640-wide rows; the script records
each tensor's type per tool). Both outputs are read with the gguf package and
dequantized in numpy (gguf.quants.dequantize); the measure is the relative RMS
error ||W_q - W|| / ||W|| against the F32 source, per tensor kind (ffn_down,
attn_output, ...) and overall, for each tool, and the ratio Brisk / llama.cpp.
"overall Q6_K" sums only tensors both tools wrote as Q6_K; "overall all"
every 2-D tensor. With --kld brisk (default), `brisk eval kld` scores both
Q6_K files against the F32 copy's distributions (text and chunking as
bench/kld_vs_llamacpp.py); --kld llamacpp uses llama-perplexity
--kl-divergence instead, --kld both runs both, --kld none skips it.

Needs build/brisk, llama.cpp's tools (bench/llamacpp/build.sh), numpy, gguf.
Output files go to ~/.cache/brisk/kld/ and are removed afterwards unless
--keep. Runtime: quantizing and comparing take ~2 min for both models; each
`brisk eval kld` pass 1-2.5 min (3 per model). Measured 17 min for the default
run on a shared 2-core machine while another 2-thread benchmark ran; use
--kld none for the weight errors alone. --timeout bounds each tool run.
"""
import argparse
import datetime
import json
import os
import sys
import time

import numpy as np
import gguf
from gguf.quants import dequantize

from kld_vs_llamacpp import CACHE, ROOT, TEXT, brisk_stats, f32_copy, installed_models, \
    llama_bin, llamacpp_stats, run

TOOLS = ("brisk", "llamacpp")
ROWS = 16384  # rows per numpy step


def kind(name):
    """'blk.3.ffn_down.weight' -> 'ffn_down'; 'token_embd.weight' -> 'token_embd'."""
    parts = name.split(".")
    return parts[2] if parts[0] == "blk" else parts[0]


def tensors(path):
    return {t.name: t for t in gguf.GGUFReader(path).tensors}


def compare(src, outs):
    """Per tensor kind: each tool's sum of squared errors, types; and sums."""
    ref = tensors(src)
    q = {tool: tensors(p) for tool, p in outs.items()}
    kinds = {}
    for name, t in ref.items():
        if len(t.shape) != 2:
            continue
        k = kinds.setdefault(kind(name), {"tensors": 0, "weights": 0, "sum_sq": 0.0,
                                          "types": {tool: set() for tool in TOOLS},
                                          "sum_sq_err": {tool: 0.0 for tool in TOOLS}})
        k["tensors"] += 1
        for tool in TOOLS:
            k["types"][tool].add(q[tool][name].tensor_type.name)
        for r0 in range(0, t.data.shape[0], ROWS):  # bounded memory for the embeddings
            w = np.asarray(t.data[r0:r0 + ROWS], dtype=np.float64)
            k["weights"] += w.size
            k["sum_sq"] += float(np.sum(w * w))
            for tool in TOOLS:
                qt = q[tool][name]
                wq = dequantize(qt.data[r0:r0 + ROWS], qt.tensor_type).reshape(w.shape)
                k["sum_sq_err"][tool] += float(np.sum((wq - w) ** 2))
    return kinds


def ratio(rel):
    """Brisk / llama.cpp; None where both are exact (a source already on the grid)."""
    return rel["brisk"] / rel["llamacpp"] if rel["llamacpp"] > 0 else None


def summarize(kinds):
    rows = {}
    for name, k in sorted(kinds.items()):
        rel = {tool: (k["sum_sq_err"][tool] / k["sum_sq"]) ** 0.5 for tool in TOOLS}
        rows[name] = {"tensors": k["tensors"], "weights": k["weights"],
                      "type": {tool: "/".join(sorted(k["types"][tool])) for tool in TOOLS},
                      "rel_rms": rel, "ratio_brisk_over_llamacpp": ratio(rel)}

    def total(names):
        ks = [kinds[n] for n in names]
        if not ks:
            return None
        rel = {tool: (sum(k["sum_sq_err"][tool] for k in ks) / sum(k["sum_sq"] for k in ks))
               ** 0.5 for tool in TOOLS}
        return {"kinds": names, "weights": sum(k["weights"] for k in ks), "rel_rms": rel,
                "ratio_brisk_over_llamacpp": ratio(rel)}
    q6k = [n for n, k in kinds.items() if all(k["types"][t] == {"Q6_K"} for t in TOOLS)]
    return rows, {"q6k": total(sorted(q6k)), "all": total(sorted(kinds))}


def kld_runs(mode, a, bindir, f32, stem, outs):
    """KLD of each tool's Q6_K file to the F32 copy, by `mode` (brisk, llamacpp, both)."""
    res = {}
    if mode in ("brisk", "both"):
        base = os.path.join(CACHE, f"{stem}.c{a.ctx}.q6k.brisk.kldbase")
        run([a.brisk, "eval", "kld", "--model", f32, "--text", TEXT, "--save-base", base,
             "--ctx", str(a.ctx), "--threads", str(a.threads)], timeout=a.timeout)
        res["brisk_eval"] = {tool: brisk_stats(a.brisk, p, base, "native", a.ctx)
                             for tool, p in outs.items()}
        os.unlink(base)
    if mode in ("llamacpp", "both"):
        base = os.path.join(CACHE, f"{stem}.c{a.ctx}.q6k.llamacpp.base")
        run([f"{bindir}/llama-perplexity", "-m", f32, "-f", TEXT, "-c", str(a.ctx), "-t",
             str(a.threads), "--kl-divergence-base", base], timeout=a.timeout)
        res["llama_perplexity"] = {
            tool: llamacpp_stats(run([f"{bindir}/llama-perplexity", "-m", p, "-c", str(a.ctx),
                                      "-t", str(a.threads), "--kl-divergence-base", base,
                                      "--kl-divergence"], timeout=a.timeout))
            for tool, p in outs.items()}
        os.unlink(base)
    return res


def fmt_ratio(v):
    r = v["ratio_brisk_over_llamacpp"]
    return f"{r:.3f}" if r is not None else "(both exact)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisk", default=os.path.join(ROOT, "build", "brisk"))
    ap.add_argument("--models", default="smol,gemma", help="keys of kld_vs_llamacpp.MODELS")
    ap.add_argument("--kld", default="brisk", choices=["none", "brisk", "llamacpp", "both"])
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per tool run")
    ap.add_argument("--keep", action="store_true", help="keep the Q6_K files")
    ap.add_argument("--out",
                    default=os.path.join(ROOT, "bench", "results", "q6k_vs_llamaquantize.json"))
    a = ap.parse_args()
    os.makedirs(CACHE, exist_ok=True)
    bindir = llama_bin()
    t_start = time.time()
    results = []
    for label, model in installed_models(a.models):
        stem = os.path.splitext(os.path.basename(model))[0]
        f32 = f32_copy(model, bindir)
        outs = {tool: os.path.join(CACHE, f"{stem}.{tool}.Q6_K.gguf") for tool in TOOLS}
        t0 = time.time()
        run([a.brisk, "quantize", f32, outs["brisk"], "--type", "q6_k", "--threads",
             str(a.threads)], timeout=a.timeout)
        t_brisk = time.time() - t0
        t0 = time.time()
        run([f"{bindir}/llama-quantize", "--pure", f32, outs["llamacpp"], "Q6_K",
             str(a.threads)], timeout=a.timeout)
        t_lcp = time.time() - t0
        kinds, overall = summarize(compare(f32, outs))
        kld = kld_runs(a.kld, a, bindir, f32, stem, outs) if a.kld != "none" else {}
        if not a.keep:
            for p in outs.values():
                os.unlink(p)
        results.append({"model": label, "f32_source": os.path.relpath(f32, CACHE),
                        "quantize_seconds": {"brisk": t_brisk, "llamacpp": t_lcp},
                        "kinds": kinds, "overall": overall, "kld": kld})
        print(f"{label}: overall Q6_K rel RMS brisk {overall['q6k']['rel_rms']['brisk']:.5f} "
              f"llama.cpp {overall['q6k']['rel_rms']['llamacpp']:.5f}", file=sys.stderr,
              flush=True)

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    commands = {"brisk": "brisk quantize F32 OUT --type q6_k",
                "llamacpp": "llama-quantize --pure F32 OUT Q6_K"}
    with open(a.out, "w") as f:
        json.dump({"date": datetime.date.today().isoformat(), "commands": commands,
                   "ctx": a.ctx, "text": os.path.relpath(TEXT, ROOT),
                   "seconds": time.time() - t_start, "results": results}, f, indent=2)
    print("\nRelative RMS weight error ||W_q - W|| / ||W|| against the F32 source\n")
    print("| model | tensors | type (Brisk / llama.cpp) | Brisk | llama.cpp | Brisk / llama.cpp |")
    print("|---|---|---|---|---|---|")
    for r in results:
        rows = [(k, v, f"{v['type']['brisk']} / {v['type']['llamacpp']}")
                for k, v in r["kinds"].items()]
        rows += [(f"**overall {n}**", v, "") for n, v in r["overall"].items() if v]
        for name, v, types in rows:
            print(f"| {r['model']} | {name} | {types} | {v['rel_rms']['brisk']:.5f} | "
                  f"{v['rel_rms']['llamacpp']:.5f} | {fmt_ratio(v)} |")
    if any(r["kld"] for r in results):
        print("\nKLD of each Q6_K file to the F32 copy\n")
        print("| model | engine | Brisk's Q6_K KLD | llama.cpp's Q6_K KLD | Brisk same top-1 | "
              "llama.cpp same top-1 |")
        print("|---|---|---|---|---|---|")
        for r in results:
            for engine, s in r["kld"].items():
                print(f"| {r['model']} | {engine} | {s['brisk']['kld']:.6f} | "
                      f"{s['llamacpp']['kld']:.6f} | {100 * s['brisk']['same_top1']:.2f}% | "
                      f"{100 * s['llamacpp']['same_top1']:.2f}% |")


if __name__ == "__main__":
    main()
