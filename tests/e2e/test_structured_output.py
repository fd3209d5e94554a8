"""Structured output (response_format) end to end: the real `openai` client
against `brisk serve` on the default model. Every completed output must
validate with Python's jsonschema; a generation cut by max_tokens ends with
finish_reason "length" and is counted."""
import enum
import json

import jsonschema
import openai
import pytest
from pydantic import BaseModel, Field

from conftest import MODEL_ID


class Color(str, enum.Enum):
    red = "red"
    green = "green"
    blue = "blue"


class Pet(BaseModel):
    name: str = Field(max_length=12)
    age: int = Field(ge=0, le=30)
    color: Color
    indoor: bool


PET_PROMPT = [{"role": "user", "content": "Describe a pet cat as JSON with name, age, color."}]

ORDER_SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 1, "maximum": 999},
        "status": {"enum": ["open", "paid", "shipped"]},
        "items": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {
                    "sku": {"type": "string", "minLength": 1, "maxLength": 8},
                    "qty": {"type": "integer", "minimum": 1, "maximum": 9},
                },
                "required": ["sku", "qty"],
                "additionalProperties": False,
            },
        },
        "note": {"anyOf": [{"type": "string", "maxLength": 10}, {"type": "null"}]},
    },
    "required": ["id", "status", "items", "note"],
    "additionalProperties": False,
}


def order_format(strict=True, schema=ORDER_SCHEMA):
    return {"type": "json_schema",
            "json_schema": {"name": "order", "schema": schema, "strict": strict}}


def test_parse_with_pydantic_model(brisk_server):
    client = brisk_server.client()
    before = brisk_server.metric("brisk:constrained_requests_total") or 0
    completion = client.beta.chat.completions.parse(
        model=MODEL_ID, messages=PET_PROMPT, response_format=Pet, max_tokens=120, temperature=0)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    pet = choice.message.parsed
    assert isinstance(pet, Pet)
    assert len(pet.name) <= 12 and 0 <= pet.age <= 30
    # Compact JSON, keys in the schema's order.
    assert choice.message.content == pet.model_dump_json()
    assert brisk_server.metric("brisk:constrained_requests_total") >= before + 1
    assert brisk_server.metric("brisk:grammar_mask_seconds_count") > 0


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_sampled_outputs_validate(brisk_server, seed):
    client = brisk_server.client()
    r = client.chat.completions.create(
        model=MODEL_ID, messages=[{"role": "user", "content": "Make up a small shop order."}],
        response_format=order_format(), max_tokens=200, temperature=1.0, seed=seed)
    choice = r.choices[0]
    assert choice.finish_reason in ("stop", "length")
    if choice.finish_reason == "stop":
        jsonschema.validate(json.loads(choice.message.content), ORDER_SCHEMA)


def test_n_samples_each_follow_the_grammar(brisk_server):
    client = brisk_server.client()
    r = client.chat.completions.create(
        model=MODEL_ID, messages=PET_PROMPT, n=3, temperature=1.0, seed=7, max_tokens=120,
        response_format={"type": "json_schema", "json_schema": {
            "name": "pet", "schema": Pet.model_json_schema(), "strict": False}})
    assert len(r.choices) == 3
    for c in r.choices:
        if c.finish_reason == "stop":
            jsonschema.validate(json.loads(c.message.content), Pet.model_json_schema())


def test_json_object_mode(brisk_server):
    client = brisk_server.client()
    done = 0
    for seed in range(4):
        r = client.chat.completions.create(
            model=MODEL_ID, temperature=0.7, seed=seed, max_tokens=150,
            messages=[{"role": "user", "content": "Reply with a JSON object with a name key."}],
            response_format={"type": "json_object"})
        c = r.choices[0]
        assert c.message.content.startswith("{")
        if c.finish_reason == "stop":
            assert isinstance(json.loads(c.message.content), dict)
            done += 1
    assert done >= 1


def test_completions_endpoint_extension(brisk_server):
    client = brisk_server.client()
    r = client.completions.create(
        model=MODEL_ID, prompt="A JSON order: ", max_tokens=200, temperature=0,
        extra_body={"response_format": order_format()})
    if r.choices[0].finish_reason == "stop":
        jsonschema.validate(json.loads(r.choices[0].text), ORDER_SCHEMA)
    else:
        assert r.choices[0].text.startswith("{")


def test_strict_unsupported_keyword_is_400(brisk_server):
    client = brisk_server.client()
    # Lookahead is a pattern feature the grammar cannot enforce.
    schema = {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^(?!0)[0-9]{5}$"}},
              "required": ["zip"], "additionalProperties": False}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=PET_PROMPT, max_tokens=20,
                                       response_format=order_format(True, schema))
    assert e.value.status_code == 400
    err = e.value.body
    assert err["code"] == "unsupported"
    assert err["param"] == "response_format.json_schema.schema"
    assert "pattern" in err["message"] and "/properties/zip" in err["message"]


def test_non_strict_reports_unenforced_keywords(brisk_server):
    client = brisk_server.client()
    schema = {"type": "object",
              "properties": {"zip": {"type": "string", "maxLength": 5, "pattern": "^(?!0)[0-9]+$"},
                             "day": {"type": "string", "maxLength": 10, "format": "duration"}},
              "required": ["zip", "day"], "additionalProperties": False}
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL_ID, messages=PET_PROMPT, max_tokens=60, temperature=0,
        response_format=order_format(False, schema))
    assert raw.headers["x-brisk-unenforced-keywords"] == \
        "pattern@/properties/zip,format@/properties/day"
    r = raw.parse()
    if r.choices[0].finish_reason == "stop":
        doc = json.loads(r.choices[0].message.content)
        assert set(doc) == {"zip", "day"} and len(doc["zip"]) <= 5


def test_streaming_chunks_concatenate_to_valid_json(brisk_server):
    client = brisk_server.client()
    stream = client.chat.completions.create(
        model=MODEL_ID, messages=PET_PROMPT, max_tokens=120, temperature=0, stream=True,
        response_format={"type": "json_schema", "json_schema": {
            "name": "pet", "schema": Pet.model_json_schema(), "strict": False}})
    text, finish = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            finish = chunk.choices[0].finish_reason or finish
    assert finish == "stop"
    jsonschema.validate(json.loads(text), Pet.model_json_schema())


def test_max_tokens_mid_object_is_length_and_counted(brisk_server):
    client = brisk_server.client()
    labels = {"reason": "length"}
    before = brisk_server.metric("brisk:structured_output_failures_total", labels) or 0
    r = client.chat.completions.create(model=MODEL_ID, messages=PET_PROMPT, max_tokens=3,
                                       response_format=order_format())
    assert r.choices[0].finish_reason == "length"
    assert r.choices[0].message.content.startswith("{")
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.choices[0].message.content)
    assert brisk_server.metric("brisk:structured_output_failures_total", labels) == before + 1


def test_invalid_schema_is_400(brisk_server):
    client = brisk_server.client()
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=PET_PROMPT, max_tokens=5,
                                       response_format=order_format(True, {"type": "strin"}))
    assert e.value.body["code"] == "invalid_value"


def test_strict_tagged_union_oneof_is_served_and_overlapping_oneof_is_400(brisk_server):
    # pydantic writes a discriminated union as oneOf over $refs with a
    # required Literal tag: its branches cannot both match, so anyOf's
    # grammar enforces it exactly and a strict request is served.
    from typing import Literal, Union

    class Cat(BaseModel):
        kind: Literal["cat"]
        lives: int = Field(ge=0, le=9)

    class Dog(BaseModel):
        kind: Literal["dog"]
        good: bool

    class Owner(BaseModel):
        pet: Union[Cat, Dog] = Field(discriminator="kind")

    schema = Owner.model_json_schema()
    assert "oneOf" in json.dumps(schema)
    client = brisk_server.client()
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL_ID, messages=PET_PROMPT, max_tokens=60, temperature=0,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "owner", "schema": schema, "strict": True}})
    assert "x-brisk-unenforced-keywords" not in raw.headers
    r = raw.parse()
    if r.choices[0].finish_reason == "stop":
        jsonschema.validate(json.loads(r.choices[0].message.content), schema)
    # Integers are numbers: "exactly one" cannot be enforced here.
    overlapping = {"type": "object", "properties": {"x": {"oneOf": [{"type": "integer"},
                                                                    {"type": "number"}]}},
                   "required": ["x"], "additionalProperties": False}
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model=MODEL_ID, messages=PET_PROMPT, max_tokens=20,
                                       response_format=order_format(True, overlapping))
    assert "oneOf" in e.value.body["message"] and "/properties/x" in e.value.body["message"]


# Gemma 3 (262k vocabulary, its built-in turn format): the same Pydantic
# parse, and sampled streamed answers that validate and are, chunk by chunk,
# the unstreamed answer of the same seed.
from test_gemma3 import GEMMA_ID, gemma  # noqa: E402,F401  (the module's server fixture)


def test_parse_with_pydantic_model_on_gemma(gemma):
    completion = gemma.client(timeout=120).beta.chat.completions.parse(
        model=GEMMA_ID, messages=PET_PROMPT, response_format=Pet, max_tokens=120, temperature=0)
    choice = completion.choices[0]
    assert choice.finish_reason == "stop"
    assert isinstance(choice.message.parsed, Pet)
    assert choice.message.content == choice.message.parsed.model_dump_json()


@pytest.mark.parametrize("seed", [1, 2])
def test_sampled_streams_validate_on_gemma(gemma, seed):
    stream = gemma.client(timeout=120).chat.completions.create(
        model=GEMMA_ID, messages=[{"role": "user", "content": "Make up a small shop order."}],
        response_format=order_format(), max_tokens=200, temperature=1.0, seed=seed, stream=True)
    text, finish = "", None
    for chunk in stream:
        for c in chunk.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    assert finish in ("stop", "length")
    if finish == "stop":
        jsonschema.validate(json.loads(text), ORDER_SCHEMA)
    body = gemma.client(timeout=120).chat.completions.create(
        model=GEMMA_ID, messages=[{"role": "user", "content": "Make up a small shop order."}],
        response_format=order_format(), max_tokens=200, temperature=1.0, seed=seed)
    assert (body.choices[0].message.content, body.choices[0].finish_reason) == (text, finish)
