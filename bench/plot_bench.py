#!/usr/bin/env python3
"""Charts and a markdown table from `brisk bench --json` result files.

Usage:
  python3 bench/plot_bench.py RESULT.json [RESULT.json ...] -o OUTDIR
      [--markdown TABLE.md] [--title TEXT]

Results are grouped into series by their label (`brisk bench --label`; else
the server URL). Open-loop results (config.mode == "open-loop", a finite
config.request_rate) give, per series, against the request rate:
  latency_vs_rate.png     TTFT, TPOT and E2E latency: p50 (solid), p95 (dashed),
                          p99 (dotted), in ms
  throughput_vs_rate.png  output tokens/s and goodput (requests/s meeting the
                          run's --slo; absent when no SLO was given)
Closed-loop results (config.concurrency > 0) give, against concurrency:
  throughput_vs_concurrency.png  output tokens/s, requests/s, and TTFT p95
--markdown writes a table with one row per (rate or concurrency, series):
goodput, completed req/s, TTFT p50/p95, TPOT p95, output tok/s, errors + 429s.

The fields read (format "brisk-bench-result/1"): label, server.url,
config.{mode,request_rate,concurrency,slo_ms}, summary.{goodput,
output_throughput, request_throughput, errors, rejected_429, completed,
ttft_ms, tpot_ms, e2e_ms} (each latency a {p50,p90,p95,p99,max,...} in ms).
Needs matplotlib (requirements-test.txt); --markdown alone does not.
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict


def load(paths):
    runs = []
    for p in paths:
        with open(p) as f:
            r = json.load(f)
        if r.get("format") != "brisk-bench-result/1":
            sys.exit(f"{p}: not a brisk bench result (format {r.get('format')!r})")
        r["_path"] = p
        runs.append(r)
    return runs


def series_name(r):
    return r.get("label") or r["server"]["url"]


def rate_of(r):
    rate = r["config"]["request_rate"]
    return math.inf if rate == "inf" else float(rate)


def split(runs):
    """-> ({series: [(rate, run)]}, {series: [(concurrency, run)]}), sorted by x."""
    open_loop, closed = defaultdict(list), defaultdict(list)
    for r in runs:
        c = r["config"]
        if c["mode"] == "closed-loop":
            closed[series_name(r)].append((c["concurrency"], r))
        elif math.isfinite(rate_of(r)):
            open_loop[series_name(r)].append((rate_of(r), r))
    for d in (open_loop, closed):
        for k in d:
            d[k].sort(key=lambda t: t[0])
    return open_loop, closed


def slo_text(runs):
    slos = {json.dumps(r["config"].get("slo_ms"), sort_keys=True) for r in runs}
    if len(slos) != 1:
        return "mixed SLOs"
    slo = json.loads(slos.pop()) or {}
    parts = [f"{k}<={v:g}ms" for k, v in slo.items() if v is not None]
    return ", ".join(parts) if parts else "no SLO"


def plot(open_loop, closed, outdir, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    styles = {"p50": "-", "p95": "--", "p99": ":"}
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if open_loop:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
        for ax, (key, name) in zip(axes, [("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"),
                                          ("e2e_ms", "E2E latency")]):
            for i, (series, pts) in enumerate(sorted(open_loop.items())):
                xs = [x for x, _ in pts]
                for p, ls in styles.items():
                    ys = [r["summary"][key][p] for _, r in pts]
                    ax.plot(xs, ys, ls, marker="o", ms=3, color=colors[i % len(colors)],
                            label=f"{series} {p}")
            ax.set_xlabel("request rate (req/s)")
            ax.set_ylabel(f"{name} (ms)")
            ax.set_title(name)
            ax.grid(True, alpha=0.3)
        axes[0].legend(fontsize=7)
        fig.suptitle(title or "Latency percentiles against request rate")
        fig.tight_layout()
        path = os.path.join(outdir, "latency_vs_rate.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        all_runs = [r for pts in open_loop.values() for _, r in pts]
        for i, (series, pts) in enumerate(sorted(open_loop.items())):
            xs = [x for x, _ in pts]
            color = colors[i % len(colors)]
            axes[0].plot(xs, [r["summary"]["output_throughput"] for _, r in pts], "-o",
                         color=color, ms=3, label=series)
            good = [r["summary"]["goodput"] for _, r in pts]
            if any(g is not None for g in good):
                axes[1].plot(xs, [g if g is not None else float("nan") for g in good], "-o",
                             color=color, ms=3, label=f"{series} goodput")
            axes[1].plot(xs, [r["summary"]["request_throughput"] for _, r in pts], ":",
                         color=color, label=f"{series} completed")
        lim = max(x for pts in open_loop.values() for x, _ in pts)
        axes[1].plot([0, lim], [0, lim], color="grey", lw=0.8, label="offered load")
        axes[0].set_ylabel("output tokens/s")
        axes[1].set_ylabel(f"requests/s ({slo_text(all_runs)})")
        for ax in axes:
            ax.set_xlabel("request rate (req/s)")
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        axes[0].set_title("Output throughput")
        axes[1].set_title("Goodput")
        fig.suptitle(title or "Throughput against request rate")
        fig.tight_layout()
        path = os.path.join(outdir, "throughput_vs_rate.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)

    if closed:
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
        for i, (series, pts) in enumerate(sorted(closed.items())):
            xs = [x for x, _ in pts]
            color = colors[i % len(colors)]
            axes[0].plot(xs, [r["summary"]["output_throughput"] for _, r in pts], "-o",
                         color=color, ms=3, label=series)
            axes[1].plot(xs, [r["summary"]["request_throughput"] for _, r in pts], "-o",
                         color=color, ms=3, label=series)
            axes[2].plot(xs, [r["summary"]["ttft_ms"]["p95"] for _, r in pts], "-o",
                         color=color, ms=3, label=series)
        for ax, name in zip(axes, ["output tokens/s", "requests/s", "TTFT p95 (ms)"]):
            ax.set_xlabel("concurrency (closed loop)")
            ax.set_ylabel(name)
            ax.set_xscale("log", base=2)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(title or "Throughput against concurrency")
        fig.tight_layout()
        path = os.path.join(outdir, "throughput_vs_concurrency.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def markdown(open_loop, closed):
    """One row per (rate or concurrency, series), series side by side per rate."""
    lines = []
    for kind, groups, xname in (("open loop", open_loop, "rate (req/s)"),
                                ("closed loop", closed, "concurrency")):
        if not groups:
            continue
        runs = [r for pts in groups.values() for _, r in pts]
        lines.append(f"{kind.capitalize()}; goodput SLO: {slo_text(runs)}.")
        lines.append("")
        head = [xname, "server", "goodput (req/s)", "completed (req/s)", "TTFT p50 (ms)",
                "TTFT p95 (ms)", "TPOT p95 (ms)", "output tok/s", "errors + 429"]
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
        xs = sorted({x for pts in groups.values() for x, _ in pts})
        for x in xs:
            for name in sorted(groups):
                r = next((r for px, r in groups[name] if px == x), None)
                if r is None:
                    continue
                s = r["summary"]
                row = [f"{x:g}", name, fmt(s["goodput"], 2), fmt(s["request_throughput"], 2),
                       fmt(s["ttft_ms"]["p50"]), fmt(s["ttft_ms"]["p95"]), fmt(s["tpot_ms"]["p95"]),
                       fmt(s["output_throughput"]), str(s["errors"] + s["rejected_429"])]
                lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    return "\n".join(lines)


def parse_slo(text):
    slo = {"ttft": None, "tpot": None, "e2e": None}
    for part in text.split(","):
        k, v = part.split("=")
        v = v.strip()
        scale = 1.0
        for suffix, sc in (("ms", 1.0), ("us", 1e-3), ("s", 1000.0)):
            if v.endswith(suffix):
                v, scale = v[: -len(suffix)], sc
                break
        slo[k.strip()] = float(v) * scale
    return slo


def apply_slo(r, slo):
    """Goodput as brisk bench defines it: completed requests/s meeting every
    objective (TPOT of a 1-token output counts as 0)."""
    good = 0
    for q in r["requests"]:
        if q.get("error") or q.get("http_status") not in (200, None):
            continue
        if q.get("ttft_ms") is None:
            continue
        ok = True
        if slo["ttft"] is not None and q["ttft_ms"] > slo["ttft"]:
            ok = False
        if slo["tpot"] is not None and (q.get("tpot_ms") or 0) > slo["tpot"]:
            ok = False
        if slo["e2e"] is not None and q["e2e_ms"] > slo["e2e"]:
            ok = False
        good += ok
    r["config"]["slo_ms"] = slo
    r["summary"]["good_requests"] = good
    r["summary"]["goodput"] = good / r["summary"]["duration_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="+", help="brisk bench --json files")
    ap.add_argument("-o", "--outdir", help="write PNG charts here")
    ap.add_argument("--markdown", help="write a markdown table here ('-' = stdout)")
    ap.add_argument("--title", default="")
    ap.add_argument("--slo", help="recompute goodput from the per-request records for these "
                    "objectives, e.g. ttft=650ms,tpot=50ms (the runs' own --slo otherwise)")
    args = ap.parse_args()
    if not args.outdir and not args.markdown:
        ap.error("nothing to do: give -o OUTDIR and/or --markdown FILE")
    runs = load(args.results)
    if args.slo:
        for r in runs:
            apply_slo(r, parse_slo(args.slo))
    open_loop, closed = split(runs)
    if not open_loop and not closed:
        sys.exit("no plottable results (open loop needs a finite --request-rate)")
    if args.markdown:
        table = markdown(open_loop, closed)
        if args.markdown == "-":
            print(table)
        else:
            with open(args.markdown, "w") as f:
                f.write(table + "\n")
    if args.outdir:
        os.makedirs(args.outdir, exist_ok=True)
        for path in plot(open_loop, closed, args.outdir, args.title):
            print(path)


if __name__ == "__main__":
    main()
