"""Model output told in GenAI log events instead of on the chat span (`conventions.genai_events`) is
judged, in the service and offline alike.

An agent whose instrumentation captures content as events (openai-v2 `event_only`, OpenLLMetry
`use_attributes=False`) exports chat spans without output, and one
`gen_ai.client.inference.operation.details` event per call in its span's context. The OTel SDK's own
exporters send both signals: spans with `OTLPSpanExporter`, events with `OTLPLogExporter`, the events
emitted after their spans ended. Three reasoning-only calls get the thinking-loop guard's steer only
when each event's output reaches its span.
"""

from __future__ import annotations

import json

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry._logs import LogRecord

from otelguard.analyzer import analyze
from service_support import running_service, verdict_counts
from live_export_support import OtlpJsonLinesExporter, OtlpJsonLogLines
from vectors_support import R

STEER = ("thinking-loop-guard", "reasoning-only", "steer")
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted", "gen_ai.provider.name": "openai"}


def reasoning_only_loop(span_processor, log_processor, service_name: str) -> None:
    """Three chat spans without output, each followed by its operation-details event."""
    resource = Resource.create({"service.name": service_name})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(span_processor)
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(log_processor)
    tracer, logger = tracer_provider.get_tracer("agent"), logger_provider.get_logger("agent")
    with tracer.start_as_current_span("invoke_agent weather", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}):
        for seed in ("first angle", "second angle", "third angle"):
            with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
                context = span.get_span_context()
            output = [{"role": "assistant", "finish_reason": "stop",
                       "parts": [{"type": "reasoning", "content": R(seed, 3000)}]}]
            logger.emit(LogRecord(
                event_name="gen_ai.client.inference.operation.details", trace_id=context.trace_id,
                span_id=context.span_id, trace_flags=context.trace_flags,
                attributes={**CHAT, "gen_ai.output.messages": json.dumps(output)}))
    tracer_provider.shutdown()
    logger_provider.shutdown()


def test_the_service_judges_output_told_in_log_events() -> None:
    with running_service() as service:
        reasoning_only_loop(SimpleSpanProcessor(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces")),
                            SimpleLogRecordProcessor(OTLPLogExporter(endpoint=service.http_url + "/v1/logs")),
                            "event-only-agent")
        assert service.judge.flush()
        assert verdict_counts(service, "event-only-agent")[STEER] == 1


def test_the_analyzer_judges_output_told_in_a_log_file_given_after_the_traces(tmp_path) -> None:
    traces, logs = tmp_path / "spans.otlp.jsonl", tmp_path / "events.otlp.jsonl"
    reasoning_only_loop(SimpleSpanProcessor(OtlpJsonLinesExporter(traces)),
                        SimpleLogRecordProcessor(OtlpJsonLogLines(logs)), "event-only-agent")
    rows = analyze([traces, logs]).verdicts
    assert [(row.verdict.guard, row.verdict.rule, str(row.verdict.action)) for row in rows
            if str(row.verdict.action) != "none"] == [STEER]
    assert [row for row in analyze([traces]).verdicts if str(row.verdict.action) != "none"] == []
