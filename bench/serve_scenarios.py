#!/usr/bin/env python3
"""Serving scenarios for the scheduler and the prefix cache, measured with
`brisk bench` (C++, asynchronous, streaming) against `brisk serve`, each pair of
configurations one after the other in the same run.

  python3 bench/serve_scenarios.py scheduler   # continuous vs static batching, mixed workload
  python3 bench/serve_scenarios.py scheduler --workload decode-heavy \
      --model ~/.cache/brisk/dram-shapes/llama-1b.Q4_K_M.gguf --kv-cache 2GiB
                                               # the same on a model whose weights stream from DRAM
  python3 bench/serve_scenarios.py prefix      # prefix cache: hit vs miss TTFT, shared/unshared workloads
  python3 bench/serve_scenarios.py load        # 256 concurrent streaming clients
  python3 bench/serve_scenarios.py all

Results: bench/results/serve_scenarios/<scenario>/*.json and a markdown table
printed at the end (pasted into BENCHMARKS.md). Run on a quiet machine.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tools"))
import batching_bound  # noqa: E402
from server_process import ServerProcess  # noqa: E402

BRISK = os.environ.get("BRISK_BIN", str(REPO / "build" / "brisk"))
OUT = REPO / "bench" / "results" / "serve_scenarios"


class Server(ServerProcess):
    """`brisk serve` on a free port with these arguments."""

    def __init__(self, args, label):
        super().__init__([BRISK, "serve", "--port", "0"] + args, name=label)
        self.cmd_line = " ".join(["brisk"] + self.cmd[1:])

    def stop(self):
        return super().stop(timeout=60)


def bench(server, out_json, args, label):
    cmd = [BRISK, "bench", "--url", server.url, "--json", str(out_json), "--label", label,
           "--quiet"] + args
    t0 = time.time()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    r = json.loads(pathlib.Path(out_json).read_text())
    r["_cmd"] = " ".join(["brisk"] + cmd[1:])
    r["_wall_s"] = time.time() - t0
    return r


def pct(r, key, p):
    d = r["summary"][key]
    return d.get(p) if d else None


def row(label, r, extra=""):
    s = r["summary"]
    return (f"| {label} | {s['completed']} | {s['errors']} | {s['rejected_429']} | "
            f"{s['request_throughput']:.2f} | {s['output_throughput']:.1f} | "
            f"{s['total_token_throughput']:.1f} | "
            f"{pct(r,'ttft_ms','p50'):.0f} / {pct(r,'ttft_ms','p95'):.0f} / {pct(r,'ttft_ms','p99'):.0f} | "
            f"{pct(r,'tpot_ms','p50'):.1f} / {pct(r,'tpot_ms','p95'):.1f} / {pct(r,'tpot_ms','p99'):.1f} |"
            f"{extra}")


HEADER = ("| run | done | errors | 429 | req/s | output tok/s | total tok/s | TTFT ms p50/p95/p99 | "
          "TPOT ms p50/p95/p99 |")


def text_pads_copy(model):
    """A copy of a random-weight shape (bench/dram_shapes.sh) whose padding
    tokens are NORMAL instead of UNUSED. The pads ("[PAD<id>]", ~99% of a 128k
    vocabulary) render as empty text, so a random model's stream would carry
    almost no content for `brisk bench` to time; as NORMAL tokens each streams
    its name. Same tensors, same bytes per token: only the token-type array in
    the header differs. Made once, next to the original."""
    import shutil
    import gguf
    src = pathlib.Path(model).expanduser()
    dst = src.with_name(src.stem + ".text-pads.gguf")
    if dst.exists():
        return str(dst)
    tmp = dst.with_suffix(".tmp")
    shutil.copyfile(src, tmp)
    r = gguf.GGUFReader(str(tmp), "r+")
    f = r.fields["tokenizer.ggml.token_type"]
    names = r.fields["tokenizer.ggml.tokens"]
    changed = 0
    for i, idx in enumerate(f.data):
        if int(f.parts[idx][0]) == gguf.TokenType.UNUSED and \
                bytes(names.parts[names.data[i]]).startswith(b"[PAD"):
            f.parts[idx][0] = gguf.TokenType.NORMAL
            changed += 1
    r.data.flush()
    del r
    if changed == 0:  # a real model: serve it as it is
        tmp.unlink()
        return str(src)
    os.replace(tmp, dst)
    print(f"{dst}: {changed} padding tokens made NORMAL", file=sys.stderr)
    return str(dst)


def lognormal_load(input_len, input_spread, input_range, output_range, requests, users, seed):
    """`brisk bench` arguments: random prompts of lognormal length (median
    input_len) in input_range, outputs in output_range (their median and
    spread are added per workload), closed loop of `users`."""
    return ["--workload", "random", "--length-dist", "lognormal",
            "--input-len", str(input_len), "--input-spread", str(input_spread),
            "--input-min", str(input_range[0]), "--input-max", str(input_range[1]),
            "--output-min", str(output_range[0]), "--output-max", str(output_range[1]),
            "--ignore-eos", "--num-requests", str(requests), "--warmup", "0",
            "--concurrency", str(users), "--seed", str(seed)]


def scheduler(threads, model=None, workload="mixed", kv_cache=None):
    d = OUT / "scheduler"
    d.mkdir(parents=True, exist_ok=True)
    if model:
        model = text_pads_copy(model)
    if workload == "mixed":
        # Mixed, long-tailed: prompts 16..1024 and outputs 8..512 (lognormal), 96
        # requests, 32 concurrent users; two tails for the outputs.
        desc = "prompts lognormal median 160 (sigma 0.8) in 16..1024"
        common = lognormal_load(160, 0.8, (16, 1024), (8, 512), 96, 32, 1)
        workloads = {
            "outputs median 64, sigma 1.0": ["--output-len", "64", "--output-spread", "1.0"],
            "outputs median 24, sigma 1.5": ["--output-len", "24", "--output-spread", "1.5"],
        }
        curve_shape = {}
    else:
        # Decode-heavy: short prompts, long outputs, 64 requests, 16
        # concurrent users (four requests per slot; on the 1B shape a run takes
        # about four minutes per policy).
        desc = "prompts lognormal median 100 (sigma 0.3) in 64..160"
        common = lognormal_load(100, 0.3, (64, 160), (256, 1024), 64, 16, 7)
        workloads = {
            "outputs median 400, sigma 0.5": ["--output-len", "400", "--output-spread", "0.5"],
        }
        # The bound's step costs at this workload's context lengths.
        curve_shape = {"npp": 100, "ntg": 128}
    server_extra = (["--model", model] if model else []) + \
        (["--kv-cache", kv_cache] if kv_cache else [])
    model_tag = pathlib.Path(model).stem + "-" if model else ""
    slots = int(common[common.index("--concurrency") + 1])
    lines = []
    curve = None
    for wname, wargs in workloads.items():
        lines += [f"\nWorkload: {desc}, {wname} in "
                  f"{common[common.index('--output-min') + 1]}.."
                  f"{common[common.index('--output-max') + 1]}; "
                  f"{common[common.index('--num-requests') + 1]} requests, {slots} concurrent users "
                  f"(closed loop){'; model ' + model if model else ''}.\n",
                  HEADER + " KV waste |", "|" + "---|" * 10]
        results = {}
        for label, extra in [("continuous", []), ("static", ["--static-batching"])]:
            s = Server(["--threads", str(threads), "--max-concurrent", str(slots),
                        "--no-prefix-cache"] + server_extra + extra, label)
            try:
                tag = f"{model_tag}{label}-{wargs[1]}-{wargs[3]}"
                r = bench(s, d / f"{tag}.json", common + wargs, label)
                waste = s.metric("brisk:kv_cache_waste_ratio")
            finally:
                s.stop()
            results[label] = r
            lines.append(row(label, r, f" {100 * waste:.2f}% |"))
            print(f"server: {s.cmd_line}\nbench:  {r['_cmd']}", file=sys.stderr)
        ratio = (results["continuous"]["summary"]["total_token_throughput"]
                 / results["static"]["summary"]["total_token_throughput"])
        lines.append(f"\nContinuous / static total-token throughput: **{ratio:.2f}x**")
        # What a perfect scheduler could reach on this engine (bench/batching_bound.py).
        reqs = [(r["prompt_tokens"], r["output_tokens"]) for r in
                sorted(results["continuous"]["requests"], key=lambda r: r["index"])
                if r["status"] == "ok"]
        if curve is None:
            curve = batching_bound.measure_curve(threads, model=model, **curve_shape)
        b = batching_bound.bound(reqs, slots, curve)
        lines.append(f"\nCost-model bound for these requests (`bench/batching_bound.py`): "
                     f"{b['measured']['ratio']:.2f}x on this engine's measured step costs, "
                     f"{b['flat']['ratio']:.2f}x if a decode step cost the same at any batch size.")
    lines.append("\nEngine speeds the bound used (`brisk bench-model`): prefill %.0f tok/s; "
                 "decode tok/s at B=1,2,4,8,16,32: %s." % (
                     curve["pp"], ", ".join("%.0f" % curve["tg"][l] for l in batching_bound.LEVELS)))
    return "\n".join(lines)


def prefix(threads):
    d = OUT / "prefix"
    d.mkdir(parents=True, exist_ok=True)
    lines = []
    # 1) 2,000-token system prompt + ~50-token user turns, one at a time: the first
    # request of each prefix misses, the rest hit (cache on); everything misses (off).
    seq = ["--workload", "shared-prefix", "--prefix-len", "2000", "--num-prefixes", "1",
           "--input-len", "50", "--output-len", "8", "--ignore-eos", "--num-requests", "12",
           "--warmup", "1", "--concurrency", "1", "--seed", "2"]
    # 2) many users, a few system prompts, 16 concurrent.
    shared = ["--workload", "shared-prefix", "--prefix-len", "600", "--num-prefixes", "4",
              "--input-len", "60", "--output-len", "48", "--ignore-eos", "--num-requests", "96",
              "--warmup", "4", "--concurrency", "16", "--seed", "3"]
    # 3) no shared prefixes at all: the cache's cost.
    unshared = ["--workload", "random", "--input-len", "300", "--input-spread", "0.5",
                "--output-len", "48", "--ignore-eos", "--num-requests", "96", "--warmup", "4",
                "--concurrency", "16", "--seed", "4"]
    res = {}
    for cache in ["on", "off"]:
        s = Server(["--threads", str(threads)] + ([] if cache == "on" else ["--no-prefix-cache"]),
                   cache)
        try:
            for name, w in [("hit-vs-miss", seq), ("shared", shared), ("unshared", unshared)]:
                res[(name, cache)] = bench(s, d / f"{name}-{cache}.json", w, f"{name}-{cache}")
                print(f"{name} cache {cache}: {res[(name, cache)]['_cmd']}", file=sys.stderr)
            hits = s.metric("brisk:prefix_cache_hits_total")
            queries = s.metric("brisk:prefix_cache_queries_total")
        finally:
            s.stop()
        res[("hitrate", cache)] = (hits or 0) / queries if queries else 0
    on, off = res[("hit-vs-miss", "on")], res[("hit-vs-miss", "off")]
    lines.append(f"2,000-token shared system prompt + ~50-token turns, one at a time: TTFT p50 "
                 f"{pct(on,'ttft_ms','p50'):.0f} ms with the cache (hits) vs "
                 f"{pct(off,'ttft_ms','p50'):.0f} ms without (misses): "
                 f"**{pct(off,'ttft_ms','p50') / pct(on,'ttft_ms','p50'):.1f}x** lower.\n")
    lines += [HEADER, "|" + "---|" * 9]
    for name in ["shared", "unshared"]:
        for cache in ["on", "off"]:
            lines.append(row(f"{name}, cache {cache}", res[(name, cache)]))
    for name in ["shared", "unshared"]:
        a = res[(name, "on")]["summary"]["total_token_throughput"]
        b = res[(name, "off")]["summary"]["total_token_throughput"]
        lines.append(f"\n{name}: throughput cache on / off = **{a / b:.3f}x**, TTFT p95 "
                     f"{pct(res[(name,'on')],'ttft_ms','p95'):.0f} vs "
                     f"{pct(res[(name,'off')],'ttft_ms','p95'):.0f} ms")
    return "\n".join(lines)


def load(threads):
    d = OUT / "load"
    d.mkdir(parents=True, exist_ok=True)
    s = Server(["--threads", str(threads), "--max-concurrent", "64"], "load")
    try:
        rss0 = rss_mb(s.proc.pid)
        r = bench(s, d / "load256.json",
                  ["--workload", "random", "--input-len", "64", "--input-spread", "0.5",
                   "--output-len", "32", "--ignore-eos", "--num-requests", "1024", "--warmup", "0",
                   "--concurrency", "256", "--timeout", "600", "--seed", "5"], "256 concurrent")
        rss1 = rss_mb(s.proc.pid)
        r2 = bench(s, d / "load256-again.json",
                   ["--workload", "random", "--input-len", "64", "--input-spread", "0.5",
                    "--output-len", "32", "--ignore-eos", "--num-requests", "1024",
                    "--warmup", "0", "--concurrency", "256", "--timeout", "600", "--seed", "6"],
                   "256 concurrent (again)")
        rss2 = rss_mb(s.proc.pid)
    finally:
        s.stop()
    return "\n".join([HEADER, "|" + "---|" * 9, row("256 concurrent", r),
                      row("256 concurrent, again", r2),
                      f"\nServer RSS: {rss0:.0f} MB idle, {rss1:.0f} MB after the first run, "
                      f"{rss2:.0f} MB after the second."])


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["scheduler", "prefix", "load", "all"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", help="scheduler: GGUF to serve (default: the embedded model)")
    ap.add_argument("--workload", choices=["mixed", "decode-heavy"], default="mixed",
                    help="scheduler: the request mix")
    ap.add_argument("--kv-cache", help="scheduler: brisk serve --kv-cache")
    a = ap.parse_args()
    todo = ["scheduler", "prefix", "load"] if a.scenario == "all" else [a.scenario]
    for t in todo:
        if t == "scheduler":
            md = scheduler(a.threads, a.model, a.workload, a.kv_cache)
            name = "scheduler" if a.workload == "mixed" and not a.model else \
                f"scheduler-{a.workload}-{pathlib.Path(a.model or 'default').stem}"
        else:
            md, name = globals()[t](a.threads), t
        print(f"\n### {name} ({a.threads} threads)\n\n{md}\n")
        (OUT / f"{name}.md").write_text(md + "\n")


if __name__ == "__main__":
    main()
