"""vLLM's structured outputs end to end (regex, choice, GBNF grammar, and the
older guided_* fields): the real `openai` client against `brisk serve` on the
default model. Outputs must fullmatch the regex with Python's `re`, be one
of the choices, or parse with the grammar; bad constraints are a 400."""
import re

import openai
import pytest

from conftest import MODEL_ID

DATE = r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
PHONE = r"\(\d{3}\) \d{3}-\d{4}"
ARITH = r"""
root   ::= expr
expr   ::= term (("+" | "-") term)*
term   ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")"
number ::= [0-9]{1,3}
"""


def parses_arith(s):
    """A recursive-descent check of the ARITH grammar; True iff s is in it."""
    pos = 0

    def number():
        nonlocal pos
        m = re.match(r"[0-9]{1,3}", s[pos:])
        if not m:
            return False
        pos += m.end()
        return True

    def factor():
        nonlocal pos
        if pos < len(s) and s[pos] == "(":
            pos += 1
            if not expr() or pos >= len(s) or s[pos] != ")":
                return False
            pos += 1
            return True
        return number()

    def term():
        nonlocal pos
        if not factor():
            return False
        while pos < len(s) and s[pos] in "*/":
            pos += 1
            if not factor():
                return False
        return True

    def expr():
        nonlocal pos
        if not term():
            return False
        while pos < len(s) and s[pos] in "+-":
            pos += 1
            if not term():
                return False
        return True

    return expr() and pos == len(s)


def chat(client, content, max_tokens=24, **extra):
    return client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": content}], max_tokens=max_tokens,
        temperature=0.8, seed=3, extra_body=extra)


def test_regex_date(brisk_server):
    client = brisk_server.client()
    before = brisk_server.metric("brisk:constrained_requests_total") or 0
    r = chat(client, "When did the Berlin wall fall? Answer with a date.",
             structured_outputs={"regex": DATE})
    c = r.choices[0]
    assert c.finish_reason == "stop"
    assert re.fullmatch(DATE, c.message.content), c.message.content
    assert brisk_server.metric("brisk:constrained_requests_total") >= before + 1


def test_regex_phone_on_completions_with_guided_regex(brisk_server):
    client = brisk_server.client()
    r = client.completions.create(model=MODEL_ID, prompt="Call us at ", max_tokens=24,
                                  temperature=0.8, seed=5, extra_body={"guided_regex": PHONE})
    assert r.choices[0].finish_reason == "stop"
    assert re.fullmatch(PHONE, r.choices[0].text), r.choices[0].text


@pytest.mark.parametrize("field", ["structured_outputs", "guided_choice"])
def test_choice(brisk_server, field):
    client = brisk_server.client()
    choices = ["positive", "negative", "neutral"]
    extra = {"structured_outputs": {"choice": choices}} if field == "structured_outputs" \
        else {"guided_choice": choices}
    for seed in range(3):
        r = client.chat.completions.create(
            model=MODEL_ID, max_tokens=8, temperature=1.0, seed=seed, extra_body=extra,
            messages=[{"role": "user", "content": "Sentiment of 'I love this phone'?"}])
        assert r.choices[0].finish_reason == "stop"
        assert r.choices[0].message.content in choices


def test_grammar_arithmetic(brisk_server):
    client = brisk_server.client()
    done = 0
    for seed in range(3):
        r = client.chat.completions.create(
            model=MODEL_ID, max_tokens=24, temperature=1.0, seed=seed,
            messages=[{"role": "user", "content": "Write an arithmetic expression."}],
            extra_body={"structured_outputs": {"grammar": ARITH}})
        c = r.choices[0]
        text = c.message.content
        if c.finish_reason == "stop":
            assert parses_arith(text), text
            done += 1
        else:  # cut by max_tokens: still a prefix the grammar allows
            assert c.finish_reason == "length"
            assert re.fullmatch(r"[0-9()+\-*/]*", text), text
    assert done >= 1


def test_streaming_regex(brisk_server):
    client = brisk_server.client()
    stream = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "A US phone number please."}],
        max_tokens=24, temperature=0.8, seed=1, stream=True,
        extra_body={"structured_outputs": {"regex": PHONE}})
    text, finish = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop"
    assert re.fullmatch(PHONE, text), text


@pytest.mark.parametrize("extra, word", [
    ({"structured_outputs": {"regex": "(a)\\1"}}, "backreference"),
    ({"structured_outputs": {"regex": "(?=x)x"}}, "lookahead"),
    ({"guided_grammar": "root ::= item\n"}, "undefined rule 'item'"),
    ({"structured_outputs": {"grammar": "root ::= (\"a\"\n"}}, "2:1"),
    ({"structured_outputs": {"grammar": "expr ::= \"a\""}}, "root"),
    ({"structured_outputs": {"choice": []}}, "choice"),
    ({"structured_outputs": {"regex": "a", "choice": ["a"]}}, "Only one"),
    ({"guided_regex": "a", "guided_choice": ["a"]}, "Only one"),
    ({"guided_regex": "a", "response_format": {"type": "json_object"}}, "response_format"),
    ({"structured_outputs": {"regexp": "a"}}, "regexp"),
])
def test_bad_constraints_are_400(brisk_server, extra, word):
    client = brisk_server.client()
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, "hi", max_tokens=4, **extra)
    assert e.value.status_code == 400
    assert word in e.value.body["message"], e.value.body


def test_guided_json_is_a_schema(brisk_server):
    client = brisk_server.client()
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    r = chat(client, "Is water wet? JSON please.", max_tokens=16,
             structured_outputs={"json": schema})
    assert r.choices[0].message.content in ('{"ok":true}', '{"ok":false}')
