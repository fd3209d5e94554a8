"""Speculative decoding (prompt lookup) through the OpenAI API: the same
greedy answers as without it, usage and metrics report accepted drafts, and a
request can opt out."""
import signal
import time

import openai
import pytest

from conftest import MODEL_ID, BriskServer

SPEC = "speculative: {method: ngram, num_tokens: 4, adaptive: false}\n"

PROMPTS = [
    "Copy this list exactly: apple, banana, cherry, apple, banana, cherry, apple, banana.",
    "Repeat after me: the quick brown fox jumps over the lazy dog.",
    "Rewrite this code exactly:\ndef add(a, b):\n    return a + b\n",
    "What is the capital of France?",
]


def answers(server, stream=False, **extra):
    c = server.client()
    out = []
    for p in PROMPTS:
        kw = dict(model=MODEL_ID, messages=[{"role": "user", "content": p}], max_tokens=40,
                  temperature=0, extra_body=extra or None)
        if stream:
            text = "".join(ch.choices[0].delta.content or "" for ch in
                           c.chat.completions.create(stream=True, **kw) if ch.choices)
            out.append((text, None))
        else:
            r = c.chat.completions.create(**kw)
            out.append((r.choices[0].message.content, r.usage))
    return out


@pytest.fixture(scope="module")
def plain_answers(brisk_bin, default_model):
    s = BriskServer(brisk_bin)
    try:
        yield [t for t, _ in answers(s)]
    finally:
        s.stop(signal.SIGKILL)


def test_greedy_answers_are_the_same_and_usage_counts_accepted_drafts(make_server, plain_answers):
    s = make_server(SPEC)
    got = answers(s)
    assert [t for t, _ in got] == plain_answers
    accepted = [(u.model_extra or {}).get("speculative_accepted_tokens", 0) for _, u in got]
    assert sum(accepted) > 0, accepted
    for (_, u), a in zip(got, accepted):
        assert 0 <= a <= u.completion_tokens
    # The engine reports a step's counts right after the step, which can be
    # just after the last response went out: poll briefly.
    deadline = time.time() + 10
    while True:
        metrics = s.get("/metrics")[1]
        drafted = s.metric("brisk:spec_decode_num_draft_tokens_total")
        accepted_m = s.metric("brisk:spec_decode_num_accepted_tokens_total")
        if accepted_m == sum(accepted) or time.time() > deadline:
            break
        time.sleep(0.05)
    assert drafted > 0
    assert accepted_m == sum(accepted)
    assert 'brisk:spec_decode_num_accepted_tokens_per_pos_total{position="0"}' in metrics
    # Streaming gives the same text.
    assert [t for t, _ in answers(s, stream=True)] == plain_answers


def test_a_request_can_opt_out(make_server, plain_answers):
    s = make_server(SPEC)
    got = answers(s, speculative=False)
    assert [t for t, _ in got] == plain_answers
    assert all("speculative_accepted_tokens" not in (u.model_extra or {}) for _, u in got)
    with pytest.raises(openai.BadRequestError):
        s.client().chat.completions.create(model=MODEL_ID, messages=[{"role": "user", "content": "x"}],
                                    max_tokens=2, extra_body={"speculative": "no"})
