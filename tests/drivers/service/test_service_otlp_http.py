"""`otelguard serve` over OTLP/HTTP: the OTel SDK's own exporters send to it, the verdicts come back
from its /metrics; bad requests are answered as the OTLP specification says and change nothing."""

from __future__ import annotations

import gzip
import io
import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter

import pytest
from google.rpc import status_pb2
from opentelemetry.exporter.otlp.json.http import OTLPSpanExporter as JsonSpanExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as ProtobufSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypothesis_support import examples
from otelguard.service import JudgeOptions
from otelguard.service.alerts import AlertLines
from service_support import (
    COUNTING, REMIND, _request_json, _tool_span, post, running_service, scrape, send_with, serve_command, stopped,
    verdict_counts,
)


@pytest.fixture(scope="module")
def shared():
    """One service for the tests that tell their requests apart by sender or by counting."""
    with running_service() as service:
        yield service


@pytest.mark.parametrize("encoding", ["protobuf", "protobuf+gzip", "json"])
def test_sdk_exporter_spans_are_judged_and_counted_by_sender(encoding: str, shared) -> None:
    """The SDK's OTLP/HTTP exporters (protobuf, gzip'd protobuf, JSON) reach the guards: five identical
    calls remind at the 3rd and 5th, counted under the sender's service.name."""
    service, sender = shared, f"agent-{encoding}"
    endpoint = service.http_url + "/v1/traces"
    exporter = (JsonSpanExporter(endpoint=endpoint) if encoding == "json"
                else ProtobufSpanExporter(endpoint=endpoint, compression=Compression.Gzip
                                          if encoding.endswith("gzip") else Compression.NoCompression))
    send_with(exporter, sender)
    assert service.flush()
    assert verdict_counts(service, sender) == Counter({REMIND: 2, COUNTING: 2})
    assert verdict_counts(service, "someone-else") == Counter()
    spans = {s.labels["otelguard_span_kind"]: s.value for s in scrape(service)["otelguard_spans"]
             if s.name.endswith("_total") and s.labels.get("service_name") == sender}
    assert spans == {"agent": 1, "tool": 5}


def test_two_senders_are_counted_apart(shared) -> None:
    service = shared
    endpoint = service.http_url + "/v1/traces"
    send_with(ProtobufSpanExporter(endpoint=endpoint), "agent-a", calls=3)
    send_with(ProtobufSpanExporter(endpoint=endpoint), "agent-b", calls=5)
    assert service.flush()
    assert verdict_counts(service, "agent-a") == Counter({REMIND: 1, COUNTING: 1})
    assert verdict_counts(service, "agent-b") == Counter({REMIND: 2, COUNTING: 2})


def test_invalid_spans_are_rejected_as_a_partial_success() -> None:
    """A span that is not OTLP/JSON (ids that are not hex or all zero, a name that is no enum's, an
    attribute value of the wrong type) is rejected on its own, the first reason given; the others are judged."""
    with running_service() as service:
        named_status = {**_tool_span("eee19b7ec3c1b176"), "status": {"code": "ERROR"}}
        bad_value = _tool_span("eee19b7ec3c1b177")
        bad_value["attributes"].append({"key": "retries", "value": {"intValue": "three"}})
        body = _request_json([_tool_span("eee19b7ec3c1b174"), _tool_span("not-hex"),
                              _tool_span("eee19b7ec3c1b175", trace_id="00" * 16), named_status, bad_value])
        status, answer, headers = post(service, "/v1/traces", body, "application/json")
        assert status == 200 and headers["content-type"] == "application/json"
        partial = json.loads(answer)["partialSuccess"]
        assert partial["rejectedSpans"] == "4"
        assert "spanId 'not-hex' is not 16 hex digits" in partial["errorMessage"]
        assert service.flush()
        tools = [s for s in scrape(service)["otelguard_spans"]
                 if s.name.endswith("_total") and s.labels["otelguard_span_kind"] == "tool"]
        assert [(s.labels["service_name"], s.value) for s in tools] == [("json-agent", 1.0)]


def test_a_number_too_long_for_python_costs_its_span_not_the_request() -> None:
    """A 5,000-digit intValue (past Python's integer-digit limit, where json.loads refuses the whole
    document) is read as analyze reads it: that span is rejected, the request's other spans judged."""
    with running_service() as service:
        huge = _tool_span("eee19b7ec3c1b177")
        huge["attributes"].append({"key": "retries", "value": {"intValue": "HUGE"}})
        body = _request_json([_tool_span("eee19b7ec3c1b174"), huge]).replace(b'"HUGE"', b"9" * 5000)  # a JSON number
        status, answer, _ = post(service, "/v1/traces", body, "application/json")
        assert status == 200 and json.loads(answer)["partialSuccess"]["rejectedSpans"] == "1"
        assert service.flush()
        tools = [s.value for s in scrape(service)["otelguard_spans"]
                 if s.name.endswith("_total") and s.labels["otelguard_span_kind"] == "tool"]
        assert tools == [1.0]


def test_a_full_success_has_no_partial_success() -> None:
    with running_service() as service:
        request = ExportTraceServiceRequest()
        status, answer, _ = post(service, "/v1/traces", request.SerializeToString())
        assert status == 200
        response = ExportTraceServiceResponse.FromString(answer)
        assert not response.HasField("partial_success")


GOOD_SPAN = _request_json([_tool_span("eee19b7ec3c1b174")])
BAD_REQUESTS = {
    "truncated protobuf": ("/v1/traces", b"\x0a\x80\x01\x0a", "application/x-protobuf", {}, 400),
    "invalid JSON": ("/v1/traces", b'{"resourceSpans": [', "application/json", {}, 400),
    "JSON of another shape": ("/v1/traces", b'{"resourceSpans": {"a": 1}}', "application/json", {}, 400),
    "JSON not an object": ("/v1/traces", b"[1, 2]", "application/json", {}, 400),
    "corrupt gzip": ("/v1/traces", b"\x1f\x8b\x08\x00garbage", "application/json", {"Content-Encoding": "gzip"}, 400),
    "wrong content type": ("/v1/traces", GOOD_SPAN, "text/plain", {}, 415),
    "unknown encoding": ("/v1/traces", GOOD_SPAN, "application/json", {"Content-Encoding": "br"}, 415),
    "unknown path": ("/v1/spans", GOOD_SPAN, "application/json", {}, 404),
    "truncated logs": ("/v1/logs", b"\x0a\x05\x0a", "application/x-protobuf", {}, 400),
    "truncated metrics": ("/v1/metrics", b"\x0a\x05\x0a", "application/x-protobuf", {}, 400),
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_bad_requests_are_answered_per_spec_and_change_nothing(case: str, shared) -> None:
    path, body, content_type, headers, expected = BAD_REQUESTS[case]
    service = shared
    assert service.flush()
    received = service.judge.received
    status, answer, answer_headers = post(service, path, body, content_type, **headers)
    assert status == expected
    if expected in (400, 415):  # a google.rpc.Status with a message, in the request's encoding
        if answer_headers["content-type"] == "application/json":
            assert json.loads(answer)["message"]
        else:
            assert status_pb2.Status.FromString(answer).message
    assert service.flush()
    assert service.judge.received == received
    # Still serving: a good request afterwards is accepted.
    assert post(service, "/v1/traces", GOOD_SPAN, "application/json")[0] == 200
    assert service.flush()
    assert service.judge.received == received + 1


def test_a_get_on_a_receiver_path_is_405(shared) -> None:
    service = shared
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(service.http_url + "/v1/traces", timeout=5)
    assert error.value.code == 405


def test_gzip_json_is_read(shared) -> None:
    service = shared
    assert service.flush()
    received = service.judge.received
    status, _, _ = post(service, "/v1/traces", gzip.compress(GOOD_SPAN), "application/json",
                        **{"Content-Encoding": "gzip"})
    assert status == 200
    assert service.flush()
    assert service.judge.received == received + 1


def test_sigterm_judges_what_was_accepted(tmp_path) -> None:
    """`otelguard serve` stopped by SIGTERM judges the spans it holds: here tool calls whose agent run
    never arrives, which a running service would only judge after `flush_after_s` of quiet."""
    with serve_command("--http", "127.0.0.1:0", "--grpc", "off", "--metrics", "off") as (process, first):
        url = re.search(r"OTLP/HTTP (http://[0-9.:]+)", first)
        assert url, first
        request = urllib.request.Request(url.group(1) + "/v1/traces", data=_rootless_tool_calls(0, 5), method="POST",
                          headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as answer:
            assert answer.status == 200
        out, err = stopped(process)
    assert process.returncode == 0, err
    assert out.count("ALERT  repeat-tool-reminder  rule=repeat-threshold  action=remind") == 2, out
    assert "5 spans received, 4 verdicts" in out


def _rootless_tool_calls(first_index: int, count: int, trace_id: str = "5b8efff798038103d269b633813fc60c") -> bytes:
    """Tool spans under an agent span that is never sent (a remote parent, a lost root)."""
    spans = []
    for index in range(first_index, first_index + count):
        span = _tool_span(f"eee19b7ec3c1b1{index:02x}", trace_id)
        span["parentSpanId"] = "aaaaaaaaaaaaaaaa"
        span["attributes"].append({"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{}"}})
        spans.append(span)
    return _request_json(spans)


def span_outcomes(service) -> dict[str, float]:
    return {s.labels["outcome"]: s.value for s in scrape(service)["otelguard_service_spans"] if s.name.endswith("_total")}


def test_a_trace_whose_root_never_comes_is_judged_once_idle_and_its_later_spans_as_late() -> None:
    """Spans wait for their trace's root only `flush_after_s`; a span of that trace arriving after it
    was judged is judged on its own and counted late."""
    with running_service(judge=JudgeOptions(tick_s=0.02, flush_after_s=0.1)) as service:
        assert post(service, "/v1/traces", _rootless_tool_calls(0, 3), "application/json")[0] == 200
        deadline = time.monotonic() + 5
        while verdict_counts(service) != Counter({REMIND: 1, COUNTING: 1}) and time.monotonic() < deadline:
            time.sleep(0.05)  # no flush: the service's own clock judges the idle trace
        assert verdict_counts(service) == Counter({REMIND: 1, COUNTING: 1})
        assert post(service, "/v1/traces", _rootless_tool_calls(3, 1), "application/json")[0] == 200
        assert service.flush()
        assert span_outcomes(service) == {"accepted": 4, "late": 1, "duplicate": 0, "not_ours": 0}


def test_a_span_sent_twice_is_judged_once() -> None:
    with running_service() as service:
        body = _rootless_tool_calls(0, 3)
        for _ in range(2):  # an exporter's retry after a lost answer
            assert post(service, "/v1/traces", body, "application/json")[0] == 200
            assert service.flush()
        assert verdict_counts(service) == Counter({REMIND: 1, COUNTING: 1})
        assert span_outcomes(service)["duplicate"] == 3


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.binary(max_size=300), content_type=st.sampled_from(["application/x-protobuf", "application/json"]),
       path=st.sampled_from(["/v1/traces", "/v1/logs", "/v1/metrics"]))
def test_any_body_is_answered_200_or_400_and_the_service_keeps_serving(shared, body: bytes, content_type: str,
                                                                      path: str) -> None:
    status, answer, _ = post(shared, path, body, content_type)
    assert status in (200, 400), answer
    assert post(shared, "/v1/traces", GOOD_SPAN, "application/json")[0] == 200


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(spans=st.lists(st.fixed_dictionaries({
    "traceId": st.one_of(st.just("5b8efff798038103d269b633813fc60c"), st.text(max_size=34)),
    "spanId": st.one_of(st.just("eee19b7ec3c1b174"), st.text(max_size=18)),
    "name": st.text(max_size=20),
    "startTimeUnixNano": st.one_of(st.just("1000"), st.integers(-5, 2**70), st.text(max_size=5)),
    "attributes": st.lists(st.fixed_dictionaries({"key": st.text(max_size=10), "value": st.dictionaries(
        st.sampled_from(["stringValue", "intValue", "boolValue", "doubleValue", "arrayValue", "bytesValue"]),
        st.one_of(st.text(max_size=5), st.integers(), st.booleans(), st.none()), max_size=1)}), max_size=3),
}), max_size=3))
def test_odd_otlp_json_spans_are_accepted_rejected_or_refused_never_a_crash(shared, spans: list[dict]) -> None:
    status, answer, _ = post(shared, "/v1/traces", _request_json(spans), "application/json")
    assert status in (200, 400), answer
    assert shared.flush()


def test_a_long_agent_run_is_judged_while_it_goes_on() -> None:
    """An agent run whose span ends (and is exported) only at the end: its tool calls are judged every
    `max_wait_s` while it runs, as one chain with the parts that come later."""
    with running_service(judge=JudgeOptions(tick_s=0.02, max_wait_s=0.1, flush_after_s=60)) as service:
        for first in (0, 3):  # two export batches, a while apart, the same open run
            body = _rootless_tool_calls(first, 3)
            assert post(service, "/v1/traces", body, "application/json")[0] == 200
            deadline = time.monotonic() + 5
            while span_outcomes(service).get("accepted", 0) < first + 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            while sum(verdict_counts(service).values()) < first + 2 and time.monotonic() < deadline:
                time.sleep(0.02)  # no flush: judged on the service's clock
        assert verdict_counts(service) == Counter({REMIND: 2, COUNTING: 3})


def test_serve_on_a_taken_port_says_so_in_one_line() -> None:
    with running_service() as service:
        host, port = service.http_address
        process = subprocess.run(
            [sys.executable, "-m", "otelguard", "serve", "--http", f"{host}:{port}", "--grpc", "off",
             "--metrics", "off"], capture_output=True, text=True, timeout=60)
    assert process.returncode == 2
    assert process.stderr.startswith("otelguard serve: error: cannot listen:"), process.stderr


def test_alert_lines_escape_what_senders_and_models_named() -> None:
    """A tool name is the model's and service.name the sender's: neither reaches the terminal raw,
    escape sequences, line breaks and bidirectional overrides alike (as analyze prints them)."""
    out = io.StringIO()
    with running_service(alerts=AlertLines(out)) as service:
        spans = []
        for index in range(3):
            span = _tool_span(f"eee19b7ec3c1b17{index}")
            span["attributes"] = [{"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                                  {"key": "gen_ai.tool.name",
                                   "value": {"stringValue": "look\x1b[2Jup\nALERT fake\u202egnp.exe"}},
                                  {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": "{}"}}]
            spans.append(span)
        assert post(service, "/v1/traces", _request_json(spans), "application/json")[0] == 200
        assert service.flush()
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    assert [line for line in text.splitlines() if line.startswith("  ALERT")] == [
        text.splitlines()[0]]  # one alert (its line wrapped to the width: continued further indented)
    assert "tool=look\\u001b[2Jup\\nALERT fake\\u202egnp.exe" in text.replace("\n      ", " ")
