#!/usr/bin/env python3
"""Constrained vs unconstrained generation throughput on `brisk serve`.

The same chat prompts (extract a contact record from a short passage) are
sent with and without response_format json_schema, closed loop at
concurrency 1 and 16, temperature 0, the same max_tokens. Runs alternate
A/B/B/A... so slow drift on a shared machine hits both sides; the spread
between repeats is reported next to the ratio.

  python3 bench/constrained_throughput.py --brisk build/brisk --repeats 3
  python3 bench/constrained_throughput.py --schema union --threads 1 --mask-overlap on

Metric: output tokens/s = completion tokens of all requests / wall time of
the run. Constrained answers stop when the JSON value is complete, so their
lengths differ from the unconstrained ones (printed as mean tokens); the
per-request decode rate (completion tokens / request latency, mean) is also
printed because it does not depend on how the batch drains.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tools"))
from server_process import ServerProcess  # noqa: E402

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 80},
        "company": {"type": "string", "maxLength": 80},
        "role": {"type": "string", "maxLength": 80},
        "city": {"type": "string", "maxLength": 60},
        "years_experience": {"type": "integer", "minimum": 0, "maximum": 70},
        "skills": {"type": "array", "items": {"type": "string", "maxLength": 40},
                   "maxItems": 6},
        "seniority": {"enum": ["junior", "mid", "senior", "lead"]},
    },
    "required": ["name", "company", "role", "city", "years_experience", "skills",
                 "seniority"],
    "additionalProperties": False,
}

# The slow class of schemas in MaskBench (BENCHMARKS.md): a union of object
# schemas that share their first keys, so every branch's matcher thread stays
# alive through the shared strings, plus free text under a word-count pattern.
UNION_SCHEMA = {"anyOf": [
    {"type": "object",
     "properties": {**{k: v for k, v in SCHEMA["properties"].items() if k != "seniority"},
                    "summary": {"type": "string", "pattern": "^(?:\\S+\\s+){0,40}\\S+$",
                                "maxLength": 300},
                    "seniority": {"const": level}},
     "required": SCHEMA["required"] + ["summary"],
     "additionalProperties": False}
    for level in ["junior", "mid", "senior", "lead"]]}

PASSAGES = [
    "Maria Lopez has spent eleven years at Northwind Logistics in Rotterdam, where she leads "
    "the routing team. She is known for her work on Python tooling and warehouse forecasting.",
    "After six years building payment systems, Tom Becker joined Fabrikam Bank in Frankfurt "
    "as a senior backend engineer focusing on Go, Postgres and fraud detection.",
    "Aiko Tanaka is a junior data analyst at Contoso Retail in Osaka. In her two years there "
    "she has automated sales reports with SQL and built dashboards.",
    "Samuel Okafor, a lead site reliability engineer at Tailspin Air in Lagos, has fifteen "
    "years of experience with Kubernetes, Terraform and incident response.",
    "Priya Nair works in Bangalore as a mid-level mobile developer for Adatum Health. She "
    "has four years of Kotlin and Swift experience and maintains the patient app.",
    "Lucas Martin has been a product designer at Wingtip Toys in Lyon for eight years, "
    "working on user research, Figma prototypes and accessibility reviews.",
    "Elena Petrova, senior machine learning engineer at Litware Labs in Sofia, has nine "
    "years of experience in PyTorch, recommendation systems and model serving.",
    "Jonas Berg started at Proseware Energy in Oslo three years ago as a junior embedded "
    "engineer writing C firmware for smart meters.",
    "Fatima Zahra leads the security team at Woodgrove Insurance in Casablanca; over twelve "
    "years she has run penetration tests, threat modelling and SOC operations.",
    "Chen Wei is a mid-level frontend developer at Blue Yonder Travel in Shanghai with five "
    "years of React, TypeScript and performance tuning behind him.",
    "Olivia Brown has worked for twenty years as a lead database administrator at Coho "
    "Winery in Adelaide, specialising in Oracle, backups and replication.",
    "Mateo Rossi joined Lucerne Publishing in Milan last year as a junior technical writer "
    "documenting REST APIs and SDKs.",
    "Hannah Schmidt is a senior quality engineer at Trey Research in Vienna; in seven years "
    "she has built test automation with Playwright and load testing with k6.",
    "Kwame Mensah, a mid-level cloud architect at Relecloud in Accra, has six years of Azure, "
    "networking and cost optimisation work.",
    "Sofia Andersson leads analytics at Alpine Ski House in Stockholm, drawing on ten years "
    "of statistics, R and experiment design.",
    "Diego Fernandez is a senior compiler engineer at VanArsdel Systems in Madrid with "
    "thirteen years of LLVM, C++ and vectorisation experience.",
]

SYSTEM = ("Extract the person's record from the text as JSON with the fields name, company, "
          "role, city, years_experience, skills and seniority (junior, mid, senior or lead).")


SCHEMAS = {"person": (SCHEMA, SYSTEM),
           "union": (UNION_SCHEMA, SYSTEM.replace("skills and seniority", "skills, summary (one "
                                                  "sentence) and seniority"))}
SCHEMA_CHOICE = "person"


def body(passage, constrained, max_tokens):
    schema, system = SCHEMAS[SCHEMA_CHOICE]
    b = {"messages": [{"role": "system", "content": system},
                      {"role": "user", "content": passage}],
         "max_tokens": max_tokens, "temperature": 0}
    if constrained:
        b["response_format"] = {"type": "json_schema",
                                "json_schema": {"name": "person", "schema": schema,
                                                "strict": True}}
    return b


def post(url, b, timeout=600):
    req = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(b).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=timeout) as r:
        resp = json.loads(r.read())
    return resp, time.monotonic() - t0


def run(url, concurrency, n, constrained, max_tokens):
    """Closed loop: `concurrency` workers take prompts i = 0..n-1 in order."""
    lock = threading.Lock()
    nxt = [0]
    results = []
    errors = []

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n:
                return
            try:
                resp, lat = post(url, body(PASSAGES[i % len(PASSAGES)], constrained, max_tokens))
                toks = resp["usage"]["completion_tokens"]
                text = resp["choices"][0]["message"]["content"]
                with lock:
                    results.append((toks, lat, text))
            except Exception as e:  # noqa: BLE001 - a failed request is reported, not fatal
                with lock:
                    errors.append(repr(e))

    t0 = time.monotonic()
    ts = [threading.Thread(target=worker) for _ in range(concurrency)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    toks = sum(r[0] for r in results)
    valid_json = 0
    for r in results:
        try:
            json.loads(r[2])
            valid_json += 1
        except ValueError:
            pass
    return {"tok_s": toks / wall, "wall_s": wall, "requests": len(results),
            "errors": len(errors), "mean_tokens": toks / max(1, len(results)),
            "per_req_tok_s": statistics.mean(r[0] / r[1] for r in results) if results else 0,
            "valid_json": valid_json, "sample": results[0][2][:200] if results else None,
            "first_error": errors[0] if errors else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--model", default=os.path.join(REPO, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--concurrency", default="1,16")
    ap.add_argument("--requests", type=int, default=32, help="requests per run (c=1: half)")
    ap.add_argument("--repeats", type=int, default=3, help="A/B pairs per concurrency")
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--threads", type=int, default=0, help="engine threads (0: server default)")
    ap.add_argument("--schema", choices=sorted(SCHEMAS), default="person",
                    help="person: the extraction record; union: four object schemas sharing "
                    "their first keys, with free text under a pattern (the slow mask class)")
    ap.add_argument("--mask-overlap", choices=["auto", "on", "off"], default="auto",
                    help="scheduler.grammar_mask_overlap: masks computed on their own thread "
                    "while the forward pass runs (auto: where a core is left for it)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    global SCHEMA_CHOICE
    SCHEMA_CHOICE = args.schema

    cmd = [args.brisk, "serve", "--port", "0", "--model", args.model, "--log-level", "warn"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    if args.mask_overlap != "auto":
        cfg = os.path.join(tempfile.mkdtemp(), "inference.yaml")
        with open(cfg, "w") as f:
            f.write(f"scheduler: {{grammar_mask_overlap: {args.mask_overlap}}}\n")
        cmd += ["--config", cfg]
    proc = ServerProcess(cmd)
    url = proc.url
    report = {"cmd": " ".join(cmd), "schema": args.schema, "loadavg_start": os.getloadavg(),
              "runs": []}
    try:
        # Warm-up: both kinds once (schema compile cache, page faults).
        run(url, 2, 2, False, args.max_tokens)
        run(url, 2, 2, True, args.max_tokens)
        for c in [int(x) for x in args.concurrency.split(",")]:
            n = args.requests if c > 1 else max(1, args.requests // 2)
            for rep in range(args.repeats):
                order = [False, True] if rep % 2 == 0 else [True, False]
                for constrained in order:
                    r = run(url, c, n, constrained, args.max_tokens)
                    r.update({"concurrency": c, "constrained": constrained, "repeat": rep,
                              "loadavg": os.getloadavg()[0]})
                    report["runs"].append(r)
                    print(f"c={c} rep={rep} {'constrained  ' if constrained else 'unconstrained'}"
                          f" {r['tok_s']:7.1f} tok/s  mean {r['mean_tokens']:.0f} tok"
                          f"  per-req {r['per_req_tok_s']:.1f} tok/s  json {r['valid_json']}/"
                          f"{r['requests']}  err {r['errors']} {r['first_error'] or ''}  load {r['loadavg']:.2f}",
                          file=sys.stderr, flush=True)
    finally:
        proc.stop(timeout=60)
    report["loadavg_end"] = os.getloadavg()

    print("| concurrency | unconstrained tok/s (runs) | constrained tok/s (runs) | ratio "
          "(median; min-max of pairs) | mean tokens U / C | per-request tok/s U / C | "
          "valid JSON U / C |")
    print("|---|---|---|---|---|---|---|")
    summary = []
    for c in sorted({r["concurrency"] for r in report["runs"]}):
        u = [r for r in report["runs"] if r["concurrency"] == c and not r["constrained"]]
        k = [r for r in report["runs"] if r["concurrency"] == c and r["constrained"]]
        ratios = [b["tok_s"] / a["tok_s"] for a, b in zip(u, k)]
        pr = statistics.median(b["per_req_tok_s"] for b in k) / statistics.median(
            a["per_req_tok_s"] for a in u)
        med = statistics.median(ratios)
        u_runs = ", ".join("%.1f" % r["tok_s"] for r in u)
        k_runs = ", ".join("%.1f" % r["tok_s"] for r in k)
        summary.append({"concurrency": c, "ratio_median": med, "ratio_min": min(ratios),
                        "ratio_max": max(ratios), "per_request_ratio": pr})
        print(f"| {c} | {statistics.median(r['tok_s'] for r in u):.1f} "
              f"({u_runs}) | "
              f"{statistics.median(r['tok_s'] for r in k):.1f} "
              f"({k_runs}) | "
              f"{med:.2f} ({min(ratios):.2f}-{max(ratios):.2f}) | "
              f"{statistics.mean(r['mean_tokens'] for r in u):.0f} / "
              f"{statistics.mean(r['mean_tokens'] for r in k):.0f} | "
              f"{statistics.median(r['per_req_tok_s'] for r in u):.1f} / "
              f"{statistics.median(r['per_req_tok_s'] for r in k):.1f} (x{pr:.2f}) | "
              f"{sum(r['valid_json'] for r in u)}/{sum(r['requests'] for r in u)} / "
              f"{sum(r['valid_json'] for r in k)}/{sum(r['requests'] for r in k)} |")
    report["summary"] = summary
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
