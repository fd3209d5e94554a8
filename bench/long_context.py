#!/usr/bin/env python3
"""Long-context prefill, Brisk vs llama.cpp (flash attention on), same file,
same run.

For each prompt length P, alternating, `reps` times each:
  llama-bench -m M -p P -n 0 -r 1 -fa 1 -t T
  brisk bench-model -m M -p P -n 0 -r 1 -t T
and reports tokens/s (median), the ratio, each process's peak RSS, and
Brisk's attention share of the prefill time (Model::attention_seconds:
scores, softmax and the weighted V sum; not the projections) with the
arithmetic rate that implies (attention FLOPs computed from the model's shape:
4 x heads x head_dim per visible key per query, a local layer's queries seeing
at most its sliding window) as a fraction of the machine's FP32 FMA peak
(bench/fma_peak.c, measured in the same run at the same thread count).

  python3 bench/long_context.py [--model models/gemma-3-270m-q4_k_m.gguf]
      [--lengths 512,2048,8192,16384] [--reps 2] [--threads 2]
      [--out bench/results/long_context.json]

Needs build/brisk (Release) and llama.cpp (bench/llamacpp/build.sh, cached).
Run on a quiet machine.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_engine import REPO, llama_bin  # noqa: E402


def run_rss(cmd):
    """Runs cmd from the repo root; returns (stdout, peak RSS in MB)."""
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        pid = os.fork()
        if pid == 0:
            os.chdir(REPO)
            os.dup2(out.fileno(), 1)
            os.dup2(err.fileno(), 2)
            os.execvp(cmd[0], cmd)
        _, status, ru = os.wait4(pid, 0)
        out.seek(0)
        err.seek(0)
        if status != 0:
            raise RuntimeError(f"{cmd[0]} failed: {err.read()[-2000:]}")
        return out.read(), ru.ru_maxrss / 1024


def fma_peak(threads):
    """GFLOP/s of register-only FP32 FMAs (bench/fma_peak.c, built natively)."""
    cache = os.path.join(os.environ.get("BRISK_CACHE", os.path.expanduser("~/.cache/brisk")),
                         "fma_peak")
    os.makedirs(cache, exist_ok=True)
    exe, src = os.path.join(cache, "fma_peak"), os.path.join(REPO, "bench", "fma_peak.c")
    if not os.path.exists(exe) or os.path.getmtime(src) > os.path.getmtime(exe):
        subprocess.run([os.environ.get("CC", "cc"), "-O3", "-march=native", "-fopenmp", "-o", exe,
                        src], check=True)
    out = subprocess.run([exe, str(threads)], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["gflops"]


def model_shape(path):
    from gguf import GGUFReader
    r = GGUFReader(path)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()

    def get(key, default=None):
        f = r.fields.get(f"{arch}.{key}")
        return default if f is None else int(f.parts[f.data[0]][0])
    heads = get("attention.head_count")
    return {"arch": arch, "layers": get("block_count"), "heads": heads,
            "head_dim": get("attention.key_length", get("embedding_length") // heads),
            "window": get("attention.sliding_window", 0),
            # Gemma 3: every sixth layer is global (as Brisk's arch recipe has it).
            "global_every": 6 if arch == "gemma3" else 0}


def attention_flops(shape, p):
    total = 0
    for layer in range(shape["layers"]):
        local = shape["window"] > 0 and (shape["global_every"] <= 0 or
                                         (layer + 1) % shape["global_every"] != 0)
        if local:
            w = shape["window"]
            keys = sum(min(i + 1, w) for i in range(p))
        else:
            keys = p * (p + 1) // 2
        total += 4 * shape["heads"] * shape["head_dim"] * keys
    return total


def llama_pp(bindir, model, p, threads):
    out, rss = run_rss([f"{bindir}/llama-bench", "-m", model, "-t", str(threads), "-p", str(p),
                        "-n", "0", "-r", "1", "-fa", "1", "-o", "json"])
    row = next(r for r in json.loads(out) if r["n_prompt"] == p)
    return row["avg_ts"], rss


def brisk_pp(model, p, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as tmp:
        _, rss = run_rss(["build/brisk", "bench-model", "-m", model, "-t", str(threads), "-p",
                          str(p), "-n", "0", "-r", "1", "--parallel", "1", "--npp", "1", "--ntg",
                          "1", "--json", tmp.name])
        d = json.load(open(tmp.name))
    return d["pp"]["tokens_per_s"], d["pp"]["attention_share"], rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="models/gemma-3-270m-q4_k_m.gguf")
    ap.add_argument("--lengths", default="512,2048,8192,16384")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="bench/results/long_context.json")
    a = ap.parse_args()
    bindir = llama_bin()
    shape = model_shape(os.path.join(REPO, a.model))
    peak = fma_peak(a.threads)
    rows = []
    for p in map(int, a.lengths.split(",")):
        runs = {"llama": [], "brisk": [], "share": [], "llama_rss": [], "brisk_rss": []}
        for _ in range(a.reps):
            ts, rss = llama_pp(bindir, a.model, p, a.threads)
            runs["llama"].append(ts)
            runs["llama_rss"].append(rss)
            ts, share, rss = brisk_pp(a.model, p, a.threads)
            runs["brisk"].append(ts)
            runs["share"].append(share)
            runs["brisk_rss"].append(rss)
        med = {k: statistics.median(v) for k, v in runs.items()}
        flops = attention_flops(shape, p)
        attn_s = med["share"] * p / med["brisk"]
        rows.append({"n_prompt": p, "runs": runs, "median": med, "ratio": med["brisk"] / med["llama"],
                     "attention_gflop": flops / 1e9,
                     "attention_gflops_per_s": flops / attn_s / 1e9 if attn_s > 0 else None})
    peak_after = fma_peak(a.threads)
    res = {"model": a.model, "shape": shape, "threads": a.threads, "reps": a.reps,
           "fma_peak_gflops": [peak, peak_after], "rows": rows}
    with open(os.path.join(REPO, a.out), "w") as f:
        json.dump(res, f, indent=2)
    print(f"\n{a.model}, {a.threads} threads, median of {a.reps} alternating runs; FP32 FMA peak "
          f"{peak:.0f} / {peak_after:.0f} GFLOP/s (before / after)\n")
    print("| prompt tokens | llama.cpp (FA on) t/s | Brisk t/s | ratio | Brisk attention share | "
          "attention GFLOP/s (of peak) | Brisk peak RSS | llama.cpp peak RSS |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        m = r["median"]
        print(f"| {r['n_prompt']} | {m['llama']:.1f} | {m['brisk']:.1f} | **{r['ratio']:.2f}x** | "
              f"{100 * m['share']:.0f}% | {r['attention_gflops_per_s']:.0f} "
              f"({100 * r['attention_gflops_per_s'] / max(peak, peak_after):.0f}%) | "
              f"{m['brisk_rss']:.0f} MB | {m['llama_rss']:.0f} MB |")


if __name__ == "__main__":
    main()
