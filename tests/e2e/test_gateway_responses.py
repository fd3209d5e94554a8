"""The whole OpenAI API through `brisk gateway`: the Responses API (create, stream,
retrieve, delete, input_items, previous_response_id) and /tokenize, /detokenize.

Two gateways share one real PostgreSQL (scripts/pg_test_server.sh) and each sends to
its own `brisk serve` engine, so a follow-up sent through the other gateway lands on
the other engine on purpose: the conversation must come from the database, not from
either process's memory. The real `openai` client throughout."""
import json
import signal
import urllib.request

import openai
import pytest

from conftest import skip_or_fail
from gateway_util import (SMOL, Postgres, pg_available, pg_rows, start_engine, start_gateway,
                          write_gateway_config)

KEYS = """
keys:
  - {key: sk-acme, tenant: acme, name: acme-ci}
  - {key: sk-globex, tenant: globex, name: globex-ci}
responses: {max_entries: 64}
"""
PRICES = (0.1, 0.02, 0.4)
GREEDY = {"temperature": 0, "max_output_tokens": 12}


@pytest.fixture(scope="module")
def fleet(brisk_bin, tmp_path_factory):
    if not pg_available():
        skip_or_fail("PostgreSQL server binaries (Debian package postgresql)")
    tmp = tmp_path_factory.mktemp("gw-responses")
    pg = Postgres(tmp)
    engines = [start_engine(brisk_bin, SMOL, "smol"), start_engine(brisk_bin, SMOL, "smol")]
    gateways = []
    try:
        for i, e in enumerate(engines):
            cfg = write_gateway_config(tmp / f"gateway{i}.yaml", [("small", [e.url], PRICES)],
                                       KEYS)
            gateways.append(start_gateway(brisk_bin, cfg, pg.url))
        yield {"engines": engines, "gateways": gateways, "pg": pg}
    finally:
        for g in gateways:
            g.stop()
        for e in engines:
            e.stop(signal.SIGKILL)
        pg.stop()


def client(url, key="sk-acme"):
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0)


def post(url, path, body, key="sk-acme"):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json",
                                          "Authorization": f"Bearer {key}"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), dict(e.headers)


def test_a_follow_up_through_the_other_gateway_continues_the_conversation(fleet):
    (ga, gb), (ea, eb) = fleet["gateways"], fleet["engines"]
    raw = client(ga.url).responses.with_raw_response.create(
        model="small", input="Name a fruit.", instructions="Answer in one word.", **GREEDY)
    first = raw.parse()
    assert raw.headers["x-brisk-upstream"] == ea.url.split("//")[1]
    assert first.store is True and first.usage.cost_usd > 0
    raw2 = client(gb.url).responses.with_raw_response.create(
        model="small", input="And a vegetable?", previous_response_id=first.id, **GREEDY)
    second = raw2.parse()
    assert raw2.headers["x-brisk-upstream"] == eb.url.split("//")[1]
    assert second.previous_response_id == first.id
    # The engine that answered never saw the first turn: what it was sent is the whole
    # conversation, so asking it directly with that conversation gives the same tokens.
    direct = client(eb.url).responses.create(
        model="smol", store=False, **GREEDY,
        input=[{"role": "user", "content": "Name a fruit."},
               {"role": "assistant", "content": first.output_text},
               {"role": "user", "content": "And a vegetable?"}])
    assert second.output_text == direct.output_text
    assert second.usage.input_tokens == direct.usage.input_tokens
    # Instructions are not carried over (as OpenAI does): the direct call had none either.
    assert second.instructions is None


def test_stored_objects_are_the_same_through_every_gateway(fleet):
    ga, gb = fleet["gateways"]
    r = client(ga.url).responses.create(model="small", input="Say hi.", **GREEDY)
    for g in (ga, gb):
        got = client(g.url).responses.retrieve(r.id)
        assert got.id == r.id and got.output_text == r.output_text
        items = client(g.url).responses.input_items.list(r.id)
        assert [i.type for i in items.data] == ["message"]
        assert items.data[0].content[0].text == "Say hi."
    client(gb.url).responses.delete(r.id)
    for g in (ga, gb):
        with pytest.raises(openai.NotFoundError):
            client(g.url).responses.retrieve(r.id)
        with pytest.raises(openai.NotFoundError):
            client(g.url).responses.create(model="small", input="More.",
                                           previous_response_id=r.id, **GREEDY)


def test_a_streamed_response_is_stored_before_it_completes(fleet):
    ga, gb = fleet["gateways"]
    events = list(client(ga.url).responses.create(model="small", input="Count to three.",
                                                  stream=True, **GREEDY))
    types = [e.type for e in events]
    # 12 tokens may cut it short: response.incomplete is its final event then.
    assert types[0] == "response.created"
    assert types[-1] in ("response.completed", "response.incomplete")
    done = events[-1].response
    assert done.usage.output_tokens > 0 and done.usage.cost_usd > 0
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == done.output_text
    # The moment the stream ended, the other gateway finds it, and a streamed follow-up
    # names it.
    assert client(gb.url).responses.retrieve(done.id).output_text == done.output_text
    follow = list(client(gb.url).responses.create(model="small", input="Go on.", stream=True,
                                                  previous_response_id=done.id, **GREEDY))
    assert follow[-1].response.previous_response_id == done.id
    assert follow[-1].response.usage.input_tokens > done.usage.input_tokens


def test_another_tenants_response_is_not_found(fleet):
    ga, gb = fleet["gateways"]
    r = client(ga.url, "sk-acme").responses.create(model="small", input="Secret.", **GREEDY)
    other = client(gb.url, "sk-globex")
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(r.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.input_items.list(r.id)
    with pytest.raises(openai.NotFoundError):
        other.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError) as e:
        other.responses.create(model="small", input="Tell me.", previous_response_id=r.id,
                               **GREEDY)
    assert e.value.body["param"] == "previous_response_id"
    assert client(ga.url, "sk-acme").responses.retrieve(r.id).id == r.id


def test_store_false_keeps_nothing(fleet):
    ga, gb = fleet["gateways"]
    r = client(ga.url).responses.create(model="small", input="Hi.", store=False, **GREEDY)
    assert r.store is False
    with pytest.raises(openai.NotFoundError):
        client(gb.url).responses.retrieve(r.id)


def test_bad_responses_bodies_are_400s(fleet):
    g = fleet["gateways"][0]
    for body, param in (({"model": "small"}, "input"),
                        ({"model": "small", "input": 3}, "input"),
                        ({"model": "small", "input": [1]}, "input[0]"),
                        ({"model": "small", "input": "x", "previous_response_id": 5},
                         "previous_response_id"),
                        ({"model": "small", "input": "x", "store": "yes"}, "store")):
        status, err, _ = post(g.url, "/v1/responses", body)
        assert status == 400 and err["error"]["param"] == param, (body, err)


def test_tokenize_and_detokenize_through_the_gateway(fleet):
    g, e = fleet["gateways"][0], fleet["engines"][0]
    status, via, headers = post(g.url, "/tokenize", {"model": "small", "prompt": "hello world"})
    assert status == 200 and "server-timing" in {k.lower() for k in headers}
    _, direct, _ = post(e.url, "/tokenize", {"prompt": "hello world"})
    assert via["tokens"] == direct["tokens"] and via["count"] == direct["count"]
    msgs = [{"role": "user", "content": "Hi"}]
    _, via_chat, _ = post(g.url, "/tokenize", {"model": "small", "messages": msgs})
    _, direct_chat, _ = post(e.url, "/tokenize", {"messages": msgs})
    assert via_chat["tokens"] == direct_chat["tokens"]
    status, text, _ = post(g.url, "/detokenize", {"tokens": via["tokens"]})  # no model: "auto"
    assert status == 200 and text["prompt"] == "hello world"
    status, err, _ = post(g.url, "/detokenize", {"model": "small"})
    assert status == 400 and err["error"]["param"] == "tokens"


def test_every_endpoint_has_its_ledger_rows(fleet):
    rows = pg_rows(fleet["pg"].url, "SELECT endpoint, status, tenant, cost_usd, completion_tokens "
                                    "FROM brisk_ledger")
    by_endpoint = {}
    for endpoint, status, tenant, cost, completion in rows:
        by_endpoint.setdefault(endpoint, []).append((int(status), tenant, float(cost),
                                                     int(completion)))
    assert {"responses", "tokenize", "detokenize"} <= set(by_endpoint)
    done = [r for r in by_endpoint["responses"] if r[0] == 200]
    assert done and all(r[1] in ("acme", "globex") and r[2] > 0 and r[3] > 0 for r in done)
    assert all(r[2] == 0 for r in by_endpoint["tokenize"] + by_endpoint["detokenize"])
