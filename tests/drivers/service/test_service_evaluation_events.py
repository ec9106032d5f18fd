"""`otelguard serve --forward URL` sends a `gen_ai.evaluation.result` event per verdict with an action
(`live.evaluation_events`, as the live processor does), through the SDK's OTLPLogExporter to the
forward endpoint, on the judged span's trace and span ids.

The agent sends its spans with the SDK's OTLP/HTTP exporter; the next hop is a receiver in the test
that keeps each request (it decodes the protobuf), or a second `otelguard serve`, which reads them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from service_support import running_service, scrape, send_with, sender
from loopback_support import Recorder

EVENT = "gen_ai.evaluation.result"


def value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


def evaluation_records(bodies: list[bytes]) -> list[tuple[Any, Any, Any]]:
    """(resource, scope, record) of every evaluation event in the logs requests."""
    return [(resource.resource, scope.scope, record) for body in bodies
            for resource in ExportLogsServiceRequest.FromString(body).resource_logs
            for scope in resource.scope_logs for record in scope.log_records if record.event_name == EVENT]


def judged_tools(bodies: list[bytes]) -> list[Any]:
    """The forwarded tool spans, in the order they started."""
    spans = [span for body in bodies for resource in ExportTraceServiceRequest.FromString(body).resource_spans
             for scope in resource.scope_spans for span in scope.spans if span.name.startswith("execute_tool")]
    return sorted(spans, key=lambda span: span.start_time_unix_nano)


def test_each_reminder_is_an_event_at_the_forward_endpoint_on_the_judged_span() -> None:
    """Five identical calls: reminders at the 3rd and 5th are two events, each with the trace and span
    id of the forwarded span that carries that verdict, the run length as its value."""
    with Recorder() as next_hop, running_service(forward=next_hop.base) as service:
        send_with(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces"), "http-agent")
        assert service.flush()
        assert next_hop.wait_for("/v1/traces", "/v1/logs")
    events = evaluation_records(next_hop.bodies["/v1/logs"])
    reminded = [span for span in judged_tools(next_hop.bodies["/v1/traces"])
                if {kv.key: value(kv.value) for kv in span.attributes}.get("otelguard.action") == "remind"]
    assert len(reminded) == 2
    assert [(record.trace_id, record.span_id) for _, _, record in events] == [
        (span.trace_id, span.span_id) for span in reminded]
    attributes = [{kv.key: value(kv.value) for kv in record.attributes} for _, _, record in events]
    assert [(a["gen_ai.evaluation.name"], a["gen_ai.evaluation.score.label"], a["gen_ai.evaluation.score.value"])
            for a in attributes] == [("otelguard.repeat-tool-reminder.repeat-threshold", "remind", 3.0),
                                     ("otelguard.repeat-tool-reminder.repeat-threshold", "remind", 5.0)]
    assert all(a["gen_ai.evaluation.explanation"] for a in attributes)  # the message the agent would get
    assert {(sender(resource), scope.name) for resource, scope, _ in events} == {("otelguard", "otelguard")}


@pytest.mark.parametrize(("mode", "expected"), [("all", ["remind", "remind", "none", "none"]), ("off", [])])
def test_the_mode_chooses_which_verdicts_become_events(mode: str, expected: list[str]) -> None:
    """"all" adds the counting verdicts (action none); "off" sends none (spans are still forwarded)."""
    with Recorder() as next_hop, running_service(forward=next_hop.base, evaluation_events=mode) as service:
        send_with(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces"), "http-agent")
        assert service.flush()
        assert next_hop.wait_for("/v1/traces")
    labels = [value(kv.value) for _, _, record in evaluation_records(next_hop.bodies.get("/v1/logs", []))
              for kv in record.attributes if kv.key == "gen_ai.evaluation.score.label"]
    assert sorted(labels, reverse=True) == expected


def test_a_second_otelguard_serve_receives_and_reads_the_events() -> None:
    """`otelguard serve` as the next hop: it reads the two events as evaluation events (not as
    records it cannot read)."""
    with running_service() as receiver:
        with running_service(forward=receiver.http_url) as service:
            send_with(OTLPSpanExporter(endpoint=service.http_url + "/v1/traces"), "http-agent")
            assert service.flush()
        assert receiver.flush()
        counted = Counter({s.labels["read"]: s.value for s in scrape(receiver)["otelguard_service_log_records"]
                           if s.name.endswith("_total")})
    assert (counted["evaluation_event"], counted["not_read"]) == (2, 0)
