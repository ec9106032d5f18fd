"""A hand-written agent loop with the plain `openai` client, traced by OpenInference's
OpenAIInstrumentor, guarded through an `otelguard.Mailbox` bound with `bind_control`. The loop drains
the mailbox before each call; the fake server's recorded request bodies prove what the model got."""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import Any, Iterator

import pytest

pytest.importorskip("openai")
pytest.importorskip("openinference.instrumentation.openai")

from openai import OpenAI
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider

import otelguard
from otelguard.demo.scenarios import reasoning_text
from otelguard.guards.repeat_tool_reminder import SHORT_TEXT
from otelguard.integrations.openai_client import agent_run, guard_messages, tool_call
from otel_support import Guarded

from fake_openai_server import FakeOpenAIServer, Reply, ToolCallReply

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


class Instrumented(Guarded):
    """A guarded provider that the OpenAI client's calls are traced into (by OpenInference)."""

    def __init__(self, config: Any = None):
        super().__init__(config)
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)

    def shutdown(self) -> None:
        self.instrumentor.uninstrument()
        super().shutdown()


@pytest.fixture
def instrumented() -> Iterator[Any]:
    with ExitStack() as built:  # each one built is uninstrumented and shut down after the test
        yield lambda config=None: built.enter_context(Instrumented(config))


def tool_messages(body: dict[str, Any]) -> int:
    return sum(1 for message in body["messages"] if message["role"] == "tool")


def repeat_weather(path: str, body: dict[str, Any]) -> Reply:
    if tool_messages(body) < 4:
        return Reply(tool_calls=(ToolCallReply("get_weather", {"city": "Paris"}),))
    return Reply(text="It is sunny in Paris.")


def run_loop(client: OpenAI, mailbox: otelguard.Mailbox, provider: TracerProvider, tool: Any,
             timeout_ms: float | None = None) -> None:
    """The hand-written loop under test: drain the mailbox, call the model, run the tools."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in Paris?"}]
    for _ in range(8):
        messages += [{"role": "user", "content": m.text} for m in mailbox.drain()]
        reply = client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            with tool_call(call.function.name, call.function.arguments, call_id=call.id,
                           timeout_ms=timeout_ms, tracer_provider=provider) as span:
                span.set_result(tool(**json.loads(call.function.arguments)))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": span.output})


def test_reminder_reaches_the_next_request_body_of_a_mailbox_loop(instrumented):
    """A loop that drains its bound Mailbox before each call sends the reminder after the third tool result."""
    env = instrumented()
    mailbox = otelguard.Mailbox()
    with FakeOpenAIServer(repeat_weather) as server:
        # One parent span per loop run: without an agent span, the trace is the agent.
        with otelguard.bind_control(mailbox), env.tracer.start_as_current_span("weather loop"):
            run_loop(OpenAI(base_url=server.base_url, api_key="test"), mailbox, env.provider,
                     lambda city: f"sunny in {city}")
        bodies = server.bodies()
    assert [tool_messages(body) for body in bodies] == [0, 1, 2, 3, 4]
    assert bodies[3]["messages"][-2]["role"] == "tool"
    assert bodies[3]["messages"][-1] == {"role": "user", "content": SHORT_TEXT}
    assert not any(m.get("content") == SHORT_TEXT for body in bodies[:3] for m in body["messages"])


def test_model_spans_of_the_loop_come_from_the_openai_instrumentation(instrumented):
    """The guard judged the OpenInference LLM spans of the loop alongside its tool spans."""
    env = instrumented()
    mailbox = otelguard.Mailbox()
    with FakeOpenAIServer(repeat_weather) as server:
        with otelguard.bind_control(mailbox), env.tracer.start_as_current_span("weather loop"):
            run_loop(OpenAI(base_url=server.base_url, api_key="test"), mailbox, env.provider,
                     lambda city: f"sunny in {city}")
    spans = env.exporter.get_finished_spans()
    assert sum(1 for s in spans if s.attributes.get("openinference.span.kind") == "LLM") == 5
    reminded = [s for s in spans if s.attributes.get("otelguard.action") == "remind"]
    assert [(s.name, s.attributes["otelguard.repeat.count"]) for s in reminded] == [("execute_tool get_weather", 3)]


def test_agent_run_helper_binds_the_mailbox_for_its_run(instrumented):
    """Inside agent_run(control=mailbox) the guard's reminder lands in that mailbox, drained by guard_messages."""
    env = instrumented()
    mailbox = otelguard.Mailbox()
    sent: list[list[dict[str, Any]]] = []
    with FakeOpenAIServer(repeat_weather) as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
        with agent_run("weather-loop", control=mailbox, tracer_provider=env.provider):
            messages: list[dict[str, Any]] = [{"role": "user", "content": "weather?"}]
            for _ in range(8):
                messages += guard_messages(mailbox)
                sent.append(list(messages))
                message = client.chat.completions.create(model="fake-model", messages=messages,
                                                         tools=TOOLS).choices[0].message
                if not message.tool_calls:
                    break
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    with tool_call(call.function.name, call.function.arguments, tracer_provider=env.provider) as t:
                        t.set_result("sunny")
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": t.output})
    assert sent[3][-1] == {"role": "user", "content": SHORT_TEXT}  # guard_messages: user role by default


def test_tool_call_budget_sends_the_structured_timeout_error(instrumented):
    """A tool_call(timeout_ms=100) whose tool waits on its signal returns TOOL_TIMEOUT to the model."""
    env = instrumented()
    mailbox = otelguard.Mailbox()

    def script(path: str, body: dict[str, Any]) -> Reply:
        if tool_messages(body) == 0:
            return Reply(tool_calls=(ToolCallReply("get_weather", {"city": "Paris"}),))
        return Reply(text="The weather service timed out.")

    def slow_weather(city: str) -> str:
        otelguard.tool_signal().wait(30)
        return "too late"

    with FakeOpenAIServer(script) as server:
        with otelguard.bind_control(mailbox), env.tracer.start_as_current_span("weather loop"):
            run_loop(OpenAI(base_url=server.base_url, api_key="test"), mailbox, env.provider, slow_weather,
                     timeout_ms=100)
        tool_message = server.bodies()[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert json.loads(tool_message["content"])["error"] == {
        "message": "tool call timed out after 100ms", "info": {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"}}


def test_reasoning_only_loop_cancel_stops_the_loop_before_the_fourth_call(instrumented):
    """Under escalate: cancel, guard_messages raises AgentCancelled before a fourth reasoning-only call."""
    env = instrumented({"guards": [{"id": "thinking-loop-guard", "config": {"escalate": "cancel"}}]})
    mailbox = otelguard.Mailbox()

    def script(path: str, body: dict[str, Any]) -> Reply:
        return Reply(reasoning=reasoning_text(len(body["messages"])), output_tokens=700)

    with FakeOpenAIServer(script) as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
        messages: list[dict[str, Any]] = [{"role": "user", "content": "why is it flaky?"}]
        with pytest.raises(otelguard.AgentCancelled):
            with agent_run("planner", control=mailbox, tracer_provider=env.provider):
                for _ in range(6):
                    messages += guard_messages(mailbox)
                    client.chat.completions.create(model="fake-model", messages=messages)
                    messages += [{"role": "assistant", "content": ""},
                                 {"role": "user", "content": "Answer the question or call a tool."}]
        assert len(server.bodies()) == 3


@pytest.mark.parametrize("asynchronous", [False, True])
def test_watch_stream_reads_an_instrumented_client_stream_in_its_own_protocol(instrumented, asynchronous):
    """OpenInference wraps both the sync and the async client's stream in one proxy class offering both
    iteration protocols; watch_stream iterates each the way the wrapped stream works, and cuts a chant."""
    import asyncio

    from openai import AsyncOpenAI

    env = instrumented()
    chant = Reply(chunks=("All tests pass. ",) * 200)
    prompt = [{"role": "user", "content": "Report."}]
    seen: list[str] = []
    with FakeOpenAIServer(lambda path, body: chant) as server:
        with env.tracer.start_as_current_span("invoke_agent reporter", attributes={"gen_ai.operation.name": "invoke_agent"}):
            with pytest.raises(otelguard.RepetitiveOutputError):
                if asynchronous:
                    async def consume() -> None:
                        client = AsyncOpenAI(base_url=server.base_url, api_key="test")
                        stream = await client.chat.completions.create(model="fake-model", messages=prompt, stream=True)
                        async for chunk in otelguard.watch_stream(stream):
                            seen.append(chunk.choices[0].delta.content or "" if chunk.choices else "")

                    asyncio.run(consume())
                else:
                    client = OpenAI(base_url=server.base_url, api_key="test")
                    stream = client.chat.completions.create(model="fake-model", messages=prompt, stream=True)
                    for chunk in otelguard.watch_stream(stream):
                        seen.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
    assert 0 < "".join(seen).count("All tests pass.") < 200
