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
       python3 bench/compare_engine.py --dram-shapes [--threads 2] --out FILE.json
       python3 bench/compare_engine.py --models NAME=PATH,NAME=PATH --out FILE.json
--models / --dram-shapes replace the default model list and run the batched
decode for every model. --dram-shapes takes the random-weight files of real
shapes (Llama 3.2 1B / 3B, Qwen2.5 1.5B) that bench/dram_shapes.sh makes, whose
weights stream from DRAM instead of the L3 cache.
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
DRAM_SHAPES_DIR = os.path.join(os.environ.get("BRISK_CACHE", os.path.expanduser("~/.cache/brisk")),
                               "dram-shapes")
DRAM_SHAPES = [  # the files of bench/dram_shapes.sh; random weights, real shapes
    ("Llama-3.2-1B shape Q4_K_M", "llama-1b.Q4_K_M.gguf"),
    ("Llama-3.2-1B shape Q8_0", "llama-1b.Q8_0.gguf"),
    ("Qwen2.5-1.5B shape Q4_K_M", "qwen2-1.5b.Q4_K_M.gguf"),
    ("Llama-3.2-3B shape Q4_K_M", "llama-3b.Q4_K_M.gguf"),
]


# Prompt / generated token counts. --smoke shrinks them to check that every
# model loads and every step runs; the JSON keys keep the names pp512 / tg128.
SIZE = {"pp": 512, "tg": 128, "npp": 128, "ntg": 128}


def parse_models(spec):
    """"NAME=PATH,NAME=PATH" -> [(NAME, PATH)]."""
    out = []
    for item in filter(None, spec.split(",")):
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--models: {item!r} is not NAME=PATH")
        out.append((name, path))
    return out


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
    out = run([f"{bindir}/llama-bench", "-m", model, "-t", str(threads), "-p", str(SIZE["pp"]),
               "-n", str(SIZE["tg"]), "-r", str(reps), "-fa", "0", "-o", "json"])
    rows = json.loads(out)
    pp = next(r["avg_ts"] for r in rows if r["n_prompt"] == SIZE["pp"] and r["n_gen"] == 0)
    tg = next(r["avg_ts"] for r in rows if r["n_gen"] == SIZE["tg"] and r["n_prompt"] == 0)
    return {"pp512": pp, "tg128": tg}


def llama_batched(bindir, model, threads, npl):
    out = run([f"{bindir}/llama-batched-bench", "-m", model, "-t", str(threads), "-tb",
               str(threads), "-fa", "on", "-npp", str(SIZE["npp"]), "-ntg", str(SIZE["ntg"]), "-npl",
               ",".join(map(str, npl)), "-c", str((SIZE["npp"] + SIZE["ntg"]) * max(npl) + 256),
               "--output-format", "jsonl"], timeout=7200)
    res = {}
    for line in out.splitlines():
        line = line.strip()
        if line.startswith("{"):
            r = json.loads(line)
            res[r["pl"]] = {"pp": r["speed_pp"], "tg": r["speed_tg"]}
    return res


def brisk_bench(model, threads, reps, npl, pp_tg=True):
    tmp = os.path.join(REPO, "build", "bench-model.json")
    # pp_tg=False: batched only (-p 0 -n 0), pp512/tg128 came from an earlier call.
    cmd = ["build/brisk", "bench-model", "-m", model, "-t", str(threads), "-p",
           str(SIZE["pp"] if pp_tg else 0), "-n", str(SIZE["tg"] if pp_tg else 0), "-r", str(reps),
           "--json", tmp]
    if npl:
        cmd += ["--parallel", ",".join(map(str, npl)), "--npp", str(SIZE["npp"]), "--ntg",
                str(SIZE["ntg"])]
    else:  # pp/tg only: a token-sized batched run
        cmd += ["--parallel", "1", "--npp", "1", "--ntg", "1"]
    run(cmd, timeout=7200)
    d = json.load(open(tmp))
    res = {"pp512": d["pp"]["tokens_per_s"], "tg128": d["tg"]["tokens_per_s"],
           "weight_bytes": d["weight_bytes"], "kernels": d["kernels"],
           "kv_bytes_per_token": d.get("kv_bytes_per_token", 0)}
    if npl:
        res["batched"] = {b["parallel"]: {"pp": b["pp_tokens_per_s"], "tg": b["tg_tokens_per_s"]}
                          for b in d["batched"]}
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="1 rep, fewer configurations")
    ap.add_argument("--out", default="bench/results/engine.json")
    ap.add_argument("--models", help="NAME=PATH,... instead of the default list; batched decode "
                    "runs for each")
    ap.add_argument("--dram-shapes", action="store_true",
                    help="the models of bench/dram_shapes.sh (those that exist); batched for each")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--npl", default="1,4,16,32", help="batched decode sequence counts")
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes (pp 64, tg 16, batched 32+16 tokens), 1 rep: checks, not numbers")
    args = ap.parse_args()
    reps = 1 if args.quick or args.smoke else 3
    if args.smoke:
        SIZE.update(pp=64, tg=16, npp=32, ntg=16)
    npl = [int(x) for x in args.npl.split(",")]
    threads = [int(x) for x in args.threads.split(",")]
    models = MODELS
    if args.models:
        models = parse_models(args.models)
    elif args.dram_shapes:
        models = [(n, os.path.join(DRAM_SHAPES_DIR, f)) for n, f in DRAM_SHAPES]
    # Default run: batched decode for the default model only, as before.
    batched_models = models if (args.models or args.dram_shapes) else MODELS[:1]
    bindir = llama_bin()
    run(["bash", "bench/membw.sh", "2"])
    membw = json.load(open(os.path.join(REPO, "bench/results/membw.json")))
    dram = {r["threads"]: r["read_gbps"] for r in membw["runs"][0]["membw"]["results"]}
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "cpu": membw["cpu"], "membw_read_gbps": dram, "rows": [], "batched": []}
    weight_bytes = {}  # model path -> bytes Brisk reads per decode step (the same file for both)
    for name, model in models:
        if not os.path.exists(os.path.join(REPO, model)):
            print(f"skip {model} (missing)", file=sys.stderr)
            continue
        for t in threads:
            ll = llama_bench(bindir, model, t, reps)
            br = brisk_bench(model, t, reps, None)
            weight_bytes[model] = (br["weight_bytes"], br["kv_bytes_per_token"])
            row = {"model": name, "file": model, "threads": t, "llama": ll, "brisk": br}
            result["rows"].append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    for name, model in batched_models:
        if model not in weight_bytes:
            continue
        for t in threads:
            ll = llama_batched(bindir, model, t, npl)
            br = brisk_bench(model, t, 1, npl, pp_tg=False)["batched"]
            wb, kvb = weight_bytes[model]
            result["batched"].append({"model": name, "file": model, "threads": t,
                                      "weight_bytes": wb, "kv_bytes_per_token": kvb,
                                      "llama": ll, "brisk": br})
            print(json.dumps(result["batched"][-1]), file=sys.stderr, flush=True)
    os.makedirs(os.path.dirname(os.path.join(REPO, args.out)), exist_ok=True)
    json.dump(result, open(os.path.join(REPO, args.out), "w"), indent=1)

    def bw(t):  # bytes/s of the DRAM read at t threads
        return dram.get(t, dram[1]) * 1e9

    print(f"Machine: {result['cpu']}, DRAM read bandwidth {dram.get(1, 0):.1f} GB/s (1 thread), "
          f"{dram.get(2, 0):.1f} GB/s (2 threads), measured by bench/membw.sh in the same run.\n")
    print("Roofline fraction = tg x weight bytes / DRAM read bandwidth (1.00 = every weight "
          "streamed from DRAM once per token at the measured rate).\n")
    print("| model | threads | llama.cpp pp512 | Brisk pp512 | ratio | llama.cpp tg128 | "
          "Brisk tg128 | ratio | llama.cpp tg128 / roofline | Brisk tg128 / roofline |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in result["rows"]:
        ll, br, t = r["llama"], r["brisk"], r["threads"]
        per_tok = br["weight_bytes"] / bw(t)
        print(f"| {r['model']} | {t} | {ll['pp512']:.1f} | {br['pp512']:.1f} | "
              f"{br['pp512'] / ll['pp512']:.2f}x | {ll['tg128']:.1f} | {br['tg128']:.1f} | "
              f"{br['tg128'] / ll['tg128']:.2f}x | {ll['tg128'] * per_tok:.2f} | "
              f"{br['tg128'] * per_tok:.2f} |")
    ctx = SIZE["npp"] + SIZE["ntg"] // 2  # mean context of a decode step
    print(f"\nAggregate decode tokens/s, B sequences x ({SIZE['npp']} prompt + {SIZE['ntg']} "
          "generated). Roofline fraction: one decode step reads the weights once plus each "
          f"sequence's KV cache (mean context {ctx} tokens), so fraction = tg / B x (weight bytes "
          f"+ B x {ctx} x KV bytes/token) / DRAM BW:\n")
    print("| model | threads | B | llama.cpp tg (fa on) | Brisk tg | ratio | llama.cpp tg / roofline "
          "| Brisk tg / roofline | llama.cpp pp | Brisk pp |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for b in result["batched"]:
        for n in npl:
            ll, br = b["llama"].get(n), b["brisk"].get(n) or b["brisk"].get(str(n))
            if not ll or not br:
                continue
            step_bytes = b["weight_bytes"] + n * ctx * b["kv_bytes_per_token"]
            per_tok = step_bytes / n / bw(b["threads"])
            print(f"| {b['model']} | {b['threads']} | {n} | {ll['tg']:.1f} | {br['tg']:.1f} | "
                  f"{br['tg'] / ll['tg']:.2f}x | {ll['tg'] * per_tok:.2f} | {br['tg'] * per_tok:.2f} | "
                  f"{ll['pp']:.1f} | {br['pp']:.1f} |")


if __name__ == "__main__":
    main()
