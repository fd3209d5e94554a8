"""Speculative decoding (prompt lookup, and a draft model) through the OpenAI
API: the same greedy answers as without it (structured output too), usage and
metrics report accepted drafts, a request can opt out, and a draft with
another tokenizer is refused."""
import json
import pathlib
import signal
import time

import jsonschema
import openai
import pytest
from pydantic import BaseModel

from conftest import MODEL_ID, REPO, BriskServer

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


class Person(BaseModel):
    name: str
    age: int
    city: str


class People(BaseModel):
    people: list[Person]


JSON_PROMPTS = [
    'Copy this JSON exactly, but change every age to 30: {"people":[{"name":"alice","age":41,'
    '"city":"Lisbon"},{"name":"bob","age":35,"city":"Oslo"}]}',
    "List the people as JSON: Carol is 52 and lives in Lima. Dan is 19 and lives in Rome.",
]


def parsed_answers(server, regex_too=True, **extra):
    c = server.client()
    out = []
    for p in JSON_PROMPTS:
        r = c.beta.chat.completions.parse(
            model=MODEL_ID, messages=[{"role": "user", "content": p}], max_tokens=80,
            temperature=0, response_format=People, extra_body=extra or None)
        jsonschema.validate(json.loads(r.choices[0].message.content),
                            People.model_json_schema())
        out.append((r.choices[0].message.parsed, r.usage))
    if regex_too:
        r = c.chat.completions.create(
            model=MODEL_ID, messages=[{"role": "user", "content": "Count: 1, 2, 3, 4, 5, 6"}],
            max_tokens=30, temperature=0,
            extra_body={**extra, "structured_outputs": {"regex": r"[0-9]+(, [0-9]+)*"}})
        out.append((r.choices[0].message.content, r.usage))
    return out


def test_structured_output_speculates_with_the_same_answers(make_server):
    s = make_server(SPEC)
    got = parsed_answers(s)
    want = parsed_answers(s, speculative=False)
    assert [a for a, _ in got] == [a for a, _ in want]
    accepted = [(u.model_extra or {}).get("speculative_accepted_tokens", 0) for _, u in got]
    assert sum(accepted) > 0, accepted


@pytest.fixture(scope="module")
def draft_model(brisk_bin, default_model, tmp_path_factory):
    """A lower-precision copy of the default model as its draft: q4_0, made
    here from the installed file (a deployment would quantize its target)."""
    import subprocess
    out = tmp_path_factory.mktemp("draft") / "draft-q4_0.gguf"
    subprocess.run([brisk_bin, "quantize", "-t", "q4_0", default_model, str(out)], check=True,
                   capture_output=True)
    return str(out)


def test_a_draft_model_gives_the_same_greedy_answers(make_server, plain_answers, draft_model):
    # Always drafting (adaptive: false): the test is about correctness.
    s = make_server(f"speculative: {{method: draft, draft_model: {draft_model}, "
                    "num_tokens: 4, adaptive: false}\n")
    got = answers(s)
    assert [t for t, _ in got] == plain_answers
    accepted = [(u.model_extra or {}).get("speculative_accepted_tokens", 0) for _, u in got]
    assert sum(accepted) > 0, accepted
    deadline = time.time() + 10
    while s.metric("brisk:spec_decode_num_accepted_tokens_total") != sum(accepted):
        assert time.time() < deadline
        time.sleep(0.05)
    # Every draft came from a step where the sequence could draft, and the
    # draft model's own time is counted.
    assert 0 < s.metric("brisk:spec_decode_num_drafts_total") <= \
        s.metric("brisk:spec_decode_eligible_total")
    assert s.metric("brisk:spec_decode_draft_seconds_total") > 0
    assert [t for t, _ in answers(s, stream=True)] == plain_answers
    # A conversation's next turn resends its history: the draft reads the
    # history once (its prefix cache), as the target does.
    history = [{"role": "user", "content": "Tell me about ships. " * 30},
               {"role": "assistant", "content": "Ships float because they displace water. " * 10}]
    c = s.client()
    cached = s.metric("brisk:spec_decode_draft_cached_prompt_tokens_total")
    read = s.metric("brisk:spec_decode_draft_prompt_tokens_total")
    assert read > 0
    for turn in ("Why?", "And boats?"):
        history.append({"role": "user", "content": turn})
        r = c.chat.completions.create(model=MODEL_ID, messages=history, max_tokens=8,
                                      temperature=0)
        history.append({"role": "assistant", "content": r.choices[0].message.content})
    deadline = time.time() + 10
    while s.metric("brisk:spec_decode_draft_cached_prompt_tokens_total") - cached < 200:
        assert time.time() < deadline, "the draft read the conversation's history again"
        time.sleep(0.05)


def test_a_draft_as_costly_as_the_target_is_only_probed(make_server, plain_answers, draft_model):
    # q4_0 reads about as many bytes per token as the Q4_1 target: drafting
    # with it can only cost time. The adaptive policy drafts one token in
    # every 16th step only (Speculator::kProbeEvery), to keep measuring.
    s = make_server(args=["--draft-model", draft_model])
    got = answers(s)
    assert [t for t, _ in got] == plain_answers
    eligible = s.metric("brisk:spec_decode_eligible_total")
    drafts = s.metric("brisk:spec_decode_num_drafts_total")
    assert eligible > 0
    assert drafts <= eligible / 16 + len(PROMPTS), (drafts, eligible)
    assert s.metric("brisk:spec_decode_num_draft_tokens_total") == drafts  # one token each


def test_a_draft_model_with_another_tokenizer_is_refused_at_startup(make_server, tmp_path):
    gemma = REPO / "models" / "gemma-3-270m-q4_k_m.gguf"
    for draft, said in ((str(gemma), "tokenizer"), (str(tmp_path / "none.gguf"),
                                                     "speculative.draft_model")):
        if not pathlib.Path(draft).exists() and said == "tokenizer":
            continue  # Gemma not installed on this machine
        with pytest.raises(RuntimeError) as e:
            make_server(args=["--draft-model", draft])
        assert said in str(e.value), e.value
