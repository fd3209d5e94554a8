"""OpenAI's Responses API (POST /v1/responses, GET / DELETE
/v1/responses/{id}, GET /v1/responses/{id}/input_items) end to end with the real `openai` client against `brisk
serve` on the default model: plain and instructed requests, the streamed
event sequence, text.format json_schema, previous_response_id follow-ups,
the store (retrieve, delete, 404s, tenants kept apart), max_output_tokens
-> incomplete, and a function-tool round trip."""
import json

import openai
import pytest
from pydantic import BaseModel, Field

from conftest import MODEL_ID

WEATHER_TOOL = {
    "type": "function", "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                   "required": ["city"], "additionalProperties": False},
    "strict": True,
}


def text_of(r):
    return "".join(p.text for item in r.output if item.type == "message" for p in item.content)


def test_plain_string_input(brisk_server):
    r = brisk_server.client().responses.create(
        model=MODEL_ID, input="Say hello.", max_output_tokens=16, temperature=0)
    assert r.id.startswith("resp_") and r.object == "response" and r.model == MODEL_ID
    assert r.status in ("completed", "incomplete")
    msg = r.output[0]
    assert msg.type == "message" and msg.role == "assistant" and msg.id.startswith("msg_")
    assert msg.content[0].type == "output_text" and msg.content[0].annotations == []
    assert r.output_text == msg.content[0].text and r.output_text
    u = r.usage
    assert u.input_tokens > 0 and u.output_tokens > 0
    assert u.total_tokens == u.input_tokens + u.output_tokens
    assert u.output_tokens_details.reasoning_tokens == 0
    assert u.input_tokens_details.cached_tokens >= 0
    assert r.max_output_tokens == 16 and r.store is True


def test_instructions_and_message_items(brisk_server):
    r = brisk_server.client().responses.create(
        model=MODEL_ID, instructions="Answer with one word.",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Capital of France?"}]}],
        max_output_tokens=8, temperature=0, metadata={"k": "v"})
    assert r.instructions == "Answer with one word." and r.metadata == {"k": "v"}
    assert r.output_text


def test_max_output_tokens_incomplete(brisk_server):
    r = brisk_server.client().responses.create(
        model=MODEL_ID, input="Write a long story about the sea.", max_output_tokens=3)
    assert r.status == "incomplete"
    assert r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 3


def test_stream_events_in_order(brisk_server):
    stream = brisk_server.client().responses.create(
        model=MODEL_ID, input="Count to five.", max_output_tokens=24, temperature=0, stream=True)
    events = list(stream)
    types = [e.type for e in events]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    head = ["response.created", "response.in_progress", "response.output_item.added",
            "response.content_part.added"]
    assert types[:4] == head
    tail = ["response.output_text.done", "response.content_part.done",
            "response.output_item.done"]
    assert types[-4:-1] == tail
    assert types[-1] in ("response.completed", "response.incomplete")
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) >= 2 and set(types[4:-4]) == {"response.output_text.delta"}
    text = "".join(d.delta for d in deltas)
    assert events[-4].text == text
    final = events[-1].response
    assert final.output[0].content[0].text == text and final.usage.output_tokens > 0
    # Stored: retrieve gives the same response.
    got = brisk_server.client().responses.retrieve(final.id)
    assert got.output_text == text


class City(BaseModel):
    name: str = Field(max_length=12)
    population: int = Field(ge=0, le=99999999)


def test_json_schema_text_format(brisk_server):
    schema = City.model_json_schema()
    schema["additionalProperties"] = False
    r = brisk_server.client().responses.create(
        model=MODEL_ID, input="Describe Paris as JSON.", max_output_tokens=80, temperature=0,
        text={"format": {"type": "json_schema", "name": "city", "schema": schema, "strict": True}})
    assert r.status == "completed", r
    City.model_validate(json.loads(r.output_text))
    assert r.text.format.type == "json_schema"


def test_parse_with_pydantic(brisk_server):
    r = brisk_server.client().responses.parse(
        model=MODEL_ID, input="Describe Paris as JSON.", max_output_tokens=80, temperature=0,
        text_format=City)
    assert isinstance(r.output_parsed, City)


def test_previous_response_id_follow_up(brisk_server):
    c = brisk_server.client()
    first = c.responses.create(model=MODEL_ID, input="My name is Alice. Say hi.",
                               max_output_tokens=12, temperature=0)
    second = c.responses.create(model=MODEL_ID, previous_response_id=first.id,
                                input="What is my name?", max_output_tokens=12, temperature=0)
    assert second.previous_response_id == first.id
    # The follow-up's prompt holds the first turn: more input tokens than
    # the new question alone, and the first exchange's included.
    alone = c.responses.create(model=MODEL_ID, input="What is my name?", max_output_tokens=12,
                               temperature=0, store=False)
    assert second.usage.input_tokens > alone.usage.input_tokens + first.usage.output_tokens
    # store=False: nothing to continue from.
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(alone.id)


def test_input_items_list_pages_and_404s(brisk_server):
    c = brisk_server.client()
    r = c.responses.create(model=MODEL_ID, max_output_tokens=4, input=[
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "Bye"}])
    items = c.responses.input_items.list(r.id)  # newest first, as OpenAI lists them
    texts = [i.content[0].text for i in items.data]
    assert texts == ["Bye", "Hello!", "Hi", "Be brief."]
    assert all(i.type == "message" and i.id.startswith("msg_") for i in items.data)
    page = c.responses.input_items.list(r.id, order="asc", limit=2)
    assert [i.content[0].text for i in page.data] == ["Be brief.", "Hi"]
    assert page.has_more and page.last_id == page.data[1].id
    rest = c.responses.input_items.list(r.id, order="asc", after=page.last_id)
    assert [i.content[0].text for i in rest.data] == ["Hello!", "Bye"] and not rest.has_more
    # Auto-pagination of the SDK walks the same pages.
    assert [i.id for i in c.responses.input_items.list(r.id, order="asc", limit=1)] == \
        [i.id for i in reversed(items.data)]
    with pytest.raises(openai.BadRequestError):
        c.responses.input_items.list(r.id, limit=500)
    with pytest.raises(openai.NotFoundError):
        c.responses.input_items.list("resp_nope")
    c.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError):
        c.responses.input_items.list(r.id)


def test_retrieve_delete_and_unknown_ids(brisk_server):
    c = brisk_server.client()
    r = c.responses.create(model=MODEL_ID, input="Hi", max_output_tokens=4)
    assert c.responses.retrieve(r.id).id == r.id
    c.responses.delete(r.id)
    for call in (lambda: c.responses.retrieve(r.id), lambda: c.responses.delete(r.id),
                 lambda: c.responses.create(model=MODEL_ID, input="x", previous_response_id=r.id)):
        with pytest.raises(openai.NotFoundError) as e:
            call()
        assert e.value.body["code"] == "not_found"
    status, _ = brisk_server.get("/v1/responses/a/b")
    assert status == 404


def test_errors_name_responses_fields(brisk_server):
    c = brisk_server.client()
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model=MODEL_ID, input="x", max_output_tokens=0)
    assert e.value.body["param"] == "max_output_tokens"
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model=MODEL_ID, input="x", tools=[{"type": "web_search"}])
    assert e.value.body["code"] == "unsupported" and "function" in e.value.body["message"]
    with pytest.raises(openai.BadRequestError) as e:
        c.responses.create(model=MODEL_ID, input="x", extra_body={"bogus": 1})
    assert e.value.body["code"] == "unknown_parameter"


# At temperature 0 the default model answers this with the call object itself.
CALL_INPUT = ('Output only this JSON and nothing else: {"name": "get_weather", '
              '"arguments": {"city": "Paris"}}')


def test_function_tool_round_trip(brisk_server):
    c = brisk_server.client()
    # tool_choice "auto" (the default): the model starts the call itself.
    raw = c.responses.with_raw_response.create(model=MODEL_ID, input=CALL_INPUT,
                                               tools=[WEATHER_TOOL], max_output_tokens=60,
                                               temperature=0)
    assert raw.headers.get("x-brisk-tool-choice") == "auto"
    first = raw.parse()
    calls = [o for o in first.output if o.type == "function_call"]
    assert calls and first.output[0].type == "function_call", first.output
    call = calls[0]
    assert call.name == "get_weather" and call.call_id.startswith("call_")
    assert isinstance(json.loads(call.arguments)["city"], str)
    # The tool's result, by previous_response_id: the model answers in text.
    second = c.responses.create(
        model=MODEL_ID, previous_response_id=first.id, tools=[WEATHER_TOOL],
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "18 C, sunny"}],
        max_output_tokens=30, temperature=0)
    assert second.output[0].type == "message" and second.output_text
    # The same with the whole history sent as input items (store=False).
    third = c.responses.create(
        model=MODEL_ID, store=False, tools=[WEATHER_TOOL],
        input=[{"role": "user", "content": "What is the weather in Paris?"},
               {"type": "function_call", "call_id": call.call_id, "name": call.name,
                "arguments": call.arguments},
               {"type": "function_call_output", "call_id": call.call_id, "output": "18 C"}],
        max_output_tokens=30, temperature=0)
    assert third.output[0].type == "message"


def test_auto_question_is_a_message(brisk_server):
    # tool_choice "auto" is decided by what the model writes, not before
    # generation: a question it answers in text is a message item.
    r = brisk_server.client().responses.create(
        model=MODEL_ID, input="What is the weather in Paris?", tools=[WEATHER_TOOL],
        max_output_tokens=30, temperature=0)
    assert [o.type for o in r.output] == ["message"] and r.output_text


def test_auto_function_call_streamed(brisk_server):
    events = list(brisk_server.client().responses.create(
        model=MODEL_ID, input=CALL_INPUT, tools=[WEATHER_TOOL], max_output_tokens=60,
        temperature=0, stream=True))
    types = [e.type for e in events]
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [e.item.type for e in added] == ["function_call"] and added[0].output_index == 0
    assert "response.output_text.delta" not in types
    args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert json.loads(args) == {"city": "Paris"}
    final = events[-1]
    assert final.type == "response.completed"
    assert [o.type for o in final.response.output] == ["function_call"]


def test_auto_parallel_function_calls_streamed(brisk_server):
    # parallel_tool_calls (the default): a JSON array of calls at the start
    # (the default model's template has no call marker) is one
    # function_call item per call, each with its own output_index.
    # At temperature 0 the default model echoes the array after one example
    # turn.
    calls = ('[{"name":"get_weather","arguments":{"city":"Paris"}},'
             '{"name":"get_weather","arguments":{"city":"Rome"}}]')
    ask = {"role": "user", "content": "Output only this JSON and nothing else: " + calls}
    events = list(brisk_server.client().responses.create(
        model=MODEL_ID, input=[ask, {"role": "assistant", "content": calls}, ask],
        tools=[WEATHER_TOOL], max_output_tokens=80, temperature=0, stream=True))
    added = [e for e in events if e.type == "response.output_item.added"]
    assert [(e.item.type, e.output_index) for e in added] == [("function_call", 0),
                                                             ("function_call", 1)]
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [json.loads(e.arguments) for e in done] == [{"city": "Paris"}, {"city": "Rome"}]
    # As OpenAI streams them: the first call is done before the second begins.
    order = [(e.type, e.output_index) for e in events
             if e.type in ("response.output_item.added", "response.output_item.done")]
    assert order == [("response.output_item.added", 0), ("response.output_item.done", 0),
                     ("response.output_item.added", 1), ("response.output_item.done", 1)]
    final = events[-1].response
    assert [o.type for o in final.output] == ["function_call", "function_call"]
    assert final.output[0].call_id != final.output[1].call_id


def test_function_call_streamed(brisk_server):
    events = list(brisk_server.client().responses.create(
        model=MODEL_ID, input="Weather in Rome?", tools=[WEATHER_TOOL], tool_choice="required",
        max_output_tokens=60, temperature=0, stream=True))
    types = [e.type for e in events]
    assert types[2] == "response.output_item.added" and events[2].item.type == "function_call"
    assert "response.function_call_arguments.delta" in types
    done = [e for e in events if e.type == "response.function_call_arguments.done"][0]
    assert json.loads(done.arguments)["city"]
    assert types[-1] == "response.completed"
    assert events[-1].response.output[0].arguments == done.arguments


TENANT_CONFIG = """
keys:
  - key: sk-a
    tenant: a
  - key: sk-b
    tenant: b
"""


def test_store_is_per_tenant(make_server):
    s = make_server(config_text=TENANT_CONFIG)
    a, b = s.client(api_key="sk-a"), s.client(api_key="sk-b")
    r = a.responses.create(model=MODEL_ID, input="Hi", max_output_tokens=4)
    assert a.responses.retrieve(r.id).id == r.id
    with pytest.raises(openai.NotFoundError):
        b.responses.retrieve(r.id)
    with pytest.raises(openai.NotFoundError):
        b.responses.create(model=MODEL_ID, input="x", previous_response_id=r.id)
    with pytest.raises(openai.NotFoundError):
        b.responses.delete(r.id)
    with pytest.raises(openai.AuthenticationError):
        s.client(api_key="wrong").responses.retrieve(r.id)


FINAL_RESULT_TOOL = {
    "type": "function", "name": "final_result", "description": "The final answer",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                    "weather": {"type": "string"}},
                   "required": ["city", "weather"], "additionalProperties": False},
}


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function", "name": "final_result"}])
def test_a_forced_call_cut_off_is_never_text(brisk_server, tool_choice):
    c = brisk_server.client()
    kw = dict(model=MODEL_ID, input="The weather in Paris?", tools=[FINAL_RESULT_TOOL],
              tool_choice=tool_choice, max_output_tokens=6, temperature=0)
    r = c.responses.create(**kw)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert [o.type for o in r.output if o.type == "message"] == [], r.output
    assert r.output_text == ""
    events = list(c.responses.create(stream=True, **kw))
    types = [e.type for e in events]
    assert not [t for t in types if "output_text" in t], types
    assert types[-1] == "response.incomplete"
    for e in events:
        if e.type == "response.output_item.done":
            assert e.item.type == "function_call" and e.item.status == "incomplete"
    if tool_choice != "required":
        return  # named, the 135M model repeats itself inside the arguments until the cap
    # Uncut, the same request is one complete call.
    whole = c.responses.create(**{**kw, "max_output_tokens": 80})
    assert whole.status == "completed"
    assert [o.type for o in whole.output] == ["function_call"]
    assert set(json.loads(whole.output[0].arguments)) == {"city", "weather"}


class Weather(BaseModel):
    city: str = Field(max_length=20)
    weather: str = Field(max_length=40)


def test_a_format_with_a_forced_tool_choice_constrains_the_call(brisk_server):
    """instructor's Responses tools mode sends both: the call follows the tool's
    schema; the format is for later text."""
    c = brisk_server.client()
    schema = Weather.model_json_schema()
    schema["additionalProperties"] = False
    r = c.responses.create(
        model=MODEL_ID, input="The weather in Paris?", tools=[FINAL_RESULT_TOOL],
        tool_choice="required", max_output_tokens=80, temperature=0,
        text={"format": {"type": "json_schema", "name": "weather", "schema": schema,
                         "strict": True}})
    assert [o.type for o in r.output] == ["function_call"], r.output
    assert r.output[0].name == "final_result"
    json.loads(r.output[0].arguments)
    # Chat takes the same combination.
    chat = c.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "The weather in Paris?"}],
        tools=[{"type": "function", "function": {"name": "final_result",
                                                 "parameters": FINAL_RESULT_TOOL["parameters"]}}],
        tool_choice="required", max_tokens=80, temperature=0,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "weather", "schema": schema, "strict": True}})
    assert chat.choices[0].message.tool_calls[0].function.name == "final_result"
