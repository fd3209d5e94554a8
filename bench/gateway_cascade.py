#!/usr/bin/env python3
"""The cascade's cost per request and golden-set pass rate, against sending every
request to the large tier (the seeds report -46% cost per generation).

Two real engines on this machine: SmolLM2-135M-Instruct (small) and Gemma 3 270M
(large; the installed file is the pretrained model, so the golden set is text
completion: facts a pretrained model continues). The prices are per million
tokens, small 0.15 / 0.075 cached / 0.60 output, large 2.50 / 1.25 / 10.00: a
small and a large hosted model's list prices, so the ratio is realistic.

Arms, over the same evaluation cases:
- large: every case to the large tier;
- small: every case to the small tier;
- cascade at share s: `brisk gateway calibrate` fits min_mean_logprob on the
  calibration half of the set so that a share s of it escalates; the evaluation
  half then goes through routing.default: cascade.

The set is split: even lines calibrate, odd lines evaluate. The pass check is
case-insensitive "contains any of".

    python3 bench/gateway_cascade.py [--shares 0.3,0.5] [--out bench/results/gateway_cascade.json]
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
from server_process import ServerProcess  # noqa: E402
SMOL = os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA = os.path.join(REPO, "models", "gemma-3-270m-q4_k_m.gguf")
GOLDEN = os.path.join(REPO, "bench", "golden", "facts_completion.jsonl")
PRICES = {"small": (0.15, 0.075, 0.60), "large": (2.50, 1.25, 10.00)}




def write_config(path, small_url, large_url, threshold=None):
    cascade = ""
    if threshold is not None:
        cascade = ("routing:\n  default: cascade\n  cascade: {tiers: [small, large], "
                   f"min_mean_logprob: {threshold}}}\n")
    tiers = "tiers:\n"
    for name, url in (("small", small_url), ("large", large_url)):
        pin, pc, pout = PRICES[name]
        tiers += (f"  - name: {name}\n    prices: {{input: {pin}, cached_input: {pc}, "
                  f"output: {pout}}}\n    upstreams: [\"{url}\"]\n")
    with open(path, "w") as f:
        f.write("server: {port: 0}\nlogging: {level: warn}\n" + tiers + cascade)


def post(url, body):
    req = urllib.request.Request(url + "/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())


def wilson_lower(k, n, z=1.645):
    if n == 0:
        return 0.0
    p = k / n
    return (p + z * z / (2 * n) - z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n)


def run_arm(gw_url, model, cases):
    passed, cost, escalated = 0, 0.0, 0
    for c in cases:
        r = post(gw_url, {"model": model, "prompt": c["prompt"], "max_tokens": c["max_tokens"],
                          "temperature": 0})
        text = r["choices"][0]["text"].lower()
        passed += any(w.lower() in text for w in c["check"]["contains_any"])
        cost += r["usage"]["cost_usd"]
        escalated += r["usage"].get("escalations", 0) > 0
    n = len(cases)
    return {"cases": n, "passed": passed, "pass_rate": passed / n,
            "pass_rate_wilson95_lower": wilson_lower(passed, n),
            "cost_per_request_usd": cost / n, "escalation_share": escalated / n}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--shares", default="0.3,0.5")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                  "gateway_cascade.json"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="brisk-cascade-")
    with open(GOLDEN) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    calib, evaluation = cases[0::2], cases[1::2]
    calib_path = os.path.join(tmp, "calib.jsonl")
    with open(calib_path, "w") as f:
        for c in calib:
            f.write(json.dumps(c) + "\n")
    small = ServerProcess([a.brisk, "serve", "-m", SMOL, "--port", "0", "--threads", "1",
                           "--kv-cache", "64MiB"])
    large = ServerProcess([a.brisk, "serve", "-m", GEMMA, "--port", "0", "--threads", "1",
                           "--kv-cache", "64MiB"])
    result = {"prices_per_mtok": PRICES, "calibration_cases": len(calib),
              "evaluation_cases": len(evaluation), "arms": {}}
    procs = []
    try:
        cfg = os.path.join(tmp, "plain.yaml")
        write_config(cfg, small.url, large.url)
        gw = ServerProcess([a.brisk, "gateway", "--config", cfg, "--ledger",
                            os.path.join(tmp, "plain.db")])
        procs.append(gw)
        time.sleep(1)
        for arm in ("large", "small"):
            result["arms"][arm] = run_arm(gw.url, arm, evaluation)
        calib_cfg = os.path.join(tmp, "calibrate.yaml")
        write_config(calib_cfg, small.url, large.url, 0)  # the cascade's tiers, threshold off
        for share in [float(s) for s in a.shares.split(",")]:
            out = subprocess.run([a.brisk, "gateway", "--config", calib_cfg, "calibrate", "--golden",
                                  calib_path, "--target-share", str(share)],
                                 capture_output=True, text=True, check=True)
            threshold = float(re.search(r"min_mean_logprob: (\S+)", out.stdout).group(1))
            ccfg = os.path.join(tmp, f"cascade-{share}.yaml")
            write_config(ccfg, small.url, large.url, threshold)
            cgw = ServerProcess([a.brisk, "gateway", "--config", ccfg, "--ledger",
                                 os.path.join(tmp, f"cascade-{share}.db")])
            procs.append(cgw)
            time.sleep(1)
            arm = run_arm(cgw.url, "auto", evaluation)
            arm["threshold"] = threshold
            arm["calibrate_output"] = out.stdout
            result["arms"][f"cascade@{share:g}"] = arm
    finally:
        for p in procs + [small, large]:
            p.stop()
    base = result["arms"]["large"]["cost_per_request_usd"]
    for arm in result["arms"].values():
        arm["cost_vs_large"] = arm["cost_per_request_usd"] / base if base else None
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print("| arm | pass rate | 95% Wilson lower | cost/request (USD) | vs large | escalated |")
    print("|---|---|---|---|---|---|")
    for name, r in result["arms"].items():
        print(f"| {name} | {r['passed']}/{r['cases']} ({r['pass_rate']:.0%}) | "
              f"{r['pass_rate_wilson95_lower']:.0%} | {r['cost_per_request_usd']:.8f} | "
              f"{r['cost_vs_large']:.2f}x | {r['escalation_share']:.0%} |")


if __name__ == "__main__":
    main()
