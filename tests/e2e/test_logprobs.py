"""logprobs / top_logprobs on chat and completions, and completions' echo,
end to end with the real `openai` client against `brisk serve` on the default
model. Logprobs are of the raw model distribution (vLLM's default
logprobs_mode=raw_logprobs): before temperature, penalties, logit_bias and
grammar masks."""
import json
import math
import urllib.request

import openai
import pytest

from conftest import MODEL_ID

CHAT = [{"role": "user", "content": "Name three colors."}]
PROMPT = "The capital of France is"


def check_chat_record(rec, k):
    assert rec.bytes == list(rec.token.encode("utf-8")) or "\ufffd" in rec.token
    assert rec.logprob <= 0.0
    assert len(rec.top_logprobs) == k
    lps = [t.logprob for t in rec.top_logprobs]
    assert lps == sorted(lps, reverse=True)
    for t in rec.top_logprobs:
        assert t.logprob <= 0.0 and isinstance(t.bytes, list)


def test_chat_logprobs_shape_and_greedy_top(brisk_server):
    client = brisk_server.client()
    r = client.chat.completions.create(model=MODEL_ID, messages=CHAT, max_tokens=12,
                                       temperature=0, logprobs=True, top_logprobs=5)
    ch = r.choices[0]
    content = ch.logprobs.content
    assert len(content) >= 1
    # One record per token of the text: the tokens spell the content.
    assert "".join(rec.token for rec in content) == ch.message.content
    if ch.finish_reason == "length":
        assert len(content) == r.usage.completion_tokens
    for rec in content:
        check_chat_record(rec, 5)
        # Greedy: the chosen token is the most likely one.
        assert rec.token == rec.top_logprobs[0].token
        assert math.isclose(rec.logprob, rec.top_logprobs[0].logprob, abs_tol=1e-6)
        # A distribution: the top 5 never sum past 1.
        assert sum(math.exp(t.logprob) for t in rec.top_logprobs) <= 1.0 + 1e-4


def test_chat_logprobs_without_top(brisk_server):
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=CHAT, max_tokens=4, temperature=0, logprobs=True)
    for rec in r.choices[0].logprobs.content:
        assert rec.top_logprobs == []
    plain = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=CHAT, max_tokens=4, temperature=0)
    assert plain.choices[0].logprobs is None


def test_logprobs_are_of_the_raw_distribution(brisk_server):
    """Temperature and penalties change what is drawn, not the reported
    distribution of the first position."""
    client = brisk_server.client()
    a = client.chat.completions.create(model=MODEL_ID, messages=CHAT, max_tokens=1,
                                       temperature=0, logprobs=True, top_logprobs=5)
    b = client.chat.completions.create(model=MODEL_ID, messages=CHAT, max_tokens=1,
                                       temperature=1.7, seed=5, presence_penalty=2,
                                       logprobs=True, top_logprobs=5)
    ta = a.choices[0].logprobs.content[0].top_logprobs
    tb = b.choices[0].logprobs.content[0].top_logprobs
    assert [t.token for t in ta] == [t.token for t in tb]
    for x, y in zip(ta, tb):
        assert math.isclose(x.logprob, y.logprob, abs_tol=1e-4)


def test_chat_streaming_logprobs_match_the_body(brisk_server):
    client = brisk_server.client()
    kw = dict(model=MODEL_ID, messages=CHAT, max_tokens=16, temperature=0, logprobs=True,
              top_logprobs=2)
    body = client.chat.completions.create(**kw)
    text, recs = "", []
    for chunk in client.chat.completions.create(stream=True, **kw):
        for c in chunk.choices:
            text += c.delta.content or ""
            if c.logprobs and c.logprobs.content:
                assert c.delta.content  # records travel with their text
                recs += c.logprobs.content
    assert text == body.choices[0].message.content
    assert [r.token for r in recs] == [r.token for r in body.choices[0].logprobs.content]
    for x, y in zip(recs, body.choices[0].logprobs.content):
        assert math.isclose(x.logprob, y.logprob, abs_tol=1e-4)


@pytest.mark.parametrize("kw,param", [
    (dict(top_logprobs=3), "top_logprobs"),
    (dict(logprobs=False, top_logprobs=3), "top_logprobs"),
    (dict(logprobs=True, top_logprobs=21), "top_logprobs"),
    (dict(logprobs=True, top_logprobs=-1), "top_logprobs"),
])
def test_chat_logprobs_400(brisk_server, kw, param):
    with pytest.raises(openai.BadRequestError) as e:
        brisk_server.client().chat.completions.create(model=MODEL_ID, messages=CHAT,
                                                      max_tokens=2, **kw)
    assert e.value.body["param"] == param


def check_legacy(lp, text, first_null=False):
    n = len(lp.tokens)
    assert len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n
    assert "".join(lp.tokens) == text
    offsets = [0]
    for t in lp.tokens[:-1]:
        offsets.append(offsets[-1] + len(t))
    assert lp.text_offset == offsets
    for i, (tok, v, top) in enumerate(zip(lp.tokens, lp.token_logprobs, lp.top_logprobs)):
        if first_null and i == 0:
            assert v is None and top is None
            continue
        assert v <= 0.0
        assert tok in top and math.isclose(top[tok], v, abs_tol=1e-6)


def test_completions_logprobs_legacy_shape(brisk_server):
    r = brisk_server.client().completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=8,
                                                 temperature=0, logprobs=3)
    ch = r.choices[0]
    check_legacy(ch.logprobs, ch.text)
    for top in ch.logprobs.top_logprobs:
        assert 3 <= len(top) <= 4  # the alternatives, plus the chosen token if not among them


def test_completions_logprobs_range(brisk_server):
    with pytest.raises(openai.BadRequestError) as e:
        brisk_server.client().completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=2,
                                                 logprobs=6)
    assert e.value.body["param"] == "logprobs"


def test_echo_returns_the_prompt_first(brisk_server):
    client = brisk_server.client()
    r = client.completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=4, temperature=0,
                                  echo=True)
    plain = client.completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=4, temperature=0)
    assert r.choices[0].text == PROMPT + plain.choices[0].text
    assert r.choices[0].logprobs is None


def test_echo_with_logprobs_scores_the_prompt(brisk_server):
    client = brisk_server.client()
    prompt = PROMPT + " Paris"
    r = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=3, temperature=0,
                                  echo=True, logprobs=5, n=2)
    for ch in r.choices:
        assert ch.text.startswith(prompt)
        check_legacy(ch.logprobs, ch.text, first_null=True)
    # The echoed score of " Paris" is the model's probability of it after the
    # rest of the prompt, as a plain completion of that prefix reports it.
    lp = r.choices[0].logprobs
    i = lp.tokens.index(" Paris")
    nxt = client.completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=1, temperature=0,
                                    logprobs=5)
    top = nxt.choices[0].logprobs.top_logprobs[0]
    assert " Paris" in top
    assert math.isclose(top[" Paris"], lp.token_logprobs[i], abs_tol=0.05)
    # Usage still counts the prompt once, and a repeat (prefix-cache warm)
    # scores it the same.
    again = client.completions.create(model=MODEL_ID, prompt=prompt, max_tokens=3,
                                      temperature=0, echo=True, logprobs=5)
    assert again.choices[0].logprobs.token_logprobs[1:i + 1] == pytest.approx(
        lp.token_logprobs[1:i + 1], abs=1e-4)


def test_echo_of_token_ids_keeps_special_tokens(brisk_server):
    # vLLM's test_echo_logprob_completion: the prompt comes back as sent,
    # special tokens included, and its tokens are named in the logprobs.
    client = brisk_server.client()
    req = urllib.request.Request(brisk_server.url + "/detokenize",
                                 data=json.dumps({"tokens": [0]}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        eot = json.load(resp)["prompt"]
    assert eot == "<|endoftext|>"
    r = client.completions.create(model=MODEL_ID, prompt=[0, 0, 0], max_tokens=2,
                                  temperature=0, echo=True, logprobs=1)
    assert r.choices[0].text.startswith(eot * 3)
    assert r.choices[0].logprobs.tokens[:3] == [eot] * 3
    check_legacy(r.choices[0].logprobs, r.choices[0].text, first_null=True)


def test_echo_streaming(brisk_server):
    client = brisk_server.client()
    text, tokens = "", []
    for chunk in client.completions.create(model=MODEL_ID, prompt=PROMPT, max_tokens=4,
                                           temperature=0, echo=True, logprobs=1, stream=True):
        for c in chunk.choices:
            if not text:
                assert c.text.startswith(PROMPT)
            text += c.text
            if c.logprobs:
                tokens += c.logprobs.tokens
    assert text.startswith(PROMPT) and len(text) > len(PROMPT)
    assert "".join(tokens) == text


def test_suffix_is_a_clear_400(brisk_server):
    with pytest.raises(openai.BadRequestError) as e:
        brisk_server.client().completions.create(model=MODEL_ID, prompt=PROMPT, suffix="end",
                                                 max_tokens=2)
    assert e.value.body["param"] == "suffix"
    assert "infill" in e.value.body["message"]


# Gemma 3 (262k vocabulary): the same shapes and invariants.
from test_gemma3 import GEMMA_ID, gemma  # noqa: E402,F401  (the module's server fixture)


def test_gemma_chat_logprobs_and_echo(gemma):
    client = gemma.client(timeout=120)
    r = client.chat.completions.create(model=GEMMA_ID, messages=CHAT, max_tokens=6,
                                       temperature=0, logprobs=True, top_logprobs=4)
    ch = r.choices[0]
    assert "".join(rec.token for rec in ch.logprobs.content) == ch.message.content
    for rec in ch.logprobs.content:
        check_chat_record(rec, 4)
        assert rec.token == rec.top_logprobs[0].token
    e = client.completions.create(model=GEMMA_ID, prompt=PROMPT, max_tokens=3, temperature=0,
                                  echo=True, logprobs=2)
    check_legacy(e.choices[0].logprobs, e.choices[0].text, first_null=True)
    assert e.choices[0].text.startswith(PROMPT)
