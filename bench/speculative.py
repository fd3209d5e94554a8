#!/usr/bin/env python3
"""Speculative decoding: the same workloads with speculation off and
on, measured with `brisk bench` against `brisk serve` in the same run, off and
on alternating (A B A B ...) because this machine is noisy.

  python3 bench/speculative.py                      # default model, all workloads
  python3 bench/speculative.py --model models/gemma-3-270m-q4_k_m.gguf
  python3 bench/speculative.py --workloads grounded --rounds 3
  python3 bench/speculative.py --method draft --model TARGET.gguf \
      --draft-model DRAFT.gguf --workloads chat     # a draft model
  python3 bench/speculative.py --workloads grounded16,grounded32 --rounds 8 --same-time
                              # off and on at once, a core each (see main's --same-time)
  python3 bench/speculative.py ... --aa              # A/A: both arms off (the noise floor)

Workloads (prompts written here, not taken from any data set):
  grounded     input-grounded single stream: rewrite this code with a change,
               copy this JSON with one field changed, extract the sentences
               about X: outputs that copy from the prompt (where prompt
               lookup pays)
  chat         open chat single stream (the `conversation` workload of
               `brisk bench`: little to copy)
  turns        multi-turn chat single stream: 4 conversations of 5 turns,
               each request resending the conversation so far (as chat
               clients do), so consecutive prompts share their history (where
               a draft model's prefix cache pays); passages of the Debian
               `fortunes` corpus as the earlier answers
  grounded16 / grounded32
               the grounded prompts at 16 and 32 concurrent streams (where
               speculation must not cost throughput)
  grounded4 / grounded8
               the same at 4 and 8 streams: the batch sizes where the policy
               decides (a 16- or 32-stream run drafts only in its ramp and tail,
               when `max_batch` or fewer sequences run)
  json / json16
               structured output (response_format json_schema: an array of
               person records) on input-grounded prompts at 1 and 16 streams:
               copy a compact JSON array with one field changed, or extract
               the people from sentences (drafts are verified under the
               grammar's mask)

Greedy (temperature 0) so that both runs produce the same tokens: the speedup
is then the same work done faster, and the script checks the outputs match.
Results: bench/results/speculative/*.json and a markdown table on stdout.
"""
import argparse
import bisect
import json
import multiprocessing
import os
import pathlib
import random
import statistics
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_scenarios import BRISK, Server, bench, pct  # noqa: E402

REPO = pathlib.Path(__file__).resolve().parents[1]
OUT = REPO / "bench" / "results" / "speculative"

NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy",
         "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter"]
CITIES = ["Lisbon", "Oslo", "Kyoto", "Lima", "Cairo", "Quito", "Perth", "Riga", "Turin", "Porto"]

CODE = [
    '''def mean(values):
    total = 0
    for v in values:
        total += v
    return total / len(values)''',
    '''def parse_pairs(text):
    out = {}
    for line in text.splitlines():
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        out[key.strip()] = value.strip()
    return out''',
    '''class Counter:
    def __init__(self):
        self.counts = {}

    def add(self, item):
        self.counts[item] = self.counts.get(item, 0) + 1

    def most_common(self):
        return max(self.counts, key=self.counts.get)''',
    '''def fizzbuzz(n):
    result = []
    for i in range(1, n + 1):
        if i % 15 == 0:
            result.append("FizzBuzz")
        elif i % 3 == 0:
            result.append("Fizz")
        elif i % 5 == 0:
            result.append("Buzz")
        else:
            result.append(str(i))
    return result''',
]


def grounded_prompts(seed=0):
    """Prompts whose answers copy from the prompt."""
    rng = random.Random(seed)
    prompts = []
    for i, code in enumerate(CODE):
        prompts.append(f"Rename the function's variables to longer descriptive names and "
                       f"output the whole code again:\n\n{code}\n")
        prompts.append(f"Add a docstring to this code and output the whole code:\n\n{code}\n")
    for i in range(6):
        people = [{"name": rng.choice(NAMES), "age": rng.randint(18, 90),
                   "city": rng.choice(CITIES), "id": rng.randint(1000, 9999)}
                  for _ in range(4)]
        prompts.append("Copy this JSON exactly, but change every age to 30:\n\n"
                       + json.dumps(people, indent=2) + "\n")
    for i in range(6):
        city = rng.choice(CITIES)
        sents = []
        for _ in range(10):
            n, c = rng.choice(NAMES).title(), rng.choice(CITIES)
            sents.append(f"{n} moved to {c} in {rng.randint(1990, 2020)} and works as a "
                         f"{rng.choice(['baker', 'pilot', 'nurse', 'teacher', 'chemist'])}.")
        prompts.append(f"Here are some facts:\n\n{' '.join(sents)}\n\nRepeat, word for word, "
                       f"every sentence that mentions {city}.")
    return [{"messages": [{"role": "user", "content": p}]} for p in prompts]


def turns_prompts(seed=0, conversations=4, turns=5):
    """Multi-turn chats: turn t resends turns 1..t-1 (user + assistant) and asks the next."""
    rng = random.Random(seed)
    corpus = pathlib.Path("/usr/share/games/fortunes")
    passages = []
    for name in ("computers", "science", "literature", "work", "people"):
        f = corpus / name
        if f.exists():
            passages += [p.strip() for p in f.read_text(errors="replace").split("\n%\n")
                         if 200 <= len(p.strip()) <= 700]
    if len(passages) < conversations * turns:
        raise SystemExit("the turns workload needs the Debian package fortunes-min or fortunes")
    rng.shuffle(passages)
    asks = ["What do you make of this?", "Say more about that.", "Why would anyone say so?",
            "Give me an example.", "How would you put it in one sentence?"]
    out = []
    for c in range(conversations):
        messages = []
        for t in range(turns):
            messages.append({"role": "user", "content": rng.choice(asks) if t else
                             "Let us talk about quotations. " + rng.choice(asks)})
            out.append({"messages": list(messages)})
            messages.append({"role": "assistant", "content": passages[c * turns + t]})
    return out


PERSON_ARRAY_SCHEMA = {
    "type": "array", "maxItems": 10,
    "items": {"type": "object",
              "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                             "city": {"type": "string"}, "id": {"type": "integer"}},
              "required": ["name", "age", "city"], "additionalProperties": False}}


# Concurrent streams of each prompts-file workload (chat: one).
STREAMS = {"grounded": 1, "grounded4": 4, "grounded8": 8, "grounded16": 16, "grounded32": 32,
           "json": 1, "json16": 16, "turns": 1}


def json_prompts(seed=0):
    """Prompts whose JSON answers (PERSON_ARRAY_SCHEMA) copy from the prompt."""
    rng = random.Random(seed)
    prompts = []
    for i in range(6):
        people = [{"name": rng.choice(NAMES), "age": rng.randint(18, 90),
                   "city": rng.choice(CITIES), "id": rng.randint(1000, 9999)}
                  for _ in range(4)]
        prompts.append("Copy this JSON array exactly, but change every age to 30:\n\n"
                       + json.dumps(people, separators=(",", ":")) + "\n")
    for i in range(6):
        sents = [f"{rng.choice(NAMES).title()} is {rng.randint(18, 90)} years old and lives in "
                 f"{rng.choice(CITIES)}." for _ in range(5)]
        prompts.append("List every person in this text as a JSON array of records with name, "
                       f"age and city:\n\n{' '.join(sents)}\n")
    return [{"messages": [{"role": "user", "content": p}]} for p in prompts]


def server_args(args, on):
    cfg = pathlib.Path(tempfile.mkdtemp()) / "inference.yaml"
    draft = f"draft_model: {args.draft_model}, " if args.method == "draft" else ""
    spec = (f"speculative: {{method: {args.method}, {draft}num_tokens: {args.num_tokens}, "
            f"max_batch: {args.max_batch}, adaptive: {str(not args.always).lower()}}}\n"
            if on else "")
    cfg.write_text("scheduler: {max_concurrent_sequences: 64}\n" + spec)
    a = ["--threads", str(args.threads), "--config", str(cfg)]
    if args.model:
        a += ["--model", args.model]
    return a


def metric_sum(url, name):
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.split()[-1])
    return total


def run_one(args, workload, on, prompts_file, tag):
    s = Server(server_args(args, on and not args.aa), "on" if on else "off")
    try:
        common = ["--endpoint", "chat", "--temperature", "0", "--seed", "1", "--warmup", "2"]
        if workload == "chat":
            wl = ["--workload", "conversation", "--output-len", str(args.output_len),
                  "--output-max", str(args.output_len), "--num-requests", "12",
                  "--concurrency", "1"]
        else:
            conc = STREAMS[workload]
            if workload.startswith("json"):
                prompts_file = prompts_file.with_name("json_prompts.jsonl")
                rf = {"type": "json_schema", "json_schema": {
                    "name": "people", "strict": True, "schema": PERSON_ARRAY_SCHEMA}}
                common += ["--extra-body", json.dumps({"response_format": rf})]
            if workload == "turns":
                prompts_file = prompts_file.with_name("turns_prompts.jsonl")
            wl = ["--workload", "prompts", "--prompts", str(prompts_file),
                  "--output-len", str(args.output_len),
                  "--num-requests", str(20 if conc == 1 else 3 * conc),
                  "--concurrency", str(conc)]
        r = bench(s, OUT / f"{tag}.json", common + wl, tag)
        r["_spec"] = {k: metric_sum(s.url, "brisk:spec_decode_" + k + "_total")
                      for k in ("num_drafts", "num_draft_tokens", "num_accepted_tokens",
                                "eligible")}
        r["_spec"]["draft_seconds"] = metric_sum(s.url, "brisk:spec_decode_draft_seconds_total")
        for k in ("draft_prompt_tokens", "draft_cached_prompt_tokens"):
            r["_spec"][k] = metric_sum(s.url, "brisk:spec_decode_" + k + "_total")
        r["_server_cmd"] = s.cmd
    finally:
        s.stop()
    return r


def decode_tps(r):
    """Decode tokens/s of a run: tokens after the first over the time after
    the first, summed over its requests (what speculation can speed up; the
    output tokens/s also carry the prefill)."""
    ok = [x for x in r["requests"] if x["status"] == "ok" and x.get("output_tokens", 0) > 1]
    ms = sum(x["e2e_ms"] - x["ttft_ms"] for x in ok)
    return sum(x["output_tokens"] - 1 for x in ok) / ms * 1000 if ms > 0 else 0.0


def _pinned_run(job):
    """run_one in a process of its own whose threads (and so the server's and
    the client's, which inherit it) run on one core."""
    cpu, args, workload, on, prompts_file, tag = job
    os.sched_setaffinity(0, {cpu})
    return run_one(args, workload, on, prompts_file, tag)


def paired_round(args, workload, prompts_file, tags, rnd):
    """--same-time: the off and on servers run at the same time, each with
    its client on a core of its own (one engine thread), the arms switching
    cores every round. Both see the host's state of the moment, which is what
    an A B A B alternation cannot give on a host whose speed changes from one
    run to the next."""
    cores = (0, 1) if rnd % 2 == 0 else (1, 0)
    jobs = [(cores[i], args, workload, on, prompts_file, tags[on]) for i, on in
            enumerate((False, True))]
    with multiprocessing.get_context("fork").Pool(2) as pool:
        off, on = pool.map(_pinned_run, jobs)
    return {False: off, True: on}


def phase_tps(r, max_batch):
    """Output tokens/s in the two phases of a concurrent run: while more than
    `max_batch` requests are in flight (nothing drafts: the engine runs the
    same code as with speculation off) and while `max_batch` or fewer are (the
    closed loop's ramp and tail, where the policy may draft). In flight as the
    client sees it; a chunk's tokens are its request's mean per chunk."""
    ok = [x for x in r["requests"] if x["status"] == "ok"]
    starts = sorted(x["start_s"] for x in ok)
    ends = sorted(x["start_s"] + x["e2e_ms"] / 1000 for x in ok)

    def in_flight(t):  # started at or before t, not ended before t
        return bisect.bisect_right(starts, t) - bisect.bisect_left(ends, t)

    time_in = {True: 0.0, False: 0.0}
    edges = sorted(starts + ends)
    for a, b in zip(edges, edges[1:]):
        n = in_flight((a + b) / 2)
        if n > 0:
            time_in[n > max_batch] += b - a
    events = []
    for x in ok:
        per = x.get("output_tokens", 0) / max(x.get("content_chunks", 0), 1)
        t = x["start_s"] + x["ttft_ms"] / 1000
        events.append((t, per))
        for d in x.get("itl_ms", []):
            t += d / 1000
            events.append((t, per))
    tokens = {True: 0.0, False: 0.0}
    for t, per in events:
        tokens[in_flight(t) > max_batch] += per
    return {k: tokens[k] / time_in[k] if time_in[k] > 0 else 0.0 for k in (True, False)}


def outputs_of(r):
    return {x["index"]: x.get("output_tokens") for x in r["requests"] if x["status"] == "ok"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2, help="off/on pairs per workload")
    ap.add_argument("--method", default="ngram", choices=["ngram", "draft"])
    ap.add_argument("--draft-model", default="", help="method draft: the draft GGUF")
    ap.add_argument("--num-tokens", type=int, default=4)
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--always", action="store_true",
                    help="draft num_tokens every step (speculative.adaptive: false)")
    ap.add_argument("--output-len", type=int, default=160)
    ap.add_argument("--workloads", default="grounded,chat,grounded16,grounded32")
    ap.add_argument("--same-time", action="store_true",
                    help="run the off and on servers at the same time, one core and one engine "
                         "thread each (the arms swap cores every round)")
    ap.add_argument("--aa", action="store_true",
                    help="both arms with speculation off (the host's noise floor for the "
                         "on/off ratios)")
    args = ap.parse_args()
    if args.same_time:
        if not {0, 1} <= os.sched_getaffinity(0):
            ap.error("--same-time runs one server on core 0 and one on core 1: both must be "
                     "available to this process")
        args.threads = 1
    if (args.method == "draft") != bool(args.draft_model):
        ap.error("--draft-model goes with --method draft, and only with it")
    OUT.mkdir(parents=True, exist_ok=True)
    prompts_file = OUT / "grounded_prompts.jsonl"
    prompts_file.write_text("".join(json.dumps(p) + "\n" for p in grounded_prompts()))
    (OUT / "json_prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in json_prompts()))
    if "turns" in args.workloads.split(","):
        (OUT / "turns_prompts.jsonl").write_text(
            "".join(json.dumps(p) + "\n" for p in turns_prompts()))
    model = pathlib.Path(args.model).name if args.model else "default (SmolLM2-135M Q4_1)"
    method = args.method + (f" ({pathlib.Path(args.draft_model).name})" if args.draft_model else "")
    print(f"Model: {model}; speculative method {method}; {args.threads} threads; load average "
          f"{os.getloadavg()[0]:.2f} at the start; brisk: {BRISK}\n")
    print("| workload | off tok/s (per round) | on tok/s (per round) | on/off | "
          "TPOT p50/p95 ms off | TPOT p50/p95 ms on | acceptance | accepted/draft | "
          "steps with a draft | draft time share | draft prompt tokens read / cached | "
          "decode tok/s off / on | decode on/off |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    pairs = []
    for workload in args.workloads.split(","):
        runs = {False: [], True: []}
        for rnd in range(args.rounds):
            if args.same_time:
                tags = {on: f"{pathlib.Path(args.model).stem or 'default'}-{args.method}-"
                            f"{workload}-{'on' if on else 'off'}-{rnd}" for on in (False, True)}
                both = paired_round(args, workload, prompts_file, tags, rnd)
                for on in (False, True):
                    runs[on].append(both[on])
                continue
            # A B B A ...: a drift of the host's speed over the run does not
            # favour either arm.
            for on in ((False, True) if rnd % 2 == 0 else (True, False)):
                tag = f"{pathlib.Path(args.model).stem or 'default'}-{args.method}-{workload}-" \
                      f"{'on' if on else 'off'}-{rnd}"
                runs[on].append(run_one(args, workload, on, prompts_file, tag))
        tput = {on: [r["summary"]["output_throughput"] for r in runs[on]] for on in runs}
        ratio = statistics.median(tput[True]) / statistics.median(tput[False])
        drafts = sum(r["_spec"]["num_drafts"] for r in runs[True])
        dtok = sum(r["_spec"]["num_draft_tokens"] for r in runs[True])
        acc = sum(r["_spec"]["num_accepted_tokens"] for r in runs[True])
        rate = f"{acc / dtok:.2f}" if dtok else "n/a"
        mean_acc = f"{acc / drafts:.2f} of {dtok / drafts:.2f}" if drafts else "no drafts"
        eligible = sum(r["_spec"]["eligible"] for r in runs[True])
        share = f"{drafts / eligible:.2f}" if eligible else "n/a"
        wall = sum(r["summary"].get("duration_s", 0) for r in runs[True])
        dshare = (f"{sum(r['_spec']['draft_seconds'] for r in runs[True]) / wall:.2f}"
                  if wall else "n/a")
        dec = {on: [decode_tps(r) for r in runs[on]] for on in runs}
        dratio = statistics.median(dec[True]) / max(statistics.median(dec[False]), 1e-9)
        read = sum(r["_spec"]["draft_prompt_tokens"] for r in runs[True])
        cached = sum(r["_spec"]["draft_cached_prompt_tokens"] for r in runs[True])
        same = all(outputs_of(a) == outputs_of(b) for a, b in zip(runs[False], runs[True]))
        paired = sorted(a / b for a, b in zip(tput[True], tput[False]))
        pairs.append(f"{workload}: on/off per round {' '.join(f'{x:.2f}' for x in paired)} "
                     f"(median {statistics.median(paired):.2f})")
        if STREAMS.get(workload, 1) > 1:
            ph = {on: [phase_tps(r, args.max_batch) for r in runs[on]] for on in runs}
            med = {on: {k: statistics.median(p[k] for p in ph[on]) for k in (True, False)}
                   for on in runs}
            phases = [(True, f"more than {args.max_batch} in flight (no drafts)"),
                      (False, f"{args.max_batch} or fewer in flight")]
            pairs[-1] += "".join(
                f"; output tok/s with {name} {med[False][k]:.1f} off, {med[True][k]:.1f} on "
                f"({med[True][k] / med[False][k]:.2f}x)"
                for k, name in phases if med[False][k] > 0)
        t = {on: runs[on][-1] for on in runs}
        print(f"| {workload} | {' / '.join(f'{x:.1f}' for x in tput[False])} | "
              f"{' / '.join(f'{x:.1f}' for x in tput[True])} | **{ratio:.2f}x** | "
              f"{pct(t[False], 'tpot_ms', 'p50'):.1f} / {pct(t[False], 'tpot_ms', 'p95'):.1f} | "
              f"{pct(t[True], 'tpot_ms', 'p50'):.1f} / {pct(t[True], 'tpot_ms', 'p95'):.1f} | "
              f"{rate} | {mean_acc} | {share} | {dshare} | "
              f"{f'{read:.0f} / {cached:.0f}' if args.method == 'draft' else 'n/a'} | "
              f"{' / '.join(f'{x:.1f}' for x in dec[False])} / "
              f"{' / '.join(f'{x:.1f}' for x in dec[True])} | **{dratio:.2f}x** |" +
              ("" if same else " output lengths differ!"))
        sys.stdout.flush()
    print("\n" + "\n".join(f"- {p}" for p in pairs))
    if args.aa:
        print("\nA/A run: both arms had speculation off.")
    if args.same_time:
        print("\nThe off and on servers ran at the same time, one core and one engine thread each.")
    print(f"\nLoad average at the end {os.getloadavg()[0]:.2f}. Commands: "
          f"{runs[True][-1]['_server_cmd']}; {runs[True][-1]['_cmd']}")


if __name__ == "__main__":
    main()
