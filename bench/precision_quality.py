#!/usr/bin/env python3
"""Quality of each load-time weight precision and KV cache precision, on the
same model file in one run: `brisk serve --precision P
[--kv-precision K] --allow-ungated` for each configuration, then `brisk eval
golden` on a golden set against it. Prints a markdown table of
pass rate, its one-sided 95% Wilson lower bound and latency p50/p95 per
precision, with the file's own (native) as the baseline. Quality only: no
speed is claimed from these latencies (one request at a time, 2 cores).

    python3 bench/precision_quality.py [--brisk build/brisk] [--model M.gguf]
        [--set bench/golden/smollm2.jsonl] [--precisions native,q8_0,f16,bf16,q4_0]
        [--kv-precisions bf16,int8,fp8]

A configuration is a weight precision (with the F16 KV cache), or, from
--kv-precisions, the file's own weights with that KV precision ("kv int8").
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
from server_process import ServerProcess  # noqa: E402


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser()
    ap.add_argument("--brisk", default=os.path.join(root, "build", "brisk"))
    ap.add_argument("--model", default="", help="GGUF file (default: the embedded model)")
    ap.add_argument("--set", default=os.path.join(root, "bench", "golden", "smollm2.jsonl"))
    ap.add_argument("--precisions", default="native,q8_0,f16,bf16,q4_0")
    ap.add_argument("--kv-precisions", default="")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    rows = []
    configs = [(p, "f16") for p in args.precisions.split(",") if p]
    configs += [("native", k) for k in args.kv_precisions.split(",") if k]
    for p, kv in configs:
        cmd = [args.brisk, "serve", "--port", "0", "--threads", str(args.threads),
               "--precision", p, "--kv-precision", kv]
        cmd += ["--model", args.model] if args.model else []
        cmd += [] if (p, kv) == ("native", "f16") else ["--allow-ungated"]
        proc = ServerProcess(cmd)
        try:
            with tempfile.NamedTemporaryFile(suffix=".json") as out:
                r = subprocess.run([args.brisk, "eval", "golden", "--set", args.set, "--url", proc.url,
                                    "--json", out.name,
                                    *(["--model-file", args.model] if args.model else [])],
                                   capture_output=True, text=True, timeout=1800)
                if r.returncode not in (0, 1):
                    sys.exit(f"brisk eval failed for {p}: {r.stderr}")
                rep = json.load(open(out.name))
        finally:
            proc.stop(timeout=60)
        rows.append((p if kv == "f16" else f"kv {kv}", rep))
    base = rows[0][1]["pass_rate"] if rows else 0
    print(f"Golden set `{os.path.relpath(args.set, root)}`, {rows[0][1]['model']}\n")
    print("| configuration | passed | pass rate | 95% lower bound | vs native | "
          "KLD vs native | same top-1 | gate | latency p50 / p95 ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p, rep in rows:
        ratio = rep["pass_rate"] / base if base else 0
        kld = rep.get("kld", {})
        checked = kld.get("checked", True) and "kld" in kld
        kld_cols = (f"{kld['kld']['mean']:.4f} | {100 * kld['same_top1']['mean']:.1f}%"
                    if checked else "not run | not run")
        gate = ("passed" if rep.get("gate_passed") else "failed") if rep.get("gate") else ""
        print(f"| {p} | {rep['passed']}/{rep['cases']} | {100 * rep['pass_rate']:.1f}% | "
              f"{100 * rep['pass_rate_lower_bound_95']:.1f}% | {ratio:.2f}x | {kld_cols} | "
              f"{gate} | {rep['latency_p50_ms']:.0f} / {rep['latency_p95_ms']:.0f} |")


if __name__ == "__main__":
    main()
