"""`otelguard serve` decompresses and decodes a body off the event loop that serves every listener,
in work linear in the body's size: a body of many empty gzip members is refused at once (it froze
HTTP, gRPC and /metrics for seconds a MiB, quadratically), a few members are read as one request,
and /metrics answers while a large request is still being decoded."""

from __future__ import annotations

import gzip
import json
import threading
import time
import urllib.request

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from google.rpc import status_pb2

from service_support import post, running_service, scrape

GZIP = {"Content-Encoding": "gzip"}


def _request(trace: int) -> bytes:
    request = ExportTraceServiceRequest()
    request.resource_spans.add().scope_spans.add().spans.add(
        trace_id=trace.to_bytes(16, "big"), span_id=b"\1" * 8, name="chat", start_time_unix_nano=1,
        end_time_unix_nano=2)
    return request.SerializeToString()


def test_a_body_of_many_empty_gzip_members_is_refused_at_once() -> None:
    """1 MiB of empty members (52,000 of them): answered 400 in well under a second, naming the cap,
    while the other listener keeps answering."""
    body = gzip.compress(b"") * (1024 * 1024 // len(gzip.compress(b"")))
    with running_service() as service:
        answers: list[tuple[int, bytes]] = []
        started = time.monotonic()
        sender = threading.Thread(target=lambda: answers.append(post(service, "/v1/traces", body, **GZIP)[:2]))
        sender.start()
        with urllib.request.urlopen(service.metrics_url, timeout=5) as metrics:
            assert metrics.status == 200
        sender.join(10)
        assert time.monotonic() - started < 1.0
        [(status, answer)] = answers
        assert status == 400 and "gzip members" in status_pb2.Status.FromString(answer).message
        assert service.judge.received == 0


def test_a_few_gzip_members_are_one_request() -> None:
    """Members concatenated (each a request: protobuf concatenation merges them) and trailing zero
    padding are read; one member past the cap of 64 is refused whole."""
    with running_service() as service:
        body = b"".join(gzip.compress(_request(trace)) for trace in range(1, 4)) + b"\0" * 100
        assert post(service, "/v1/traces", body, **GZIP)[0] == 200
        assert service.flush()
        assert service.judge.received == 3
        at_cap = b"".join(gzip.compress(_request(trace)) for trace in range(10, 74))
        assert post(service, "/v1/traces", at_cap, **GZIP)[0] == 200
        assert post(service, "/v1/traces", at_cap + gzip.compress(b""), **GZIP)[0] == 400
        assert service.flush()
        assert service.judge.received == 3 + 64


def _large_json_request(spans: int) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [
        {"traceId": f"{index + 1:032x}", "spanId": f"{index + 1:016x}", "name": "step", "startTimeUnixNano": "1",
         "endTimeUnixNano": "2", "attributes": [{"key": f"k{key}", "value": {"stringValue": "v" * 20}}
                                                for key in range(5)]}
        for index in range(spans)]}]}]}).encode()


def test_metrics_answer_while_a_large_request_is_decoded() -> None:
    """A 1 MiB OTLP/JSON request takes a while to decode: /metrics, asked meanwhile, answers first."""
    body = _large_json_request(2000)
    with running_service() as service:
        done: list[str] = []

        def send() -> None:
            status = post(service, "/v1/traces", body, "application/json")[0]
            done.append(f"post {status}")

        sender = threading.Thread(target=send)
        sender.start()
        time.sleep(0.05)  # the body is on its way (loopback: a few milliseconds)
        scrape(service)
        done.append("metrics")
        sender.join(10)
        assert done == ["metrics", "post 200"]
