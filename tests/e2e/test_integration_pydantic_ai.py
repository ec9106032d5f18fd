"""pydantic-ai end to end: a real Agent with its own OpenTelemetry instrumentation, a scripted
FunctionModel, and the `OtelGuard` capability. Every assertion about what the agent was told is made
on the messages the FunctionModel received."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from typing import Any, Iterator

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import (
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    UserPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

import otelguard
from otelguard.demo.scenarios import CHANT_LINES, reasoning_text
from otelguard.guards.repeat_tool_reminder import SHORT_TEXT
from otelguard.integrations.pydantic_ai import OtelGuard
import otel_support

STEER_TEXT = (
    "You are repeating the same reasoning without acting (several long reasoning-only calls with no "
    "output). Stop deliberating and either call a tool or produce a concise answer now."
)
TIMEOUT_MESSAGE = "tool call timed out after 100ms"


class Guarded(otel_support.Guarded):
    """A guarded provider exporting enriched spans to memory (otel_support.Guarded) that agents trace into."""

    def agent(self, model: Any, **kwargs: Any) -> Agent:
        instrumentation = Instrumentation(settings=InstrumentationSettings(tracer_provider=self.provider))
        capabilities = [instrumentation, *kwargs.pop("capabilities", [OtelGuard()])]
        return Agent(model, capabilities=capabilities, **kwargs)

    def spans(self, name_prefix: str) -> list[Any]:
        return [s for s in self.exporter.get_finished_spans() if s.name.startswith(name_prefix)]


@pytest.fixture
def guarded() -> Iterator[Any]:
    with ExitStack() as made:  # each one built is shut down after the test
        yield lambda config=None: made.enter_context(Guarded(config))


class Recorder:
    """A FunctionModel function that records every message list it was sent."""

    def __init__(self, respond: Any):
        self.respond = respond
        self.requests: list[list[Any]] = []

    def __call__(self, messages: list[Any], info: AgentInfo) -> ModelResponse:
        self.requests.append(list(messages))
        return self.respond(len(self.requests), messages)


def last_request_texts(messages: list[Any]) -> list[str]:
    request = messages[-1]
    assert isinstance(request, ModelRequest)
    return [part.content if isinstance(part.content, str) else repr(part.content) for part in request.parts]


def guard_parts(messages: list[Any], text: str) -> list[str]:
    return [t for t in last_request_texts(messages) if text in t]


def tool_returns(messages: list[Any]) -> list[ToolReturnPart]:
    return [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]


def repeating_weather(call: int, messages: list[Any]) -> ModelResponse:
    if call <= 4:
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"})])
    return ModelResponse(parts=[TextPart("It is sunny in Paris.")])


def reasoning_only(call: int, messages: list[Any]) -> ModelResponse:
    if call <= 4:
        return ModelResponse(parts=[ThinkingPart(reasoning_text(call))])
    return ModelResponse(parts=[TextPart("done")])


def weather_agent(guarded_env: Guarded, model: Recorder, **kwargs: Any) -> Agent:
    agent = guarded_env.agent(FunctionModel(model), name="weather-agent", **kwargs)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        return f"sunny in {city}"

    return agent


# --- inject ----------------------------------------------------------------------------------------

def test_repeated_tool_call_reminder_reaches_the_next_model_request(guarded):
    """The third identical get_weather call makes the fourth request carry the exact short reminder."""
    env = guarded()
    model = Recorder(repeating_weather)
    weather_agent(env, model).run_sync("weather?")
    assert [guard_parts(request, SHORT_TEXT) != [] for request in model.requests] == [
        False, False, False, True, False]
    assert len(guard_parts(model.requests[3], SHORT_TEXT)) == 1
    assert len(tool_returns(model.requests[3])) == 3


def test_reminder_comes_after_the_steps_tool_results(guarded):
    """In the request that carries it, the reminder follows the tool result of the repeated call."""
    env = guarded()
    model = Recorder(repeating_weather)
    weather_agent(env, model).run_sync("weather?")
    parts = model.requests[3][-1].parts
    assert [part.part_kind for part in parts] == ["tool-return", "user-prompt"]  # FunctionModel frames system notes
    assert SHORT_TEXT in parts[1].content


SOURCE = {"guard": "repeat-tool-reminder", "rule": "repeat-threshold", "kind": "plugin", "plugin": "repeat-tool-reminder"}


def test_reminder_is_kept_in_the_run_history_with_its_source(guarded):
    """The delivered reminder stays in the run's messages as a user prompt, its request naming the guard."""
    env = guarded()
    model = Recorder(repeating_weather)
    result = weather_agent(env, model).run_sync("weather?")
    requests = [m for m in result.all_messages() if isinstance(m, ModelRequest)
                and any(isinstance(p, UserPromptPart) and p.content == SHORT_TEXT for p in m.parts)]
    assert len(requests) == 1
    assert requests[0].metadata["otelguard"] == [SOURCE]
    assert not [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts
                if isinstance(p, SystemPromptPart) and SHORT_TEXT in p.content]


def test_reminder_is_a_user_prompt_by_default(guarded):
    """Without a role the model gets the reminder text verbatim as a user prompt part, never a system one."""
    env = guarded()
    model = Recorder(repeating_weather)
    weather_agent(env, model).run_sync("weather?")
    part = model.requests[3][-1].parts[-1]
    assert (part.part_kind, part.content) == ("user-prompt", SHORT_TEXT)


def test_system_role_sends_the_reminder_as_a_system_prompt_naming_the_guard(guarded):
    """With role="system" (asked for) the reminder is a SystemPromptPart whose metadata names the guard."""
    env = guarded()
    model = Recorder(repeating_weather)
    result = weather_agent(env, model, capabilities=[OtelGuard(role="system")]).run_sync("weather?")
    notes = [p for m in result.all_messages() if isinstance(m, ModelRequest) for p in m.parts
             if isinstance(p, SystemPromptPart) and p.content == SHORT_TEXT]
    assert len(notes) == 1 and notes[0].metadata["otelguard"] == SOURCE


def test_the_runs_own_control_wins_over_an_outer_bound_control(guarded):
    """An outer bind_control does not divert the reminder away from the running agent."""
    env = guarded()
    model = Recorder(repeating_weather)
    with otelguard.bind_control(otelguard.Mailbox()) as outer:
        weather_agent(env, model).run_sync("weather?")
    assert guard_parts(model.requests[3], SHORT_TEXT)
    assert outer.drain() == []


# --- steer and cancel ------------------------------------------------------------------------------

def test_reasoning_only_loop_is_steered_in_the_fourth_request(guarded):
    """Three long reasoning-only calls make the fourth request carry the steer text."""
    env = guarded()
    model = Recorder(reasoning_only)
    env.agent(FunctionModel(model), name="thinker", retries=8).run_sync("fix the bug")
    assert [bool(guard_parts(request, STEER_TEXT)) for request in model.requests[:4]] == [False, False, False, True]


def test_reasoning_only_loop_is_cancelled_under_escalate_cancel(guarded):
    """Under escalate: cancel the run raises AgentCancelled after the third call, before a fourth."""
    env = guarded({"guards": [{"id": "thinking-loop-guard", "config": {"escalate": "cancel"}}]})
    model = Recorder(reasoning_only)
    agent = env.agent(FunctionModel(model), name="thinker", retries=8)
    with pytest.raises(otelguard.AgentCancelled) as raised:
        agent.run_sync("fix the bug")
    assert raised.value.cause == "thinking-loop"
    assert raised.value.verdict.rule == "reasoning-only"
    assert len(model.requests) == 3


# --- streams ---------------------------------------------------------------------------------------

async def chant(messages: list[Any], info: AgentInfo) -> Any:
    for line in CHANT_LINES:
        yield line


def test_chanting_stream_is_cut_with_repetitive_output(guarded):
    """watch_stream over run_stream's text deltas cuts the chant with RepetitiveOutputError."""
    env = guarded()
    agent = env.agent(FunctionModel(stream_function=chant), name="chanter")
    seen: list[str] = []

    async def consume() -> None:
        async with agent.run_stream("run the tests") as result:
            async for delta in otelguard.watch_stream(result.stream_text(delta=True, debounce_by=None)):
                seen.append(delta)

    with pytest.raises(otelguard.RepetitiveOutputError) as raised:
        asyncio.run(consume())
    assert (raised.value.code, raised.value.rule) == ("REPETITIVE_OUTPUT", "repeating-cycle")
    assert len(seen) < len(CHANT_LINES)


def test_cut_stream_span_carries_the_break_verdict(guarded):
    """The cut model call's span is marked action=break with the REPETITIVE_OUTPUT code."""
    env = guarded()
    agent = env.agent(FunctionModel(stream_function=chant), name="chanter")

    async def consume() -> None:
        async with agent.run_stream("run the tests") as result:
            async for _ in otelguard.watch_stream(result.stream_text(delta=True, debounce_by=None)):
                pass

    with pytest.raises(otelguard.RepetitiveOutputError):
        asyncio.run(consume())
    (chat,) = env.spans("chat")
    assert chat.attributes["otelguard.action"] == "break"
    assert chat.attributes["otelguard.error.code"] == "REPETITIVE_OUTPUT"


def test_break_correction_reaches_the_next_run_of_the_conversation(guarded):
    """After a cut, the next run in the same conversation starts with the guard's correction."""
    env = guarded()
    answered = Recorder(lambda call, messages: ModelResponse(parts=[TextPart("tests pass")]))
    agent = env.agent(FunctionModel(answered, stream_function=chant), name="chanter")

    async def scenario() -> None:
        with pytest.raises(otelguard.RepetitiveOutputError):
            async with agent.run_stream("run the tests", conversation_id="conv-1") as result:
                async for _ in otelguard.watch_stream(result.stream_text(delta=True, debounce_by=None)):
                    pass
        await agent.run("report in one line", conversation_id="conv-1")

    asyncio.run(scenario())
    (request,) = answered.requests
    assert guard_parts(request, "Your output had repeated itself for")


# --- tool budgets ----------------------------------------------------------------------------------

def slow_tool_model(call: int, messages: list[Any]) -> ModelResponse:
    if call == 1:
        return ModelResponse(parts=[ToolCallPart("run_tests", {"suite": "all"})])
    return ModelResponse(parts=[TextPart("timed out")])


def structured_timeout(messages: list[Any]) -> dict[str, Any]:
    (returned,) = tool_returns(messages)
    assert isinstance(returned.content, dict)
    return returned.content


def test_tool_overrunning_its_declared_timeout_returns_the_structured_error(guarded):
    """A tool declared with timeout=0.1 that ignores the signal is stopped, and the model gets TOOL_TIMEOUT."""
    env = guarded()
    model = Recorder(slow_tool_model)
    agent = env.agent(FunctionModel(model), name="runner")

    @agent.tool_plain(timeout=0.1)
    async def run_tests(suite: str) -> str:
        await asyncio.sleep(30)
        return "412 passed"

    agent.run_sync("run everything")
    error = structured_timeout(model.requests[1])
    assert error["isError"] is True
    assert error["error"] == {"message": TIMEOUT_MESSAGE, "info": {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"}}
    assert error["content"] == [{"type": "text", "text": f"Error: {TIMEOUT_MESSAGE}"}]


def test_cooperative_tool_sees_its_signal_aborted_at_the_declared_timeout(guarded):
    """The tool's otelguard.tool_signal() is aborted with TOOL_TIMEOUT when its declared timeout passes.

    The guard's watchdog and pydantic-ai's own timer share the deadline; whichever fires first, the
    signal ends aborted (pydantic-ai cancelling the tool first makes the guard abort it then), so
    the signal is checked, not whether the cancelled coroutine got to look at it."""
    env = guarded()
    model = Recorder(slow_tool_model)
    agent = env.agent(FunctionModel(model), name="runner")
    signals: list[Any] = []

    @agent.tool_plain(timeout=0.1)
    async def run_tests(suite: str) -> str:
        signal = otelguard.tool_signal()
        signals.append(signal)
        await asyncio.wait_for(signal.wait_async(), timeout=30)
        return "stopped"

    agent.run_sync("run everything")
    assert [(signal.timed_out, signal.reason) for signal in signals] == [(True, "TOOL_TIMEOUT")]
    assert structured_timeout(model.requests[1])["error"]["message"] == TIMEOUT_MESSAGE


def test_timed_out_tool_span_carries_the_tool_timeout_verdict(guarded):
    """The aborted call's execute_tool span is judged rule=tool-timeout, action=abort, with its budget."""
    env = guarded()
    agent = env.agent(FunctionModel(Recorder(slow_tool_model)), name="runner")

    @agent.tool_plain(timeout=0.1)
    async def run_tests(suite: str) -> str:
        await asyncio.sleep(30)
        return "412 passed"

    agent.run_sync("run everything")
    (span,) = env.spans("execute_tool")
    assert (span.attributes["otelguard.rule"], span.attributes["otelguard.action"]) == ("tool-timeout", "abort")
    assert span.attributes["otelguard.tool.timeout_ms"] == 100.0


def test_budget_decorator_works_on_a_pydantic_ai_tool(guarded):
    """@otelguard.budget on a tool function aborts it inside pydantic-ai's tool span."""
    env = guarded()
    model = Recorder(slow_tool_model)
    agent = env.agent(FunctionModel(model), name="runner")

    @agent.tool_plain
    @otelguard.budget(timeout_ms=100)
    async def run_tests(suite: str) -> str:
        await asyncio.sleep(30)
        return "412 passed"

    agent.run_sync("run everything")
    assert structured_timeout(model.requests[1])["error"]["message"] == TIMEOUT_MESSAGE
    assert len(env.spans("execute_tool")) == 1


def test_tool_finishing_within_its_timeout_is_untouched(guarded):
    """A tool that returns before its declared timeout passes its own result to the model."""
    env = guarded()
    model = Recorder(slow_tool_model)
    agent = env.agent(FunctionModel(model), name="runner")

    @agent.tool_plain(timeout=5)
    async def run_tests(suite: str) -> str:
        return "412 passed"

    agent.run_sync("run everything")
    assert [part.content for part in tool_returns(model.requests[1])] == ["412 passed"]


def test_instrument_all_agents_get_the_reminder_too(guarded):
    """With Agent.instrument_all instead of an Instrumentation capability, the reminder still arrives."""
    env = guarded()
    model = Recorder(repeating_weather)
    previous = Agent._instrument_default
    Agent.instrument_all(InstrumentationSettings(tracer_provider=env.provider))
    try:
        agent = Agent(FunctionModel(model), name="weather-agent", capabilities=[OtelGuard()])

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return f"sunny in {city}"

        agent.run_sync("weather?")
    finally:
        Agent.instrument_all(previous)
    assert len(guard_parts(model.requests[3], SHORT_TEXT)) == 1
