#!/usr/bin/env python3
"""The front door under attack: a bounded soak against `brisk serve`.

  BRISK_BIN=build/brisk python3 bench/attack_soak.py [--seconds 120] [--check]

Two phases, each on a fresh server with the default configuration plus
`scheduler: {max_concurrent_sequences: 8}`: first without API keys, then with
one key configured (so stalled uploads without a key meet the key check before
the body). Each phase measures a baseline with no attack (a /health poller
every 10 ms, a normal `openai` client sending chats), then runs every attack
kind of tests/e2e/attacks.py round-robin from a few attacker threads for half of
--seconds while the same measurements go on, with /metrics polled every
100 ms for the number of running sequences and /proc for the server's RSS.
The attack code is tests/e2e/attacks.py, shared with the hardening tests.

Prints markdown tables and writes bench/results/attack_soak.json. With
--check, exits 1 if the server died, a normal request was lost, running
sequences exceeded the cap, or RSS grew by more than 256 MiB (and if an attack
kind never ran or /metrics never answered: then nothing was checked). Latency deltas
are reported, not asserted: on a small shared machine the scheduler alone
moves them by tens of ms. All traffic goes to 127.0.0.1; every loop and every
wait is bounded in time.
"""
import argparse
import collections
import concurrent.futures
import datetime
import itertools
import json
import os
import pathlib
import signal
import socket
import subprocess
import sys
import threading
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from attacks import (ENDLESS, NON_CONFORMING, SHORT, Flood, HealthPoller, MiB,  # noqa: E402
                     big_logit_bias_body, big_prompt_body, chat_bytes, chat_ttft, connect,
                     peak_rss_bytes, post, post_head, read_head, read_response, rss_bytes,
                     trailer_fields)
from conftest import MODEL_ID, BriskServer  # noqa: E402

sys.path.insert(0, str(REPO / "bench"))
from attack_soak_report import failures, table  # noqa: E402
from soak_readings import (health_summary, histogram, histogram_quantiles,  # noqa: E402
                           metric_sum, ttft_summary)

CAP = 8  # scheduler.max_concurrent_sequences in the soak
KEY = "sk-soak-0123456789abcdef"
# The attacker is another caller: its own key (tenant), and without keys its
# own client address, as it would be on a network. The scheduler shares the
# running slots between callers (scheduler.fair_share); --same-caller runs
# the attacks as the normal client instead, where no fairness can tell the two
# apart.
ATTACK_KEY = "sk-soak-attacker-0123456789"
ATTACKER_ADDR = "127.0.0.2"
# Stalled uploads per burst, one burst at a time: 56 x 4 MiB = 224 MiB announced, most of the
# 256 MiB body budget, leaving room for normal bodies. Over the budget (--stalled-uploads 80)
# the server answers every body 503 until the stalls end: the budget has no per-client share.
STALLED_UPLOADS = 56
ATTACKERS = 3
OUT = REPO / "bench" / "results" / "attack_soak.json"


# ---------------------------------------------------------------- the normal client (own process)

def chat_client_main(host, port, key, max_s):
    """Sends chats with the openai client until stdin closes (or max_s): each
    round a streamed 1-token chat (its TTFT measured) and a non-streamed
    8-token chat. Retries 429/503 as the openai client does by default
    (after Retry-After) and counts them. Prints one JSON object at the end."""
    import openai
    refused = collections.Counter()
    client = openai.OpenAI(base_url=f"http://{host}:{port}/v1", api_key=key, max_retries=0,
                           timeout=20)

    def with_retries(fn):
        """As the openai client's own retries: 429/503 twice at most, after Retry-After."""
        for attempt in range(3):
            try:
                return fn()
            except openai.APIStatusError as e:
                if e.status_code not in (429, 503) or attempt == 2:
                    raise
                refused[e.status_code] += 1
                time.sleep(min(5.0, float(e.response.headers.get("retry-after") or 1)))

    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()), daemon=True).start()
    end = time.monotonic() + max_s
    out = {"sent": 0, "ok": 0, "failed": 0, "errors": [], "ttft": [], "ttft_retried": []}

    def one(fn):
        out["sent"] += 1
        n0, t0 = sum(refused.values()), time.monotonic()
        try:
            value = with_retries(fn)
        except Exception as e:  # every failure is a lost normal request
            out["failed"] += 1
            out["errors"].append(repr(e)[:200])
            return
        out["ok"] += 1
        if value is not None and sum(refused.values()) == n0:
            out["ttft"].append(value)
        elif value is not None:  # first token after the refusals and the waits
            out["ttft_retried"].append([time.monotonic() - t0, value[1]])

    def streamed():  # a 1-token streamed chat: (TTFT seconds, response id)
        t0, first, rid = time.monotonic(), None, None
        for chunk in client.chat.completions.create(model=MODEL_ID, messages=SHORT,
                                                    max_tokens=1, stream=True):
            rid = rid or chunk.id
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.monotonic()
        return (first or time.monotonic()) - t0, rid

    def plain():
        r = client.chat.completions.create(model=MODEL_ID, messages=SHORT, max_tokens=8)
        if not r.choices or r.choices[0].message.content is None:
            raise RuntimeError("answer without content")

    while not done.is_set() and time.monotonic() < end:
        one(streamed)
        one(plain)
        done.wait(0.05)
    out["refused"] = {str(k): v for k, v in refused.items()}
    out["errors"] = out["errors"][:10]
    print(json.dumps(out), flush=True)


class ChatClient:
    def __init__(self, server, key, max_s):
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--chat-client", server.host, str(server.port), key,
             str(max_s)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def stop(self):
        try:
            out, _ = self.proc.communicate("", timeout=90)
            return json.loads(out)
        except (subprocess.TimeoutExpired, ValueError) as e:
            self.proc.kill()
            self.proc.wait()
            return {"sent": 0, "ok": 0, "failed": 1, "errors": [f"client: {e!r}"],
                    "ttft": [], "ttft_retried": [], "refused": {}}


# ---------------------------------------------------------------- /metrics and RSS sampler

class Sampler(threading.Thread):
    """Every 100 ms: brisk:num_requests_running (summed over labels) and VmRSS."""

    def __init__(self, server, interval=0.100):
        super().__init__(daemon=True)
        self.server, self.interval = server, interval
        self.max_running, self.samples, self.errors, self.max_rss = 0.0, 0, 0, 0
        self._done = threading.Event()

    def run(self):
        while not self._done.is_set():
            try:
                self.max_rss = max(self.max_rss, rss_bytes(self.server))
            except (OSError, KeyError):
                pass
            v = metric_sum(self.server, "brisk:num_requests_running")
            if v is None:
                self.errors += 1
            else:
                self.max_running = max(self.max_running, v)
                self.samples += 1
            self._done.wait(self.interval)

    def stop(self):
        self._done.set()
        self.join(15)


# ---------------------------------------------------------------- the attacks

class Attacks:
    """Every attack kind as one bounded round; rounds are handed
    out round-robin to the attacker threads."""

    def __init__(self, server, keyed, stalled_uploads=STALLED_UPLOADS, same_caller=False):
        self.server, self.keyed, self.stall_count = server, keyed, stalled_uploads
        self.stall_burst = threading.Lock()  # one burst of stalled uploads at a time
        key = KEY if same_caller else ATTACK_KEY
        self.auth = f"Authorization: Bearer {key}\r\n" if keyed else ""
        self.auth_headers = {"Authorization": f"Bearer {key}"} if keyed else {}
        self.src = None if same_caller else (ATTACKER_ADDR, 0)
        self.lock = threading.Lock()
        self.open_conns = self.peak_conns = 0
        self.stats = collections.defaultdict(
            lambda: {"rounds": 0, "answers": collections.Counter(), "max_round_s": 0.0})
        self.bias_body = big_logit_bias_body()
        self.prompt_body = big_prompt_body((4 << 20) - 1024)  # fits max_body_bytes (4 MiB)
        self.upload_chunk = b" " * (4 * MiB - 1024)
        self.trailers = trailer_fields()
        self.kinds = ["chunked_flood", "stalled_uploads", "json_100k_keys", "prompt_4mib",
                      "n_over_cap", "pipelined_junk_close", "half_close", "probes",
                      "slow_reader"]
        self._next = itertools.cycle(self.kinds)
        self._flood_case = itertools.cycle(list(ENDLESS) + ["trailers_100k"])

    # Attacking connections are counted while open (the peak divides RSS growth).
    def sock(self, timeout=5.0, rcvbuf=None):
        if rcvbuf is None:
            s = connect(self.server, timeout, self.src)
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.settimeout(timeout)
            if self.src:
                s.bind(self.src)
            s.connect((self.server.host, self.server.port))
        with self.lock:
            self.open_conns += 1
            self.peak_conns = max(self.peak_conns, self.open_conns)
        return s

    def close(self, s):
        s.close()
        with self.lock:
            self.open_conns -= 1

    def answer(self, kind, what):
        with self.lock:
            self.stats[kind]["answers"][str(what)] += 1

    def run_one(self):
        with self.lock:
            kind = next(self._next)
            if kind == "stalled_uploads" and self.stall_burst.locked():
                kind = next(self._next)
        t0 = time.monotonic()
        try:
            getattr(self, kind)(kind)
        except Exception as e:  # noqa: BLE001 -- counted: a round must never end the soak
            self.answer(kind, type(e).__name__)
        with self.lock:
            st = self.stats[kind]
            st["rounds"] += 1
            st["max_round_s"] = max(st["max_round_s"], time.monotonic() - t0)

    def head_status(self, s, timeout):
        try:
            return read_head(s, timeout)[0]
        except socket.timeout:
            return "no answer"
        except (ConnectionError, OSError):
            return "closed"

    # 1: endless chunk-size line / extension / trailer line, and 100k trailer fields.
    def chunked_flood(self, kind):
        with self.lock:
            case = next(self._flood_case)
        s = self.sock()
        try:
            if case == "trailers_100k":
                body = chat_bytes()
                prefix = (post_head(self.server, extra=self.auth) + b"%x\r\n" % len(body) + body
                          + b"\r\n0\r\n")
                flood = Flood(s, prefix, self.trailers, 1)
            else:
                after_head, filler = ENDLESS[case]
                flood = Flood(s, post_head(self.server, extra=self.auth) + after_head, filler,
                              256 * MiB)
            flood.start()
            status = self.head_status(s, 5)
            flood.stop()
        finally:
            self.close(s)
        self.answer(kind, f"{case}:{status}")

    # 4: many nearly complete 4 MiB uploads without a key that never finish.
    def stalled_uploads(self, kind):
        if not self.stall_burst.acquire(blocking=False):
            return
        socks = []
        try:
            for _ in range(self.stall_count):
                try:
                    s = self.sock()
                except OSError as e:
                    self.answer(kind, type(e).__name__)
                    continue
                socks.append(s)
                try:
                    s.sendall(post_head(self.server, 4 * MiB))
                    s.setblocking(False)
                    s.send(self.upload_chunk)  # what fits; the rest stalls
                except (BlockingIOError, OSError):
                    pass
            time.sleep(2.0)
            for s in socks:
                s.setblocking(True)
                self.answer(kind, self.head_status(s, 0.05))
        finally:
            for s in socks:
                self.close(s)
            self.stall_burst.release()

    # 2: 100,000 keys in logit_bias (was quadratic, 14 s on the HTTP thread).
    def json_100k_keys(self, kind):
        status, _, _ = post(self.server, "/v1/chat/completions", self.bias_body, timeout=30,
                            headers=self.auth_headers, source=self.src)
        self.answer(kind, status)

    # 2: a 4 MiB prompt: a second or more of tokenization, off the I/O thread.
    def prompt_4mib(self, kind):
        status, _, _ = post(self.server, "/v1/completions", self.prompt_body, timeout=60,
                            headers=self.auth_headers, source=self.src)
        self.answer(kind, status)

    # 3: n > 1 over the cap: forks that together exceed it, and requests that never fit.
    def n_over_cap(self, kind):
        bodies = [("/v1/chat/completions", {"messages": SHORT, "n": 8, "max_tokens": 8}),
                  ("/v1/chat/completions", {"messages": SHORT, "n": 8, "max_tokens": 8}),
                  ("/v1/completions", {"prompt": [f"Chapter {i}." for i in range(3)], "n": 4,
                                       "max_tokens": 4, "priority": "batch"}),
                  ("/v1/completions", {"prompt": [f"P{i}" for i in range(64)], "n": 8,
                                       "max_tokens": 1}),
                  ("/v1/chat/completions", {"messages": SHORT, "n": 9, "max_tokens": 1})]

        def send(i):
            path, body = bodies[i]
            status, _, _ = post(self.server, path, {"model": MODEL_ID, **body}, timeout=60,
                                headers=self.auth_headers, source=self.src)
            return f"{i}:{status}"
        with self.lock:
            self.open_conns += len(bodies)
            self.peak_conns = max(self.peak_conns, self.open_conns)
        try:
            with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
                for what in pool.map(send, range(len(bodies))):
                    self.answer(kind, what)
        finally:
            with self.lock:
                self.open_conns -= len(bodies)

    # 6: a long request, 70 KiB of pipelined junk, then close: it must be cancelled.
    def pipelined_junk_close(self, kind):
        body = chat_bytes(max_tokens=1500, ignore_eos=True)
        s = self.sock()
        try:
            s.sendall(post_head(self.server, len(body), self.auth) + body + b"x" * (70 << 10))
            time.sleep(1.0)
        finally:
            self.close(s)
        self.answer(kind, "closed")

    # 8: full request, then shutdown(SHUT_WR): the answer must still come.
    def half_close(self, kind):
        body = chat_bytes()
        s = self.sock(30)
        try:
            s.sendall(post_head(self.server, len(body), self.auth) + body)
            s.shutdown(socket.SHUT_WR)
            status = read_response(s, 30)[0]
        finally:
            self.close(s)
        self.answer(kind, status)

    # 5 and 9: non-conforming heads, non-JSON POST (415), a foreign Host.
    def probes(self, kind):
        body = chat_bytes()
        raw = dict(NON_CONFORMING)
        raw["text_plain"] = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {self.server.host}\r\n"
                             f"{self.auth}Content-Type: text/plain\r\n"
                             f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        raw["foreign_host"] = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: rebind.attacker."
                               f"example:{self.server.port}\r\n{self.auth}Content-Type: "
                               f"application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                               ).encode() + body
        for name, data in raw.items():
            s = self.sock()
            try:
                s.sendall(data)
                try:
                    status = read_response(s, 10)[0]
                except (socket.timeout, ConnectionError, OSError) as e:
                    status = type(e).__name__
            finally:
                self.close(s)
            self.answer(kind, f"{name}:{status}")

    # A streamed answer read 64 bytes every 100 ms through a 4 KiB receive buffer.
    def slow_reader(self, kind):
        body = chat_bytes(max_tokens=256, ignore_eos=True, stream=True)
        s = self.sock(5, rcvbuf=4096)
        try:
            s.sendall(post_head(self.server, len(body), self.auth) + body)
            status = self.head_status(s, 10)
            end = time.monotonic() + 3.0
            while time.monotonic() < end:
                try:
                    if not s.recv(64):
                        break
                except OSError:
                    break
                time.sleep(0.1)
        finally:
            self.close(s)
        self.answer(kind, status)


# ---------------------------------------------------------------- one phase

def measure(server, key, seconds, during=None):
    """/health poller, normal client and sampler for `seconds` (or while `during` runs)."""
    steps0 = histogram(server, "brisk:engine_step_seconds")
    sampler = Sampler(server)
    sampler.start()
    poller = HealthPoller(server, 0.010)
    client = ChatClient(server, key, seconds + 60)
    if during is None:
        time.sleep(seconds)
    else:
        during()
    client_out = client.stop()
    steps = histogram_quantiles(steps0, histogram(server, "brisk:engine_step_seconds"))
    health = health_summary(poller)
    sampler.stop()
    time.sleep(0.3)  # the access log is written by a background thread
    return {"health": health, "normal": ttft_summary(client_out, server.access_log()),
            "engine_step_s": steps,
            "max_running": sampler.max_running, "metric_samples": sampler.samples,
            "metric_errors": sampler.errors}, sampler


def run_phase(brisk_bin, name, keyed, attack_s, baseline_s, stalled_uploads, same_caller):
    config = f"scheduler: {{max_concurrent_sequences: {CAP}}}\n"
    if keyed:
        config += (f"keys: [{{key: {KEY}, tenant: soak}}, "
                   f"{{key: {ATTACK_KEY}, tenant: attacker}}]\n")
    server = BriskServer(brisk_bin, config_text=config)
    key = KEY if keyed else "none"
    result = {"phase": name, "config": config.strip().replace("\n", "; ")}
    try:
        warm = server.client(api_key=key, timeout=30)
        for _ in range(3):
            chat_ttft(warm, max_tokens=1)
        result["baseline"], _ = measure(server, key, baseline_s)

        attacks = Attacks(server, keyed, stalled_uploads, same_caller)
        rss0, hwm0 = rss_bytes(server), peak_rss_bytes(server)

        def attack():
            deadline = time.monotonic() + attack_s

            def attacker():
                while time.monotonic() < deadline and server.proc.poll() is None:
                    attacks.run_one()
            threads = [threading.Thread(target=attacker, daemon=True) for _ in range(ATTACKERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(attack_s + 120)

        t0 = time.monotonic()
        result["attack"], sampler = measure(server, key, attack_s, during=attack)
        result["attack_s"] = round(time.monotonic() - t0, 1)
        hwm1 = peak_rss_bytes(server) if server.proc.poll() is None else hwm0
        peak = max(sampler.max_rss, hwm1 if hwm1 > hwm0 else 0)

        # Nothing an attacker started may run on after its connection is gone.
        settle0, left = time.monotonic(), None
        while time.monotonic() - settle0 < 20 and server.proc.poll() is None:
            left = ((metric_sum(server, "brisk:num_requests_running") or 0)
                    + (metric_sum(server, "brisk:num_requests_waiting") or 0))
            if left == 0:
                break
            time.sleep(0.2)
        result["sequences_left"] = left
        result["settle_s"] = round(time.monotonic() - settle0, 1)
        alive = server.proc.poll() is None
        rss1 = rss_bytes(server) if alive else None
        if alive:  # one more normal request, after everything
            status, _, _ = post(server, "/v1/chat/completions", chat_bytes(), timeout=60,
                                headers={"Authorization": f"Bearer {KEY}"} if keyed else {})
            alive = status == 200
        growth = peak - rss0
        result.update({
            "rss_before_mb": rss0 / 1e6, "rss_peak_mb": peak / 1e6,
            "rss_after_mb": rss1 / 1e6 if rss1 else None,
            "rss_growth_mib": growth / MiB, "attack_conns_peak": attacks.peak_conns,
            "rss_growth_per_conn_mib": growth / MiB / max(1, attacks.peak_conns),
            "attacks": {k: {"rounds": v["rounds"], "max_round_s": round(v["max_round_s"], 2),
                            "answers": dict(sorted(v["answers"].items()))}
                        for k, v in attacks.stats.items()},
            "alive_at_end": alive})
    finally:
        code = server.stop()
        result["exit_code"] = code
        result["crashed"] = code not in (0, None) and code != -signal.SIGTERM
        result["stderr_tail"] = [line.rstrip() for line in server.stderr_lines[-5:]]
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120, help="attack time, both phases together")
    ap.add_argument("--check", action="store_true", help="exit 1 on a failed goal")
    ap.add_argument("--stalled-uploads", type=int, default=STALLED_UPLOADS,
                    help="stalled 4 MiB uploads per burst (over 64 fills the body budget)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--same-caller", action="store_true",
                    help="attack as the normal client (same key, same address)")
    ap.add_argument("--chat-client", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.chat_client:
        host, port, key, max_s = args.chat_client
        chat_client_main(host, int(port), key, float(max_s))
        return 0
    brisk_bin = os.environ.get("BRISK_BIN", str(REPO / "build" / "brisk"))
    if not pathlib.Path(brisk_bin).exists():
        print(f"{brisk_bin} not built", file=sys.stderr)
        return 2
    attack_s = args.seconds / 2
    baseline_s = max(5.0, min(15.0, args.seconds / 12))
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    load_before, phases = os.getloadavg(), []
    for name, keyed in (("no keys", False), ("with keys", True)):
        print(f"phase '{name}': baseline {baseline_s:.0f} s, attack {attack_s:.0f} s",
              file=sys.stderr, flush=True)
        try:
            phases.append(run_phase(brisk_bin, name, keyed, attack_s, baseline_s,
                                    args.stalled_uploads, args.same_caller))
        except Exception as e:  # reported below as a failed phase
            phases.append({"phase": name, "error": repr(e)})
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    failed = failures(phases, CAP)
    doc = {"date": started, "brisk_bin": brisk_bin, "git": rev, "seconds": args.seconds,
           "attacker": "same caller" if args.same_caller else "another caller",
           "cap": CAP, "stalled_uploads": args.stalled_uploads, "cpus": os.cpu_count(),
           "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
           "phases": phases, "check_failures": failed}
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(table([p for p in phases if "attacks" in p], CAP))
    print(f"\n{started}, brisk {rev}, {os.cpu_count()} CPUs, load average before "
          f"{load_before[0]:.2f}, after {doc['loadavg_after'][0]:.2f}; JSON: {args.out}")
    for f in failed:
        print("FAILED: " + f)
    return 1 if (args.check and failed) else 0


if __name__ == "__main__":
    sys.exit(main())
