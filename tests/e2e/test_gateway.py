"""`brisk gateway` end to end: real `brisk serve` engines (small: SmolLM2 Q4_1,
two replicas; medium: its Q8_0 variant; large: Gemma 3 270M), the real `openai`
client against the gateway, and the cost ledger read back from SQLite and
PostgreSQL."""
import concurrent.futures
import json
import signal
import subprocess
import threading
import time

import http.client
import http.server
import openai
import pytest

from conftest import TIME_SCALE, skip_or_fail
from gateway_util import (PRICES, SchemaBlindUpstream, client, cost_of, engines,  # noqa: F401
                          gateway, sqlite_rows, start_gateway, stream_raw, tier_of,
                          wait_models_known, write_gateway_config)
from server_process import ServerProcess

MSG = [{"role": "user", "content": "Name a color."}]


def test_every_endpoint_with_the_openai_client(gateway):
    gw = gateway()
    c = client(gw)
    ids = [m.id for m in c.models.list().data]
    for want in ("auto", "small", "smol", "medium", "smol-medium", "large", "gemma"):
        assert want in ids
    raw = c.chat.completions.with_raw_response.create(model="small", messages=MSG, max_tokens=8)
    r = raw.parse()
    assert raw.headers["x-brisk-tier"] == "small"
    u = r.usage.model_dump()
    assert r.choices[0].message.content
    expected = cost_of("small", u["prompt_tokens"], u["prompt_tokens_details"]["cached_tokens"],
                       u["completion_tokens"])
    assert u["cost_usd"] == pytest.approx(expected, rel=1e-9)
    assert float(raw.headers["x-brisk-cost-usd"]) == pytest.approx(expected, rel=1e-6)

    chunks = list(c.chat.completions.create(model="medium", messages=MSG, max_tokens=8,
                                            stream=True, stream_options={"include_usage": True}))
    text = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert text
    usage = chunks[-1].usage.model_dump()
    assert chunks[-1].choices == []
    assert usage["tier"] == "medium"
    assert usage["cost_usd"] == pytest.approx(
        cost_of("medium", usage["prompt_tokens"], usage["prompt_tokens_details"]["cached_tokens"],
                usage["completion_tokens"]), rel=1e-9)
    # Without include_usage, no chunk carries usage (the gateway asked the
    # engine for it and strips it).
    plain = list(c.chat.completions.create(model="small", messages=MSG, max_tokens=4,
                                           stream=True))
    assert all(ch.usage is None for ch in plain)

    comp = c.completions.create(model="large", prompt="The capital of France is", max_tokens=6)
    assert comp.choices[0].text
    assert comp.model == "gemma"
    streamed = list(c.completions.create(model="large", prompt="One, two,", max_tokens=4,
                                         stream=True))
    assert "".join(ch.choices[0].text for ch in streamed if ch.choices)

    with pytest.raises(openai.NotFoundError) as e:
        c.chat.completions.create(model="gpt-4o", messages=MSG, max_tokens=4)
    assert "auto" in str(e.value)

    time.sleep(0.2)
    rows = sqlite_rows(gw.ledger)
    assert len(rows) == 5  # the 404 never reached routing
    by_tier = {}
    for row in rows:
        by_tier.setdefault(row["tier"], []).append(row)
        assert row["outcome"] == "completed" and row["status"] == 200
        assert row["cost_usd"] == pytest.approx(
            cost_of(row["tier"], row["prompt_tokens"], row["cached_tokens"],
                    row["completion_tokens"]), rel=1e-9)
    assert sorted(by_tier) == ["large", "medium", "small"]


def test_routing_by_feature_rule_and_default(gateway):
    gw = gateway("""
routing:
  default: small
  features: {classify: small, reasoning: large}
  rules:
    - {route: medium, min_prompt_chars: 400}
    - {route: large, has_response_format: true}
""")
    assert tier_of(gw, "auto", MSG, {"X-Feature": "reasoning"}, max_tokens=4)[:2] == \
        ("large", "feature")
    assert tier_of(gw, "auto", MSG, {"X-Feature": "classify"}, max_tokens=4)[:2] == \
        ("small", "feature")
    long_msg = [{"role": "user", "content": "word " * 120}]
    assert tier_of(gw, "auto", long_msg, max_tokens=4)[:2] == ("medium", "rule:0")
    assert tier_of(gw, "auto", MSG, max_tokens=4,
                   response_format={"type": "json_object"})[:2] == ("large", "rule:1")
    assert tier_of(gw, "auto", MSG, max_tokens=4)[:2] == ("small", "default")
    # An explicit model wins over the feature.
    assert tier_of(gw, "medium", MSG, {"X-Feature": "reasoning"}, max_tokens=4)[:2] == \
        ("medium", "model")
    rows = sqlite_rows(gw.ledger)
    assert [r["feature"] for r in rows] == ["reasoning", "classify", "", "", "", "reasoning"]


SCHEMA = {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": {
    "type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
    "additionalProperties": False}}}


def test_cascade_escalates_on_invalid_json_and_prices_every_attempt(gateway):
    gw = gateway("""
routing:
  default: cascade
  cascade: {tiers: [small, medium, large], escalate_on_invalid_json: true}
""")
    # Too few tokens for the object: small and medium answer truncated JSON,
    # so the request escalates to the last tier, which answers whatever it has.
    tier, route, r = tier_of(gw, "auto", MSG, max_tokens=2, response_format=SCHEMA)
    assert (tier, route) == ("large", "default")
    u = r.usage.model_dump()
    assert u["escalations"] == 2
    # A schema the grammar completes in a few tokens: small's answer is valid.
    tier, _, r = tier_of(gw, "auto", MSG, max_tokens=30, response_format=SCHEMA)
    assert tier == "small"
    assert json.loads(r.choices[0].message.content)["ok"] in (True, False)
    assert r.usage.model_dump()["escalations"] == 0
    time.sleep(0.2)
    rows = sqlite_rows(gw.ledger)
    assert [r["escalations"] for r in rows] == [2, 0]
    assert rows[0]["attempts"] == 3
    # Three attempts were charged: the cost exceeds the large tier's share alone.
    assert rows[0]["cost_usd"] == pytest.approx(u["cost_usd"], rel=1e-9)
    large_only = cost_of("large", u["prompt_tokens"], 0, 0)
    assert rows[0]["cost_usd"] > large_only
    _, text = gw.get("/metrics")
    assert 'brisk_gateway_escalations_total{from_tier="small"} 1' in text
    assert 'brisk_gateway_escalations_total{from_tier="medium"} 1' in text


def test_cascade_checks_a_generic_upstreams_answer_against_the_schema(
        brisk_bin, engines, tmp_path):
    blind = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SchemaBlindUpstream)
    threading.Thread(target=blind.serve_forever, daemon=True).start()
    cfg = tmp_path / "g.yaml"
    cfg.write_text(f"""server: {{port: 0, http_threads: 2}}
replicas: {{health_interval_s: 0.2, eject_s: 1}}
tiers:
  - name: small
    prices: {{input: 0.1, cached_input: 0.02, output: 0.4}}
    upstreams: [{{url: "http://127.0.0.1:{blind.server_address[1]}", type: openai}}]
  - name: medium
    prices: {{input: 1.0, cached_input: 0.2, output: 4.0}}
    upstreams: [{engines["medium"].url}]
routing:
  default: cascade
  cascade: {{tiers: [small, medium], escalate_on_invalid_json: true}}
""")
    gw = start_gateway(brisk_bin, cfg, tmp_path / "l.db")
    try:
        wait_models_known(gw, 2)

        def ask(say, fmt=SCHEMA, **kw):
            return tier_of(gw, "auto", [{"role": "user", "content": "say:" + say}],
                           response_format=fmt, max_tokens=30, **kw)

        # Parses, but "ok" is a string: the schema sends it to the engine tier,
        # whose answer is generated under the schema.
        tier, _, r = ask('{"ok": "yes"}')
        assert tier == "medium"
        assert isinstance(json.loads(r.choices[0].message.content)["ok"], bool)
        assert r.usage.model_dump()["escalations"] == 1
        # Valid in another layout than the engine's grammar writes: kept.
        tier, _, r = ask('{ "ok" :\n true }')
        assert (tier, r.choices[0].message.content) == ("small", '{ "ok" :\n true }')
        # A property the schema forbids (additionalProperties: false).
        assert ask('{"ok": true, "why": "x"}')[0] == "medium"
        # Not JSON at all; and json_object accepts any object.
        assert ask("sure! {ok}")[0] == "medium"
        assert ask('{"anything": [1]}', fmt={"type": "json_object"})[0] == "small"
        # Streamed: the buffered cheaper tier is judged the same way.
        raw = client(gw).chat.completions.with_raw_response.create(
            model="auto", messages=[{"role": "user", "content": 'say:{"ok": 1}'}],
            response_format=SCHEMA, max_tokens=30, stream=True)
        assert raw.headers["x-brisk-tier"] == "medium"
        text = "".join(c.choices[0].delta.content or "" for c in raw.parse() if c.choices)
        assert isinstance(json.loads(text)["ok"], bool)
        time.sleep(0.2)
        rows = sqlite_rows(tmp_path / "l.db")
        assert [(r["tier"], r["escalations"]) for r in rows] == [
            ("medium", 1), ("small", 0), ("medium", 1), ("medium", 1), ("small", 0),
            ("medium", 1)]
    finally:
        gw.stop()
        blind.shutdown()


def test_cascade_escalates_on_low_confidence(gateway):
    strict = gateway("""
routing:
  default: cascade
  cascade: {tiers: [small, large], min_mean_logprob: -0.000001}
""")
    tier, _, r = tier_of(strict, "auto", MSG, max_tokens=6)
    assert tier == "large"
    assert r.choices[0].logprobs is None  # the gateway asked for them, the client did not
    lenient = gateway("""
routing:
  default: cascade
  cascade: {tiers: [small, large], min_mean_logprob: -50}
""")
    tier, _, r = tier_of(lenient, "auto", MSG, max_tokens=6)
    assert tier == "small"
    # Streaming through a cascade: the cheaper tier's answer is judged whole,
    # then replayed as a stream.
    c = client(lenient)
    chunks = list(c.chat.completions.create(model="auto", messages=MSG, max_tokens=6,
                                            stream=True, stream_options={"include_usage": True}))
    assert chunks[-1].usage.model_dump()["tier"] == "small"
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)


def test_prefix_affinity_keeps_a_shared_prompt_on_one_replica(gateway):
    gw = gateway()
    system = {"role": "system", "content": "You are a support agent for ACME. " * 40}
    upstreams = set()
    for i in range(6):
        raw = client(gw).chat.completions.with_raw_response.create(
            model="small", messages=[system, {"role": "user", "content": f"Question {i}?"}],
            max_tokens=2)
        upstreams.add(raw.headers["x-brisk-upstream"])
    assert len(upstreams) == 1
    # Short unrelated prompts spread over both replicas by load. Sent together:
    # one after another, each would find both replicas idle, and a replica's
    # load report taken while it was busy can send all twelve to the other.
    start = threading.Barrier(12, timeout=30)

    def short(i):
        start.wait()
        return client(gw).chat.completions.with_raw_response.create(
            model="small", messages=[{"role": "user", "content": f"Topic number {i * 7919}"}],
            max_tokens=2).headers["x-brisk-upstream"]

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        spread = set(pool.map(short, range(12)))
    assert len(spread) == 2


def test_budget_refuses_before_generation(gateway, tmp_path):
    gw = gateway("""
keys:
  - {key: sk-team-a, tenant: acme, feature: summarize, name: team-a}
budgets:
  - {key: team-a, daily_usd: 0.004}
""", key="sk-team-a")
    c = openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-team-a", max_retries=0)
    answered = 0
    with pytest.raises(openai.RateLimitError) as e:
        # Each costs ~$0.0005-0.0015 at the large tier's prices and is estimated at its
        # prompt plus 30 output tokens ($0.0012 of them): a few pass, then one is refused.
        for _ in range(10):
            c.chat.completions.create(model="large", messages=MSG, max_tokens=30)
            answered += 1
    assert answered >= 1
    assert e.value.code == "budget_exceeded"
    assert "team-a" in str(e.value)
    status, body = gw.get("/v1/budgets", headers={"Authorization": "Bearer sk-team-a"})
    assert status == 200
    entry = json.loads(body)["data"][0]
    assert entry["daily"]["spent_usd"] > 0
    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=gw.url + "/v1", api_key="wrong", max_retries=0) \
            .chat.completions.create(model="large", messages=MSG, max_tokens=2)
    time.sleep(0.2)
    rows = sqlite_rows(gw.ledger)
    assert [r["outcome"] for r in rows] == ["completed"] * answered + ["budget"]
    assert rows[-1]["status"] == 429 and rows[-1]["cost_usd"] == 0
    assert all(r["tenant"] == "acme" and r["feature"] == "summarize" for r in rows)
    status, body = gw.get("/v1/cost?group_by=feature",
                          headers={"Authorization": "Bearer sk-team-a"})
    assert status == 200
    data = json.loads(body)["data"]
    assert data[0]["key"] == "summarize" and data[0]["requests"] == answered + 1
    assert data[0]["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows), rel=1e-9)


def test_ledger_has_exactly_one_row_per_request_of_every_kind(gateway):
    gw = gateway("""
routing:
  features: {cheap-first: cascade}
  cascade: {tiers: [small, medium], min_mean_logprob: -0.000001}
""")
    c = client(gw)
    expected = 0
    for _ in range(3):  # completed, not streamed
        c.chat.completions.create(model="small", messages=MSG, max_tokens=4)
        expected += 1
    for _ in range(2):  # streamed
        list(c.chat.completions.create(model="small", messages=MSG, max_tokens=4, stream=True))
        expected += 1
    # Cancelled by the client mid-stream.
    with stream_raw(gw, "small", 300) as r:
        n = 0
        for line in r.iter_lines():
            if line.startswith("data: {"):
                n += 1
                if n == 3:
                    break
    expected += 1
    # Escalated (cascade by feature).
    raw = c.chat.completions.with_raw_response.create(
        model="auto", messages=MSG, max_tokens=4, extra_headers={"X-Feature": "cheap-first"})
    assert raw.headers["x-brisk-escalations"] == "1"
    expected += 1
    # A 400 from the engine passes through (and is recorded).
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model="small", messages=MSG, max_tokens=4, temperature=-3)
    expected += 1
    deadline = time.time() + 10
    while time.time() < deadline and len(sqlite_rows(gw.ledger)) < expected:
        time.sleep(0.1)
    rows = sqlite_rows(gw.ledger)
    assert len(rows) == expected
    assert len({r["request_id"] for r in rows}) == expected
    outcomes = [r["outcome"] for r in rows]
    assert outcomes.count("completed") == 6 and outcomes.count("cancelled") == 1
    assert outcomes.count("error") == 1
    cancelled = next(r for r in rows if r["outcome"] == "cancelled")
    assert cancelled["status"] == 499
    assert 2 <= cancelled["completion_tokens"] < 300  # charged for what was generated
    assert cancelled["cost_usd"] == pytest.approx(
        cost_of("small", cancelled["prompt_tokens"], cancelled["cached_tokens"],
                cancelled["completion_tokens"]), rel=1e-9)
    escalated = next(r for r in rows if r["escalations"] == 1)
    assert escalated["tier"] == "medium" and escalated["attempts"] == 2


def test_kill_9_keeps_every_completed_requests_row(gateway, brisk_bin, tmp_path, engines):
    gw = gateway()
    done_ids, errors = [], []
    stop = threading.Event()

    def worker(i):
        c = openai.OpenAI(base_url=gw.url + "/v1", api_key="none", max_retries=0, timeout=30)
        while not stop.is_set():
            try:
                raw = c.chat.completions.with_raw_response.create(
                    model="small", messages=[{"role": "user", "content": f"Count {i}"}],
                    max_tokens=3)
                raw.parse()
                done_ids.append(raw.headers["x-request-id"])
            except Exception as e:  # the kill breaks requests in flight
                errors.append(e)
                return

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    deadline = time.time() + 30 * TIME_SCALE
    while len(done_ids) < 10 and time.time() < deadline:
        time.sleep(0.05)
    gw.proc.kill()  # SIGKILL: no drain, no flush
    gw.proc.wait()
    stop.set()
    for t in threads:
        t.join()
    assert len(done_ids) >= 10
    ids = {r["request_id"] for r in sqlite_rows(gw.ledger)}
    missing = [i for i in done_ids if i not in ids]
    assert not missing, f"{len(missing)} completed requests have no ledger row"


def test_postgres_ledger_has_one_row_per_request_of_every_kind(gateway, tmp_path, brisk_bin):
    from gateway_util import Postgres, pg_available
    if not pg_available():
        skip_or_fail("PostgreSQL server binaries missing (scripts/setup.sh installs postgresql)")
    pg = Postgres(tmp_path)
    try:
        gw = gateway("""
routing:
  features: {cheap-first: cascade}
  cascade: {tiers: [small, medium], min_mean_logprob: -0.000001}
""", ledger=pg.url)
        c = client(gw)
        h = {"X-Feature": "pg"}
        for _ in range(2):  # completed
            c.chat.completions.create(model="small", messages=MSG, max_tokens=3, extra_headers=h)
        list(c.chat.completions.create(model="large", messages=MSG, max_tokens=3, stream=True,
                                       extra_headers=h))  # streamed
        with stream_raw(gw, "small", 300) as r:  # cancelled mid-stream
            for n, line in enumerate(r.iter_lines()):
                if n == 3:
                    break
        raw = c.chat.completions.with_raw_response.create(  # escalated
            model="auto", messages=MSG, max_tokens=3, extra_headers={"X-Feature": "cheap-first"})
        assert raw.headers["x-brisk-escalations"] == "1"
        with pytest.raises(openai.BadRequestError):  # the engine's 400, passed through
            c.chat.completions.create(model="small", messages=MSG, max_tokens=3, temperature=-3,
                                      extra_headers=h)
        time.sleep(0.5)
        gw.stop()  # drains and flushes the ledger
        out = subprocess.run([brisk_bin, "cost", "--ledger", pg.url, "--group-by", "tier",
                              "--json"], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        report = json.loads(out.stdout)
        by_tier = {g["key"]: g for g in report["data"]}
        assert report["total"]["requests"] == 6
        # small: 2 completed + the cancelled one + the 400; medium: the escalated
        # request (answered there); large: the stream.
        assert by_tier["small"]["requests"] == 4
        assert by_tier["medium"]["requests"] == 1 and by_tier["medium"]["escalations"] == 1
        assert by_tier["large"]["requests"] == 1
        for tier in ("small", "large"):
            g = by_tier[tier]
            assert g["cost_usd"] == pytest.approx(
                cost_of(tier, g["prompt_tokens"], g["cached_tokens"], g["completion_tokens"]),
                rel=1e-9)
        # The escalated row sums both attempts' tokens, each charged at its own
        # tier's prices: strictly between all of them at small's prices and all
        # of them at medium's.
        m = by_tier["medium"]
        tokens = (m["prompt_tokens"], m["cached_tokens"], m["completion_tokens"])
        assert cost_of("small", *tokens) < m["cost_usd"] < cost_of("medium", *tokens)
        out = subprocess.run([brisk_bin, "cost", "--ledger", pg.url, "--group-by", "feature",
                              "--json"], capture_output=True, text=True, timeout=60)
        by_feature = {g["key"]: g for g in json.loads(out.stdout)["data"]}
        assert by_feature["pg"]["requests"] == 4 and by_feature["cheap-first"]["requests"] == 1
    finally:
        pg.stop()


def test_429_from_every_replica_answers_429_with_the_smallest_retry_after(brisk_bin, tmp_path):
    # Two engines that hold one sequence and queue one more.
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text("scheduler: {max_concurrent_sequences: 1}\n"
                   "limits: {max_queue_interactive: 1}\n")
    engines = [ServerProcess([brisk_bin, "serve", "--config", str(cfg), "--port", "0",
                              "--threads", "1", "--kv-cache", "32MiB"], "tiny engine")
               for _ in range(2)]
    try:
        gcfg = write_gateway_config(tmp_path / "g.yaml",
                                    [("small", [e.url for e in engines], PRICES["small"])])
        gw = start_gateway(brisk_bin, gcfg, tmp_path / "l.db")
        try:
            wait_models_known(gw, 1)
            results = []

            def one():
                try:
                    client(gw, timeout=120).chat.completions.create(
                        model="small", messages=MSG, max_tokens=64,
                        extra_body={"ignore_eos": True})
                    results.append(200)
                except openai.RateLimitError as e:
                    results.append((429, e.response.headers.get("retry-after")))
                except Exception as e:  # noqa: BLE001
                    results.append(repr(e))

            threads = [threading.Thread(target=one) for _ in range(10)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            ok = results.count(200)
            limited = [r for r in results if isinstance(r, tuple)]
            assert ok >= 2 and limited, results  # both replicas served; the rest were told
            assert all(r[1] is not None and int(r[1]) >= 1 for r in limited)
            assert ok + len(limited) == 10, results
            rows = sqlite_rows(tmp_path / "l.db")
            assert len(rows) == 10
            assert sum(r["outcome"] == "rejected" for r in rows) == len(limited)
        finally:
            gw.stop()
    finally:
        for e in engines:
            e.stop(signal.SIGKILL)
