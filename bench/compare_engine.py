#!/usr/bin/env python3
"""Engine speed, Brisk vs llama.cpp, measured side by side in one run.

For each model and thread count, runs llama.cpp's llama-bench (pp512, tg128)
and `brisk bench-model` (the same measurements) one after the other, then
the batched decode (B parallel sequences of 128 prompt + 128 generated
tokens: llama-batched-bench with flash attention vs brisk bench-model
--parallel) for the default model. Also measures the machine's memory read
bandwidth (bench/membw.sh) and reports each tg figure as a fraction of the
bandwidth limit (weight bytes read per token / read GB/s).

Usage: python3 bench/compare_engine.py [--quick] [--out bench/results/engine.json]
Writes the JSON result and prints the markdown tables for BENCHMARKS.md.
Needs: build/brisk (Release), bench/llamacpp/build.sh (builds llama.cpp from
the llama-cpp-python sdist, cached), models from scripts/install_models.sh and
tools/make_test_models.sh. Do not run with anything else using the cores.
"""
import argparse
import json
import os
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = [
    ("SmolLM2-135M Q4_1 (default)", "models/SmolLM2-135M-Instruct.Q4_1.gguf"),
    ("SmolLM2-135M Q8_0", "models/smollm2-135m.Q8_0.gguf"),
    ("SmolLM2-135M Q4_0", "models/smollm2-135m.Q4_0.gguf"),
    ("Gemma 3 270M Q4_K_M", "models/gemma-3-270m-q4_k_m.gguf"),
]


def run(cmd, timeout=1200):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{cmd[0]} failed: {r.stderr[-2000:]}")
    return r.stdout


def llama_bin():
    out = run(["bash", "bench/llamacpp/build.sh"], timeout=3600)
    return out.strip().splitlines()[-1]


def llama_bench(bindir, model, threads, reps):
    out = run([f"{bindir}/llama-bench", "-m", model, "-t", str(threads), "-p", "512", "-n",
               "128", "-r", str(reps), "-fa", "0", "-o", "json"])
    rows = json.loads(out)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] == 512 and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] == 128 and r["n_prompt"] == 0)
    return {"pp512": pp, "tg128": tg}


def llama_batched(bindir, model, threads, npl):
    out = run([f"{bindir}/llama-batched-bench", "-m", model, "-t", str(threads), "-tb",
               str(threads), "-fa", "on", "-npp", "128", "-ntg", "128", "-npl",
               ",".join(map(str, npl)), "-c", str(256 * max(npl) + 256),
               "--output-format", "jsonl"])
    res = {}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            res[r["pl"]] = {"pp": r["speed_pp"], "tg": r["speed_tg"]}
    return res


def brisk_bench(model, threads, reps, npl):
    tmp = os.path.join(REPO, "build", "bench-model.json")
    cmd = ["build/brisk", "bench-model", "-m", model, "-t", str(threads), "-p", "512", "-n",
           "128", "-r", str(reps), "--json", tmp]
    if npl:
        cmd += ["--parallel", ",".join(map(str, npl)), "--npp", "128", "--ntg", "128"]
    else:  # pp/tg only: a token-sized batched run
        cmd += ["--parallel", "1", "--npp", "1", "--ntg", "1"]
    run(cmd)
    d = json.load(open(tmp))
    res = {"pp512": d["pp"]["tokens_per_s"], "tg128": d["tg"]["tokens_per_s"],
           "weight_bytes": d["weight_bytes"], "kernels": d["kernels"]}
    if npl:
        res["batched"] = {b["parallel"]: {"pp": b["pp_tokens_per_s"], "tg": b["tg_tokens_per_s"]}
                          for b in d["batched"]}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 rep, fewer configurations")
    ap.add_argument("--out", default="bench/results/engine.json")
    args = ap.parse_args()
    reps = 1 if args.quick else 3
    npl = [1, 4, 16, 32]
    bindir = llama_bin()
    run(["bash", "bench/membw.sh", "2"])
    membw = json.load(open(os.path.join(REPO, "bench/results/membw.json")))
    dram = {r["threads"]: r["read_gbps"] for r in membw["runs"][0]["membw"]["results"]}
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "cpu": membw["cpu"], "membw_read_gbps": dram, "rows": [], "batched": []}
    for name, model in MODELS:
        if not os.path.exists(os.path.join(REPO, model)):
            print(f"skip {model} (missing)", file=sys.stderr)
            continue
        for t in (1, 2):
            ll = llama_bench(bindir, model, t, reps)
            br = brisk_bench(model, t, reps, None)
            row = {"model": name, "file": model, "threads": t, "llama": ll, "brisk": br}
            result["rows"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    default = MODELS[0][1]
    for t in (1, 2):
        ll = llama_batched(bindir, default, t, npl)
        br = brisk_bench(default, t, 1, npl)["batched"]
        result["batched"].append({"threads": t, "llama": ll, "brisk": br})
        print(json.dumps(result["batched"][-1]), file=sys.stderr, flush=True)
    os.makedirs(os.path.dirname(os.path.join(REPO, args.out)), exist_ok=True)
    json.dump(result, open(os.path.join(REPO, args.out), "w"), indent=1)

    print(f"Machine: {result['cpu']}, DRAM read bandwidth {dram.get(1, 0):.1f} GB/s (1 thread), "
          f"{dram.get(2, 0):.1f} GB/s (2 threads), measured by bench/membw.sh in the same run.\n")
    print("| model | threads | llama.cpp pp512 | Brisk pp512 | ratio | llama.cpp tg128 | "
          "Brisk tg128 | ratio | Brisk tg128 x weight bytes / DRAM BW |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        ll, br, t = r["llama"], r["brisk"], r["threads"]
        frac = br["tg128"] * br["weight_bytes"] / (dram.get(t, dram[1]) * 1e9)
        print(f"| {r['model']} | {t} | {ll['pp512']:.1f} | {br['pp512']:.1f} | "
              f"{br['pp512'] / ll['pp512']:.2f}x | {ll['tg128']:.1f} | {br['tg128']:.1f} | "
              f"{br['tg128'] / ll['tg128']:.2f}x | {frac:.2f} |")
    print("\nAggregate decode tokens/s, B sequences x (128 prompt + 128 generated), default model:\n")
    print("| threads | B | llama.cpp tg (fa on) | Brisk tg | ratio | llama.cpp pp | Brisk pp |")
    print("|---|---|---|---|---|---|---|")
    for b in result["batched"]:
        for n in npl:
            ll, br = b["llama"].get(n), b["brisk"].get(n) or b["brisk"].get(str(n))
            if not ll or not br:
                continue
            print(f"| {b['threads']} | {n} | {ll['tg']:.1f} | {br['tg']:.1f} | "
                  f"{br['tg'] / ll['tg']:.2f}x | {ll['pp']:.1f} | {br['pp']:.1f} |")


if __name__ == "__main__":
    main()
