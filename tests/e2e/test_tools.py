"""Function tools end to end with the real `openai` client against `brisk
serve` on the default model: forced calls (tool_choice "required", a named
function, parallel or not) come back as message.tool_calls whose arguments
validate with jsonschema against the tool's parameters, streamed as
tool_calls deltas too, and an agent loop (call -> tool result -> answer)
runs through. tool_choice "auto" lets the model choose (see
src/server/openai_tools.h): free text is content, a call it starts by its
template's convention (for SmolLM2's template, which has no call marker: a
{"name" object at the start of the answer) becomes message.tool_calls, the
rest of the call constrained by the tool-call grammar. A 135M model's choices
are not reliable, so the "auto" tests assert the protocol (a valid call or
content, never a broken mix, a finish_reason that matches), plus
deterministic cases at temperature 0: a prompt the model answers by echoing
a call object (checked: it does, with tools or without), and a question it
answers in prose."""
import json

import jsonschema
import openai
import pytest

from conftest import MODEL_ID, REPO, BriskServer

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 20},
        "unit": {"enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city", "unit"],
}
TIME = {"type": "object", "properties": {"tz": {"type": "string", "maxLength": 12}},
        "required": ["tz"]}
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description":
                                      "Current weather in a city", "parameters": WEATHER}},
    {"type": "function", "function": {"name": "get_time", "description":
                                      "Current time in a time zone", "parameters": TIME}},
]
SCHEMAS = {"get_weather": WEATHER, "get_time": TIME}
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
# At temperature 0 the default model answers this with the call object itself.
CALL_ASK = [{"role": "user", "content": 'Output only this JSON and nothing else: {"name": '
             '"get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}'}]


def check_calls(msg, names=("get_weather", "get_time")):
    assert msg.content is None
    assert msg.tool_calls
    for call in msg.tool_calls:
        assert call.id.startswith("call_") and call.type == "function"
        assert call.function.name in names
        jsonschema.validate(json.loads(call.function.arguments), SCHEMAS[call.function.name])


@pytest.mark.parametrize("parallel", [True, False])
def test_required_tool_call_validates(brisk_server, parallel):
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="required",
        parallel_tool_calls=parallel, max_tokens=120, temperature=0)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", ch.message
    check_calls(ch.message)
    if not parallel:
        assert len(ch.message.tool_calls) == 1


def test_named_tool_choice_calls_that_function(brisk_server):
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "get_time"}},
        max_tokens=80, temperature=0.7, seed=3)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls"
    check_calls(ch.message, names=("get_time",))
    assert len(ch.message.tool_calls) == 1


def test_streaming_tool_call_deltas_assemble(brisk_server):
    calls, finish = {}, None
    for chunk in brisk_server.client().chat.completions.create(
            model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=120,
            temperature=0, stream=True):
        for c in chunk.choices:
            assert c.delta.content is None  # null, not "", from the first (role) delta on
            for d in c.delta.tool_calls or []:
                entry = calls.setdefault(d.index, {"id": None, "name": None, "args": ""})
                if d.id:
                    assert entry["id"] is None
                    entry["id"], entry["name"] = d.id, d.function.name
                entry["args"] += d.function.arguments or ""
            finish = c.finish_reason or finish
    assert finish == "tool_calls"
    assert calls
    for entry in calls.values():
        assert entry["id"].startswith("call_")
        jsonschema.validate(json.loads(entry["args"]), SCHEMAS[entry["name"]])


@pytest.mark.parametrize("stream", [False, True])
def test_cut_off_tool_call_leaks_no_wrapper_text(brisk_server, stream):
    # vLLM's test_max_tokens_with_tool_choice_required: a forced call cut off
    # by max tokens ends with "length" and no content (the unfinished call is
    # the grammar's JSON, not text for the client).
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=2,
        temperature=0, stream=stream)
    if stream:
        chunks = list(r)
        assert all(not c.delta.content for ch in chunks for c in ch.choices)
        assert [c.finish_reason for ch in chunks for c in ch.choices][-1] == "length"
    else:
        assert r.choices[0].finish_reason == "length"
        assert not r.choices[0].message.content
        assert not r.choices[0].message.tool_calls


def check_auto_choice(ch, parallel=True):
    """tool_choice auto: valid calls or plain content, never a broken mix."""
    msg = ch.message
    if msg.tool_calls:
        # Cut off after complete calls: those calls, finish_reason "length".
        assert ch.finish_reason == "tool_calls" or (parallel and ch.finish_reason == "length"), ch
        assert len(msg.tool_calls) == 1 or parallel
        assert len({call.id for call in msg.tool_calls}) == len(msg.tool_calls)
        for call in msg.tool_calls:
            assert call.id.startswith("call_") and call.type == "function"
            assert call.function.name in SCHEMAS
            jsonschema.validate(json.loads(call.function.arguments),
                                SCHEMAS[call.function.name])
        # Text before the call is content; the call's JSON never is.
        assert msg.content is None or '{"name"' not in msg.content
        return "call"
    assert ch.finish_reason in ("stop", "length"), ch
    assert isinstance(msg.content, str)
    return "content"


def test_agent_loop_call_result_answer(brisk_server):
    # tool_choice auto (the default). The first turn used to be a forced
    # call whatever the prompt ("auto" was decided before generation); now
    # the model chooses, and SmolLM2's template does not show it the tools,
    # so the user asks for the call object: the model writes it, the trigger
    # fires and the grammar finishes it as a call.
    client = brisk_server.client()
    messages = list(CALL_ASK)
    first = client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                           max_tokens=120, temperature=0)  # tool_choice auto
    assert first.choices[0].finish_reason == "tool_calls"
    msg = first.choices[0].message
    check_calls(msg)
    assert json.loads(msg.tool_calls[0].function.arguments) == {"city": "Paris",
                                                               "unit": "celsius"}
    messages.append(msg.model_dump(exclude_none=True))
    for call in msg.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id,
                         "content": json.dumps({"temperature": 21, "sky": "clear"})})
    answer = client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                            max_tokens=40, temperature=0)
    ch = answer.choices[0]
    assert check_auto_choice(ch) == "content"  # what this model does here at temperature 0
    assert ch.message.content


def test_tool_choice_none_is_text(brisk_server):
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="none", max_tokens=10,
        temperature=0)
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].finish_reason in ("stop", "length")


def test_tool_choice_header(brisk_server):
    # "auto" is no longer resolved to "required" / "none" before generation.
    raw = brisk_server.client().chat.completions.with_raw_response.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS, max_tokens=20, temperature=0)
    assert raw.headers.get("x-brisk-tool-choice") == "auto"
    raw = brisk_server.client().chat.completions.with_raw_response.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=60,
        temperature=0)
    assert raw.headers.get("x-brisk-tool-choice") == "required"


def test_auto_question_comes_back_as_content(brisk_server):
    # Nothing in this answer starts a call: plain content, as without tools.
    client = brisk_server.client()
    r = client.chat.completions.create(model=MODEL_ID, messages=ASK, tools=TOOLS,
                                       tool_choice="auto", max_tokens=30, temperature=0)
    plain = client.chat.completions.create(model=MODEL_ID, messages=ASK, max_tokens=30,
                                           temperature=0)
    ch = r.choices[0]
    assert check_auto_choice(ch) == "content"
    assert ch.message.content == plain.choices[0].message.content
    assert ch.finish_reason == plain.choices[0].finish_reason


def stream_auto(client, messages, **kw):
    """Streams a tool_choice auto answer: (content, calls, finish_reason)."""
    content, calls, finish, role_content = "", {}, None, "unset"
    for chunk in client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                                tool_choice="auto", stream=True, **kw):
        for c in chunk.choices:
            if c.delta.role:
                role_content = c.delta.content
            content += c.delta.content or ""
            for d in c.delta.tool_calls or []:
                entry = calls.setdefault(d.index, {"id": None, "name": None, "args": ""})
                if d.id:
                    assert entry["id"] is None
                    entry["id"], entry["name"] = d.id, d.function.name
                entry["args"] += d.function.arguments or ""
            if c.finish_reason:
                assert finish is None
                finish = c.finish_reason
    return content, calls, finish, role_content


def test_auto_streaming_call_deltas_assemble(brisk_server):
    content, calls, finish, role_content = stream_auto(brisk_server.client(), CALL_ASK,
                                                       max_tokens=120, temperature=0)
    assert finish == "tool_calls"
    assert content == "" and role_content is None  # a call from the start: content null
    assert list(calls) == [0]
    assert calls[0]["id"].startswith("call_") and calls[0]["name"] == "get_weather"
    args = json.loads(calls[0]["args"])
    jsonschema.validate(args, WEATHER)
    assert args == {"city": "Paris", "unit": "celsius"}


def test_auto_streaming_content_matches_the_body(brisk_server):
    client = brisk_server.client()
    content, calls, finish, _ = stream_auto(client, ASK, max_tokens=30, temperature=0)
    body = client.chat.completions.create(model=MODEL_ID, messages=ASK, tools=TOOLS,
                                          max_tokens=30, temperature=0)
    assert not calls
    assert content == body.choices[0].message.content
    assert finish == body.choices[0].finish_reason in ("stop", "length")


# parallel_tool_calls (the default): SmolLM2's template has no call marker,
# so several calls are a JSON array at the start of the answer. At
# temperature 0 the default model echoes this array after one example turn
# (asked once, it writes only the first element).
TWO_CALLS_JSON = ('[{"name":"get_weather","arguments":{"city":"Paris","unit":"celsius"}},'
                  '{"name":"get_time","arguments":{"tz":"CET"}}]')
CALLS_ASK = [{"role": "user", "content": "Output only this JSON and nothing else: " + TWO_CALLS_JSON},
             {"role": "assistant", "content": TWO_CALLS_JSON},
             {"role": "user", "content": "Output only this JSON and nothing else: " + TWO_CALLS_JSON}]
TWO_CALLS = [("get_weather", {"city": "Paris", "unit": "celsius"}), ("get_time", {"tz": "CET"})]


def test_auto_parallel_calls(brisk_server):
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=CALLS_ASK, tools=TOOLS, max_tokens=120, temperature=0)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", ch.message
    check_calls(ch.message)
    got = [(c.function.name, json.loads(c.function.arguments)) for c in ch.message.tool_calls]
    assert got == TWO_CALLS
    assert len({c.id for c in ch.message.tool_calls}) == 2


def test_auto_parallel_calls_streamed(brisk_server):
    content, calls, finish, role_content = stream_auto(brisk_server.client(), CALLS_ASK,
                                                       max_tokens=120, temperature=0)
    assert finish == "tool_calls"
    assert content == "" and role_content is None
    assert list(calls) == [0, 1]
    assert calls[0]["id"] != calls[1]["id"]
    # Each call's deltas assemble to valid JSON arguments of its own.
    got = [(c["name"], json.loads(c["args"])) for c in calls.values()]
    assert got == TWO_CALLS
    for name, args in got:
        jsonschema.validate(args, SCHEMAS[name])


def test_auto_without_parallel_calls_an_array_is_content(brisk_server):
    # parallel_tool_calls false: only one call object starts a call.
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=CALLS_ASK, tools=TOOLS, parallel_tool_calls=False,
        max_tokens=120, temperature=0)
    ch = r.choices[0]
    assert check_auto_choice(ch, parallel=False) == "content"
    assert ch.message.content.lstrip().startswith("[")


@pytest.mark.parametrize("messages", [ASK, CALL_ASK], ids=["question", "call"])
@pytest.mark.parametrize("stream", [False, True])
def test_auto_protocol_when_sampling(brisk_server, messages, stream):
    # Sampled answers go either way: each one is a valid call or content.
    client = brisk_server.client()
    kinds = []
    for seed in range(4):
        kw = dict(max_tokens=60, temperature=1.0, seed=seed)
        if not stream:
            r = client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                               **kw)
            kinds.append(check_auto_choice(r.choices[0]))
            continue
        content, calls, finish, _ = stream_auto(client, messages, **kw)
        if calls and finish == "tool_calls":
            assert list(calls) == list(range(len(calls))) and '{"name"' not in content
            for call in calls.values():
                jsonschema.validate(json.loads(call["args"]), SCHEMAS[call["name"]])
            kinds.append("call")
        else:
            # A call cut off by max_tokens ends "length"; otherwise content.
            assert finish in ("stop", "length")
            assert not calls or finish == "length"
            kinds.append("content")
    assert len(kinds) == 4


def test_auto_with_response_format_is_text(brisk_server):
    raw = brisk_server.client().chat.completions.with_raw_response.create(
        model=MODEL_ID, messages=CALL_ASK, tools=TOOLS, response_format={"type": "json_object"},
        max_tokens=60, temperature=0)
    assert raw.headers.get("x-brisk-tool-choice") == "none"
    ch = raw.parse().choices[0]
    assert ch.message.tool_calls is None


@pytest.mark.parametrize("kw,param", [
    (dict(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}),
     "tool_choice.function.name"),
    (dict(tool_choice="required"), "tool_choice"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "nonsense"}}}}}], tool_choice="required"),
     "tools[0].function.parameters"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "pattern": "^(?=a)a+$"}}}}}],
          tool_choice="required"),
     "tools[0].function.parameters"),
])
def test_tools_400(brisk_server, kw, param):
    with pytest.raises(openai.BadRequestError) as e:
        brisk_server.client().chat.completions.create(model=MODEL_ID, messages=ASK,
                                                      max_tokens=5, **kw)
    assert e.value.body["param"] == param


# A template that writes calls in <tool_call> tags: Qwen 2.5's (the chat
# template fixture), served over the default model with --chat-template (the
# ChatML turn tokens are SmolLM2's too). Under "auto" the marker starts a call
# anywhere in the answer, so text then a call comes back as content plus
# tool_calls. At temperature 0 the default model copies this text and call.
QWEN_TEMPLATE = REPO / "tests" / "fixtures" / "chat_templates" / "qwen2_5_instruct.jinja"
ROME = {"city": "Rome", "unit": "celsius"}
MARKED_ASK = [{"role": "user", "content": (
    'Repeat exactly:\nChecking now.\n<tool_call>\n{"name": "get_weather", "arguments": '
    + json.dumps(ROME) + '}\n</tool_call>')}]


@pytest.fixture(scope="module")
def marker_server(brisk_bin, default_model):
    s = BriskServer(brisk_bin, args=["--chat-template", str(QWEN_TEMPLATE)])
    yield s
    s.stop()


@pytest.mark.parametrize("parallel", [True, False])
def test_marker_template_text_then_call(marker_server, parallel):
    client = marker_server.client()
    r = client.chat.completions.create(model=MODEL_ID, messages=MARKED_ASK, tools=TOOLS,
                                       tool_choice="auto", parallel_tool_calls=parallel,
                                       max_tokens=120, temperature=0)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls", ch
    assert ch.message.content == "Checking now.\n"
    assert [(c.function.name, json.loads(c.function.arguments))
            for c in ch.message.tool_calls] == [("get_weather", ROME)]
    # The turn ended after the call's closing tag: with parallel calls
    # allowed, "\n</tool_call>" does not commit the model to another call.
    assert r.usage.completion_tokens < 120
    content, calls, finish, _ = stream_auto(client, MARKED_ASK, parallel_tool_calls=parallel,
                                            max_tokens=120, temperature=0)
    assert (content, finish) == ("Checking now.\n", "tool_calls")
    assert list(calls) == [0] and calls[0]["name"] == "get_weather"
    assert calls[0]["id"].startswith("call_") and json.loads(calls[0]["args"]) == ROME


def test_marker_template_text_then_call_responses_api(marker_server):
    tools = [{"type": "function", "name": "get_weather", "parameters": WEATHER}]
    r = marker_server.client().responses.create(model=MODEL_ID, input=MARKED_ASK[0]["content"],
                                                tools=tools, max_output_tokens=120, temperature=0)
    assert r.status == "completed"
    assert [o.type for o in r.output] == ["message", "function_call"]
    assert r.output[0].content[0].text == "Checking now.\n"
    assert r.output[1].name == "get_weather" and json.loads(r.output[1].arguments) == ROME


def test_marker_template_tags_are_text_without_auto(marker_server):
    # tool_choice "none" (and no tools): the tags are the model's text.
    for kw in ({"tools": TOOLS, "tool_choice": "none"}, {}):
        r = marker_server.client().chat.completions.create(
            model=MODEL_ID, messages=MARKED_ASK, max_tokens=120, temperature=0, **kw)
        assert r.choices[0].message.tool_calls is None
        assert "<tool_call>" in (r.choices[0].message.content or "") or not kw


def test_marker_template_agent_loop(marker_server):
    # call -> tool result -> answer, the call's turn rendered back in tags.
    client = marker_server.client()
    messages = list(MARKED_ASK)
    first = client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                           max_tokens=120, temperature=0)
    msg = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls" and msg.content == "Checking now.\n"
    messages.append(msg.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "18 C"})
    answer = client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                            max_tokens=20, temperature=0)
    ch = answer.choices[0]
    assert check_auto_choice(ch) in ("call", "content")
    assert answer.usage.prompt_tokens > first.usage.prompt_tokens


# Gemma 3 (262k vocabulary, its built-in turn format): a forced call and the
# agent loop's answer turn.
from test_gemma3 import GEMMA_ID, gemma  # noqa: E402,F401  (the module's server fixture)


def test_gemma_tool_call_round_trip(gemma):
    client = gemma.client(timeout=120)
    messages = list(ASK)
    first = client.chat.completions.create(model=GEMMA_ID, messages=messages, tools=TOOLS,
                                           tool_choice="required", parallel_tool_calls=False,
                                           max_tokens=120, temperature=0)
    assert first.choices[0].finish_reason == "tool_calls"
    msg = first.choices[0].message
    check_calls(msg)
    messages.append(msg.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": "sunny"})
    answer = client.chat.completions.create(model=GEMMA_ID, messages=messages, tools=TOOLS,
                                            max_tokens=10, temperature=0)
    assert answer.choices[0].message.tool_calls is None
    assert answer.choices[0].finish_reason in ("stop", "length")
