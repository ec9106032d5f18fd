"""What a tool loop cost: the usage of the model calls that asked for its repeated calls, from the one
that asked for the pattern's first repeat to the one that asked for the judged call, priced with
genai-prices' bundled table; on the judged span and its evaluation event, in the loop metrics once the
guard acted, through `otelguard serve` alike, and said to be unknown where the source reports no usage
(a coding-agent CLI's hooks)."""

from __future__ import annotations

import json
import urllib.request
from types import SimpleNamespace
from typing import Any, Iterator

import pytest

pytest.importorskip("pydantic_ai")

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from pydantic_ai import Agent
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.usage import RequestUsage

import otelguard.engine.pricing
from hook_support import CliSession, hook
from loopback_support import Recorder
from otel_support import Guarded, metric_points, output_messages
from otelguard.integrations.pydantic_ai import OtelGuard
from otelguard.engine.pricing import price_usd, wait_until_loaded
from service_support import running_service

PRICED_MODEL = "gpt-4o"
REPEAT = {"guards": [{"id": "repeat-tool-reminder"}]}  # thresholds 3, 5, 8: the third identical call reminds
NO_PROGRESS = {"guards": [{"id": "no-progress"}]}


@pytest.fixture(autouse=True)
def price_table() -> None:
    """The table loads in the background (never on an agent's thread); these tests need it in."""
    assert wait_until_loaded(timeout=30)


def loop_attributes(attributes: Any) -> dict[str, Any]:
    return {key: value for key, value in dict(attributes).items() if key.startswith("otelguard.loop.")}


def spend(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """The loop attributes of a loop of the priced model that spent these tokens."""
    return {"otelguard.loop.input_tokens": input_tokens, "otelguard.loop.output_tokens": output_tokens,
            "otelguard.loop.cost_usd": pytest.approx(price_usd(PRICED_MODEL, input_tokens, output_tokens))}


# --- a pydantic-ai agent looping on one tool ------------------------------------------------------------


def input_tokens(call: int) -> int:
    return 1000 * call  # each request carries the history so far: it grows


OUTPUT_TOKENS = 40


def weather_four_times(messages: list[Any], info: AgentInfo) -> ModelResponse:
    """The same get_weather call four times, then an answer; each response reports its usage."""
    call = sum(1 for message in messages if message.kind == "response") + 1
    usage = RequestUsage(input_tokens=input_tokens(call), output_tokens=OUTPUT_TOKENS)
    if call <= 4:
        return ModelResponse(parts=[ToolCallPart("get_weather", {"city": "Paris"})], usage=usage)
    return ModelResponse(parts=[TextPart("It is sunny in Paris.")], usage=usage)


def test_a_pydantic_ai_agent_looping_on_one_tool_shows_the_loop_spend_on_the_judged_span_and_its_event(
        logger_provider, log_exporter: InMemoryLogRecordExporter):
    """Calls 2-4 repeat call 1: each judged tool span carries the usage of the model calls that asked
    for calls 2 to itself; the reminder at call 3 is the first acting verdict, so its event carries
    the spend of model calls 2 and 3, and the cost metric ends with calls 2 to 4."""
    with Guarded(REPEAT, logger_provider=logger_provider) as g:
        instrumentation = Instrumentation(settings=InstrumentationSettings(tracer_provider=g.provider))
        agent = Agent(FunctionModel(weather_four_times, model_name=PRICED_MODEL), name="weather-agent",
                      capabilities=[instrumentation, OtelGuard()])

        @agent.tool_plain
        def get_weather(city: str) -> str:
            return f"sunny in {city}"

        agent.run_sync("weather?")
        cost = metric_points(g.metric_reader, "otelguard.loop.cost")
        tokens = metric_points(g.metric_reader, "otelguard.loop.tokens")
        tool_spans = [s for s in g.exporter.get_finished_spans() if s.name == "execute_tool get_weather"]
    assert [span.attributes.get("otelguard.repeat.count") for span in tool_spans] == [None, 2, 3, 4]
    assert [loop_attributes(span.attributes) for span in tool_spans] == [
        {}, spend(2000, 40), spend(5000, 80), spend(9000, 120)]
    (event,) = [dict(record.log_record.attributes) for record in log_exporter.get_finished_logs()]
    assert event["gen_ai.evaluation.score.label"] == "remind"
    assert loop_attributes(event) == spend(5000, 80) == loop_attributes(tool_spans[2].attributes)
    ((labels, total),) = cost
    assert labels == {"otelguard.guard": "repeat-tool-reminder", "otelguard.rule": "repeat-threshold",
                      "gen_ai.agent.name": "weather-agent", "gen_ai.request.model": PRICED_MODEL}
    assert total == pytest.approx(price_usd(PRICED_MODEL, 9000, 120))
    assert [value for _, value in tokens] == [120]


# --- the OTel SDK directly: what a loop's spend counts ------------------------------------------------


def agent_run(g: Any, calls: list[tuple[str, str]], *, input_tokens: int = 1000, output_tokens: int = 50,
              model: str = PRICED_MODEL) -> None:
    """An agent run: for each (tool, argument), a model call asking for it (with its usage), then the call."""
    with g.tracer.start_as_current_span("invoke_agent planner", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
        for tool, argument in calls:
            with g.tracer.start_as_current_span(f"chat {model}", attributes={
                    "gen_ai.operation.name": "chat", "gen_ai.request.model": model,
                    "gen_ai.output.messages": output_messages(text="Checking.", tool=tool),
                    "gen_ai.usage.input_tokens": input_tokens, "gen_ai.usage.output_tokens": output_tokens}):
                pass
            with g.tracer.start_as_current_span(f"execute_tool {tool}", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                    "gen_ai.tool.call.arguments": f'{{"path": "{argument}"}}'}) as span:
                span.set_attribute("gen_ai.tool.call.result", f"contents of {argument}")


def judged_spends(g: Any) -> list[tuple[str | None, dict[str, Any]]]:
    """(action, loop attributes) of every tool span with a verdict, in order."""
    return [(span.attributes.get("otelguard.action"), loop_attributes(span.attributes))
            for span in g.exporter.get_finished_spans()
            if span.name.startswith("execute_tool") and "otelguard.verdict" in span.attributes]


def test_a_no_progress_loop_counts_from_the_model_call_that_asked_for_its_first_repeat():
    """read a, read b five times over: the cycle is found at call 6, when calls 3 to 6 are its
    repeats; its spend is the four model calls that asked for them, and goes on with the cycle to
    the steer at call 10."""
    with Guarded(NO_PROGRESS) as g:
        agent_run(g, [("read", "a"), ("read", "b")] * 5)
        cost = metric_points(g.metric_reader, "otelguard.loop.cost")
    judged = judged_spends(g)
    assert [action for action, _ in judged] == ["remind", "none", "none", "none", "steer"]
    assert [spent for _, spent in judged] == [spend(1000 * (call - 2), 50 * (call - 2)) for call in range(6, 11)]
    ((_, total),) = cost
    assert total == pytest.approx(price_usd(PRICED_MODEL, 8000, 400))


def test_a_loop_only_counted_is_on_its_spans_but_not_in_the_metrics():
    """A call repeated once (count 2, below the first threshold): its span says what the repeat
    spent, but no verdict of the loop acted, so the loop metrics count nothing."""
    with Guarded(REPEAT) as g:
        agent_run(g, [("read", "a"), ("read", "a"), ("read", "b")])
        cost = metric_points(g.metric_reader, "otelguard.loop.cost")
        tokens = metric_points(g.metric_reader, "otelguard.loop.tokens")
    assert judged_spends(g) == [("none", spend(1000, 50))]
    assert cost == [] and tokens == []


def test_a_tool_loop_begun_while_the_price_table_loads_is_priced_whole_from_its_first_acting_verdict(monkeypatch):
    """The loop's first repeat comes while the table is still loading: that span says so, with its
    tokens; the reminder, once the table is in, prices the whole loop, and the metric counts it all."""
    monkeypatch.setattr(otelguard.engine.pricing, "price_usd", lambda model, input_tokens, output_tokens: None)
    monkeypatch.setattr(otelguard.engine.pricing, "pricing_available", lambda: False)
    with Guarded(REPEAT) as g:
        with g.tracer.start_as_current_span("invoke_agent planner", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
            for call in range(3):
                if call == 2:
                    monkeypatch.undo()  # the table is in
                one_step(g, "read", "a")
        cost = metric_points(g.metric_reader, "otelguard.loop.cost")
    assert judged_spends(g) == [
        ("none", {"otelguard.loop.input_tokens": 1000, "otelguard.loop.output_tokens": 50,
                  "otelguard.loop.unpriced": "no price table (genai-prices not installed, or still loading)"}),
        ("remind", spend(2000, 100))]
    ((_, total),) = cost
    assert total == pytest.approx(price_usd(PRICED_MODEL, 2000, 100))


def one_step(g: Any, tool: str, argument: str) -> None:
    """One model call (with its usage) asking for one tool call, and the call, in the current run."""
    with g.tracer.start_as_current_span(f"chat {PRICED_MODEL}", attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": PRICED_MODEL,
            "gen_ai.output.messages": output_messages(text="Checking.", tool=tool),
            "gen_ai.usage.input_tokens": 1000, "gen_ai.usage.output_tokens": 50}):
        pass
    with g.tracer.start_as_current_span(f"execute_tool {tool}", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
            "gen_ai.tool.call.arguments": f'{{"path": "{argument}"}}'}) as span:
        span.set_attribute("gen_ai.tool.call.result", f"contents of {argument}")


def test_without_usage_a_tool_loop_says_its_spend_is_unknown_rather_than_zero():
    """Model calls that report no tokens: the judged spans say why the loop has no spend."""
    with Guarded(REPEAT) as g:
        with g.tracer.start_as_current_span("invoke_agent planner", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
            for _ in range(3):
                with g.tracer.start_as_current_span("execute_tool read", attributes={
                        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "read",
                        "gen_ai.tool.call.arguments": '{"path": "a"}'}):
                    pass
        cost = metric_points(g.metric_reader, "otelguard.loop.cost")
    assert [spent for _, spent in judged_spends(g)] == [{"otelguard.loop.unpriced": "no token usage reported"}] * 2
    assert cost == []


# --- otelguard serve ---------------------------------------------------------------------------------


def test_the_service_forwards_a_tool_loop_with_the_live_processor_s_spend():
    """The same run sent to `otelguard serve --forward`: the forwarded tool spans carry the loop's
    spend as the live processor's exported spans do."""
    calls = [("read", "a"), ("read", "b")] * 3
    with Guarded(NO_PROGRESS) as g:
        agent_run(g, calls)
        live = [spent for _, spent in judged_spends(g)]
    with Recorder() as next_hop, running_service(NO_PROGRESS, forward=next_hop.base) as service:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces")))
        agent_run(SimpleNamespace(tracer=provider.get_tracer("agent")), calls)
        provider.shutdown()
        assert service.flush()
        assert next_hop.wait_for("/v1/traces")
    forwarded = sorted((span for body in next_hop.bodies["/v1/traces"]
                        for resource in ExportTraceServiceRequest.FromString(body).resource_spans
                        for scope in resource.scope_spans for span in scope.spans
                        if any(entry.key == "otelguard.verdict" for entry in span.attributes)),
                       key=lambda span: span.start_time_unix_nano)
    assert [loop_attributes({entry.key: getattr(entry.value, entry.value.WhichOneof("value"))
                             for entry in span.attributes}) for span in forwarded] == live == [spend(4000, 200)]


def test_the_service_answers_a_cli_session_s_verdicts_with_the_spend_its_telemetry_told():
    """A Codex session told as log records (a request's usage, then the tool result, per turn): the
    decision API's verdicts carry what their loop spent, from the request that asked for the first
    repeat."""
    with running_service() as service:
        provider = LoggerProvider(resource=Resource.create({"service.name": "codex_exec"}))
        provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=service.http_url + "/v1/logs")))
        logger = provider.get_logger("codex_otel.log_only")
        for turn in range(1, 4):
            logger.emit(LogRecord(attributes={
                "event.name": "codex.sse_event", "event.kind": "response.completed", "conversation.id": "c-1",
                "model": PRICED_MODEL, "input_token_count": str(1000 * turn), "output_token_count": "30"}))
            logger.emit(LogRecord(attributes={
                "event.name": "codex.tool_result", "conversation.id": "c-1", "tool_name": "exec_command",
                "call_id": f"call-{turn}", "arguments": '{"cmd": "ls -la"}', "success": "true"}))
        provider.shutdown()
        assert service.flush()
        with urllib.request.urlopen(f"{service.http_url}/v1/verdicts?session=c-1", timeout=5) as answer:
            verdicts = json.loads(answer.read())["verdicts"]
    assert [(verdict["repeat_count"], verdict["loop"]) for verdict in verdicts] == [
        (2, {"input_tokens": 2000, "output_tokens": 30, "cost_usd": pytest.approx(price_usd(PRICED_MODEL, 2000, 30))}),
        (3, {"input_tokens": 5000, "output_tokens": 60, "cost_usd": pytest.approx(price_usd(PRICED_MODEL, 5000, 60))})]


# --- a coding-agent CLI's hooks ------------------------------------------------------------------------


@pytest.fixture
def hook_log(hook_state) -> Iterator[Any]:
    yield lambda: (hook_state / "hooks.log").read_text()


def test_a_hook_s_loop_is_logged_with_its_spend_unknown(hook_log):
    """A CLI's hooks see tool calls only: the reminder's log line says the loop's tokens are unknown."""
    session = CliSession("claude-code")
    for _ in range(3):
        session.call("Bash", {"command": "ls -la"})
    (line,) = [line for line in hook_log().splitlines() if "remind" in line]
    assert "repeat-tool-reminder/repeat-threshold remind at call 3 (loop spend unknown: no token usage reported)" in line
