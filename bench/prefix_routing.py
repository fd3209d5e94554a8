#!/usr/bin/env python3
"""Precise prefix routing vs consistent-hash affinity vs least-loaded, three
engine replicas behind `brisk gateway`: llm-d's precise-prefix-cache benchmark,
scaled to this machine.

llm-d's setup: many groups of users, each group with its own long shared system
prompt, more prefix tokens in total than one replica's KV cache holds; routed by
the engines' own KV events (precise), by an estimate (approximate), or at random.
Here: three `brisk serve` replicas of SmolLM2-135M (one thread each, a small KV
cache each, KV events on), one gateway tier, and `brisk bench --workload
shared-prefix` (groups drawn uniformly, open-loop Poisson arrivals). The arms:

  precise       the upstreams' kv_events followed (replicas.prefix_routing)
  affinity      bounded-load consistent hashing on the prompt's first bytes
  least_loaded  least outstanding work, no affinity

The engines are restarted before every arm (cold caches); arms rotate over
rounds with each round's seed shared by all arms.

    python3 bench/prefix_routing.py [--rounds 2] [--out bench/results/prefix_routing.json]
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
from server_process import ServerProcess  # noqa: E402

MODEL = os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
ARMS = ("precise", "affinity", "least_loaded")
# SmolLM2-135M's KV at f16: 30 layers x 2 (K, V) x 3 KV heads x 64 dims x 2 bytes.
KV_BYTES_PER_TOKEN = 30 * 2 * 3 * 64 * 2


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_engine(a, tmp, i):
    pub, replay = free_port(), free_port()
    cfg = os.path.join(tmp, f"e{i}.yaml")
    with open(cfg, "w") as f:
        f.write(f"scheduler: {{kv_cache_bytes: {a.kv_mib}MiB}}\n"
                "cache:\n  kv_events:\n    enabled: true\n"
                f"    endpoint: tcp://*:{pub}\n    replay_endpoint: tcp://*:{replay}\n")
    e = ServerProcess([a.brisk, "serve", "-m", MODEL, "--model-name", "smol", "--port", "0",
                       "--threads", "1", "--config", cfg], ready_path="/ready")
    e.kv_events = (f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{replay}")
    return e


def run_arm(a, tmp, arm, seed):
    engines = [start_engine(a, tmp, i) for i in range(3)]
    ups = []
    for e in engines:
        if arm == "precise":
            ups.append(f"      - {{url: \"{e.url}\", kv_events: \"{e.kv_events[0]}\", "
                       f"kv_events_replay: \"{e.kv_events[1]}\"}}\n")
        else:
            ups.append(f"      - {e.url}\n")
    affinity = "false" if arm == "least_loaded" else "true"
    cfg = os.path.join(tmp, f"g-{arm}.yaml")
    with open(cfg, "w") as f:
        f.write("server: {port: 0}\nlogging: {level: warn}\n"
                f"replicas: {{prefix_affinity: {affinity}, affinity_prefix_bytes: 2048, "
                f"health_interval_s: 0.5, queued_request_tokens: {a.queued_request_tokens}, "
                f"prefix_routing: {'true' if arm == 'precise' else 'false'}}}\n"
                "tiers:\n  - name: small\n    model: smol\n"
                "    prices: {input: 0.1, cached_input: 0.01, output: 0.4}\n"
                "    upstreams:\n" + "".join(ups))
    gw = ServerProcess([a.brisk, "gateway", "--config", cfg, "--ledger",
                        os.path.join(tmp, f"l-{arm}-{seed}.db")])
    time.sleep(1.5)  # models learnt, KV event streams connected
    out = os.path.join(tmp, f"{arm}-{seed}.json")
    try:
        subprocess.run([a.brisk, "bench", "--url", gw.url, "--endpoint", "chat", "--model",
                        "small", "--workload", "shared-prefix", "--prefix-len",
                        str(a.prefix_len), "--num-prefixes", str(a.groups), "--input-len", "30",
                        "--output-len", str(a.output_len), "--ignore-eos", "--request-rate",
                        str(a.rate), "-n", str(a.requests), "--seed", str(seed), "--quiet",
                        "--label", f"{arm}-{seed}", "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
        cached = gw.metric("brisk_gateway_tokens_total", {"kind": "cached_input"}) or 0
        prompt = gw.metric("brisk_gateway_tokens_total", {"kind": "input"}) or 0
    finally:
        gw.stop()
        for e in engines:
            e.stop()
    with open(out) as f:
        s = json.load(f)["summary"]
    return {"ttft_p50": s["ttft_ms"]["p50"], "ttft_p90": s["ttft_ms"]["p90"],
            "ttft_p95": s["ttft_ms"]["p95"], "output_tok_s": s["output_throughput"],
            "completed": s["completed"], "errors": s["errors"],
            # the gateway counts uncached input and cached input apart
            "cached_share": cached / (prompt + cached) if prompt + cached else 0.0}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--requests", type=int, default=120)
    ap.add_argument("--rate", type=float, default=1.5)
    ap.add_argument("--groups", type=int, default=12)
    ap.add_argument("--prefix-len", type=int, default=500, help="system prompt words")
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--queued-request-tokens", type=int, default=256,
                    help="replicas.queued_request_tokens (precise: load against cached tokens)")
    ap.add_argument("--kv-mib", type=int, default=48, help="KV cache of each replica")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                  "prefix_routing.json"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="brisk-prefix-routing-")
    rounds, load = [], [os.getloadavg()[0]]
    for r in range(a.rounds):
        seed = 200 + r
        order = ARMS[r % 3:] + ARMS[:r % 3]
        res = {arm: run_arm(a, tmp, arm, seed) for arm in order}
        rounds.append(res)
        load.append(os.getloadavg()[0])
        print(f"round {r + 1}: TTFT p90 " + ", ".join(
            f"{arm} {res[arm]['ttft_p90']:.0f} ms" for arm in ARMS), flush=True)
    keys = ("ttft_p50", "ttft_p90", "ttft_p95", "output_tok_s", "cached_share")
    med = {arm: {k: statistics.median(x[arm][k] for x in rounds) for k in keys} for arm in ARMS}
    kv_tokens = a.kv_mib * 2**20 // KV_BYTES_PER_TOKEN
    result = {"config": vars(a), "kv_tokens_per_replica": kv_tokens, "rounds": rounds,
              "median": med, "load_average": load}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nKV per replica: {kv_tokens} tokens; {a.groups} prefixes of ~{a.prefix_len} words")
    print("| routing | TTFT p50 ms | TTFT p90 ms | output tok/s | prompt tokens cached |")
    print("|---|---|---|---|---|")
    for arm in ARMS:
        m = med[arm]
        print(f"| {arm} | {m['ttft_p50']:.0f} | {m['ttft_p90']:.0f} | {m['output_tok_s']:.1f} | "
              f"{100 * m['cached_share']:.0f}% |")
    for other in ("affinity", "least_loaded"):
        print(f"TTFT p90 {other} / precise: "
              f"{med[other]['ttft_p90'] / med['precise']['ttft_p90']:.2f}x; output tok/s "
              f"precise / {other}: {med['precise']['output_tok_s'] / med[other]['output_tok_s']:.2f}x")
    print(f"(median of {a.rounds} rounds; load average {min(load):.2f}-{max(load):.2f})")


if __name__ == "__main__":
    main()
