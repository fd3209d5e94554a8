#!/usr/bin/env python3
"""Upper bound on single-stream speculative decoding speedup on this machine.

A verify step over 1 + k positions of one sequence costs at least a prefill
step of 1 + k tokens (it also computes k more rows of logits), T(1 + k); with a
per-position acceptance rate alpha it yields E(k) = 1 + alpha + ... + alpha^k
tokens instead of 1. So no drafter with acceptance alpha can beat

    max over k of  E(k) * T(1) / T(1 + k)

and drafting only in some steps (no n-gram match) gets less. T(n) is measured
here with `brisk bench-model -p n -n 0` (median of repetitions), in the same
run, on the given model and thread count.

A draft model adds its own forward per draft token, at least D(1), the
draft's one-token step (--draft-model; measured the same way), so the bound
becomes max over k of E(k) * T(1) / (T(1 + k) + k * D(1)); the table also
gives the largest draft cost ratio c = D(1) / T(1) with which a 1.3x speedup
is possible at each alpha.

  python3 bench/speculative_bound.py [--model M] [--threads 2] [--alpha 0.64]
  python3 bench/speculative_bound.py --model TARGET --draft-model DRAFT --alpha 0.97
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_scenarios import BRISK  # noqa: E402


def step_seconds(model, threads, n, reps):
    cmd = [BRISK, "bench-model", "-t", str(threads), "-p", str(n), "-n", "0", "-r", str(reps),
           "--parallel", "1", "--npp", "1", "--ntg", "1"]
    if model:
        cmd += ["-m", model]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    m = re.search(r"^pp%d\s+([\d.]+) tokens/s" % n, out, re.M)
    return n / float(m.group(1))


def expected_tokens(alpha, k):
    return sum(alpha ** i for i in range(k + 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--draft-model", default="", help="a draft model: its step counts too")
    ap.add_argument("--max-k", type=int, default=8)
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--alpha", type=float, action="append",
                    help="acceptance rates to evaluate (default 0.5, 0.64, 0.8, 0.9)")
    args = ap.parse_args()
    alphas = args.alpha or [0.5, 0.64, 0.8, 0.9]
    t = {n: step_seconds(args.model, args.threads, n, args.reps) for n in range(1, args.max_k + 2)}
    print(f"Model: {args.model or 'default'}; {args.threads} threads; load average "
          f"{os.getloadavg()[0]:.2f}\n")
    print("| positions n | " + " | ".join(str(n) for n in t) + " |")
    print("|---|" + "---|" * len(t))
    print("| step ms | " + " | ".join(f"{t[n] * 1e3:.2f}" for n in t) + " |")
    print("| T(n) / T(1) | " + " | ".join(f"{t[n] / t[1]:.2f}" for n in t) + " |\n")
    d1 = step_seconds(args.draft_model, args.threads, 1, args.reps) if args.draft_model else 0.0
    if args.draft_model:
        print(f"Draft {args.draft_model}: D(1) = {d1 * 1e3:.2f} ms, c = D(1) / T(1) = "
              f"{d1 / t[1]:.2f}\n")

    def bound(a, c):
        k = max(range(1, args.max_k + 1),
                key=lambda k: expected_tokens(a, k) / (t[1 + k] / t[1] + k * c))
        return k, expected_tokens(a, k) / (t[1 + k] / t[1] + k * c)

    print("| acceptance alpha | best k | speedup bound | largest c for 1.3x |")
    print("|---|---|---|---|")
    for a in alphas:
        k, b = bound(a, d1 / t[1])
        c_max = next((c / 100 for c in range(100, -1, -1) if bound(a, c / 100)[1] >= 1.3), None)
        print(f"| {a:.2f} | {k} | {b:.2f}x | "
              f"{'none' if c_max is None else f'{c_max:.2f}'} |")


if __name__ == "__main__":
    main()
