#!/usr/bin/env python3
"""What `brisk gateway` adds to TTFT and end-to-end latency.

One instant upstream (`brisk canned-upstream`: no inference, it answers every
request at once with max_tokens pieces) and a gateway in front of it (one tier,
SQLite ledger with group commit, so each response waits for its row to be
durable). `brisk bench` sends the same open-loop Poisson load at each rate to
the upstream directly and through the gateway, alternating, several rounds; the
overhead is the gateway's percentile minus the direct one in the same round.

    python3 bench/gateway_overhead.py [--brisk build/brisk] [--rates 100,1000]
        [--rounds 3] [--seconds 5] [--out bench/results/gateway_overhead.json]

On a 2-core machine the load generator, the gateway and the upstream share the
cores; the report states the machine's load average with the numbers.
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




def bench(brisk, url, rate, n, out_len, label, out_json, ledger_note=""):
    cmd = [brisk, "bench", "--url", url, "--endpoint", "chat", "--model", "canned",
           "--request-rate", str(rate), "-n", str(n), "--warmup", "20", "--input-len", "64",
           "--output-len", str(out_len), "--quiet", "--seed", "7", "--label", label,
           "--json", out_json]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(out_json) as f:
        s = json.load(f)["summary"]
    return {"ttft_p50": s["ttft_ms"]["p50"], "ttft_p99": s["ttft_ms"]["p99"],
            "e2e_p50": s["e2e_ms"]["p50"], "e2e_p99": s["e2e_ms"]["p99"],
            "completed": s["completed"], "errors": s["errors"],
            "achieved_rps": s["request_throughput"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--rates", default="100,1000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--output-len", type=int, default=16)
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results",
                                                  "gateway_overhead.json"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="brisk-gw-bench-")
    up = ServerProcess([a.brisk, "canned-upstream", "--port", "0", "--model", "canned"])
    cfg = os.path.join(tmp, "gateway.yaml")
    with open(cfg, "w") as f:
        f.write("server: {port: 0, http_threads: 1}\n"
                "logging: {level: warn}\n"
                "replicas: {health_interval_s: 1}\n"
                "tiers:\n  - name: canned\n    model: canned\n"
                "    prices: {input: 0.1, cached_input: 0.01, output: 0.4}\n"
                f"    upstreams: [{{url: \"{up.url}\", type: openai}}]\n")
    gw = ServerProcess([a.brisk, "gateway", "--config", cfg, "--ledger",
                        os.path.join(tmp, "ledger.db")])
    time.sleep(1.5)
    results = {"rates": {}, "load_before": os.getloadavg(), "cpus": os.cpu_count()}
    try:
        for rate in [float(r) for r in a.rates.split(",")]:
            n = max(100, int(rate * a.seconds))
            rounds = []
            for r in range(a.rounds):
                pair = {}
                order = [("direct", up.url), ("gateway", gw.url)]
                if r % 2:
                    order.reverse()
                for name, url in order:
                    pair[name] = bench(a.brisk, url, rate, n, a.output_len, f"{name}-{rate}-{r}",
                                       os.path.join(tmp, f"{name}-{rate}-{r}.json"))
                pair["added"] = {k: pair["gateway"][k] - pair["direct"][k]
                                 for k in ("ttft_p50", "ttft_p99", "e2e_p50", "e2e_p99")}
                rounds.append(pair)
                print(f"rate {rate:g}/s round {r + 1}: added TTFT p50 "
                      f"{pair['added']['ttft_p50']:.2f} ms p99 {pair['added']['ttft_p99']:.2f} ms; "
                      f"e2e p50 {pair['added']['e2e_p50']:.2f} ms p99 "
                      f"{pair['added']['e2e_p99']:.2f} ms (direct TTFT p50 "
                      f"{pair['direct']['ttft_p50']:.2f} ms, achieved "
                      f"{pair['gateway']['achieved_rps']:.0f}/s)", flush=True)
            med = {k: statistics.median(p["added"][k] for p in rounds)
                   for k in rounds[0]["added"]}
            results["rates"][str(rate)] = {"requests_per_round": n, "rounds": rounds,
                                           "median_added_ms": med}
    finally:
        results["load_after"] = os.getloadavg()
        gw.stop()
        up.stop()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    print("\n| rate (req/s) | added TTFT p50 | added TTFT p99 | added e2e p50 | added e2e p99 |")
    print("|---|---|---|---|---|")
    for rate, r in results["rates"].items():
        m = r["median_added_ms"]
        print(f"| {float(rate):g} | {m['ttft_p50']:.2f} ms | {m['ttft_p99']:.2f} ms | "
              f"{m['e2e_p50']:.2f} ms | {m['e2e_p99']:.2f} ms |")
    print(f"(median over {a.rounds} alternating rounds; load average before "
          f"{results['load_before'][0]:.2f}, after {results['load_after'][0]:.2f})")


if __name__ == "__main__":
    main()
