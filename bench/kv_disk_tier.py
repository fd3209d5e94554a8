#!/usr/bin/env python3
"""The KV disk tier (cache.disk_path): multi-turn chat TTFT with the disk tier
vs recompute vs RAM hits, and the first request after a restart, in one run.

Multi-turn: `--convs` conversations of `--turns` turns, played round-robin
(conversation 1 turn 1, conversation 2 turn 1, ..., conversation 1 turn 2,
...), each request resending the conversation so far with the model's own
greedy answers (temperature 0, max_tokens 16) as a chat client does; each
user message is ~400 tokens of made-up facts (written here), so the history
reaches ~4,000 tokens at turn 10. Three servers run side by side, idle but for
the request at hand: every request goes to each of them in turn (A B C A B C),
so the machine's noise falls on all three alike:

  recompute  scheduler.kv_cache_bytes small (--kv-small): by the time a
             conversation comes back, the others have taken its RAM blocks,
             and its history is computed again
  disk       the same RAM, with cache.disk_path (a fresh directory): evicted
             blocks are written out and read back
  ram        a RAM KV cache that holds every conversation (--kv-large): every
             history is a RAM hit (the bound the disk tier is measured
             against)

TTFT is the server's (the access log's ttft_ms: arrival to first token); the
answers of the three runs must be identical (greedy), which the script checks.

Restart: then the disk server is killed (SIGKILL) and started again on the
same directory, and the first conversation's last request is sent again (disk,
page cache warm); then the same after dropping the entry files from the page
cache (posix_fadvise DONTNEED: the disk itself is read); cold is the same
request on a fresh server without the tier.

  python3 bench/kv_disk_tier.py [--models smol,gemma] [--convs 3] [--turns 10]
      [--brisk build/brisk] [--out bench/results/kv_disk_tier.json]
"""
import argparse
import json
import os
import pathlib
import shutil
import signal
import statistics
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))
from server_process import ServerProcess  # noqa: E402

MODELS = {
    # name: (file, model id, small RAM KV, large RAM KV)
    "smol": ("models/SmolLM2-135M-Instruct.Q4_1.gguf", "SmolLM2-135M-Instruct.Q4_1", "128MiB",
             "1GiB"),
    "gemma": ("models/gemma-3-270m-q4_k_m.gguf", "gemma-3-270m-q4_k_m", "32MiB", "512MiB"),
}
COLORS = ["red", "green", "blue", "amber", "violet", "silver", "black", "white", "teal"]
ANIMALS = ["otter", "heron", "lynx", "marmot", "gecko", "ibis", "walrus", "okapi", "tapir"]
CITIES = ["Lisbon", "Oslo", "Quito", "Hanoi", "Perth", "Tunis", "Lima", "Riga", "Accra"]


def user_message(conv, turn, n_facts=13):
    """~400 tokens, different for every conversation and turn."""
    k = conv * 1000 + turn * 37
    return " ".join(
        f"Note {conv}.{turn}.{i}: the {COLORS[(k + i) % 9]} {ANIMALS[(k * 7 + 3 * i) % 9]} "
        f"with tag {k + 11 * i} was seen in {CITIES[(k + 5 * i) % 9]} on day {(k + i) % 31 + 1}."
        for i in range(n_facts)) + " Which animal was seen most often?"


class Serve(ServerProcess):
    def __init__(self, brisk, model_file, config_text, threads, label):
        fd, self.config_path = tempfile.mkstemp(suffix=".yaml")
        with os.fdopen(fd, "w") as f:
            f.write(config_text)
        super().__init__([brisk, "serve", "--port", "0", "--threads", str(threads), "--model",
                          str(REPO / model_file), "--config", self.config_path], name=label,
                         timeout=300)

    def stop(self, sig=signal.SIGTERM, timeout=60):
        code = super().stop(sig, timeout)
        os.unlink(self.config_path)
        return code

    def chat(self, model_id, messages):
        """(answer, ttft_ms, prompt_tokens, cached_tokens) of one greedy request."""
        r = self.client(timeout=600).chat.completions.create(
            model=model_id, messages=messages, temperature=0, max_tokens=16)
        for _ in range(100):  # the access log line is written as the answer goes out
            for rec in reversed(self.access_log()):
                if rec.get("request_id") == r.id:
                    return (r.choices[0].message.content, rec["ttft_ms"], r.usage.prompt_tokens,
                            rec.get("cached_tokens", 0))
            time.sleep(0.05)
        raise RuntimeError(f"no access-log record of {r.id}")


def config(kv_bytes, disk=None):
    text = f"scheduler:\n  kv_cache_bytes: {kv_bytes}\nlogging:\n  level: warn\n"
    if disk:
        text += f"cache:\n  disk_path: {disk}\n  disk_bytes: 20GiB\n"
    return text


def metrics(server, names):
    return {n: server.metric(n) or 0 for n in names}


DISK_METRICS = ["brisk:kv_disk_read_seconds_sum", "brisk:kv_disk_read_seconds_count",
                "brisk:kv_disk_read_bytes_total", "brisk:kv_disk_written_bytes_total",
                "brisk:kv_disk_writes_dropped_total", "brisk:kv_disk_blocks"]


def play(servers, model_id, convs, turns):
    """Every request of the multi-turn workload, each sent to every server in
    turn (A B C A B C ...: the machine's noise falls on all of them alike),
    each server with its own copy of the conversations (its own answers)."""
    history = {m: {c: [{"role": "system", "content": "You keep notes and answer briefly."}]
                   for c in range(convs)} for m in servers}
    rows = {m: [] for m in servers}
    for t in range(turns):
        for c in range(convs):
            for mode, server in servers.items():
                msgs = history[mode][c] + [{"role": "user", "content": user_message(c, t)}]
                before = server.metric("brisk:prefix_cache_tier_hit_tokens_total",
                                       {"tier": "disk"}) or 0
                answer, ttft, n_prompt, cached = server.chat(model_id, msgs)
                disk = (server.metric("brisk:prefix_cache_tier_hit_tokens_total",
                                      {"tier": "disk"}) or 0) - before
                rows[mode].append({"conv": c, "turn": t + 1, "prompt_tokens": n_prompt,
                                   "cached_tokens": cached, "disk_tokens": int(disk),
                                   "ttft_ms": ttft, "answer": answer})
                print(f"  {mode} conv {c} turn {t + 1}: {n_prompt} tokens, {cached} cached "
                      f"({int(disk)} from disk), TTFT {ttft:.0f} ms", file=sys.stderr,
                      flush=True)
                history[mode][c] = msgs + [{"role": "assistant", "content": answer}]
    return rows, history


def drop_page_cache(directory):
    n = 0
    for p in pathlib.Path(directory).glob("*/*.kv"):
        fd = os.open(p, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
        n += 1
    return n


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def run_model(name, args, work):
    model_file, model_id, kv_small, kv_large = MODELS[name]
    out = {"model": model_id, "kv_small": kv_small, "kv_large": kv_large, "modes": {}}
    disk_dir = work / f"{name}-kv"
    shutil.rmtree(disk_dir, ignore_errors=True)
    cfgs = {"recompute": config(kv_small), "disk": config(kv_small, disk_dir),
            "ram": config(kv_large)}
    servers = {}
    try:
        for mode, cfg in cfgs.items():
            servers[mode] = Serve(args.brisk, model_file, cfg, args.threads, f"{name}-{mode}")
        t0 = time.time()
        rows, history = play(servers, model_id, args.convs, args.turns)
        out["wall_s"] = time.time() - t0
        for mode in servers:
            out["modes"][mode] = {"rows": rows[mode],
                                  "metrics": metrics(servers[mode], DISK_METRICS)}
        # Restart: the disk server killed, then conversation 0's last request
        # on a new server over the same directory.
        last = history["disk"][0][:-1]
        servers.pop("disk").stop(signal.SIGKILL)
        for s in servers.values():
            s.stop()
        servers = {}
        restart = {}
        for phase in ("warm", "dropped", "cold"):
            if phase == "dropped":
                restart["files_dropped"] = drop_page_cache(disk_dir)
            cfg = config(kv_small) if phase == "cold" else config(kv_small, disk_dir)
            r = Serve(args.brisk, model_file, cfg, args.threads, f"{name}-restart-{phase}")
            try:
                answer, ttft, n_prompt, cached = r.chat(model_id, last)
                restart[phase] = {"ttft_ms": ttft, "prompt_tokens": n_prompt,
                                  "cached_tokens": cached, "answer": answer,
                                  "metrics": metrics(r, DISK_METRICS)}
            finally:
                r.stop(signal.SIGKILL)
        out["restart"] = restart
    finally:
        for s in servers.values():
            s.stop()
    return out


def summarize(res):
    modes = res["modes"]
    same = all(a["answer"] == b["answer"] for m in ("recompute", "ram")
               for a, b in zip(modes["disk"]["rows"], modes[m]["rows"]))
    rs = res["restart"]
    same = same and rs["warm"]["answer"] == rs["cold"]["answer"] == rs["dropped"]["answer"]
    res["answers_identical"] = same
    turns = sorted({r["turn"] for r in modes["disk"]["rows"]})
    table = []
    for t in turns:
        row = {"turn": t}
        for m in ("recompute", "disk", "ram"):
            xs = [r for r in modes[m]["rows"] if r["turn"] == t]
            row[m] = {"p50": statistics.median(r["ttft_ms"] for r in xs),
                      "p95": pct([r["ttft_ms"] for r in xs], 95),
                      "cached": statistics.median(r["cached_tokens"] for r in xs),
                      "disk": statistics.median(r["disk_tokens"] for r in xs)}
        row["prompt_tokens"] = statistics.median(
            r["prompt_tokens"] for r in modes["disk"]["rows"] if r["turn"] == t)
        row["recompute_over_disk"] = row["recompute"]["p50"] / row["disk"]["p50"]
        row["disk_over_ram"] = row["disk"]["p50"] / row["ram"]["p50"]
        table.append(row)
    res["by_turn"] = table
    rs["cold_over_warm"] = rs["cold"]["ttft_ms"] / rs["warm"]["ttft_ms"]
    rs["cold_over_dropped"] = rs["cold"]["ttft_ms"] / rs["dropped"]["ttft_ms"]
    m = modes["disk"]["metrics"]
    n = m.get("brisk:kv_disk_read_seconds_count") or 0
    res["disk_read_ms_per_block"] = 1000 * m["brisk:kv_disk_read_seconds_sum"] / n if n else None
    return res


def print_tables(res):
    print(f"\n### {res['model']} (RAM KV {res['kv_small']}; RAM-hit run {res['kv_large']})\n")
    print("| turn | prompt tokens | recompute TTFT p50 / p95 ms | disk tier TTFT p50 / p95 ms "
          "(tokens from disk) | RAM hit TTFT p50 / p95 ms | recompute / disk | disk / RAM |")
    print("|---|---|---|---|---|---|---|")
    for r in res["by_turn"]:
        print(f"| {r['turn']} | {r['prompt_tokens']:.0f} | {r['recompute']['p50']:.0f} / "
              f"{r['recompute']['p95']:.0f} | {r['disk']['p50']:.0f} / {r['disk']['p95']:.0f} "
              f"({r['disk']['disk']:.0f}) | {r['ram']['p50']:.0f} / {r['ram']['p95']:.0f} | "
              f"{r['recompute_over_disk']:.1f}x | {r['disk_over_ram']:.2f}x |")
    rs = res["restart"]
    print(f"\nRestart, first request ({rs['cold']['prompt_tokens']} tokens): cold "
          f"{rs['cold']['ttft_ms']:.0f} ms, disk tier {rs['warm']['ttft_ms']:.0f} ms "
          f"({rs['warm']['cached_tokens']} cached; {rs['cold_over_warm']:.1f}x), disk tier with "
          f"the entries out of the page cache {rs['dropped']['ttft_ms']:.0f} ms "
          f"({rs['cold_over_dropped']:.1f}x). Disk read per block: "
          f"{res['disk_read_ms_per_block'] or 0:.2f} ms. Answers identical: "
          f"{res['answers_identical']}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smol,gemma")
    ap.add_argument("--convs", type=int, default=3)
    ap.add_argument("--turns", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--brisk", default=os.environ.get("BRISK_BIN", str(REPO / "build" / "brisk")))
    ap.add_argument("--workdir", default=None, help="where the disk tier writes (default: a temp dir)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "kv_disk_tier.json"))
    args = ap.parse_args()
    work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="brisk-kv-disk-bench-"))
    results = {"convs": args.convs, "turns": args.turns, "threads": args.threads, "models": {}}
    try:
        for name in args.models.split(","):
            results["models"][name] = summarize(run_model(name, args, work))
            print_tables(results["models"][name])
            pathlib.Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
