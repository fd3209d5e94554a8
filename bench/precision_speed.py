#!/usr/bin/env python3
"""Speed of each load-time weight precision against the file's own (native),
measured in the same run: `brisk bench-model --precision P` (pp512 and
tg128, median of --reps), the precisions taken in rounds so that drift of
this noisy machine falls on all of them alike. With bench/results/kld.json
(bench/kld_vs_llamacpp.py) it also prints each precision's quality next to
its speed, in one table.

    python3 bench/precision_speed.py [--model models/SmolLM2-135M-Instruct.Q4_1.gguf]
        [--precisions native,q8_0,int8,q4_0,int4,f16] [--rounds 2] [--kld bench/results/kld.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def bench(brisk, model, precision, threads, reps):
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [brisk, "bench-model", "-m", model, "--precision", precision, "-t", str(threads),
               "-p", "512", "-n", "128", "-r", str(reps), "--parallel", "1", "--npp", "8",
               "--ntg", "8", "--json", out.name]
        print("+", " ".join(cmd), file=sys.stderr, flush=True)
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, timeout=1800)
        with open(out.name) as f:
            return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", default=os.path.join(ROOT, "build", "brisk"))
    ap.add_argument("--model", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--label", default="SmolLM2-135M Q4_1")
    ap.add_argument("--precisions", default="native,q8_0,int8,q4_0,int4,f16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--kld", default=os.path.join(ROOT, "bench", "results", "kld.json"))
    a = ap.parse_args()
    precisions = a.precisions.split(",")
    runs = {p: [] for p in precisions}
    for _ in range(a.rounds):
        for p in precisions:
            runs[p].append(bench(a.brisk, a.model, p, a.threads, a.reps))
    quality = {}
    if os.path.exists(a.kld):
        with open(a.kld) as f:
            for r in json.load(f)["results"]:
                if r["model"] == a.label:
                    quality = {"native": r["brisk"], **r["precisions"]}
    native_pp = statistics.median(x["pp"]["tokens_per_s"] for x in runs["native"])
    native_tg = statistics.median(x["tg"]["tokens_per_s"] for x in runs["native"])
    print(f"\n{a.label}, {a.threads} threads, kernels {runs['native'][0]['kernels']}, "
          f"median of {a.rounds} rounds x {a.reps} reps\n")
    print("| precision | weight MiB | mean KLD | same top-1 | ln PPL ratio | pp512 tok/s | "
          "pp vs native | tg128 tok/s | tg vs native |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in precisions:
        pp = statistics.median(x["pp"]["tokens_per_s"] for x in runs[p])
        tg = statistics.median(x["tg"]["tokens_per_s"] for x in runs[p])
        q = quality.get(p)
        qual = (f"{q['kld']:.5f} | {100 * q['same_top1']:.2f}% | {q['ln_ppl_ratio']:.4f}"
                if q else "- | - | -")
        print(f"| {p} | {runs[p][0]['weight_bytes'] / 2**20:.1f} | {qual} | {pp:.0f} | "
              f"{pp / native_pp:.2f}x | {tg:.1f} | {tg / native_tg:.2f}x |")


if __name__ == "__main__":
    main()
