#!/usr/bin/env python3
"""Two brisk binaries on the same model, measured in the same run: `brisk
bench-model` (pp, tg and batched decode) from binary A, then B, then B, then
A, for --rounds rounds, pinned to the same cores, so that the drift of this
noisy machine falls on both alike. Prints each figure's median per binary and
the ratio B/A, and writes them as JSON.

    python3 bench/ab_bench_model.py --a /tmp/old/build/brisk --b build/brisk \\
        --model /tmp/smollm2-f16.gguf --threads 1 [--parallel 1,4,16] [--rounds 3] \\
        [--pp 512] [--tg 128] [--precision native] [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(brisk, a):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = ["taskset", "-c", a.cores, brisk, "bench-model", "-m", a.model, "-t",
               str(a.threads), "-p", str(a.pp), "-n", str(a.tg), "-r", str(a.reps), "--npp",
               str(a.npp), "--ntg", str(a.ntg), "--precision", a.precision, "--json", out.name]
        for p in a.parallel.split(","):
            cmd += ["--parallel", p]
        print("+", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, timeout=3600)
        with open(out.name) as f:
            return json.load(f)


def figures(result):
    """{name: tokens/s} from one bench-model JSON."""
    out = {f"pp{result['pp']['n_prompt']}": result["pp"]["tokens_per_s"],
           f"tg{result['tg']['n_gen']}": result["tg"]["tokens_per_s"]}
    for b in result.get("batched", []):
        out[f"batched{b['parallel']}_tg"] = b["tg_tokens_per_s"]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="baseline brisk binary")
    ap.add_argument("--b", required=True, help="changed brisk binary")
    ap.add_argument("--model", required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cores", default=None, help="taskset list (default: 0..threads-1)")
    ap.add_argument("--precision", default="native")
    ap.add_argument("--pp", type=int, default=512)
    ap.add_argument("--tg", type=int, default=128)
    ap.add_argument("--parallel", default="1,4,16")
    ap.add_argument("--npp", type=int, default=64)
    ap.add_argument("--ntg", type=int, default=32)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if a.cores is None:
        a.cores = ",".join(str(i) for i in range(a.threads))
    runs = {"a": [], "b": []}
    for _ in range(a.rounds):
        for arm in ("a", "b", "b", "a"):
            runs[arm].append(figures(run(getattr(a, arm), a)))
    names = list(runs["a"][0])
    med = {arm: {n: statistics.median(r[n] for r in runs[arm]) for n in names} for arm in runs}
    print(f"model={a.model} threads={a.threads} precision={a.precision} rounds={a.rounds} (A B B A)")
    print(f"| figure | A tok/s | B tok/s | B/A |")
    print(f"|---|---|---|---|")
    for n in names:
        print(f"| {n} | {med['a'][n]:.1f} | {med['b'][n]:.1f} | {med['b'][n] / med['a'][n]:.2f}x |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "runs": runs, "median": med}, f, indent=1)


if __name__ == "__main__":
    main()
