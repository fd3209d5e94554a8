"""Front-door hardening findings 2 and 3, from outside against the real `brisk serve`
(loopback only, each test bounded to a few seconds, ~30 s at most):

- 2: JSON bodies parse in linear time with per-field caps and no duplicate
  keys, and request preparation (parsing, chat template, tokenization) runs on
  worker threads, so a 100,000-key body or a 4 MiB prompt delays neither
  /health nor another client's first token;
- 3: every sample of `n` counts against max_concurrent_sequences and the
  waiting queue, prompts per request are capped, and a request that can never
  fit is a clear 400; a big batch request leaves room for interactive work.

Timing bounds are wide (the machine running these is small and shared); the
failures they guard against took seconds to minutes.
"""
import concurrent.futures
import http.client
import json
import socket
import statistics
import subprocess
import sys
import threading
import time

import openai
import pytest

from attacks import (SHORT, HealthPoller, MetricMax, big_logit_bias_body, big_prompt_body,
                     chat_ttft, post)
from conftest import MODEL_ID

# Regression guards, not the goal: before the fix /health waited 13.7 s and
# first tokens waited for whole parses (seconds). The 50 ms goal is
# measured, not asserted (this 2-core machine is shared and noisy), by
# bench/attack_soak.py; its figures are in BENCHMARKS.md.
HEALTH_BUDGET_S = 1.0  # the longest /health may take under attack
TTFT_SLACK_S = 2.0  # how much later an interactive first token may come under attack


# ---------------------------------------------------------------- helpers

def error_of(doc, status):
    """The inner OpenAI error object of a response body, checked for shape."""
    assert isinstance(doc, dict) and set(doc) == {"error"}, (status, doc)
    err = doc["error"]
    assert {"message", "type", "param", "code"} <= set(err), err
    assert isinstance(err["message"], str) and err["message"], err
    return err


def metric_or_0(server, name):
    return server.metric(name) or 0.0


def completion_texts(server, **kw):
    return post(server, "/v1/completions", {"model": MODEL_ID, **kw})


# ---------------------------------------------------------------- finding 2

def test_100k_logit_bias_keys_is_a_quick_400(brisk_server):
    """988 KB of logit_bias took 14 s to parse (quadratic); now refused at once."""
    body = big_logit_bias_body()
    assert len(body) > 900_000
    status, doc, took = post(brisk_server, "/v1/chat/completions", body)
    assert status == 400, doc
    err = error_of(doc, status)
    assert err["param"] == "logit_bias", err
    assert took < 3.0, f"{took:.2f} s for a 100k-key body"


def test_60k_metadata_keys_is_a_400(brisk_server):
    """metadata with 60k keys was answered 200 after 5.2 s."""
    body = json.dumps({"model": MODEL_ID, "messages": SHORT, "max_tokens": 1,
                       "metadata": {f"k{i}": "v" for i in range(60_000)}}).encode()
    status, doc, took = post(brisk_server, "/v1/chat/completions", body)
    assert status == 400, doc
    err = error_of(doc, status)
    assert err["param"] == "metadata", err
    assert took < 3.0, f"{took:.2f} s for a 60k-key metadata"


@pytest.mark.parametrize("body", [
    b'{"model": "%s", "model": "%s", "messages": [{"role": "user", "content": "hi"}]}'
    % (MODEL_ID.encode(), MODEL_ID.encode()),
    b'{"model": "%s", "messages": [{"role": "user", "content": "hi", "role": "system"}]}'
    % MODEL_ID.encode(),
    b'{"model": "%s", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, '
    b'"metadata": {"a": "x", "\\u0061": "y"}}' % MODEL_ID.encode(),
], ids=["top_level", "in_message", "escaped_in_metadata"])
def test_duplicate_key_is_a_400(brisk_server, body):
    """A repeated key was accepted with the last one winning."""
    status, doc, _ = post(brisk_server, "/v1/chat/completions", body)
    assert status == 400, doc
    err = error_of(doc, status)
    assert err["code"] == "duplicate_key", err


def cpu_hog():
    """A process that keeps one core busy until killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def test_big_bodies_delay_neither_health_nor_first_token(make_server):
    """While one client keeps sending 100k-key logit_bias bodies and another
    7 MiB prompts, /health answers within HEALTH_BUDGET_S every time and a
    small chat's median TTFT moves by less than TTFT_SLACK_S. Before the fix
    /health waited 13.7 s behind one such body (parsing and tokenizing ran on
    the single HTTP thread).

    Tokenizing a 4 MiB prompt keeps a core busy for a second, which is fair
    work, but on a 2-core machine it slows the engine's compute threads too.
    So the TTFT baseline is taken without the attack but with one core taken
    by a busy process (and plain, before and after, for the record): what is
    left is what the front door adds."""
    server = make_server("server: {max_body_bytes: 8MiB}\n")
    client = server.client(timeout=30)
    # 7 MiB (the server takes 8): at 4 MiB a faster machine tokenized a
    # prompt in 0.29-0.41 s, at the edge of the check below.
    bias_body, prompt_body = big_logit_bias_body(), big_prompt_body(7 << 20)
    assert len(prompt_body) > 7 << 20

    # The cost of one big prompt, alone: it must be real work, or this test
    # proves nothing.
    status, doc, prompt_s = post(server, "/v1/completions", prompt_body)
    assert status == 400 and error_of(doc, status)["code"] == "context_length_exceeded", doc
    assert prompt_s > 0.3, f"a 7 MiB prompt took only {prompt_s:.2f} s: no load to test with"

    for _ in range(2):  # warm up
        chat_ttft(client)

    poller = HealthPoller(server)
    plain_before = [chat_ttft(client) for _ in range(4)]
    hog = cpu_hog()
    try:
        time.sleep(0.2)
        with_hog = [chat_ttft(client) for _ in range(6)]
    finally:
        hog.kill()
        hog.wait()
    base_health = poller.stop()
    base_slowest = sorted(poller.latencies)[-5:]

    stop = threading.Event()
    outcomes = {"bias": [], "prompt": []}

    def attack(kind, body, pause):
        path = "/v1/chat/completions" if kind == "bias" else "/v1/completions"
        while not stop.is_set():
            status, _, took = post(server, path, body)
            outcomes[kind].append((status, took))
            stop.wait(pause)

    attackers = [threading.Thread(target=attack, args=("bias", bias_body, 0.02), daemon=True),
                 threading.Thread(target=attack, args=("prompt", prompt_body, 0.0), daemon=True)]
    poller = HealthPoller(server)
    n_logged = len(server.access_log())
    t_attack = time.monotonic()
    for a in attackers:
        a.start()
    try:
        time.sleep(0.3)  # the first big bodies are in and being prepared
        attacked = []
        # At least two whole 4 MiB prompts were prepared while chats ran.
        while ((len(attacked) < 6 or len(outcomes["prompt"]) < 2)
               and time.monotonic() - t_attack < 15):
            attacked.append(chat_ttft(client))
            time.sleep(0.05)
    finally:
        stop.set()
        for a in attackers:
            a.join(30)
        attack_health = poller.stop()
    time.sleep(0.2)  # the access log is written by a background thread
    logged = [r for r in server.access_log()[n_logged:]
              if r["endpoint"] == "chat.completions" and r["status"] == 200]
    plain_after = [chat_ttft(client) for _ in range(4)]

    def fmt(xs):
        return "[" + " ".join(f"{x * 1e3:.0f}" for x in xs) + "] ms"
    print(f"\none 4 MiB prompt alone: {prompt_s:.2f} s; attack: {len(outcomes['bias'])} "
          f"logit_bias bodies, {len(outcomes['prompt'])} prompts")
    print(f"TTFT plain before {fmt(plain_before)}, one core busy {fmt(with_hog)}, "
          f"under attack {fmt(attacked)}, plain after {fmt(plain_after)}")
    print("under attack, server side: queue_ms " + " ".join(f"{r['queue_ms']:.1f}" for r in logged)
          + "; ttft_ms " + " ".join(f"{r['ttft_ms']:.0f}" for r in logged))
    print(f"/health slowest: without the attack {fmt(base_slowest)}, under attack "
          f"{fmt(sorted(poller.latencies)[-5:])} of {len(poller.latencies)} polls")

    # The attack really ran through the measurements and was refused.
    assert len(outcomes["prompt"]) >= 2 and len(outcomes["bias"]) >= 5, outcomes
    assert {s for s, _ in outcomes["bias"]} == {400}, outcomes["bias"]
    assert {s for s, _ in outcomes["prompt"]} == {400}, outcomes["prompt"]

    assert not poller.failures, poller.failures
    assert len(poller.latencies) >= 50, len(poller.latencies)
    # On a loaded machine the scheduler alone can hold a poll back for tens of
    # ms; the budget grows with what was seen without the attack, if that
    # was worse. Before the fix a poll waited a whole parse or tokenization.
    health_bound = max(HEALTH_BUDGET_S, 2 * base_health)
    assert attack_health < health_bound, (
        f"/health took up to {attack_health * 1e3:.0f} ms under attack, bound "
        f"{health_bound * 1e3:.0f} ms (slowest: {fmt(sorted(poller.latencies)[-5:])})")
    base_ttft = max(statistics.median(xs) for xs in (plain_before, with_hog, plain_after))
    attack_ttft = statistics.median(attacked)
    assert attack_ttft < base_ttft + TTFT_SLACK_S, (
        f"median TTFT {attack_ttft * 1e3:.0f} ms under attack vs {base_ttft * 1e3:.0f} ms "
        f"without it")


# ---------------------------------------------------------------- finding 3

def test_n_never_takes_running_over_the_cap(make_server):
    """With max_concurrent_sequences 2, two n=8 requests ran 16 sequences. Now
    an n the cap can never hold is a clear 400 and allowed forks stay within
    the cap while they run."""
    server = make_server("scheduler: {max_concurrent_sequences: 2}\n")
    client = server.client(timeout=30)
    running = MetricMax(server, "brisk:num_requests_running")
    running.start()
    try:
        def n8(_):
            try:
                r = client.chat.completions.create(
                    model=MODEL_ID, messages=SHORT, max_tokens=16, n=8)
                return 200, len(r.choices)
            except openai.APIStatusError as e:
                return e.status_code, e.body
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            results = list(pool.map(n8, range(2)))
        for status, detail in results:
            if status == 400:
                err = detail if "message" in detail else detail.get("error", detail)
                assert "at most 2" in err["message"], err
            else:
                assert status == 200 and detail == 8, (status, detail)

        # n = 3 over the cap of 2, on both endpoints: a clear 400, at once.
        for path, body in (("/v1/chat/completions", {"messages": SHORT}),
                           ("/v1/completions", {"prompt": "Once upon a time"})):
            status, doc, took = post(server, path,
                                     {"model": MODEL_ID, "max_tokens": 4, "n": 3, **body})
            assert status == 400, (path, doc)
            err = error_of(doc, status)
            assert err["param"] == "n" and "n = 3" in err["message"] and "at most 2" in err["message"], err
            assert took < 2.0, took

        # Allowed forks (3 requests of n=2, more than the cap together) all
        # run, two sequences at a time.
        def n2(i):
            r = client.completions.create(model=MODEL_ID, prompt=f"Story {i}:", max_tokens=8,
                                          n=2, extra_body={"ignore_eos": True})
            assert len(r.choices) == 2
            return [c.finish_reason for c in r.choices]
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            reasons = list(pool.map(n2, range(3)))
        assert all(r == ["length", "length"] for r in reasons), reasons
    finally:
        peak = running.stop()
    assert running.samples >= 3, running.samples  # the sampler saw the run
    print(f"two n=8 requests: {[s for s, _ in results]}; "
          f"max running sequences {peak:g} over {running.samples} samples")
    assert 1 <= peak <= 2, f"{peak:g} sequences ran with max_concurrent_sequences 2"


def test_prompts_times_n_over_the_queue_is_a_400(brisk_server):
    """64 prompts x n=8 = 512 sequences ran with a cap of 64; the prompt count
    was unbounded. Both are 400s now, at once."""
    prompts = [f"Prompt number {i}" for i in range(64)]
    status, doc, took = completion_texts(brisk_server, prompt=prompts, n=8, max_tokens=1)
    assert status == 400, doc
    err = error_of(doc, status)
    assert err["param"] == "n" and "512" in err["message"] and "256" in err["message"], err
    assert took < 2.0, took

    status, doc, took = completion_texts(brisk_server, prompt=prompts + ["one more"],
                                         max_tokens=1)
    assert status == 400, doc
    err = error_of(doc, status)
    assert err["param"] == "prompt" and "65" in err["message"] and "64" in err["message"], err
    assert took < 2.0, took

    # Token-id prompts count the same.
    status, doc, _ = completion_texts(brisk_server, prompt=[[1, 2, 3]] * 65, max_tokens=1)
    assert status == 400, doc
    assert error_of(doc, status)["param"] == "prompt", doc


def test_big_batch_request_leaves_room_for_interactive(brisk_server):
    """A 512-sequence request pushed a 1-token chat from another client from
    0.03 s to a 60 s timeout. Now a big allowed batch request (16 prompts x
    n=4 = 64 sequences: the whole running set) gives way to interactive work.
    The batch is cancelled (its client goes away) once the chat is answered,
    so the test does not wait for 4096 batch tokens on a slow machine."""
    server = brisk_server
    running = MetricMax(server, "brisk:num_requests_running")
    running.start()
    body = json.dumps({"model": MODEL_ID, "prompt": [f"Chapter {i}. The keeper" for i in range(16)],
                       "n": 4, "max_tokens": 64, "priority": "batch", "ignore_eos": True}).encode()
    conn = http.client.HTTPConnection(server.host, server.port, timeout=120)
    batch_result = {}

    def big_batch():
        try:
            conn.request("POST", "/v1/completions", body=body,
                         headers={"Content-Type": "application/json"})
            r = conn.getresponse()
            batch_result["status"] = r.status
            batch_result["body"] = r.read()[:300]
        except (OSError, http.client.HTTPException) as e:
            batch_result["error"] = repr(e)  # expected: we hang up on it

    batch = threading.Thread(target=big_batch, daemon=True)
    batch.start()
    chat_s = None
    try:
        # Wait until the batch fills most of the running set, then ask for one
        # token from another client.
        deadline = time.monotonic() + 20
        while running.max < 32 and time.monotonic() < deadline and batch.is_alive():
            time.sleep(0.02)
        assert running.max >= 32 and batch.is_alive(), (
            f"the batch never ran wide (max running {running.max:g}): {batch_result}")
        client = server.client(timeout=30)
        steps0 = (metric_or_0(server, "brisk:engine_step_seconds_sum"),
                  metric_or_0(server, "brisk:engine_step_seconds_count"))
        n_logged = len(server.access_log())
        t0 = time.monotonic()
        r = client.chat.completions.create(model=MODEL_ID, messages=SHORT, max_tokens=1)
        chat_s = time.monotonic() - t0
        steps1 = (metric_or_0(server, "brisk:engine_step_seconds_sum"),
                  metric_or_0(server, "brisk:engine_step_seconds_count"))
        assert r.choices[0].finish_reason in ("stop", "length")
        batch_still_running = batch.is_alive()
    finally:
        try:
            conn.sock.shutdown(socket.SHUT_RDWR)  # the batch client goes away
        except (OSError, AttributeError):
            pass
        batch.join(30)
        conn.close()
        # Cancelled sequences leave the running set promptly.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (
                (server.metric("brisk:num_requests_running") or 0)
                + (server.metric("brisk:num_requests_waiting") or 0)) > 0:
            time.sleep(0.1)
        left = ((server.metric("brisk:num_requests_running") or 0)
                + (server.metric("brisk:num_requests_waiting") or 0))
        peak = running.stop()
    n_steps = steps1[1] - steps0[1]
    step_ms = 1e3 * (steps1[0] - steps0[0]) / n_steps if n_steps else float("nan")
    chat_log = [x for x in server.access_log()[n_logged:] if x["endpoint"] == "chat.completions"]
    print(f"1-token interactive chat: {chat_s:.2f} s behind the batch ({n_steps:g} engine steps "
          f"meanwhile, {step_ms:.0f} ms each; server side: "
          + ", ".join(f"queue {x['queue_ms']:.0f} ms, ttft {x['ttft_ms']:.0f} ms" for x in chat_log)
          + f"); max running {peak:g}")
    assert peak <= 64, f"{peak:g} sequences ran with max_concurrent_sequences 64"
    assert chat_s < 5.0, f"a 1-token interactive chat took {chat_s:.2f} s behind the batch"
    assert batch_still_running, f"the batch ended before the chat, nothing tested: {batch_result}"
    assert left == 0, f"{left:g} sequences running or waiting 20 s after the batch's client left"


def hog_slots(server, n, max_tokens, source):
    """n long completions from `source` (another client host), in threads;
    returns the threads (alive while their requests run)."""
    def one(i):
        post(server, "/v1/completions",
             {"model": MODEL_ID, "prompt": f"Story {i}:", "max_tokens": max_tokens,
              "ignore_eos": True}, timeout=300, source=source)
    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while server.metric("brisk:num_requests_running") < 4 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.metric("brisk:num_requests_running") == 4
    return threads


@pytest.mark.parametrize("fair_share", [True, False])
def test_another_callers_work_cannot_hold_every_slot(make_server, fair_share):
    """Finding 3's other half: one caller's legitimate long requests held all
    running slots, so another caller's 1-token chat waited for one of them to
    finish. With the scheduler's fair share (the default) the newcomer takes a
    slot from the caller holding them all and is answered while all of that
    caller's requests still run; with fair_share: false it waits (FCFS)."""
    server = make_server(f"scheduler: {{max_concurrent_sequences: 4, "
                         f"fair_share: {str(fair_share).lower()}}}\n")
    hogs = hog_slots(server, 5, 64, source=("127.0.0.2", 0))
    client = server.client(timeout=120)
    r = client.chat.completions.create(model=MODEL_ID, messages=SHORT, max_tokens=1)
    hogs_running = sum(t.is_alive() for t in hogs)
    deadline = time.monotonic() + 10  # the access log is written by a background thread
    record = None
    while record is None and time.monotonic() < deadline:
        record = next((x for x in server.access_log() if x.get("request_id") == r.id), None)
        time.sleep(0.05)
    assert record is not None, "no access-log record for the chat"
    print(f"fair_share={fair_share}: chat queued {record.get('queue_ms')} ms; "
          f"{hogs_running} of 5 long requests still running")
    if fair_share:
        assert hogs_running == 5, "the chat waited for another caller's request to finish"
    else:
        assert hogs_running < 5, "without fair share the chat waits for a free slot"
    for t in hogs:
        t.join(300)
