#!/usr/bin/env python3
"""MaskBench coverage and token-mask time for Brisk's JSON Schema matcher.

Runs the MaskBench collection (guidance-ai/jsonschemabench, maskbench/data:
~11k real-world schemas, each with valid and invalid instances) through
`brisk schema suite` on one core and reports, per vocabulary:

  - accepted share: schemas that compile with every keyword enforced (what
    llguidance counts as "no compile error"); also schemas that compile with
    some keywords unenforced, and schemas that fail to compile;
  - compile time p50/p99 (JSON text -> grammar, parse included) over the
    schemas that compile;
  - mask time p50/p99/p99.9 over every mask computed while walking the test
    instances token by token (as MaskBench does: a mask before each token,
    stopping at the first rejected token, plus one at the end for EOS);
  - wrong accepts (an invalid instance accepted) and wrong rejects (a valid
    instance rejected), counted separately for accepted schemas and for
    schemas with unenforced keywords (where wrong accepts are expected).

The data is not in this repository (no license for it). Get it at benchmark
time, e.g.:
    git clone https://github.com/guidance-ai/jsonschemabench /tmp/jsb
    git -C /tmp/jsb checkout ba103c73756198dd9b149ddc7db7867da7a077f6
    python3 bench/maskbench.py --data /tmp/jsb/maskbench/data \
        --model models/SmolLM2-135M-Instruct.Q4_1.gguf --out /tmp/mb-smollm2

--lenient compiles with JSON Schema's defaults (a missing additionalProperties
allows any extra key, a missing items after prefixItems any extra item)
instead of Brisk's strict defaults (none allowed, as OpenAI strict mode and
XGrammar do); valid instances that use such extra keys are wrong rejects in the
strict mode.

Instances are serialized compactly (json.dumps with separators (',', ':'),
ensure_ascii=False, keys in the file's order): Brisk's grammar emits compact
JSON. MaskBench's own runner uses Python's default separators (', ', ': ')
because llguidance allows whitespace; --serialize python reproduces that.
"""
import argparse
import glob
import json
import os
import select
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def serialize(data, style):
    if style == "python":
        return json.dumps(data, indent=None, ensure_ascii=False)
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def load_cases(files, style):
    for path in files:
        name = os.path.basename(path)
        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, ValueError) as e:
            yield {"id": name, "unreadable": repr(e)}
            continue
        tests = [{"text": serialize(t["data"], style), "valid": bool(t["valid"])}
                 for t in d.get("tests", [])]
        yield {"id": name, "schema": d.get("schema"), "tests": tests}


def run_suite(brisk, model, cases, timeout_s, cpu, log, lenient=False):
    """Runs the cases through one `brisk schema suite` process; restarts it
    (marking the case as hung) if a case gets no answer within the budget."""
    results = {}
    head = None
    todo = [c for c in cases if "unreadable" not in c]
    for c in cases:
        if "unreadable" in c:
            results[c["id"]] = {"id": c["id"], "compiled": False, "error": c["unreadable"]}
    while todo:
        cmd = [brisk, "schema", "suite", "-", "--model", model, "--timeout", str(timeout_s)]
        if lenient:
            cmd.append("--lenient")
        if cpu is not None:
            cmd = ["taskset", "-c", str(cpu)] + cmd
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             encoding="utf-8", bufsize=1)
        head = json.loads(p.stdout.readline())
        done = 0
        for c in todo:
            p.stdin.write(json.dumps(c, ensure_ascii=False) + "\n")
            p.stdin.flush()
            # Compile has no deadline inside brisk; the walk does. Allow both.
            ready, _, _ = select.select([p.stdout], [], [], 2 * timeout_s + 30)
            line = p.stdout.readline() if ready else ""
            if not line:
                p.kill()
                p.wait()
                results[c["id"]] = {"id": c["id"], "compiled": False, "hung": True,
                                    "error": "no answer in time (or crashed)"}
                done += 1
                print(f"  {c['id']}: hung or crashed; restarting", file=log, flush=True)
                break
            r = json.loads(line)
            results[c["id"]] = r
            done += 1
            if len(results) % 500 == 0:
                print(f"  {len(results)} schemas", file=log, flush=True)
        else:
            p.stdin.close()
            p.wait()
        todo = todo[done:]
    return head, results


def pct(sorted_vals, p):
    if not sorted_vals:
        return float("nan")
    i = min(len(sorted_vals) - 1, int(p * len(sorted_vals)))
    return sorted_vals[i]


def summarize(head, results, n_files):
    s = {"model": head["model"] if head else None, "vocab": head["vocab"] if head else None,
         "schemas": n_files}
    compiled = [r for r in results.values() if r.get("compiled")]
    accepted = [r for r in compiled if not r.get("unenforced")]
    s["compile_errors"] = sum(1 for r in results.values() if not r.get("compiled"))
    s["hung"] = sum(1 for r in results.values() if r.get("hung"))
    s["timeouts"] = sum(1 for r in results.values() if r.get("timeout"))
    s["compiled_with_unenforced"] = len(compiled) - len(accepted)
    s["accepted"] = len(accepted)
    s["accepted_share"] = len(accepted) / n_files if n_files else 0
    ct = sorted(r["compile_s"] for r in compiled)
    s["compile_ms_p50"] = pct(ct, 0.5) * 1e3
    s["compile_ms_p99"] = pct(ct, 0.99) * 1e3
    s["compile_ms_max"] = (ct[-1] if ct else float("nan")) * 1e3
    # Share of all schemas that carry each reported keyword (what keeps them out).
    kw = {}
    for r in compiled:
        for k in {u.split("@")[0] for u in r.get("unenforced", [])}:
            kw[k] = kw.get(k, 0) + 1
    s["unenforced_keyword_share"] = {k: round(v / n_files, 4) for k, v in
                                     sorted(kw.items(), key=lambda x: -x[1])} if n_files else {}

    def masks(rs):
        v = sorted(x for r in rs for x in r.get("mask_us", []))
        return {"n": len(v), "p50": pct(v, 0.5), "p99": pct(v, 0.99), "p999": pct(v, 0.999),
                "max": v[-1] if v else float("nan"), "mean": sum(v) / len(v) if v else 0}

    s["mask_us_accepted"] = masks(accepted)
    s["mask_us_all_compiled"] = masks(compiled)

    def verdicts(rs):
        v = {"valid": 0, "invalid": 0, "wrong_accepts": 0, "wrong_rejects": 0,
             "mask_disagrees": 0, "schemas_with_error": 0, "examples_wa": [], "examples_wr": []}
        for r in rs:
            bad = False
            for i, t in enumerate(r.get("tests", [])):
                v["valid" if t["valid"] else "invalid"] += 1
                v["mask_disagrees"] += bool(t.get("mask_disagrees"))
                if t["accepted"] and not t["valid"]:
                    v["wrong_accepts"] += 1
                    bad = True
                    v["examples_wa"].append((r["id"], i))
                elif not t["accepted"] and t["valid"]:
                    v["wrong_rejects"] += 1
                    bad = True
                    v["examples_wr"].append((r["id"], i, t.get("rejected_at")))
            v["schemas_with_error"] += bad
        return v

    s["tests_accepted_schemas"] = verdicts(accepted)
    s["tests_unenforced_schemas"] = verdicts([r for r in compiled if r.get("unenforced")])
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="/tmp/maskbench/data", help="maskbench/data directory")
    ap.add_argument("--brisk", default=os.path.join(REPO, "build", "brisk"))
    ap.add_argument("--model", default=os.path.join(REPO, "models",
                                                    "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--every", type=int, default=1, help="take every Nth file (sorted by name)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many files (0: all)")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per schema's tests")
    ap.add_argument("--cpu", type=int, default=0, help="pin to this core (-1: no pinning)")
    ap.add_argument("--serialize", choices=["compact", "python"], default="compact")
    ap.add_argument("--lenient", action="store_true",
                    help="JSON Schema defaults (missing additionalProperties allows more keys) "
                    "instead of Brisk's strict defaults")
    ap.add_argument("--compile-only", action="store_true",
                    help="drop the test instances: accepted share and compile times only "
                    "(seconds instead of hours)")
    ap.add_argument("--out", default="", help="write per-schema results and summary here")
    args = ap.parse_args()

    files = sorted(glob.glob(os.path.join(args.data, "*.json")))[::max(1, args.every)]
    if args.limit:
        files = files[:args.limit]
    if not files:
        sys.exit(f"no *.json in {args.data}")
    print(f"{len(files)} schema files from {args.data}", file=sys.stderr, flush=True)
    t0 = time.time()
    cases = list(load_cases(files, args.serialize))
    if args.compile_only:
        for c in cases:
            if "tests" in c:
                c["tests"] = []
    head, results = run_suite(args.brisk, args.model, cases, args.timeout,
                              None if args.cpu < 0 else args.cpu, sys.stderr, args.lenient)
    s = summarize(head, results, len(files))
    s["wall_s"] = time.time() - t0
    s["loadavg"] = os.getloadavg()
    s["serialize"] = args.serialize
    s["lenient"] = args.lenient
    s["compile_only"] = args.compile_only
    s["files"] = {"every": args.every, "limit": args.limit, "data": args.data}
    s["head"] = head
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "results.jsonl"), "w", encoding="utf-8") as f:
            for r in results.values():
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
        with open(os.path.join(args.out, "summary.json"), "w") as f:
            json.dump(s, f, indent=1)
    brief = {k: v for k, v in s.items() if k not in ("tests_accepted_schemas",
                                                     "tests_unenforced_schemas")}
    print(json.dumps(brief, indent=1))
    for k in ("tests_accepted_schemas", "tests_unenforced_schemas"):
        v = dict(s[k])
        v["examples_wa"] = v["examples_wa"][:10]
        v["examples_wr"] = v["examples_wr"][:10]
        print(k, json.dumps(v))


if __name__ == "__main__":
    main()
