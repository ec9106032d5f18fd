"""OpenAI Agents SDK end to end: a real Runner talking to the fake OpenAI server on 127.0.0.1 through
the real `openai` client, traced by a real bridge (OpenInference's or OpenLLMetry's
OpenAIAgentsInstrumentor) into a TracerProvider guarded by GuardSpanProcessor. What the model was
sent is read from the request bodies the server recorded."""

from __future__ import annotations

import asyncio
from typing import Any, Iterator

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool, set_trace_processors
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

import otelguard
from otelguard.demo.scenarios import reasoning_text
from otelguard.guards.repeat_tool_reminder import SHORT_TEXT
from otelguard.integrations.openai_agents import AgentsGuard

from fake_openai_server import FakeOpenAIServer, Reply, ToolCallReply

BRIDGES = ["openinference", "openllmetry"]
APIS = ["responses", "chat"]


def _instrumentor(bridge: str) -> Any:
    if bridge == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        return OpenAIAgentsInstrumentor()
    module = pytest.importorskip("opentelemetry.instrumentation.openai_agents")
    return module.OpenAIAgentsInstrumentor(replace_existing_processors=True)


class Bridged:
    """A guarded TracerProvider with an Agents SDK bridge instrumented onto it."""

    def __init__(self, bridge: str, config: Any = None):
        self.exporter = InMemorySpanExporter()
        self.processor = otelguard.GuardSpanProcessor(config, downstream=[SimpleSpanProcessor(self.exporter)])
        self.provider = TracerProvider()
        self.provider.add_span_processor(self.processor)
        self.instrumentor = _instrumentor(bridge)
        self.instrumentor.instrument(tracer_provider=self.provider)

    def close(self) -> None:
        self.instrumentor.uninstrument()
        set_trace_processors([])  # OpenLLMetry leaves its processor registered; no SDK exporter either
        self.provider.shutdown()


@pytest.fixture
def bridged(monkeypatch) -> Iterator[Any]:
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    made: list[Bridged] = []

    def build(bridge: str, config: Any = None) -> Bridged:
        made.append(Bridged(bridge, config))
        return made[-1]

    yield build
    for env in made:
        env.close()


def model_for(api: str, server: FakeOpenAIServer) -> Any:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test")
    if api == "responses":
        return OpenAIResponsesModel("fake-model", client)
    return OpenAIChatCompletionsModel("fake-model", client)


def items_of(body: dict[str, Any]) -> list[dict[str, Any]]:
    items = body.get("input") if "input" in body else body.get("messages")
    return items if isinstance(items, list) else [{"role": "user", "content": items}]


def tool_outputs(body: dict[str, Any]) -> int:
    return sum(1 for item in items_of(body) if item.get("type") == "function_call_output" or item.get("role") == "tool")


def texts_after_last_tool_output(body: dict[str, Any]) -> list[str]:
    items = items_of(body)
    last = max(i for i, item in enumerate(items) if item.get("type") == "function_call_output" or item.get("role") == "tool")
    return [str(item.get("content")) for item in items[last + 1:]]


def repeat_weather(path: str, body: dict[str, Any]) -> Reply:
    if tool_outputs(body) < 4:
        return Reply(tool_calls=(ToolCallReply("get_weather", {"city": "Paris"}),))
    return Reply(text="It is sunny in Paris.")


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"sunny in {city}"


def weather_agent(model: Any) -> Agent:
    return Agent(name="WeatherAgent", instructions="Answer weather questions.", tools=[get_weather], model=model)


# --- inject ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("bridge", BRIDGES)
def test_repeated_tool_call_reminder_reaches_the_next_model_input(bridged, bridge, api):
    """After the third identical call, the next request body carries the reminder after the tool output."""
    bridged(bridge)
    with FakeOpenAIServer(repeat_weather) as server:
        asyncio.run(AgentsGuard().run(weather_agent(model_for(api, server)), "weather?"))
        bodies = server.bodies()
    assert [tool_outputs(body) for body in bodies] == [0, 1, 2, 3, 4]
    assert texts_after_last_tool_output(bodies[3]) == [SHORT_TEXT]
    assert {"role": "user", "content": SHORT_TEXT} in items_of(bodies[3])  # user role by default


def test_delivered_reminder_is_resent_at_its_place_in_later_calls(bridged):
    """Later model calls of the run still carry the reminder right after the third tool output."""
    bridged("openinference")
    with FakeOpenAIServer(repeat_weather) as server:
        asyncio.run(AgentsGuard().run(weather_agent(model_for("responses", server)), "weather?"))
        last = items_of(server.bodies()[4])
    position = last.index({"role": "user", "content": SHORT_TEXT})
    assert last[position - 1]["type"] == "function_call_output"
    assert [item.get("type") for item in last[position + 1:]] == ["function_call", "function_call_output"]


def test_reminder_is_sent_with_the_configured_role(bridged):
    """AgentsGuard(role="developer") sends the reminder as a developer message."""
    bridged("openinference")
    with FakeOpenAIServer(repeat_weather) as server:
        asyncio.run(AgentsGuard(role="developer").run(weather_agent(model_for("responses", server)), "weather?"))
        assert {"role": "developer", "content": SHORT_TEXT} in items_of(server.bodies()[3])


def test_an_existing_input_filter_still_runs_before_the_guard(bridged):
    """run_config(base) keeps the caller's call_model_input_filter and appends the reminder after its result."""
    bridged("openinference")
    seen: list[int] = []

    def count_items(data: Any) -> Any:
        seen.append(len(data.model_data.input))
        return data.model_data

    with FakeOpenAIServer(repeat_weather) as server:
        guard = AgentsGuard()
        asyncio.run(guard.run(weather_agent(model_for("responses", server)), "weather?",
                              run_config=RunConfig(call_model_input_filter=count_items)))
        assert texts_after_last_tool_output(server.bodies()[3]) == [SHORT_TEXT]
    assert seen == [1, 3, 5, 7, 9]


def test_runner_with_bound_guard_and_its_run_config_delivers_the_reminder(bridged):
    """Runner.run inside bind_control(guard) with guard.run_config() is the same as guard.run."""
    bridged("openinference")
    guard = AgentsGuard()
    with FakeOpenAIServer(repeat_weather) as server:
        async def run() -> None:
            with otelguard.bind_control(guard):
                await Runner.run(weather_agent(model_for("chat", server)), "weather?", run_config=guard.run_config())

        asyncio.run(run())
        assert texts_after_last_tool_output(server.bodies()[3]) == [SHORT_TEXT]


# --- cancel ----------------------------------------------------------------------------------------

class BugReport(BaseModel):
    cause: str


def reasoning_only(path: str, body: dict[str, Any]) -> Reply:
    # Each call only reasons, so the SDK runs the agent again (a structured output type got no output).
    return Reply(reasoning=reasoning_text(len(items_of(body))), output_tokens=700, reasoning_tokens=690)


@pytest.mark.parametrize("bridge", BRIDGES)
def test_reasoning_only_loop_is_cancelled_under_escalate_cancel(bridged, bridge):
    """Under escalate: cancel the run raises AgentCancelled before a fourth model call."""
    bridged(bridge, {"guards": [{"id": "thinking-loop-guard", "config": {"escalate": "cancel"}}]})
    with FakeOpenAIServer(reasoning_only) as server:
        agent = Agent(name="Planner", instructions="Find the bug.", model=model_for("responses", server),
                      output_type=BugReport)
        with pytest.raises(otelguard.AgentCancelled) as raised:
            asyncio.run(AgentsGuard().run(agent, "why is it flaky?", max_turns=8))
        assert len(server.bodies()) == 3
    assert raised.value.cause == "thinking-loop"


def test_reasoning_only_loop_is_steered_in_the_fourth_request(bridged):
    """With the default escalate: steer the fourth request carries the steer text."""
    bridged("openinference")

    def script(path: str, body: dict[str, Any]) -> Reply:
        if any("Stop deliberating" in str(item.get("content")) for item in items_of(body)):
            return Reply(text='{"cause": "cache TTL"}')
        return reasoning_only(path, body)

    with FakeOpenAIServer(script) as server:
        agent = Agent(name="Planner", instructions="Find the bug.", model=model_for("responses", server),
                      output_type=BugReport)
        result = asyncio.run(AgentsGuard().run(agent, "why is it flaky?", max_turns=8))
        bodies = server.bodies()
    assert result.final_output == BugReport(cause="cache TTL")
    assert ["Stop deliberating" in str(items_of(body)[-1].get("content")) for body in bodies] == [
        False, False, False, True]


def test_cancel_in_a_streamed_run_surfaces_from_stream_events(bridged):
    """A guard cancel in Runner.run_streamed ends stream_events() with AgentCancelled."""
    bridged("openinference", {"guards": [{"id": "thinking-loop-guard", "config": {"escalate": "cancel"}}]})
    with FakeOpenAIServer(reasoning_only) as server:
        agent = Agent(name="Planner", instructions="Find the bug.", model=model_for("responses", server),
                      output_type=BugReport)

        async def consume() -> None:
            result = AgentsGuard().run_streamed(agent, "why is it flaky?", max_turns=8)
            async for _ in result.stream_events():
                pass

        with pytest.raises(otelguard.AgentCancelled):
            asyncio.run(consume())
        assert len(server.bodies()) == 3


# --- tool budgets ----------------------------------------------------------------------------------

@pytest.mark.parametrize("bridge", BRIDGES)
def test_budget_decorator_aborts_a_function_tool_inside_the_bridge_span(bridged, bridge):
    """@otelguard.budget under @function_tool arms on the bridge's tool span; the model gets TOOL_TIMEOUT."""
    env = bridged(bridge)

    @function_tool
    @otelguard.budget(timeout_ms=100)
    async def run_tests(suite: str) -> str:
        """Run the test suite."""
        await asyncio.sleep(30)
        return "412 passed"

    def script(path: str, body: dict[str, Any]) -> Reply:
        if tool_outputs(body) == 0:
            return Reply(tool_calls=(ToolCallReply("run_tests", {"suite": "all"}),))
        return Reply(text="timed out")

    with FakeOpenAIServer(script) as server:
        agent = Agent(name="Runner", tools=[run_tests], model=model_for("responses", server))
        asyncio.run(AgentsGuard().run(agent, "run the tests"))
        output = items_of(server.bodies()[1])[-1]["output"]
    assert "tool call timed out after 100ms" in output and "TOOL_TIMEOUT" in output
    (tool_span,) = [s for s in env.exporter.get_finished_spans() if s.attributes.get("otelguard.rule") == "tool-timeout"]
    assert tool_span.attributes["otelguard.action"] == "abort"
