"""A verdict's session under `otelguard serve` comes from the agent run the engine tied the judged span
to: the openai-client integration's `agent_run(conversation_id=...)` puts the id on its `invoke_agent`
span only, and so does a raw OTLP/JSON request here. `GET /v1/verdicts?session=ID` and the webhook find
the session's verdicts all the same."""

from __future__ import annotations

import json
import urllib.request

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otelguard.integrations.openai_client import agent_run, tool_call
from service_support import post, running_service
from webhook_support import SECRET, receiving

T0 = 1_790_000_000_000_000_000
MS = 1_000_000


def _verdicts(service, session: str) -> list[dict]:
    with urllib.request.urlopen(f"{service.http_url}/v1/verdicts?session={session}", timeout=5) as answer:
        return json.loads(answer.read())["verdicts"]


def test_an_integration_runs_conversation_id_finds_its_verdicts() -> None:
    with receiving() as receiver, running_service(webhook=receiver.url, webhook_secret=SECRET) as service:
        provider = TracerProvider(resource=Resource.create({"service.name": "weather-bot"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces")))
        with agent_run("weather", conversation_id="conversation-7", tracer_provider=provider):
            for _ in range(3):
                with tool_call("get_weather", {"city": "Paris"}, tracer_provider=provider) as call:
                    call.set_result("sunny")
        provider.shutdown()
        assert service.flush()
        verdicts = _verdicts(service, "conversation-7")
        assert [(v["action"], v["repeat_count"], v["agent"]) for v in verdicts] == [
            ("none", 2, "weather"), ("remind", 3, "weather")]
        assert [(event["action"], event["session"]) for event in receiver.accepted] == [
            ("remind", "conversation-7")]


def _span(span_id: str, parent: str | None, name: str, start: int, end: int, attributes: dict[str, str]) -> dict:
    span = {"traceId": "5b8efff798038103d269b633813fc60c", "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(T0 + start * MS), "endTimeUnixNano": str(T0 + end * MS),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def test_a_raw_request_with_the_session_on_invoke_agent_only_finds_its_verdicts() -> None:
    run_id = "a1a1a1a1a1a1a1a1"
    spans = [_span(run_id, None, "invoke_agent planner", 0, 400, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner",
        "gen_ai.conversation.id": "session-on-the-run"})]
    spans += [_span(f"{index + 1:016x}", run_id, "execute_tool lookup", 100 * index, 100 * index + 50, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.arguments": '{"q":"x"}', "gen_ai.tool.call.result": "nothing new"})
        for index in range(3)]
    body = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "raw"}}]},
                               "scopeSpans": [{"scope": {"name": "raw"}, "spans": spans}]}]}
    with running_service() as service:
        assert post(service, "/v1/traces", json.dumps(body).encode(), "application/json")[0] == 200
        assert service.flush()
        assert [(v["action"], v["repeat_count"], v["session"]) for v in _verdicts(service, "session-on-the-run")] == [
            ("none", 2, "session-on-the-run"), ("remind", 3, "session-on-the-run")]
