#!/usr/bin/env python3
"""How much can continuous batching beat static batching on this machine?

A cost-model bound for the scheduler benchmark (bench/serve_scenarios.py
scheduler): it replays a run's requests (prompt and output lengths, in the
order the closed-loop users sent them) through ideal versions of both policies
and prices every engine step with the engine's own measured speeds:

  step time = prefill tokens / prefill rate  +  B / decode rate(B)

where decode rate(B) is the aggregate decode tokens/s at B parallel sequences
(`brisk bench-model --parallel ...`, measured by this script) and the prefill
rate is the batched prompt rate from the same run. No HTTP, no scheduling
overhead, no partial steps: the ratio it prints is what a perfect scheduler
could reach with this engine on this CPU. It also prints the ratio for a
"flat" decode curve (a step over B sequences costs what a step over 1 does:
the memory-bound regime of a GPU or of a model whose weights stream from
DRAM), which is where continuous batching's large multiples come from.

  python3 bench/batching_bound.py RUN.json [RUN.json ...] [--threads 2] [--model M.gguf]
  (RUN.json: a `brisk bench --json` result; its per-request records are used)
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parents[1]
BRISK = os.environ.get("BRISK_BIN", str(REPO / "build" / "brisk"))
LEVELS = [1, 2, 4, 8, 16, 32]


def measure_curve(threads, npp=128, ntg=64, model=None):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bm.json")
        subprocess.run([BRISK, "bench-model", "-t", str(threads), "-p", "512", "-n", "0", "-r", "1",
                        "--parallel", ",".join(map(str, LEVELS)), "--npp", str(npp), "--ntg",
                        str(ntg), "--json", out] + (["-m", model] if model else []), check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        d = json.load(open(out))
    tg = {b["parallel"]: b["tg_tokens_per_s"] for b in d["batched"]}
    return {"pp": d["pp"]["tokens_per_s"], "tg": tg}


def decode_step_s(curve, b):
    """Seconds for one decode step over b sequences (linear between measured levels)."""
    if b <= 0:
        return 0.0
    levels = sorted(curve["tg"])
    step = {l: l / curve["tg"][l] for l in levels}
    if b >= levels[-1]:
        return step[levels[-1]] * b / levels[-1]
    lo = max(l for l in levels if l <= b)
    hi = min(l for l in levels if l >= b)
    if lo == hi:
        return step[lo]
    f = (b - lo) / (hi - lo)
    return step[lo] + f * (step[hi] - step[lo])


def simulate_static(reqs, slots, curve):
    t = 0.0
    for i in range(0, len(reqs), slots):
        batch = reqs[i:i + slots]
        t += sum(p for p, _ in batch) / curve["pp"]  # prefill (gives each its first token)
        for s in range(1, max(o for _, o in batch)):
            t += decode_step_s(curve, sum(1 for _, o in batch if o > s))
    return t


def simulate_continuous(reqs, slots, curve):
    t, queue, running = 0.0, list(reqs), []  # running: tokens left to decode
    while queue or running:
        admitted = []
        while queue and len(running) + len(admitted) < slots:
            admitted.append(queue.pop(0))
        decoding = len(running)
        t += sum(p for p, _ in admitted) / curve["pp"] + decode_step_s(curve, decoding)
        running = [r - 1 for r in running if r > 1] + [o - 1 for _, o in admitted if o > 1]
    return t


def bound(reqs, slots, curve):
    flat = {"pp": curve["pp"], "tg": {l: l * curve["tg"][1] for l in curve["tg"]}}
    out = {}
    for name, c in [("measured", curve), ("flat", flat)]:
        ts, tc = simulate_static(reqs, slots, c), simulate_continuous(reqs, slots, c)
        out[name] = {"static_s": ts, "continuous_s": tc, "ratio": ts / tc}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", help="brisk bench --json results")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--slots", type=int, default=32)
    ap.add_argument("--model", help="GGUF the runs served (default: the embedded model)")
    args = ap.parse_args()
    curve = measure_curve(args.threads, model=args.model)
    print("engine: prefill %.0f tok/s; decode tok/s at B=%s: %s" % (
        curve["pp"], ",".join(map(str, LEVELS)),
        ", ".join("%.0f" % curve["tg"][l] for l in LEVELS)))
    for path in args.runs:
        d = json.load(open(path))
        reqs = [(r["prompt_tokens"], r["output_tokens"])
                for r in sorted(d["requests"], key=lambda r: r["index"]) if r["status"] == "ok"]
        b = bound(reqs, args.slots, curve)
        print("%s: %d requests; ideal continuous/static %.2fx on this engine's curve, "
              "%.2fx on a flat decode curve" % (os.path.basename(path), len(reqs),
                                                b["measured"]["ratio"], b["flat"]["ratio"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
