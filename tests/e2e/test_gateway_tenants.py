"""`brisk gateway` with several tenants' keys: cost data (/v1/cost, /v1/budgets,
/dashboard/data) is scoped to the caller's tenant, admin keys see every tenant,
and every model id /v1/models advertises routes. Two real `brisk serve` engines
of the default model, the real `openai` client."""
import json
import signal

import openai
import pytest

from gateway_util import SMOL, start_engine, start_gateway, wait_models_known, write_gateway_config

KEYS = """
keys:
  - {key: sk-acme-1, tenant: acme, name: acme-ci}
  - {key: sk-acme-2, tenant: acme, name: acme-web, feature: search}
  - {key: sk-globex, tenant: globex, name: globex-ci}
  - {key: sk-ops, tenant: ops, role: admin}
budgets:
  - {key: acme-ci, daily_usd: 100}
  - {key: globex-ci, daily_usd: 100}
  - {feature: search, daily_usd: 100}
rollout: {admin_key: sk-rollout-admin}
"""
PRICES = (0.1, 0.02, 0.4)
MSG = [{"role": "user", "content": "Name a color."}]


def auth(key):
    return {"Authorization": f"Bearer {key}"} if key else {}


@pytest.fixture(scope="module")
def gw(brisk_bin, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tenants")
    small = start_engine(brisk_bin, SMOL, "smol")
    large = start_engine(brisk_bin, SMOL, "smol-large")
    cfg = write_gateway_config(tmp / "gateway.yaml", [("small", [small.url], PRICES),
                                                      ("large", [large.url], PRICES)], KEYS)
    g = start_gateway(brisk_bin, cfg, tmp / "ledger.db")
    try:
        wait_models_known(g, 2, headers=auth("sk-ops"))
        # acme: three requests over its two keys; globex: one.
        for key, n in (("sk-acme-1", 2), ("sk-acme-2", 1), ("sk-globex", 1)):
            c = openai.OpenAI(base_url=g.url + "/v1", api_key=key, max_retries=0)
            for _ in range(n):
                c.chat.completions.create(model="small", messages=MSG, max_tokens=2)
        yield g
    finally:
        g.stop()
        for p in (small, large):
            p.stop(signal.SIGKILL)


def get_json(g, path, key):
    status, body = g.get(path, headers=auth(key))
    return status, json.loads(body)


def test_cost_shows_a_tenant_only_its_own_rows(gw):
    for key, tenant, requests in (("sk-acme-1", "acme", 3), ("sk-acme-2", "acme", 3),
                                  ("sk-globex", "globex", 1)):
        status, report = get_json(gw, "/v1/cost?group_by=tenant", key)
        assert status == 200, report
        assert report["tenant"] == tenant
        assert [(r["key"], r["requests"]) for r in report["data"]] == [(tenant, requests)]
        assert report["total"]["requests"] == requests
        # Grouped another way, still only its own rows.
        status, by_feature = get_json(gw, "/v1/cost?group_by=feature", key)
        assert status == 200 and by_feature["total"]["requests"] == requests
        # Naming its own tenant is fine; another's is a 403.
        assert get_json(gw, f"/v1/cost?tenant={tenant}", key)[0] == 200
    status, err = get_json(gw, "/v1/cost?tenant=globex", "sk-acme-1")
    assert status == 403 and err["error"]["code"] == "permission_denied"


def test_admin_keys_see_every_tenant(gw):
    for key in ("sk-ops", "sk-rollout-admin"):
        status, report = get_json(gw, "/v1/cost?group_by=tenant", key)
        assert status == 200, report
        assert report["tenant"] is None
        assert {r["key"]: r["requests"] for r in report["data"]} == {"acme": 3, "globex": 1}
        status, one = get_json(gw, "/v1/cost?group_by=tenant&tenant=globex", key)
        assert status == 200 and [r["key"] for r in one["data"]] == ["globex"]
        status, budgets = get_json(gw, "/v1/budgets", key)
        assert status == 200
        assert sorted((b["kind"], b["name"]) for b in budgets["data"]) == [
            ("feature", "search"), ("key", "acme-ci"), ("key", "globex-ci")]


def test_budgets_show_a_tenant_only_its_own_keys(gw):
    for key, names in (("sk-acme-1", ["acme-ci"]), ("sk-acme-2", ["acme-ci"]),
                       ("sk-globex", ["globex-ci"])):
        status, budgets = get_json(gw, "/v1/budgets", key)
        assert status == 200
        # No feature budget: its spend adds up every tenant's.
        assert [(b["kind"], b["name"]) for b in budgets["data"]] == [("key", n) for n in names]
        assert budgets["data"][0]["daily"]["spent_usd"] > 0


def test_cost_endpoints_refuse_callers_without_a_key(gw):
    for path in ("/v1/cost", "/v1/budgets"):
        for key in (None, "sk-wrong"):
            status, err = get_json(gw, path, key)
            assert status == 401 and err["error"]["code"] == "invalid_api_key", (path, key)
    # The openai client's own error for it.
    c = openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-wrong", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        c.get("/cost", cast_to=object)


def test_dashboard_data_cost_is_the_keys_tenant(gw):
    # A browser's page load has no key: latency and replicas, no cost.
    status, data = get_json(gw, "/dashboard/data", None)
    assert status == 200
    assert data["cost_scope"] is None and data["cost_by_feature_day"] == []
    assert set(data["tiers"]) == {"small", "large"}
    assert get_json(gw, "/dashboard/data", "sk-wrong")[0] == 401

    def requests_of(key):
        status, data = get_json(gw, "/dashboard/data", key)
        assert status == 200
        return data["cost_scope"], sum(g["requests"] for g in data["cost_by_feature_day"])

    assert requests_of("sk-acme-2") == ("tenant:acme", 3)
    assert requests_of("sk-globex") == ("tenant:globex", 1)
    assert requests_of("sk-ops") == ("all", 4)
    assert requests_of("sk-rollout-admin") == ("all", 4)


def test_every_advertised_model_id_routes(gw):
    c = openai.OpenAI(base_url=gw.url + "/v1", api_key="sk-ops", max_retries=0)
    ids = [m.id for m in c.models.list().data]
    assert ids == ["auto", "small", "large", "smol", "smol-large"]
    want_tier = {"small": "small", "smol": "small", "large": "large", "smol-large": "large"}
    for model_id in ids:
        for stream in (False, True):
            raw = c.chat.completions.with_raw_response.create(
                model=model_id, messages=MSG, max_tokens=2, stream=stream)
            assert raw.http_response.status_code == 200, model_id
            parsed = raw.parse()
            if stream:
                assert any(ch.choices for ch in parsed), model_id
            else:
                assert parsed.choices[0].finish_reason in ("length", "stop"), model_id
            if model_id in want_tier:
                assert raw.headers["x-brisk-tier"] == want_tier[model_id], model_id
    raw = c.completions.with_raw_response.create(model="smol-large", prompt="One,", max_tokens=2)
    assert raw.headers["x-brisk-tier"] == "large"
    with pytest.raises(openai.NotFoundError) as e:
        c.chat.completions.create(model="gpt-4o", messages=MSG, max_tokens=2)
    # The message lists every id the gateway answers to.
    for model_id in ids:
        assert model_id in str(e.value)
