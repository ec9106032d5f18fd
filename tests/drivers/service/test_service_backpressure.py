"""`otelguard serve --queue N` under a flood: while the judge is behind, requests past the queue's
bound are refused (HTTP 503 with Retry-After, gRPC UNAVAILABLE with RetryInfo) and counted; the
OTel SDK exporters retry them and are accepted once the judge catches up; nothing accepted is lost."""

from __future__ import annotations

import threading
import time
from collections import Counter

import grpc
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otelguard.service import JudgeOptions
from service_support import COUNTING, REMIND, post, running_service, scrape, send_with, verdict_counts

QUEUE = 2


class SlowJudge:
    """An `on_verdict` that holds the judge's thread until released: a judge falling behind."""

    def __init__(self) -> None:
        self.holding = threading.Event()
        self.release = threading.Event()

    def __call__(self, service, judged, verdict) -> None:
        self.holding.set()
        self.release.wait(30)


def _one_span_request(index: int) -> bytes:
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=index.to_bytes(16, "big"), span_id=b"\1" * 8, name="flood", start_time_unix_nano=1,
        end_time_unix_nano=2)
    return request.SerializeToString()


def _refused_busy(service) -> float:
    return sum(sample.value for sample in scrape(service)["otelguard_service_refused_requests"]
               if sample.name.endswith("_total") and sample.labels["reason"] == "busy")


def test_a_flood_is_refused_past_the_queue_and_retried_senders_are_accepted() -> None:
    slow = SlowJudge()
    with running_service(grpc=True, judge=JudgeOptions(tick_s=0.05, queue=QUEUE), on_verdict=slow) as service:
        try:
            _flood(service, slow)
        finally:
            slow.release.set()


def _flood(service, slow: SlowJudge) -> None:
    send_with(HttpSpanExporter(endpoint=service.http_url + "/v1/traces"), "first", calls=3)
    assert slow.holding.wait(10)  # the judge is now stuck on the first sender's verdict
    answers = [post(service, "/v1/traces", _one_span_request(index)) for index in range(1, 6)]
    assert [status for status, _, _ in answers] == [200] * QUEUE + [503] * 3
    retry_after = [{key.lower(): value for key, value in headers.items()}.get("retry-after")
                   for status, _, headers in answers if status == 503]
    assert retry_after == ["1"] * 3
    with grpc.insecure_channel(service.grpc_target) as channel:
        export = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")
        try:
            export(_one_span_request(9), timeout=5)
            raise AssertionError("a full queue took a gRPC request")
        except grpc.RpcError as refused:
            assert refused.code() == grpc.StatusCode.UNAVAILABLE
            assert any(key == "google.rpc.retryinfo-bin" for key, _ in refused.trailing_metadata())
    assert _refused_busy(service) == 4

    # Two SDK exporters (HTTP and gRPC) export into the full queue, are refused, and retry.
    senders = [threading.Thread(target=send_with, args=(exporter, name)) for exporter, name in (
        (HttpSpanExporter(endpoint=service.http_url + "/v1/traces"), "http-retrier"),
        (GrpcSpanExporter(endpoint=service.grpc_target, insecure=True), "grpc-retrier"))]
    for thread in senders:
        thread.start()
    refused_before = 4
    deadline = time.monotonic() + 10
    while _refused_busy(service) < refused_before + 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    slow.release.set()  # the judge catches up
    for thread in senders:
        thread.join(30)
    assert service.flush()
    assert verdict_counts(service, "http-retrier") == Counter({REMIND: 2, COUNTING: 2})
    assert verdict_counts(service, "grpc-retrier") == Counter({REMIND: 2, COUNTING: 2})
    assert verdict_counts(service, "first") == Counter({REMIND: 1, COUNTING: 1})
    assert _refused_busy(service) >= refused_before + 2
    accepted = {s.labels["outcome"]: s.value for s in scrape(service)["otelguard_service_spans"]
                if s.name.endswith("_total")}
    assert accepted["accepted"] == 4 + QUEUE + 6 + 6  # first, the queued flood, both retriers
