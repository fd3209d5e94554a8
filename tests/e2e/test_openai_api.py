"""The OpenAI-compatible API through the real `openai` Python client."""
import json
import urllib.request

import openai
import pytest

from conftest import MODEL_ID


def chat(client, content, **kw):
    return client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": content}], **kw)


def post_raw(server, path, body):
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def test_models_health_ready(brisk_server):
    models = brisk_server.client().models.list()
    assert [m.id for m in models.data] == [MODEL_ID]
    assert brisk_server.get("/health")[0] == 200
    assert brisk_server.get("/ready")[0] == 200


def test_chat_completion(brisk_server):
    r = chat(brisk_server.client(), "What is the capital of France?", max_tokens=16,
             temperature=0)
    assert r.object == "chat.completion"
    assert r.model == MODEL_ID
    assert r.choices[0].message.role == "assistant"
    assert r.choices[0].message.content.strip()
    assert r.choices[0].finish_reason in ("stop", "length")
    assert r.usage.prompt_tokens > 5
    assert 1 <= r.usage.completion_tokens <= 16
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
    assert r.usage.prompt_tokens_details.cached_tokens >= 0


def test_chat_stream_matches_non_stream(brisk_server):
    c = brisk_server.client()
    full = chat(c, "Name three colors.", max_tokens=24, temperature=0, seed=1)
    stream = chat(c, "Name three colors.", max_tokens=24, temperature=0, seed=1, stream=True,
                  stream_options={"include_usage": True})
    text, roles, finish, usage = "", [], None, None
    for chunk in stream:
        assert chunk.object == "chat.completion.chunk"
        if chunk.usage:
            usage = chunk.usage
            assert chunk.choices == []
            continue
        d = chunk.choices[0].delta
        if d.role:
            roles.append(d.role)
        text += d.content or ""
        finish = chunk.choices[0].finish_reason or finish
    assert roles == ["assistant"]
    assert text == full.choices[0].message.content
    assert finish == full.choices[0].finish_reason
    assert usage.completion_tokens == full.usage.completion_tokens
    assert usage.prompt_tokens == full.usage.prompt_tokens


def test_completions_stream_and_not(brisk_server):
    c = brisk_server.client()
    r = c.completions.create(model=MODEL_ID, prompt="The capital of France is", max_tokens=4,
                             temperature=0)
    assert r.object == "text_completion"
    assert "Paris" in r.choices[0].text
    assert r.usage.completion_tokens == 4
    assert r.choices[0].finish_reason == "length"
    pieces = [ch.choices[0].text for ch in c.completions.create(
        model=MODEL_ID, prompt="The capital of France is", max_tokens=4, temperature=0,
        stream=True) if ch.choices]
    assert "".join(pieces) == r.choices[0].text


def test_n_choices(brisk_server):
    c = brisk_server.client()
    r = chat(c, "Write one word.", max_tokens=8, temperature=0, n=3)
    assert sorted(ch.index for ch in r.choices) == [0, 1, 2]
    assert len({ch.message.content for ch in r.choices}) == 1  # greedy: identical
    assert r.usage.completion_tokens >= 3  # summed over the choices
    r = chat(c, "Write a word.", max_tokens=12, temperature=1.5, seed=3, n=4)
    assert len(r.choices) == 4
    # streamed n: every index gets a role chunk and a finish reason
    seen, finished = set(), set()
    for chunk in chat(c, "Hi", max_tokens=6, n=2, stream=True):
        for ch in chunk.choices:
            seen.add(ch.index)
            if ch.finish_reason:
                finished.add(ch.index)
    assert seen == finished == {0, 1}
    # completions with a list of prompts: n choices per prompt
    r = c.completions.create(model=MODEL_ID, prompt=["One", "Two"], max_tokens=3, n=2)
    assert sorted(ch.index for ch in r.choices) == [0, 1, 2, 3]


def test_stop_strings(brisk_server):
    c = brisk_server.client()
    base = c.completions.create(model=MODEL_ID, prompt="1, 2, 3, 4,", max_tokens=12,
                                temperature=0).choices[0].text
    assert " 6" in base, base
    r = c.completions.create(model=MODEL_ID, prompt="1, 2, 3, 4,", max_tokens=12,
                             temperature=0, stop=[" 6"])
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == base[:base.index(" 6")]
    r = c.completions.create(model=MODEL_ID, prompt="1, 2, 3, 4,", max_tokens=12,
                             temperature=0, stop=" 6", stream=True)
    assert "".join(ch.choices[0].text for ch in r if ch.choices) == base[:base.index(" 6")]


def test_seed_reproducible(brisk_server):
    c = brisk_server.client()
    a = chat(c, "Tell me a story.", max_tokens=16, temperature=1.0, seed=42)
    b = chat(c, "Tell me a story.", max_tokens=16, temperature=1.0, seed=42)
    assert a.choices[0].message.content == b.choices[0].message.content


def test_cached_tokens_reported(brisk_server):
    c = brisk_server.client()
    system = "You are a careful assistant. " * 20
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": "Say hi."}]
    first = c.chat.completions.create(model=MODEL_ID, messages=msgs, max_tokens=2)
    second = c.chat.completions.create(model=MODEL_ID, messages=msgs, max_tokens=2)
    assert second.usage.prompt_tokens == first.usage.prompt_tokens
    assert second.usage.prompt_tokens_details.cached_tokens >= 64
    assert brisk_server.metric("brisk:prompt_tokens_cached_total") >= 64


def test_user_and_priority_fields(brisk_server):
    c = brisk_server.client()
    r = chat(c, "Hi", max_tokens=2, user="u-1", extra_body={"priority": "batch"})
    assert r.choices[0].message.content is not None
    r = chat(c, "Hi", max_tokens=2, extra_headers={"X-Priority": "interactive"})
    assert r.usage.completion_tokens >= 1


def test_model_may_be_left_out_and_any_name_served_when_configured(brisk_server, make_server):
    # As vLLM and llama-server: no "model" means the served one.
    status, body = post_raw(brisk_server, "/v1/chat/completions",
                            {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})
    assert status == 200 and body["model"] == MODEL_ID
    status, body = post_raw(brisk_server, "/v1/responses", {"input": "Hi",
                                                             "max_output_tokens": 2})
    assert status == 200 and body["model"] == MODEL_ID
    # server.model_names: any serves every name, as llama-server does.
    s = make_server(config_text="server: {model_names: any}\n")
    r = s.client().completions.create(model="gpt-3.5-turbo-instruct", prompt="Hi", max_tokens=2)
    assert r.model == MODEL_ID


def test_errors_have_openai_shape(brisk_server):
    c = brisk_server.client()
    with pytest.raises(openai.NotFoundError) as e:
        c.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}])
    assert e.value.body["code"] == "model_not_found"
    with pytest.raises(openai.BadRequestError) as e:
        chat(c, "x", temperature=5)
    assert "temperature" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        chat(c, "word " * 9000, max_tokens=10)
    assert e.value.body["code"] == "context_length_exceeded"
    with pytest.raises(openai.BadRequestError):
        chat(c, "x", max_tokens=100000)
    with pytest.raises(openai.BadRequestError):
        chat(c, "x", extra_body={"no_such_field": 1})


def test_metrics_exposition(brisk_server):
    chat(brisk_server.client(), "Hello", max_tokens=3)
    status, text = brisk_server.get("/metrics")
    assert status == 200
    for name in ["brisk:time_to_first_token_seconds", "brisk:time_per_output_token_seconds",
                 "brisk:inter_token_latency_seconds", "brisk:e2e_request_latency_seconds",
                 "brisk:request_queue_time_seconds", "brisk:request_prefill_time_seconds",
                 "brisk:request_decode_time_seconds"]:
        assert f"# TYPE {name} histogram" in text, name
    assert brisk_server.metric("brisk:time_to_first_token_seconds_count") >= 1
    assert brisk_server.metric("brisk:requests_total", {"outcome": "ok"}) >= 1
    assert brisk_server.metric("brisk:num_requests_running", {"priority": "interactive"}) == 0
    assert brisk_server.metric("brisk:kv_cache_usage_perc") == 0
    assert brisk_server.metric("brisk:generation_tokens_total") >= 3
