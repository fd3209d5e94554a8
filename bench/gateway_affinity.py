#!/usr/bin/env python3
"""Prefix affinity vs round-robin across two engine replicas.

Two `brisk serve` replicas of the default model behind `brisk gateway`, one tier.
The workload is `brisk bench --workload shared-prefix`: a few long system prompts
shared by many requests. With `replicas.prefix_affinity` (least-loaded plus
bounded-load consistent hashing), each prompt lands on the replica whose prefix
cache already holds it. Round-robin computes each prefix on both replicas.

The engines are restarted before every arm, so both start with cold caches. Arms
alternate over rounds, with each round's seed shared by both arms.

    python3 bench/gateway_affinity.py [--rounds 3] [--out bench/results/gateway_affinity.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
from server_process import ServerProcess  # noqa: E402
MODEL = os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")




def run_arm(a, tmp, policy, seed):
    engines = [ServerProcess([a.brisk, "serve", "-m", MODEL, "--model-name", "smol", "--port",
                              "0", "--threads", "1", "--kv-cache", "256MiB"]) for _ in range(2)]
    affinity = "true" if policy == "affinity" else "false"
    pick = "least_loaded" if policy == "affinity" else "round_robin"
    cfg = os.path.join(tmp, f"g-{policy}.yaml")
    with open(cfg, "w") as f:
        f.write("server: {port: 0}\nlogging: {level: warn}\n"
                f"replicas: {{policy: {pick}, prefix_affinity: {affinity}, "
                "affinity_prefix_bytes: 2048, health_interval_s: 0.5}\n"
                "tiers:\n  - name: small\n    model: smol\n"
                "    prices: {input: 0.1, cached_input: 0.01, output: 0.4}\n"
                "    upstreams: [" + ", ".join(e.url for e in engines) + "]\n")
    gw = ServerProcess([a.brisk, "gateway", "--config", cfg, "--ledger",
                        os.path.join(tmp, f"l-{policy}-{seed}.db")])
    time.sleep(1.0)
    out = os.path.join(tmp, f"{policy}-{seed}.json")
    try:
        subprocess.run([a.brisk, "bench", "--url", gw.url, "--endpoint", "chat", "--model",
                        "small", "--workload", "shared-prefix", "--prefix-len",
                        str(a.prefix_len), "--num-prefixes", str(a.num_prefixes),
                        "--input-len", "30", "--output-len", "8", "--ignore-eos",
                        "--request-rate", str(a.rate), "-n", str(a.requests), "--seed",
                        str(seed), "--quiet", "--label", f"{policy}-{seed}", "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
    finally:
        gw.stop()
        for e in engines:
            e.stop()
    with open(out) as f:
        s = json.load(f)["summary"]
    return {"ttft_p50": s["ttft_ms"]["p50"], "ttft_p95": s["ttft_ms"]["p95"],
            "e2e_p95": s["e2e_ms"]["p95"], "completed": s["completed"], "errors": s["errors"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--requests", type=int, default=48)
    ap.add_argument("--rate", type=float, default=2.0)
    ap.add_argument("--prefix-len", type=int, default=800)
    ap.add_argument("--num-prefixes", type=int, default=4)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                  "gateway_affinity.json"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="brisk-affinity-")
    rounds = []
    load = [os.getloadavg()[0]]
    for r in range(a.rounds):
        seed = 100 + r
        arms = ["affinity", "round_robin"] if r % 2 == 0 else ["round_robin", "affinity"]
        res = {arm: run_arm(a, tmp, arm, seed) for arm in arms}
        rounds.append(res)
        load.append(os.getloadavg()[0])
        print(f"round {r + 1}: TTFT p95 affinity {res['affinity']['ttft_p95']:.0f} ms, "
              f"round-robin {res['round_robin']['ttft_p95']:.0f} ms", flush=True)
    med = {arm: {k: statistics.median(x[arm][k] for x in rounds)
                 for k in ("ttft_p50", "ttft_p95", "e2e_p95")} for arm in ("affinity",
                                                                          "round_robin")}
    result = {"config": vars(a), "rounds": rounds, "median": med, "load_average": load}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print("\n| policy | TTFT p50 ms | TTFT p95 ms | e2e p95 ms |\n|---|---|---|---|")
    for arm in ("affinity", "round_robin"):
        m = med[arm]
        print(f"| {arm} | {m['ttft_p50']:.0f} | {m['ttft_p95']:.0f} | {m['e2e_p95']:.0f} |")
    print(f"TTFT p95 affinity / round-robin: "
          f"{med['affinity']['ttft_p95'] / med['round_robin']['ttft_p95']:.2f}x "
          f"(median of {a.rounds} rounds; load average {min(load):.2f}-{max(load):.2f})")


if __name__ == "__main__":
    main()
