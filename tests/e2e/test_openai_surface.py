"""The OpenAI surface beyond the basics, through the real `openai` client against
`brisk serve`: logit_bias, the exact seed range, OpenAI's streaming shape,
unknown fields (rejected, or ignored and reported), vLLM's extensions
(min_tokens, stop_token_ids, include_stop_str_in_output, skip_special_tokens,
continuous usage stats) and vLLM's /tokenize and /detokenize."""
import json
import urllib.request

import openai
import pytest

from conftest import MODEL_ID

VOCAB = 49152  # SmolLM2-135M's vocabulary


def post(server, path, body, key=None, raw=None):
    """POST JSON; returns (status, parsed body, headers)."""
    data = raw if raw is not None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method="POST",
                                 headers={"Content-Type": "application/json"})
    if key:
        req.add_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read()), r.headers
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), e.headers


def sse_events(server, path, body):
    """The JSON payloads of a raw SSE answer, as the server wrote them."""
    req = urllib.request.Request(server.url + path, data=json.dumps(body).encode(),
                                 method="POST", headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        text = r.read().decode()
    events = [line[len("data: "):] for line in text.split("\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


def token_id(server, text):
    status, body, _ = post(server, "/tokenize", {"prompt": text, "add_special_tokens": False})
    assert status == 200, body
    assert len(body["tokens"]) == 1, (text, body)
    return body["tokens"][0]


def chat(client, content, **kw):
    return client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": content}], **kw)


def complete(client, prompt, **kw):
    return client.completions.create(model=MODEL_ID, prompt=prompt, **kw)


# ---- logit_bias -----------------------------------------------------------------


def test_logit_bias_steers_both_endpoints(brisk_server):
    c = brisk_server.client()
    banana = token_id(brisk_server, " banana")
    r = complete(c, "The capital of France is", max_tokens=3, temperature=0,
                 logit_bias={str(banana): 100})
    assert r.choices[0].text == " banana banana banana"
    base = complete(c, "The capital of France is", max_tokens=4, temperature=0).choices[0].text
    assert "Paris" in base
    paris = token_id(brisk_server, " Paris")
    r = complete(c, "The capital of France is", max_tokens=4, temperature=0,
                 logit_bias={str(paris): -100})
    assert "Paris" not in r.choices[0].text
    r = chat(c, "Name a fruit.", max_tokens=2, temperature=0, logit_bias={str(banana): 100})
    assert r.choices[0].message.content == " banana banana"


def test_logit_bias_ids_outside_the_vocabulary_are_400(brisk_server):
    c = brisk_server.client()
    for bad in (VOCAB, VOCAB + 1000):
        with pytest.raises(openai.BadRequestError) as e:
            chat(c, "x", max_tokens=1, logit_bias={str(bad): 1.0})
        msg = e.value.body["message"]
        assert str(bad) in msg and str(VOCAB) in msg, msg
        assert e.value.body["param"] == "logit_bias"
    with pytest.raises(openai.BadRequestError) as e:
        complete(c, "x", max_tokens=1, logit_bias={"1": 101})
    assert "[-100, 100]" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError):
        complete(c, "x", max_tokens=1, logit_bias={"-1": 1})
    r = chat(c, "x", max_tokens=1, logit_bias={str(VOCAB - 1): -100})
    assert r.usage.completion_tokens == 1


# ---- seed -----------------------------------------------------------------------


def test_seed_range_is_exact_at_both_ends(brisk_server):
    c = brisk_server.client()
    for ok in (-(2**63), 2**63 - 1, 0, -1):
        assert chat(c, "Hi", max_tokens=1, seed=ok).usage.completion_tokens == 1
    for bad in (-(2**63) - 1, 2**63, 2**64):
        with pytest.raises(openai.BadRequestError) as e:
            chat(c, "Hi", max_tokens=1, seed=bad)
        assert e.value.body["param"] == "seed"


# ---- streaming shape ------------------------------------------------------------


def test_chat_stream_first_and_last_chunks(brisk_server):
    events = sse_events(brisk_server, "/v1/chat/completions", {
        "model": MODEL_ID, "messages": [{"role": "user", "content": "Say hello."}],
        "max_tokens": 5, "temperature": 0, "stream": True})
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert events[0]["choices"][0]["finish_reason"] is None
    assert all("role" not in e["choices"][0]["delta"] for e in events[1:])
    assert events[-1]["choices"][0]["delta"] == {}
    assert events[-1]["choices"][0]["finish_reason"] in ("stop", "length")
    assert all(e["choices"][0]["finish_reason"] is None for e in events[:-1])
    # The same through the client.
    chunks = list(chat(brisk_server.client(), "Say hello.", max_tokens=5, temperature=0,
                       stream=True))
    first, last = chunks[0].choices[0], chunks[-1].choices[0]
    assert first.delta.role == "assistant" and first.delta.content == ""
    assert last.delta.content is None and last.delta.role is None
    assert last.finish_reason in ("stop", "length")


def test_completions_stream_ends_with_finish_reason(brisk_server):
    events = sse_events(brisk_server, "/v1/completions", {
        "model": MODEL_ID, "prompt": "One, two,", "max_tokens": 4, "temperature": 0,
        "stream": True})
    assert events[-1]["choices"][0]["finish_reason"] == "length"
    assert all(e["choices"][0]["finish_reason"] is None for e in events[:-1])
    text = "".join(e["choices"][0]["text"] for e in events)
    full = complete(brisk_server.client(), "One, two,", max_tokens=4, temperature=0)
    assert text == full.choices[0].text


def test_stream_options_need_stream(brisk_server):
    c = brisk_server.client()
    for kw in ({}, {"stream": False}):
        with pytest.raises(openai.BadRequestError) as e:
            chat(c, "Hi", max_tokens=1, stream_options={"include_usage": True}, **kw)
        assert e.value.body["message"] == (
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
        with pytest.raises(openai.BadRequestError):
            complete(c, "Hi", max_tokens=1, stream_options={"include_usage": True}, **kw)


# ---- unknown fields -------------------------------------------------------------


def test_unknown_fields_rejected_by_default(brisk_server):
    c = brisk_server.client()
    with pytest.raises(openai.BadRequestError) as e:
        chat(c, "Hi", max_tokens=1, extra_body={"top_a": 0.5})
    assert e.value.body["code"] == "unknown_parameter"
    assert e.value.body["param"] == "top_a"


def test_unknown_fields_ignored_listed_and_counted(make_server):
    server = make_server("server: {unknown_request_fields: ignore}\n")
    c = server.client()
    raw = c.chat.completions.with_raw_response.create(
        model=MODEL_ID, max_tokens=2,
        messages=[{"role": "user", "content": "Hi", "reasoning_content": "r"}],
        extra_body={"top_a": 0.5, "mirostat": 2})
    assert raw.headers["x-brisk-ignored-fields"] == "top_a,mirostat,messages.reasoning_content"
    assert raw.parse().usage.completion_tokens >= 1
    raw = c.completions.with_raw_response.create(model=MODEL_ID, prompt="Hi", max_tokens=1,
                                                 extra_body={"top_a": 1})
    assert raw.headers["x-brisk-ignored-fields"] == "top_a"
    raw = c.completions.with_raw_response.create(model=MODEL_ID, prompt="Hi", max_tokens=1)
    assert "x-brisk-ignored-fields" not in raw.headers
    assert server.metric("brisk:ignored_request_fields_total", {"field": "top_a"}) == 2
    assert server.metric("brisk:ignored_request_fields_total", {"field": "mirostat"}) == 1
    # Known fields are still checked, and known-unsupported ones still refused.
    with pytest.raises(openai.BadRequestError):
        chat(c, "Hi", temperature=5, extra_body={"top_a": 1})
    # Many distinct junk names: the metric's series stay bounded.
    for i in range(5):
        chat(c, "Hi", max_tokens=1, extra_body={f"junk_{i}_{j}": 1 for j in range(20)})
    _, text = server.get("/metrics")
    series = [l for l in text.splitlines()
              if l.startswith("brisk:ignored_request_fields_total{")]
    assert len(series) <= 65  # 64 names + other
    assert server.metric("brisk:ignored_request_fields_total", {"field": "other"}) > 0


# ---- vLLM extensions ------------------------------------------------------------


def test_min_tokens_holds_off_the_end(brisk_server):
    c = brisk_server.client()
    short = chat(c, "Reply with the single word OK.", max_tokens=64, temperature=0)
    assert short.choices[0].finish_reason == "stop"
    n = short.usage.completion_tokens
    r = chat(c, "Reply with the single word OK.", max_tokens=64, temperature=0,
             extra_body={"min_tokens": n + 10})
    assert r.usage.completion_tokens >= n + 10
    with pytest.raises(openai.BadRequestError) as e:
        chat(c, "x", max_tokens=4, extra_body={"min_tokens": 5})
    assert e.value.body["param"] == "min_tokens"
    with pytest.raises(openai.BadRequestError):
        chat(c, "x", extra_body={"min_tokens": -1})


def test_stop_token_ids_and_include_stop_str(brisk_server):
    c = brisk_server.client()
    prompt = "1, 2, 3, 4,"
    base = complete(c, prompt, max_tokens=12, temperature=0).choices[0].text
    assert " 6" in base, base
    six = token_id(brisk_server, "6")  # digits are tokens of their own
    r = complete(c, prompt, max_tokens=12, temperature=0, extra_body={"stop_token_ids": [six]})
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == base[:base.index("6")]
    r = complete(c, prompt, max_tokens=12, temperature=0,
                 extra_body={"stop_token_ids": [six], "include_stop_str_in_output": True})
    assert r.choices[0].text == base[:base.index("6") + 1]
    r = complete(c, prompt, max_tokens=12, temperature=0, stop=[" 6"],
                 extra_body={"include_stop_str_in_output": True})
    assert r.choices[0].finish_reason == "stop"
    assert r.choices[0].text == base[:base.index(" 6") + 2]
    streamed = complete(c, prompt, max_tokens=12, temperature=0, stop=[" 6"], stream=True,
                        extra_body={"include_stop_str_in_output": True})
    assert "".join(ch.choices[0].text for ch in streamed if ch.choices) == r.choices[0].text
    with pytest.raises(openai.BadRequestError) as e:
        complete(c, prompt, max_tokens=1, extra_body={"stop_token_ids": [VOCAB]})
    assert str(VOCAB) in e.value.body["message"]


def test_skip_special_tokens(brisk_server):
    c = brisk_server.client()
    end = token_id(brisk_server, "<|im_end|>")
    kw = dict(max_tokens=2, temperature=0, logit_bias={str(end): 100})
    r = complete(c, "Hi", extra_body={"ignore_eos": True}, **kw)
    assert r.choices[0].text == ""
    assert r.usage.completion_tokens == 2
    r = complete(c, "Hi", extra_body={"ignore_eos": True, "skip_special_tokens": False}, **kw)
    assert r.choices[0].text == "<|im_end|><|im_end|>"
    # As a stop token, its text only with include_stop_str_in_output.
    r = complete(c, "Hi", extra_body={"skip_special_tokens": False}, **kw)
    assert r.choices[0].text == "" and r.choices[0].finish_reason == "stop"
    r = complete(c, "Hi", extra_body={"skip_special_tokens": False,
                                      "include_stop_str_in_output": True}, **kw)
    assert r.choices[0].text == "<|im_end|>"


def test_continuous_usage_stats(brisk_server):
    c = brisk_server.client()
    chunks = list(chat(c, "Count to five.", max_tokens=8, temperature=0, stream=True,
                       stream_options={"include_usage": True, "continuous_usage_stats": True}))
    assert all(ch.usage is not None for ch in chunks)
    done = [ch.usage.completion_tokens for ch in chunks]
    assert done == sorted(done)
    # The role chunk counts no token yet; each content chunk counts its own.
    assert chunks[0].choices[0].delta.role == "assistant" and done[0] == 0
    assert done[1] >= 1
    assert done[-1] == chunks[-1].usage.completion_tokens >= 1
    prompt = {ch.usage.prompt_tokens for ch in chunks}
    assert len(prompt) == 1
    assert all(ch.usage.total_tokens == ch.usage.prompt_tokens + ch.usage.completion_tokens
               for ch in chunks)
    # Without include_usage, as vLLM: no usage anywhere.
    chunks = list(complete(c, "One,", max_tokens=3, stream=True,
                           stream_options={"continuous_usage_stats": True}))
    assert all(ch.usage is None for ch in chunks)


# ---- /tokenize and /detokenize --------------------------------------------------


def test_tokenize_detokenize_round_trip(brisk_server):
    status, body, _ = post(brisk_server, "/tokenize",
                           {"model": MODEL_ID, "prompt": "Hello, world!"})
    assert status == 200, body
    assert body["count"] == len(body["tokens"]) > 0
    assert body["max_model_len"] >= 2048
    assert body["token_strs"] is None
    status, back, _ = post(brisk_server, "/detokenize",
                           {"model": MODEL_ID, "tokens": body["tokens"]})
    assert status == 200 and back == {"prompt": "Hello, world!"}
    # A completion's prompt_tokens is the count /tokenize reports.
    r = complete(brisk_server.client(), "Hello, world!", max_tokens=1)
    assert r.usage.prompt_tokens == body["count"]
    status, strs, _ = post(brisk_server, "/tokenize",
                           {"prompt": "Hello, world!", "return_token_strs": True})
    assert "".join(strs["token_strs"]) == "Hello, world!"


def test_tokenize_messages_counts_the_chat_prompt(brisk_server):
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi!"}]
    status, body, _ = post(brisk_server, "/tokenize", {"model": MODEL_ID, "messages": msgs})
    assert status == 200, body
    r = brisk_server.client().chat.completions.create(model=MODEL_ID, messages=msgs,
                                                      max_tokens=1)
    assert r.usage.prompt_tokens == body["count"]
    _, no_gen, _ = post(brisk_server, "/tokenize",
                        {"messages": msgs, "add_generation_prompt": False})
    assert no_gen["count"] < body["count"]
    assert body["tokens"][:no_gen["count"]] == no_gen["tokens"]


def test_token_endpoints_validate(brisk_server):
    status, body, _ = post(brisk_server, "/detokenize", {"tokens": [1, VOCAB]})
    assert status == 400
    assert str(VOCAB) in body["error"]["message"] and body["error"]["param"] == "tokens[1]"
    assert post(brisk_server, "/tokenize", {"model": "gpt-4o", "prompt": "x"})[0] == 404
    assert post(brisk_server, "/tokenize", {"prompt": "x", "colour": 1})[0] == 400
    assert post(brisk_server, "/tokenize", {})[0] == 400
    assert post(brisk_server, "/tokenize", None, raw=b"{not json")[0] == 400
    req = urllib.request.Request(brisk_server.url + "/tokenize", data=b"prompt=x",
                                 method="POST", headers={"Content-Type": "text/plain"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=10)
    assert e.value.code == 415


def test_token_endpoints_need_the_key(make_server):
    server = make_server("keys: [{key: sk-test-a, tenant: a}]\n")
    assert post(server, "/tokenize", {"prompt": "x"})[0] == 401
    assert post(server, "/detokenize", {"tokens": [1]}, key="sk-wrong")[0] == 401
    status, body, _ = post(server, "/tokenize", {"prompt": "x"}, key="sk-test-a")
    assert status == 200 and body["count"] >= 1
    assert post(server, "/detokenize", {"tokens": [1]}, key="sk-test-a")[0] == 200
