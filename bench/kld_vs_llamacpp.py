#!/usr/bin/env python3
"""`brisk eval kld` next to llama.cpp's `llama-perplexity --kl-divergence`, on
the same model pair and text, in one run.

For each model file: an F32 copy (llama-quantize --allow-requantize: every
weight exactly the value the file encodes) is the reference. llama.cpp scores
the text with the F32 copy (--kl-divergence-base), then with the file
(--kl-divergence); Brisk does the same with `brisk eval kld --save-base` and
`--base`. Both cut the text into the same chunks (n_ctx tokens, the second
half scored), so the two KLDs measure the same thing: how far each engine's
run of the quantized file is from the exact weights. Then Brisk's load-time
precisions (f16, q8_0, int8, fp8, q4_0, int4 conversions of the file) against the same
reference.

    python3 bench/kld_vs_llamacpp.py [--ctx 512] [--models smol,gemma]
        [--precisions f16,q8_0,int8,fp8,q4_0,int4] [--out bench/results/kld.json]

Needs build/brisk, bench/llamacpp/build.sh's tools (built on first use) and
the installed models. Large files (F32 copies, bases) go to
~/.cache/brisk/kld/. Prints markdown tables for BENCHMARKS.md.
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = os.path.join(ROOT, "bench", "golden", "kld_text.txt")
MODELS = {
    "smol": ("SmolLM2-135M Q4_1", "models/SmolLM2-135M-Instruct.Q4_1.gguf"),
    "smol-q8": ("SmolLM2-135M Q8_0", "models/SmolLM2-135M-Instruct.Q8_0.gguf"),
    "gemma": ("Gemma 3 270M Q4_K_M", "models/gemma-3-270m-q4_k_m.gguf"),
}
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "brisk", "kld")


def run(cmd, timeout=3600):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed ({r.returncode}): {r.stderr[-3000:]}")
    return r.stdout + r.stderr


def llama_bin():
    out = subprocess.run(["bash", os.path.join(ROOT, "bench", "llamacpp", "build.sh")],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def installed_models(keys):
    """(label, path) of each model of `keys` ("smol,gemma") that is installed."""
    for key in keys.split(","):
        label, rel = MODELS[key]
        model = os.path.join(ROOT, rel)
        if os.path.exists(model):
            yield label, model
        else:
            print(f"skipping {label}: {rel} is not installed", file=sys.stderr)


def f32_copy(model, bindir=None):
    """The model's F32 copy in CACHE (every weight exactly the value the file
    encodes), made with llama-quantize on first use."""
    stem = os.path.splitext(os.path.basename(model))[0]
    f32 = os.path.join(CACHE, stem + ".F32.gguf")
    if not os.path.exists(f32):
        run([f"{bindir or llama_bin()}/llama-quantize", "--allow-requantize", model, f32, "F32"])
    return f32


def llamacpp_stats(text):
    """The figures llama-perplexity --kl-divergence prints."""
    def num(label):
        m = re.search(re.escape(label) + r"\s*:\s*(-?[\d.]+)", text)
        if not m:
            raise RuntimeError(f"llama-perplexity printed no '{label}'")
        return float(m.group(1))
    return {"ppl_reference": num("Mean PPL(base)"), "ppl_test": num("Mean PPL(Q)"),
            "ln_ppl_ratio": num("Mean ln(PPL(Q)/PPL(base))"), "kld": num("Mean    KLD"),
            "kld_p99": num("99.0%   KLD"), "same_top1": num("Same top p") / 100,
            "rms_delta_p": num("RMS Δp") / 100}


def brisk_stats(brisk, model, base, precision, ctx):
    out_json = os.path.join(CACHE, "last.json")
    run([brisk, "eval", "kld", "--model", model, "--precision", precision, "--base", base,
         "--json", out_json, "--ctx", str(ctx)])
    with open(out_json) as f:
        j = json.load(f)
    return {"ppl_reference": j["ppl_reference"], "ppl_test": j["ppl_test"],
            "ln_ppl_ratio": j["ln_ppl_ratio"]["mean"], "kld": j["kld"]["mean"],
            "kld_stderr": j["kld"]["stderr"], "kld_p99": j["kld_p99"],
            "same_top1": j["same_top1"]["mean"], "rms_delta_p": j["rms_delta_p"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", default=os.path.join(ROOT, "build", "brisk"))
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="smol,smol-q8,gemma")
    ap.add_argument("--precisions", default="f16,q8_0,int8,fp8,q4_0,int4")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "kld.json"))
    a = ap.parse_args()
    os.makedirs(CACHE, exist_ok=True)
    bindir = llama_bin()
    results = []
    for label, model in installed_models(a.models):
        rel = os.path.relpath(model, ROOT)
        stem = os.path.splitext(os.path.basename(model))[0]
        f32 = f32_copy(model, bindir)
        lcp_base = os.path.join(CACHE, f"{stem}.c{a.ctx}.llamacpp.base")
        run([f"{bindir}/llama-perplexity", "-m", f32, "-f", TEXT, "-c", str(a.ctx), "-t",
             str(a.threads), "--kl-divergence-base", lcp_base])
        lcp = llamacpp_stats(run([f"{bindir}/llama-perplexity", "-m", model, "-c", str(a.ctx),
                                  "-t", str(a.threads), "--kl-divergence-base", lcp_base,
                                  "--kl-divergence"]))
        os.unlink(lcp_base)
        base = os.path.join(CACHE, f"{stem}.c{a.ctx}.brisk.kldbase")
        run([a.brisk, "eval", "kld", "--model", f32, "--text", TEXT, "--save-base", base,
             "--ctx", str(a.ctx), "--threads", str(a.threads)])
        brisk = brisk_stats(a.brisk, model, base, "native", a.ctx)
        precisions = {}
        for p in [p for p in a.precisions.split(",") if p]:
            try:
                precisions[p] = brisk_stats(a.brisk, model, base, p, a.ctx)
            except RuntimeError as e:  # a format whose blocks do not fit the rows
                print(f"{label} {p}: {e}", file=sys.stderr)
        os.unlink(base)
        results.append({"model": label, "file": rel, "llamacpp": lcp, "brisk": brisk,
                        "precisions": precisions})

    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"ctx": a.ctx, "text": os.path.relpath(TEXT, ROOT), "results": results}, f,
                  indent=2)
    print(f"\nKL divergence to the F32 weights, text {os.path.relpath(TEXT, ROOT)}, "
          f"n_ctx {a.ctx}\n")
    print("| model | llama.cpp KLD | Brisk KLD | Brisk / llama.cpp | llama.cpp same top-1 | "
          "Brisk same top-1 | llama.cpp PPL(ref) | Brisk PPL(ref) | llama.cpp ln PPL ratio | "
          "Brisk ln PPL ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        lc, br = r["llamacpp"], r["brisk"]
        print(f"| {r['model']} | {lc['kld']:.6f} | {br['kld']:.6f} ± {br['kld_stderr']:.6f} | "
              f"{br['kld'] / lc['kld']:.3f} | {100 * lc['same_top1']:.2f}% | "
              f"{100 * br['same_top1']:.2f}% | {lc['ppl_reference']:.4f} | "
              f"{br['ppl_reference']:.4f} | {lc['ln_ppl_ratio']:.5f} | {br['ln_ppl_ratio']:.5f} |")
    print("\nBrisk's load-time precisions of each file, against the same F32 reference\n")
    print("| model | precision | mean KLD | 99% KLD | same top-1 | ln PPL ratio | RMS Δp |")
    print("|---|---|---|---|---|---|---|")
    for r in results:
        for p, s in [("native", r["brisk"])] + list(r["precisions"].items()):
            print(f"| {r['model']} | {p} | {s['kld']:.6f} | {s['kld_p99']:.5f} | "
                  f"{100 * s['same_top1']:.2f}% | {s['ln_ppl_ratio']:.5f} | "
                  f"{100 * s['rms_delta_p']:.3f}% |")


if __name__ == "__main__":
    main()
