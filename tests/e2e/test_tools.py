"""Function tools end to end with the real `openai` client against `brisk
serve` on the default model: forced calls (tool_choice "required", a named
function, parallel or not) come back as message.tool_calls whose arguments
validate with jsonschema against the tool's parameters, streamed as
tool_calls deltas too, and an agent loop (call -> tool result -> answer)
runs through. tool_choice "auto" is decided before generation (see
src/server/openai_tools.h): a call until the conversation has a tool result
after the last user message, then text."""
import json

import jsonschema
import openai
import pytest

from conftest import MODEL_ID

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


def test_agent_loop_call_result_answer(brisk_server):
    client = brisk_server.client()
    messages = list(ASK)
    first = client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                           max_tokens=120, temperature=0)  # tool_choice auto
    assert first.choices[0].finish_reason == "tool_calls"
    msg = first.choices[0].message
    check_calls(msg)
    messages.append(msg.model_dump(exclude_none=True))
    for call in msg.tool_calls:
        messages.append({"role": "tool", "tool_call_id": call.id,
                         "content": json.dumps({"temperature": 21, "sky": "clear"})})
    answer = client.chat.completions.create(model=MODEL_ID, messages=messages, tools=TOOLS,
                                            max_tokens=40, temperature=0)
    ch = answer.choices[0]
    assert ch.finish_reason in ("stop", "length")
    assert ch.message.tool_calls is None
    assert isinstance(ch.message.content, str) and ch.message.content


def test_tool_choice_none_is_text(brisk_server):
    r = brisk_server.client().chat.completions.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS, tool_choice="none", max_tokens=10,
        temperature=0)
    assert r.choices[0].message.tool_calls is None
    assert r.choices[0].finish_reason in ("stop", "length")


def test_tool_choice_header(brisk_server):
    raw = brisk_server.client().chat.completions.with_raw_response.create(
        model=MODEL_ID, messages=ASK, tools=TOOLS, max_tokens=120, temperature=0)
    assert raw.headers.get("x-brisk-tool-choice") == "required"


@pytest.mark.parametrize("kw,param", [
    (dict(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}),
     "tool_choice.function.name"),
    (dict(tool_choice="required"), "tool_choice"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"type": "nonsense"}}}}}], tool_choice="required"),
     "tools[0].function.parameters"),
    (dict(tools=[{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
        "type": "object", "properties": {"x": {"type": "string", "pattern": "^a+$"}}}}}],
          tool_choice="required"),
     "tools[0].function.parameters"),
])
def test_tools_400(brisk_server, kw, param):
    with pytest.raises(openai.BadRequestError) as e:
        brisk_server.client().chat.completions.create(model=MODEL_ID, messages=ASK,
                                                      max_tokens=5, **kw)
    assert e.value.body["param"] == param


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
