"""Several `brisk gateway` processes on one real PostgreSQL agree: budgets hold across
gateways under concurrent load (spend and in-flight reservations are in the database), and
a gateway started late sees today's spend. Two real `brisk serve` engines behind both; the
real `openai` client."""
import concurrent.futures
import json
import signal
import time

import openai
import pytest

from conftest import skip_or_fail
from gateway_util import (SMOL, Postgres, pg_available, pg_rows, start_engine, start_gateway,
                          write_gateway_config)

# Output only priced, and every request caps its output: a request's estimate is then at
# least its cost, so the budget's bound says the spend never passes the limit.
PRICES = (0.0, 0.0, 100.0)
MAX_TOKENS = 8
ESTIMATE = MAX_TOKENS * 100.0 / 1e6  # $0.0008
LIMIT = 5 * ESTIMATE
CONFIG = f"""
keys:
  - {{key: sk-ci, tenant: acme, name: ci}}
budgets:
  limits:
    - {{key: ci, daily_usd: {LIMIT}}}
  on_store_outage: refuse
"""
MSG = [{"role": "user", "content": "Write a long story about the sea."}]


@pytest.fixture(scope="module")
def fleet(brisk_bin, tmp_path_factory):
    if not pg_available():
        skip_or_fail("PostgreSQL server binaries (Debian package postgresql)")
    tmp = tmp_path_factory.mktemp("fleet")
    pg = Postgres(tmp)
    engines = [start_engine(brisk_bin, SMOL, "smol"), start_engine(brisk_bin, SMOL, "smol")]
    cfg = write_gateway_config(tmp / "gateway.yaml",
                               [("small", [e.url for e in engines], PRICES)], CONFIG)
    gateways = [start_gateway(brisk_bin, cfg, pg.url) for _ in range(2)]
    try:
        yield {"engines": engines, "gateways": gateways, "pg": pg, "cfg": cfg, "bin": brisk_bin}
    finally:
        for g in gateways:
            g.stop()
        for e in engines:
            e.stop(signal.SIGKILL)
        pg.stop()


def ask(url):
    c = openai.OpenAI(base_url=url + "/v1", api_key="sk-ci", max_retries=0)
    try:
        c.chat.completions.create(model="small", messages=MSG, max_tokens=MAX_TOKENS,
                                  temperature=0)
        return "completed"
    except openai.RateLimitError as e:
        assert e.code == "budget_exceeded", e
        return "budget"


def budgets(g):
    status, body = g.get("/v1/budgets", headers={"Authorization": "Bearer sk-ci"})
    assert status == 200, body
    return json.loads(body)["data"][0]["daily"]


def test_concurrent_requests_through_two_gateways_never_pass_the_limit(fleet):
    ga, gb = fleet["gateways"]
    urls = [ga.url, gb.url] * 12
    with concurrent.futures.ThreadPoolExecutor(len(urls)) as pool:
        outcomes = list(pool.map(ask, urls))
    completed = outcomes.count("completed")
    # Each admission holds $0.0008 until it settles at its (smaller or equal) cost, so at
    # least five fit; the rest are refused. (Budgets kept in each gateway's memory, as
    # before, let each gateway admit until its own count reached the limit.)
    assert completed >= 5 and outcomes.count("budget") >= 1, outcomes
    spent = sum(float(r[0]) for r in pg_rows(
        fleet["pg"].url, "SELECT cost_usd FROM brisk_ledger WHERE api_key_name = 'ci' AND "
                         "status = 200"))
    assert 0 < spent <= LIMIT + 1e-12, (spent, LIMIT)
    # Both gateways report the same spend, with nothing left reserved.
    a, b = budgets(ga), budgets(gb)
    assert a["spent_usd"] == pytest.approx(spent, rel=1e-9) == b["spent_usd"]
    assert a["reserved_usd"] == 0 == b["reserved_usd"]


def test_a_gateway_started_late_sees_todays_spend(fleet):
    late = start_gateway(fleet["bin"], fleet["cfg"], fleet["pg"].url)
    try:
        now = budgets(fleet["gateways"][0])
        assert budgets(late)["spent_usd"] == pytest.approx(now["spent_usd"], rel=1e-9)
        # Requests that stopped short of their cap left some headroom: whether one more
        # fits is decided by the shared spend, not by this gateway's (empty) memory.
        fits = now["remaining_usd"] >= ESTIMATE
        assert ask(late.url) == ("completed" if fits else "budget")
    finally:
        late.stop()


def test_postgres_stopped_immediate_loses_no_ledger_row(brisk_bin, fleet, tmp_path):
    """PostgreSQL is stopped as a crash stops it, then started again: the gateway keeps
    answering (budgets: on_store_outage allow), rows of the requests answered meanwhile wait
    in its spool and reach the database once, and /ready shows the state."""
    pg = Postgres(tmp_path)
    cfg = write_gateway_config(tmp_path / "gateway.yaml",
                               [("small", [fleet["engines"][0].url], (0.1, 0.02, 0.4))],
                               "keys:\n  - {key: sk-ci, tenant: acme, name: ci}\n"
                               "budgets:\n  - {key: ci, daily_usd: 100}\n"
                               "rollout: {tick_s: 0.1}\n"
                               f"ledger: {{spool_path: {tmp_path / 'spool.jsonl'}}}\n")
    g = start_gateway(brisk_bin, cfg, pg.url)
    c = openai.OpenAI(base_url=g.url + "/v1", api_key="sk-ci", max_retries=0)

    def one(i):
        raw = c.chat.completions.with_raw_response.create(
            model="small", messages=[{"role": "user", "content": f"Hi {i}"}], max_tokens=2)
        raw.parse()
        return raw.headers["x-request-id"]

    try:
        ids = [one(i) for i in range(3)]
        pg.pause("immediate")
        during = [one(i) for i in range(3, 9)]  # every one answered
        status, body = g.get("/ready")
        assert status == 200 and json.loads(body)["database"] == "unreachable", body
        spool = (tmp_path / "spool.jsonl").read_text().splitlines()
        assert len(spool) == len(during)
        pg.resume()
        deadline = time.time() + 20
        rows = []
        while time.time() < deadline:
            try:
                rows = [r[0] for r in pg_rows(pg.url, "SELECT request_id FROM brisk_ledger")]
            except RuntimeError:
                rows = []
            if len(rows) >= len(ids) + len(during):
                break
            time.sleep(0.2)
        assert sorted(rows) == sorted(ids + during)  # each row once, none missing
        assert (tmp_path / "spool.jsonl").read_text() == ""
        deadline = time.time() + 5
        while json.loads(g.get("/ready")[1])["database"] != "ok":
            assert time.time() < deadline
            time.sleep(0.1)
    finally:
        g.stop()
        pg.stop()
