"""Verdicts as `gen_ai.evaluation.result` events through the OTel logs API, on the SDK's own
LoggerProvider: one per verdict with an action ("actions", the default), every verdict ("all"),
none ("off"); each parented to the span it judges. The live test sends them with the SDK's
OTLPLogExporter over HTTP to a receiver in the test that decodes the protobuf.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from loopback_support import LoopbackServer
from otel_support import Guarded, metric_points, tool_span
from stream_support import ending_in_a_chant

import otelguard
from otelguard import RepetitiveOutputError
from otelguard.errors import ConfigError

REPEAT_ONLY = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}}]}
EVENT = "gen_ai.evaluation.result"


def agent_run(tracer: Any, name: str = "support-agent"):
    return tracer.start_as_current_span(
        f"invoke_agent {name}", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name})


def repeated_call(g: Guarded) -> Any:
    """An agent calling the same tool twice with the same arguments; returns the second, judged, span."""
    with agent_run(g.tracer):
        tool_span(g.tracer)
        tool_span(g.tracer)
    return [s for s in g.exporter.get_finished_spans() if s.name == "execute_tool probe"][1]


def events(exporter: InMemoryLogRecordExporter) -> list[Any]:
    return [readable.log_record for readable in exporter.get_finished_logs()]


def test_a_reminder_becomes_one_evaluation_event_on_the_judged_span(logger_provider, log_exporter):
    """The reminder on the second identical call is one gen_ai.evaluation.result event, parented to that
    tool span: name otelguard.<guard>.<rule>, label the action, value the run length, explanation the
    message the agent got and the steps that made the verdict."""
    mailbox = otelguard.Mailbox()
    with Guarded(REPEAT_ONLY, logger_provider=logger_provider, control=mailbox) as g:
        judged = repeated_call(g)
        first = [s for s in g.exporter.get_finished_spans() if s.name == "execute_tool probe"][0]
    (event,) = events(log_exporter)
    assert event.event_name == EVENT
    assert (event.trace_id, event.span_id) == (judged.context.trace_id, judged.context.span_id)
    (message,) = mailbox.drain()
    attributes = dict(event.attributes)
    assert {key: attributes[key] for key in (
        "gen_ai.evaluation.name", "gen_ai.evaluation.score.label", "gen_ai.evaluation.score.value",
        "gen_ai.evaluation.explanation", "gen_ai.agent.name", "otelguard.verdict",
    )} == {
        "gen_ai.evaluation.name": "otelguard.repeat-tool-reminder.repeat-threshold",
        "gen_ai.evaluation.score.label": "remind",
        "gen_ai.evaluation.score.value": 2.0,
        "gen_ai.evaluation.explanation": f"{message.text}\n\nevidence: step 1 (span {first.context.span_id:016x}, "
                                         f'"probe"); step 2 (span {judged.context.span_id:016x}, "probe")',
        "gen_ai.agent.name": "support-agent",
        "otelguard.verdict": "repeated_tool_call",
    }
    assert attributes["otelguard.action"] == judged.attributes["otelguard.action"] == "remind"


def test_the_default_mode_leaves_out_verdicts_without_action_and_all_keeps_them(logger_provider, log_exporter):
    """A stream judged at its span's end as repeating itself (action none) is no event by default,
    one labelled `none` under evaluation_events="all"."""
    for mode, expected in (("actions", []), ("all", [("otelguard.thinking-loop-guard.repeating-cycle", "none")])):
        log_exporter.clear()
        deltas = ending_in_a_chant()
        with Guarded(logger_provider=logger_provider, evaluation_events=mode) as g:
            with g.tracer.start_as_current_span("chat scripted-model", attributes={"gen_ai.operation.name": "chat"}):
                assert list(otelguard.watch_stream(iter(deltas))) == deltas
            (span,) = g.exporter.get_finished_spans()
        found = events(log_exporter)
        assert [(e.attributes["gen_ai.evaluation.name"], e.attributes["gen_ai.evaluation.score.label"])
                for e in found] == expected, mode
        assert all(e.span_id == span.context.span_id for e in found)
        if found:
            assert found[0].attributes["gen_ai.evaluation.score.value"] == float(sum(map(len, deltas)))
            assert "gen_ai.evaluation.explanation" not in found[0].attributes  # the agent was told nothing


def test_a_stream_cut_mid_call_is_an_event_on_the_model_span(logger_provider, log_exporter):
    """A stream cut by the breaker is reported as it happens, parented to the model span it ran in."""
    config = {"guards": [{"id": "thinking-loop-guard", "config": {"max_repeated_text": 5, "max_repeated_cycle_chars": 0}}]}
    with Guarded(config, logger_provider=logger_provider) as g:
        with agent_run(g.tracer, "writer"):
            with g.tracer.start_as_current_span("chat scripted-model", attributes={"gen_ai.operation.name": "chat"}) as model:
                with pytest.raises(RepetitiveOutputError):
                    for _ in otelguard.watch_stream(iter(["tick "] * 50)):
                        pass
                context = model.get_span_context()
    (event,) = events(log_exporter)
    assert (event.trace_id, event.span_id) == (context.trace_id, context.span_id)
    assert event.attributes["gen_ai.evaluation.name"] == "otelguard.thinking-loop-guard.identical-chunks"
    assert event.attributes["gen_ai.evaluation.score.label"] == "break"
    assert event.attributes["gen_ai.agent.name"] == "writer"


def test_off_emits_nothing(logger_provider, log_exporter):
    """evaluation_events="off": the verdict is still on the span and in the metrics, but no event."""
    with Guarded(REPEAT_ONLY, logger_provider=logger_provider, evaluation_events="off") as g:
        judged = repeated_call(g)
    assert judged.attributes["otelguard.action"] == "remind"
    assert events(log_exporter) == []


def test_an_unknown_mode_fails_at_construction():
    """A misspelt mode is a clear error naming the setting, not a silent default."""
    with pytest.raises(ConfigError, match="evaluation_events: must be one of actions, all, off"):
        otelguard.GuardSpanProcessor(evaluation_events="verdicts")


class FailingProcessor(LogRecordProcessor):
    def on_emit(self, log_record: Any) -> None:
        raise RuntimeError("log pipeline down")

    def shutdown(self) -> None:
        return

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def test_a_failing_log_pipeline_is_contained_and_counted(monkeypatch):
    """An exception from the log pipeline never reaches the agent: the span is still judged and
    exported, and the error is counted where it happened."""
    monkeypatch.setenv("OTELGUARD_RAISE_INTERNAL_ERRORS", "0")
    provider = LoggerProvider()
    provider.add_log_record_processor(FailingProcessor())
    with Guarded(REPEAT_ONLY, logger_provider=provider) as g:
        judged = repeated_call(g)
        errors = metric_points(g.metric_reader, "otelguard.internal.errors")
    assert judged.attributes["otelguard.action"] == "remind"
    assert errors == [({"where": "evaluation_events"}, 1)]


# ---------------------------------------------------------------------------------------------
# Live: the SDK's OTLP/HTTP log exporter to a receiver that decodes what arrives
# ---------------------------------------------------------------------------------------------


class OtlpLogsReceiver(LoopbackServer):
    """A loopback OTLP/HTTP endpoint for logs: keeps each decoded ExportLogsServiceRequest."""

    def __init__(self) -> None:
        self.requests: list[ExportLogsServiceRequest] = []
        self.paths: list[str] = []
        super().__init__(self._posted)
        self.endpoint = f"{self.base}/v1/logs"

    def _posted(self, path: str, body: bytes) -> tuple[int, str, bytes]:
        request = ExportLogsServiceRequest()
        request.ParseFromString(body)
        self.requests.append(request)
        self.paths.append(path)
        return 200, "application/x-protobuf", b""

    def records(self) -> list[Any]:
        return [record for request in self.requests for resource in request.resource_logs
                for scope in resource.scope_logs for record in scope.log_records]


@pytest.fixture
def otlp_logs_receiver() -> Iterator[OtlpLogsReceiver]:
    with OtlpLogsReceiver() as receiver:
        yield receiver


def test_events_reach_an_otlp_receiver_correlated_with_the_judged_span(otlp_logs_receiver):
    """Over OTLP/HTTP: the receiver gets the event with the judged span's trace and span ids (bytes,
    as OTLP carries them), its event name and its attributes, from the otelguard scope."""
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(OTLPLogExporter(endpoint=otlp_logs_receiver.endpoint)))
    try:
        with Guarded(REPEAT_ONLY, logger_provider=provider) as g:
            judged = repeated_call(g)
        provider.force_flush()
    finally:
        provider.shutdown()
    assert otlp_logs_receiver.paths == ["/v1/logs"]
    (record,) = otlp_logs_receiver.records()
    assert record.event_name == EVENT
    assert record.trace_id == judged.context.trace_id.to_bytes(16, "big")
    assert record.span_id == judged.context.span_id.to_bytes(8, "big")
    attributes = {kv.key: kv.value for kv in record.attributes}
    assert attributes["gen_ai.evaluation.name"].string_value == "otelguard.repeat-tool-reminder.repeat-threshold"
    assert attributes["gen_ai.evaluation.score.label"].string_value == "remind"
    assert attributes["gen_ai.evaluation.score.value"].double_value == 2.0
    assert attributes["gen_ai.evaluation.explanation"].string_value
    (scope,) = [scope.scope for request in otlp_logs_receiver.requests for resource in request.resource_logs
                for scope in resource.scope_logs]
    assert scope.name == "otelguard"
