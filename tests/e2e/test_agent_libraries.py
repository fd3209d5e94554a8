"""The agent and structured-output libraries teams use, unchanged, against
`brisk serve` and `brisk gateway` on the default model: openai-agents (a
function tool and a typed output, on the Responses model and the chat model),
LangChain's ChatOpenAI (with_structured_output, bind_tools), pydantic-ai
(typed output, with and without a tool) and instructor (tools, JSON-schema and
Responses-tools modes). A 135M model's wording is not the point: each test
checks the protocol (the calls made, finish reasons, what parses into the
typed output). Both the chat and the Responses cases run against `brisk serve` and
through `brisk gateway` (which keeps the stored responses itself)."""
import asyncio
import importlib
import signal

import openai
import pytest
from pydantic import BaseModel, Field

from conftest import MODEL_ID, skip_or_fail
from gateway_util import start_gateway, wait_models_known, write_gateway_config

try:
    for _name in ("agents", "langchain_openai", "pydantic_ai", "instructor"):
        importlib.import_module(_name)
except ImportError as _e:
    # Fails in CI (setup installs requirements-test.txt); skips on a bare machine.
    skip_or_fail(f"{_e.name} is missing: pip install -r requirements-test.txt")
import instructor  # noqa: E402

QUESTION = "What is the weather in Paris? Use the tool."


class Weather(BaseModel):
    city: str = Field(max_length=20)
    weather: str = Field(max_length=40)


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return f"Sunny, 18 C in {city}"


@pytest.fixture(scope="module")
def gateway_url(brisk_bin, brisk_server, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agent-gw")
    cfg = write_gateway_config(tmp / "gateway.yaml", [("small", [brisk_server.url],
                                                      (0.1, 0.02, 0.4))])
    gw = start_gateway(brisk_bin, cfg, tmp / "ledger.db")
    try:
        wait_models_known(gw, 1)
        yield gw.url
    finally:
        gw.stop(signal.SIGTERM)


@pytest.fixture(params=["serve", "gateway"])
def base_url(request, brisk_server):
    if request.param == "serve":
        return brisk_server.url + "/v1"
    return request.getfixturevalue("gateway_url") + "/v1"


# ---------------------------------------------------------------- openai-agents

def run_agent(model, tool_choice):
    from agents import Agent, ModelSettings, Runner, function_tool
    tool = function_tool(get_weather)
    agent = Agent(name="weather", instructions="Answer with the weather in the city asked about.",
                  tools=[tool], output_type=Weather, model=model,
                  model_settings=ModelSettings(temperature=0, max_tokens=120,
                                               tool_choice=tool_choice))
    return Runner.run_sync(agent, QUESTION, max_turns=4)


def agent_client(url):
    from agents import set_tracing_disabled
    set_tracing_disabled(True)
    return openai.AsyncOpenAI(base_url=url, api_key="none", max_retries=0)


@pytest.mark.parametrize("tool_choice", ["required", "auto"])
def test_openai_agents_on_the_responses_model(base_url, tool_choice):
    from agents import OpenAIResponsesModel
    model = OpenAIResponsesModel(model=MODEL_ID, openai_client=agent_client(base_url))
    result = run_agent(model, tool_choice)
    assert isinstance(result.final_output, Weather)
    called = [i for i in result.new_items if i.type == "tool_call_item"]
    if tool_choice == "required":  # the forced first turn calls the tool
        assert called and [i for i in result.new_items if i.type == "tool_call_output_item"]


@pytest.mark.parametrize("tool_choice", ["required", "auto"])
def test_openai_agents_on_the_chat_model(base_url, tool_choice):
    from agents import OpenAIChatCompletionsModel
    model = OpenAIChatCompletionsModel(model=MODEL_ID, openai_client=agent_client(base_url))
    result = run_agent(model, tool_choice)
    assert isinstance(result.final_output, Weather)
    if tool_choice == "required":
        assert [i for i in result.new_items if i.type == "tool_call_output_item"]


# ---------------------------------------------------------------- LangChain

def chat_openai(url, **kw):
    from langchain_openai import ChatOpenAI
    return ChatOpenAI(model=MODEL_ID, base_url=url, api_key="none", temperature=0,
                      max_tokens=120, max_retries=0, **kw)


@pytest.mark.parametrize("method", ["json_schema", "function_calling"])
def test_langchain_with_structured_output(base_url, method):
    llm = chat_openai(base_url).with_structured_output(Weather, method=method, include_raw=True)
    prompt = "The weather in Paris as JSON with keys city and weather."
    out = llm.invoke(prompt)
    assert out["parsing_error"] is None, out
    assert isinstance(out["parsed"], Weather)


def test_langchain_bind_tools(base_url):
    from langchain_core.messages import HumanMessage, ToolMessage
    llm = chat_openai(base_url)
    forced = llm.bind_tools([get_weather], tool_choice="get_weather")
    msg = forced.invoke(QUESTION)
    assert msg.tool_calls and msg.tool_calls[0]["name"] == "get_weather"
    assert isinstance(msg.tool_calls[0]["args"]["city"], str)
    assert msg.response_metadata["finish_reason"] == "tool_calls"
    # The tool's answer back: the model answers in text.
    call = msg.tool_calls[0]
    reply = llm.bind_tools([get_weather]).invoke(
        [HumanMessage(QUESTION), msg,
         ToolMessage(get_weather(**call["args"]), tool_call_id=call["id"])])
    assert reply.content and not reply.tool_calls
    # Streamed, the call arrives in chunks that add up to the same call.
    chunks = list(forced.stream(QUESTION))
    total = chunks[0]
    for c in chunks[1:]:
        total += c
    assert total.tool_calls[0]["name"] == "get_weather"


def test_langchain_on_the_responses_api(base_url):
    llm = chat_openai(base_url, use_responses_api=True)
    out = llm.with_structured_output(Weather, method="json_schema").invoke(
        "The weather in Paris as JSON with keys city and weather.")
    assert isinstance(out, Weather)
    msg = llm.bind_tools([get_weather], tool_choice="required").invoke(QUESTION)
    assert msg.tool_calls and msg.tool_calls[0]["name"] == "get_weather"


# ---------------------------------------------------------------- pydantic-ai

def pydantic_model(kind, url):
    from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider
    provider = OpenAIProvider(base_url=url, api_key="none")
    cls = OpenAIResponsesModel if kind == "responses" else OpenAIChatModel
    return cls(MODEL_ID, provider=provider)


def pydantic_cases():
    return [("chat", "serve"), ("chat", "gateway"), ("responses", "serve"),
            ("responses", "gateway")]


@pytest.fixture(params=pydantic_cases(), ids=lambda p: f"{p[0]}-{p[1]}")
def pydantic_target(request, brisk_server):
    kind, where = request.param
    url = brisk_server.url if where == "serve" else request.getfixturevalue("gateway_url")
    return pydantic_model(kind, url + "/v1")


def test_pydantic_ai_typed_output(pydantic_target):
    from pydantic_ai import Agent
    agent = Agent(pydantic_target, output_type=Weather,
                  instructions="Give the weather in the city asked about.")
    result = agent.run_sync("The weather in Paris?",
                            model_settings={"temperature": 0, "max_tokens": 120})
    assert isinstance(result.output, Weather)


def test_pydantic_ai_tool_and_typed_output(pydantic_target):
    from pydantic_ai import Agent, UsageLimits
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.messages import ToolCallPart
    agent = Agent(pydantic_target, output_type=Weather, tools=[get_weather],
                  instructions="Call get_weather, then give the final result.")
    try:
        result = agent.run_sync(QUESTION, model_settings={"temperature": 0, "max_tokens": 120},
                                usage_limits=UsageLimits(request_limit=4))
    except UsageLimitExceeded:
        pytest.xfail("the 135M model kept calling the tool")  # protocol fine, model's choice
    assert isinstance(result.output, Weather)
    calls = [p for m in result.all_messages() for p in getattr(m, "parts", [])
             if isinstance(p, ToolCallPart)]
    assert calls and all(isinstance(p.args_as_dict(), dict) for p in calls)


@pytest.mark.parametrize("kind", ["responses", "chat"])
def test_pydantic_ai_cut_off_output_call_is_the_token_limit_not_text(brisk_server, kind):
    """A forced output call cut by max_tokens is reported as the token limit, never
    parsed as text (the call's partial JSON once came back as output_text)."""
    from pydantic_ai import Agent
    from pydantic_ai.exceptions import UnexpectedModelBehavior
    agent = Agent(pydantic_model(kind, brisk_server.url + "/v1"), output_type=Weather)
    with pytest.raises(UnexpectedModelBehavior) as e:
        agent.run_sync("The weather in Paris?", model_settings={"temperature": 0,
                                                                 "max_tokens": 6})
    assert "token limit" in str(e.value), e.value


# ---------------------------------------------------------------- instructor

def instructor_client(url, mode):
    return instructor.from_openai(openai.OpenAI(base_url=url, api_key="none", max_retries=0),
                                  mode=mode)


@pytest.mark.parametrize("mode", ["TOOLS", "JSON_SCHEMA"])
def test_instructor_chat_modes(base_url, mode):
    client = instructor_client(base_url, getattr(instructor.Mode, mode))
    w = client.chat.completions.create(
        model=MODEL_ID, response_model=Weather, max_tokens=120, temperature=0, max_retries=0,
        messages=[{"role": "user", "content": "The weather in Paris?"}])
    assert isinstance(w, Weather)


def test_instructor_responses_tools_mode(base_url):
    client = instructor_client(base_url, instructor.Mode.RESPONSES_TOOLS)
    w = client.responses.create(model=MODEL_ID, response_model=Weather, max_output_tokens=120,
                                temperature=0, max_retries=0, input="The weather in Paris?")
    assert isinstance(w, Weather)


def test_the_libraries_async_clients_share_one_loop(brisk_server):
    """openai-agents runs on asyncio: two agents at once on one server."""
    from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner
    model = OpenAIResponsesModel(model=MODEL_ID,
                                 openai_client=agent_client(brisk_server.url + "/v1"))
    agent = Agent(name="w", output_type=Weather, model=model,
                  model_settings=ModelSettings(temperature=0, max_tokens=120))

    async def both():
        return await asyncio.gather(Runner.run(agent, "Weather in Oslo?"),
                                    Runner.run(agent, "Weather in Rome?"))

    results = asyncio.run(both())
    assert all(isinstance(r.final_output, Weather) for r in results)
