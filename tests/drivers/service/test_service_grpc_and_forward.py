"""`otelguard serve` over OTLP/gRPC, and `--forward`: the SDK's gRPC exporters send traces, logs and
metrics; with a forward URL everything goes on to the next OTLP/HTTP endpoint, spans with the
verdicts the service reached written on them."""

from __future__ import annotations

from collections import Counter

from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource

from loopback_support import Recorder
from service_support import COUNTING, REMIND, running_service, send_with, sender, verdict_counts

AGENT = Resource.create({"service.name": "grpc-agent"})


def send_log(exporter) -> None:
    provider = LoggerProvider(resource=AGENT)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("agent").emit(LogRecord(body="tool ran", attributes={"event.name": "agent.tool_result"}))
    provider.shutdown()


def send_metric(exporter) -> None:
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=60_000)
    provider = MeterProvider(metric_readers=[reader], resource=AGENT)
    provider.get_meter("agent").create_counter("agent.tokens").add(7)
    provider.shutdown()  # exports once more on the way out


def test_grpc_exporter_spans_are_judged() -> None:
    with running_service(grpc=True) as service:
        send_with(GrpcSpanExporter(endpoint=service.grpc_target, insecure=True), "grpc-agent")
        assert service.flush()
        assert verdict_counts(service, "grpc-agent") == Counter({REMIND: 2, COUNTING: 2})


def test_forward_sends_spans_with_verdicts_and_logs_and_metrics_as_received() -> None:
    with Recorder() as next_hop, running_service(grpc=True, forward=next_hop.base) as service:
        send_with(HttpSpanExporter(endpoint=service.http_url + "/v1/traces"), "http-agent")
        send_log(GrpcLogExporter(endpoint=service.grpc_target, insecure=True))
        send_metric(HttpMetricExporter(endpoint=service.http_url + "/v1/metrics"))
        send_metric(GrpcMetricExporter(endpoint=service.grpc_target, insecure=True))
        send_log(HttpLogExporter(endpoint=service.http_url + "/v1/logs"))
        assert service.flush()
        assert next_hop.wait_for("/v1/traces", "/v1/logs", "/v1/metrics")
    spans = [span for body in next_hop.bodies["/v1/traces"]
             for resource in ExportTraceServiceRequest.FromString(body).resource_spans
             if sender(resource.resource) == "http-agent"
             for scope in resource.scope_spans for span in scope.spans]
    assert sorted(span.name for span in spans) == ["execute_tool lookup"] * 5 + ["invoke_agent planner"]
    tools = sorted((span for span in spans if span.name.startswith("execute_tool")), key=lambda s: s.start_time_unix_nano)
    actions = [{entry.key: entry.value.string_value for entry in span.attributes}.get("otelguard.action")
               for span in tools]
    assert actions == [None, "none", "remind", "none", "remind"]  # counting verdicts at 2 and 4
    assert [len([e for e in span.events if e.name == "otelguard.verdict"]) for span in tools] == [0, 1, 1, 1, 1]
    logs = [ExportLogsServiceRequest.FromString(body) for body in next_hop.bodies["/v1/logs"]]
    assert sum(len(scope.log_records) for request in logs for resource in request.resource_logs
               if sender(resource.resource) == "grpc-agent"  # (the service adds its evaluation events)
               for scope in resource.scope_logs) == 2
    metrics = [ExportMetricsServiceRequest.FromString(body) for body in next_hop.bodies["/v1/metrics"]]
    names = [metric.name for request in metrics for resource in request.resource_metrics
             for scope in resource.scope_metrics for metric in scope.metrics]
    assert names.count("agent.tokens") == 2


def test_cli_tool_call_logs_over_grpc_are_judged() -> None:
    """Log records shaped as Codex CLI writes its tool calls, sent by the SDK's gRPC log exporter:
    five identical calls in one conversation remind at the 3rd and 5th."""
    with running_service(grpc=True) as service:
        provider = LoggerProvider(resource=Resource.create({"service.name": "codex_exec"}))
        provider.add_log_record_processor(SimpleLogRecordProcessor(
            GrpcLogExporter(endpoint=service.grpc_target, insecure=True)))
        logger = provider.get_logger("codex_otel.log_only")
        for index in range(5):
            logger.emit(LogRecord(attributes={
                "event.name": "codex.tool_result", "conversation.id": "conversation-1", "tool_name": "exec_command",
                "call_id": f"call_{index}", "arguments": '{"cmd": "ls -la"}', "success": "true"}))
        provider.shutdown()
        assert service.flush()
        assert verdict_counts(service, "codex_exec") == Counter({REMIND: 2, COUNTING: 2})
