"""The structured access log: one JSON line per finished request, from the real
server, for answered, streamed, rejected and invalid requests."""
import time

import openai
import pytest

from conftest import MODEL_ID

CONFIG = """
keys:
  - {key: sk-acme, tenant: acme, feature: search}
logging:
  access_log: true
  access_log_path: "-"
"""


def wait_for(server, n, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        recs = server.access_log()
        if len(recs) >= n:
            return recs
        time.sleep(0.05)
    return server.access_log()


def test_access_log_lines(make_server):
    s = make_server(config_text=CONFIG)
    c = s.client(api_key="sk-acme")
    r = c.chat.completions.create(model=MODEL_ID, max_tokens=4, temperature=0,
                                  messages=[{"role": "user", "content": "Hi"}])
    stream = c.completions.create(model=MODEL_ID, prompt="Once", max_tokens=3, stream=True,
                                  extra_headers={"X-Priority": "batch"})
    assert "".join(ch.choices[0].text for ch in stream if ch.choices) is not None
    with pytest.raises(openai.AuthenticationError):
        s.client(api_key="wrong").chat.completions.create(
            model=MODEL_ID, messages=[{"role": "user", "content": "x"}])
    with pytest.raises(openai.BadRequestError):
        c.chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": "x"}],
                                  temperature=7)
    recs = wait_for(s, 4)
    assert len(recs) == 4, recs
    keys = ["ts", "request_id", "tenant", "feature", "model", "endpoint", "status", "outcome",
            "stream", "priority", "prompt_tokens", "cached_tokens", "output_tokens", "queue_ms",
            "ttft_ms", "total_ms", "finish_reason", "remote_addr", "trace_id", "stages"]
    for rec in recs:
        assert list(rec) == keys, rec
    ok = recs[0]
    assert ok["request_id"] == r.id
    assert (ok["tenant"], ok["feature"], ok["endpoint"]) == ("acme", "search", "chat.completions")
    assert (ok["status"], ok["outcome"], ok["stream"]) == (200, "ok", False)
    assert ok["prompt_tokens"] == r.usage.prompt_tokens
    assert ok["output_tokens"] == r.usage.completion_tokens
    assert 0 <= ok["queue_ms"] <= ok["ttft_ms"] <= ok["total_ms"]
    assert ok["remote_addr"].startswith("127.0.0.1:")
    st = recs[1]
    assert (st["endpoint"], st["stream"], st["priority"], st["output_tokens"]) == \
        ("completions", True, "batch", 3)
    assert (recs[2]["status"], recs[2]["outcome"]) == (401, "rejected")
    assert (recs[3]["status"], recs[3]["outcome"]) == (400, "invalid")


def test_responses_api_is_logged_as_responses(make_server):
    s = make_server(config_text=CONFIG)
    c = s.client(api_key="sk-acme")
    r = c.responses.create(model=MODEL_ID, input="Hi", max_output_tokens=4)
    with pytest.raises(openai.BadRequestError):
        c.responses.create(model=MODEL_ID, input="Hi", max_output_tokens=0)
    recs = wait_for(s, 2)
    assert [(x["endpoint"], x["status"]) for x in recs] == [("responses", 200),
                                                             ("responses", 400)]
    assert recs[0]["request_id"] == r.id and recs[0]["output_tokens"] == r.usage.output_tokens
