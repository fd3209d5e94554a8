#!/usr/bin/env python3
"""Two numbers of the gateway's rollouts.

1. What shadow traffic costs the callers. `brisk bench` sends the same
   open-loop Poisson load through the gateway to a real `brisk serve`
   baseline, with no rollout (off) and with a rollout in its shadow stage
   copying every request to the candidate (on), alternating, several rounds.
   The candidate is `brisk canned-upstream` (no inference), standing in for
   a candidate on its own machine: on this 2-core machine a second engine
   would compete with the baseline for the same cores, which is not what
   shadowing costs. It is an OpenAI-type upstream, so its gate report is one
   written here naming its model id. Reported: the callers' TTFT and
   end-to-end p95 with shadow on / off, per round, and their median ratio.

2. How long a regression takes to send all traffic back to the baseline.
   The candidate is an int8 `brisk serve` of the same file (its gate report
   made by `brisk eval golden --save-gate`) behind the tests' fault proxy.
   A canary at 50% runs healthy for 3 s, then the proxy turns the fault on:
   `slow` (1.5 s before each answer) or `break_json` (answers that fail the
   request's JSON schema). Reported: from the fault to the rollback decision
   (the audit entry's time), per repetition; and that no caller saw an error.

    python3 bench/rollout.py [--brisk build/brisk] [--rounds 4] [--rate 3]
        [--seconds 20] [--reps 3] [--out bench/results/rollout.json]
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
sys.path.insert(0, os.path.join(REPO, "tools"))
from fault_proxy import FaultProxy  # noqa: E402
from server_process import ServerProcess  # noqa: E402

SMOL = os.path.join(REPO, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
FACTS = os.path.join(REPO, "bench", "golden", "facts_completion.jsonl")
ADMIN = "bench-admin-key"


def admin(gw_url, method, path, body=None):
    req = urllib.request.Request(gw_url + path, method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": "Bearer " + ADMIN,
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def gateway(brisk, tmp, baseline_url, name, judge_url=None):
    """One tier, small; with judge_url a second tier, judge, whose model
    judges the shadow pairs (else the baseline's engine does)."""
    cfg = os.path.join(tmp, f"{name}.yaml")
    judge_tier = ""
    if judge_url:
        judge_tier = ("  - name: judge\n    prices: {input: 0, cached_input: 0, output: 0}\n"
                      f"    upstreams: [{{url: \"{judge_url}\", type: openai}}]\n")
    with open(cfg, "w") as f:
        f.write("server: {port: 0, http_threads: 2}\nlogging: {level: warn}\n"
                "replicas: {health_interval_s: 0.5}\n"
                "tiers:\n  - name: small\n"
                "    prices: {input: 0.1, cached_input: 0.02, output: 0.4}\n"
                f"    upstreams: [{baseline_url}]\n" + judge_tier +
                f"rollout: {{admin_key: {ADMIN}, tick_s: 0.1}}\n")
    p = ServerProcess([brisk, "gateway", "--config", cfg, "--ledger",
                       os.path.join(tmp, f"{name}.db")])
    time.sleep(1.5)
    return p


def bench(brisk, url, rate, n, label, out_json):
    subprocess.run([brisk, "bench", "--url", url, "--endpoint", "chat", "--model", "small",
                    "--request-rate", str(rate), "-n", str(n), "--warmup", "2", "--input-len",
                    "32", "--output-len", "16", "--quiet", "--seed", "7", "--label", label,
                    "--json", out_json], check=True, stdout=subprocess.DEVNULL)
    with open(out_json) as f:
        s = json.load(f)["summary"]
    return {"ttft_p95": s["ttft_ms"]["p95"], "e2e_p95": s["e2e_ms"]["p95"],
            "completed": s["completed"], "errors": s["errors"]}


def shadow_cost(a, tmp, judge_elsewhere):
    base = ServerProcess([a.brisk, "serve", "--model", SMOL, "--model-name", "smol", "--port",
                          "0", "--threads", "1", "--kv-cache", "64MiB"])
    cand = ServerProcess([a.brisk, "canned-upstream", "--port", "0", "--model", "canned"])
    gw = gateway(a.brisk, tmp, base.url, f"shadow-{judge_elsewhere}",
                 cand.url if judge_elsewhere else None)
    spec = {"tier": "small", "upstreams": [{"url": cand.url, "type": "openai"}],
            "gate_report": {"gate_passed": True, "model": "canned",
                            "note": "written by bench/rollout.py for the canned stand-in"},
            "shadow": {"share": 1.0, "duration_s": 3600, "min_pairs": 1}}
    rounds = []
    try:
        n = max(20, int(a.rate * a.seconds))
        for r in range(a.rounds):
            pair = {}
            order = ["off", "on"] if r % 2 == 0 else ["on", "off"]
            for mode in order:
                if mode == "on":
                    st, body = admin(gw.url, "POST", "/admin/rollouts", spec)
                    assert st == 201, body
                pair[mode] = bench(a.brisk, gw.url, a.rate, n, f"{mode}-{r}",
                                   os.path.join(tmp, f"{mode}-{r}.json"))
                if mode == "on":
                    st, status = admin(gw.url, "GET", "/admin/rollouts")
                    pair["shadow_requests"] = status["data"][0]["candidate"]["requests"]
                    pair["judged"] = status["data"][0]["judge"]["pairs"]
                    pair["judge_skipped_busy"] = status["judge_skipped_busy"]
                    admin(gw.url, "POST", "/admin/rollouts/abort", {"tier": "small"})
            pair["ratio"] = {k: pair["on"][k] / pair["off"][k] for k in ("ttft_p95", "e2e_p95")}
            rounds.append(pair)
            print(f"round {r + 1}: TTFT p95 off {pair['off']['ttft_p95']:.1f} ms on "
                  f"{pair['on']['ttft_p95']:.1f} ms ({pair['ratio']['ttft_p95']:.3f}x); e2e p95 "
                  f"off {pair['off']['e2e_p95']:.1f} on {pair['on']['e2e_p95']:.1f} "
                  f"({pair['ratio']['e2e_p95']:.3f}x); {pair['shadow_requests']} shadow copies",
                  flush=True)
    finally:
        for p in (gw, cand, base):
            p.stop()
    return {"requests_per_round": n, "rate": a.rate, "rounds": rounds,
            "median_ratio": {k: statistics.median(p["ratio"][k] for p in rounds)
                             for k in ("ttft_p95", "e2e_p95")}}


def one_request(client, structured, i):
    import openai
    kw = dict(model="small", max_tokens=8, temperature=0,
              messages=[{"role": "user", "content": f"Say a color. ({i})"}])
    if structured:
        kw["max_tokens"] = 32
        kw["messages"][0]["content"] = f"Pick a color, as JSON. ({i})"
        kw["response_format"] = {"type": "json_schema", "json_schema": {"name": "c", "schema": {
            "type": "object", "required": ["color"], "additionalProperties": False,
            "properties": {"color": {"enum": ["red", "green", "blue"]}}}}}
    try:
        client.chat.completions.create(**kw)
        return True
    except openai.APIError:
        return False


def rollback_time(a, tmp):
    import openai
    gates = os.path.join(tmp, "gates")
    base = ServerProcess([a.brisk, "serve", "--model", SMOL, "--model-name", "smol", "--port",
                          "0", "--threads", "1", "--kv-cache", "64MiB"])
    cand = ServerProcess([a.brisk, "serve", "--model", SMOL, "--model-name", "smol", "--port",
                          "0", "--threads", "1", "--kv-cache", "64MiB", "--precision", "int8",
                          "--allow-ungated", "--gate-dir", gates])
    golden = os.path.join(tmp, "facts.jsonl")
    with open(golden, "w") as f:
        f.write("\n".join(open(FACTS).read().splitlines()[:4]) + "\n")
    with open(os.path.join(tmp, "facts.gate.yaml"), "w") as f:
        f.write("min_pass_rate: 0.0\nmax_kld: 0.05\nmin_same_top1: 0.85\nkld_ctx: 128\n"
                "kld_chunks: 1\n")
    subprocess.run([a.brisk, "eval", "golden", "--set", golden, "--url", cand.url, "--save-gate",
                    gates, "--kld-threads", "2"], check=True, capture_output=True)
    report = json.load(open([os.path.join(gates, x) for x in os.listdir(gates)][0]))
    out = {}
    try:
        for mode, structured, thresholds in (
                ("slow", False, {"min_samples": 4, "window_s": 20, "ttft_p95_slack_ms": 300}),
                ("break_json", True, {"min_samples": 4, "window_s": 20, "ttft_p95_ratio": 100,
                                      "tpot_p95_ratio": 100})):
            reps = []
            for rep in range(a.reps):
                gw = gateway(a.brisk, tmp, base.url, f"rb-{mode}-{rep}")
                proxy = FaultProxy(cand.port)
                client = openai.OpenAI(base_url=gw.url + "/v1", api_key="none", max_retries=0)
                stop, failures, sent = [False], [0], [0]

                def loop(w):
                    i = 0
                    while not stop[0]:
                        sent[0] += 1
                        if not one_request(client, structured, w * 100000 + i):
                            failures[0] += 1
                        i += 1

                pool = concurrent.futures.ThreadPoolExecutor(2)
                futs = [pool.submit(loop, w) for w in range(2)]
                st, ro = admin(gw.url, "POST", "/admin/rollouts", {
                    "tier": "small", "upstreams": [proxy.url], "gate_report": report,
                    "shadow": {"share": 0}, "canary": [{"share": 0.5, "duration_s": 600}],
                    "thresholds": thresholds})
                assert st == 201, ro
                time.sleep(3)
                proxy.delay_s = 1.5
                proxy.mode = mode
                fault_at = time.time()
                entry = None
                while time.time() < fault_at + 60 and entry is None:
                    time.sleep(0.1)
                    _, audit = admin(gw.url, "GET", "/admin/audit")
                    entry = next((e for e in audit["data"] if e["action"] == "rollback"), None)
                time.sleep(1)
                stop[0] = True
                for fu in futs:
                    fu.result()
                pool.shutdown()
                proxy.stop()
                gw.stop()
                secs = entry["time_unix_ms"] / 1000 - fault_at if entry else None
                reps.append({"fault_to_rollback_s": secs, "metric": entry and entry["metric"],
                             "value": entry and entry["value"], "limit": entry and entry["limit"],
                             "requests": sent[0], "caller_errors": failures[0]})
                print(f"{mode} rep {rep + 1}: fault -> rollback "
                      f"{secs if secs is None else round(secs, 2)} s on "
                      f"{entry and entry['metric']}; {failures[0]} caller errors of {sent[0]}",
                      flush=True)
            out[mode] = reps
    finally:
        for p in (cand, base):
            p.stop()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rate", type=float, default=3)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--parts", default="shadow,judge,rollback",
                    help="shadow (judge on its own tier), judge (on the baseline's engine), "
                    "rollback")
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "rollout.json"))
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="brisk-rollout-bench-")
    results = {"load_before": os.getloadavg(), "cpus": os.cpu_count()}
    # The judge on its own tier (a canned stand-in: the shadow path's own
    # cost), then on the baseline's engine (what judging costs a shared one).
    parts = a.parts.split(",")
    if "shadow" in parts:
        results["shadow"] = shadow_cost(a, tmp, judge_elsewhere=True)
    if "judge" in parts:
        results["shadow_judge_on_baseline"] = shadow_cost(a, tmp, judge_elsewhere=False)
    if "rollback" in parts:
        results["rollback"] = rollback_time(a, tmp)
    results["load_after"] = os.getloadavg()
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    for key in ("shadow", "shadow_judge_on_baseline"):
        if key not in results:
            continue
        m = results[key]["median_ratio"]
        print(f"\n{key}: on / off, median of {a.rounds} rounds: TTFT p95 {m['ttft_p95']:.3f}x, "
              f"e2e p95 {m['e2e_p95']:.3f}x")
    for mode, reps in results.get("rollback", {}).items():
        secs = [r["fault_to_rollback_s"] for r in reps]
        print(f"{mode}: fault -> rollback {secs} s; caller errors "
              f"{sum(r['caller_errors'] for r in reps)}")
    print(f"(load average before {results['load_before'][0]:.2f}, "
          f"after {results['load_after'][0]:.2f})")


if __name__ == "__main__":
    main()
