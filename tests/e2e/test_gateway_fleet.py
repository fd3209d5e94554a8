"""Several `brisk gateway` processes on one real PostgreSQL agree: budgets hold across
gateways under concurrent load (spend and in-flight reservations are in the database), and
a gateway started late sees today's spend. Two real `brisk serve` engines behind both; the
real `openai` client."""
import concurrent.futures
import json
import signal

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
