"""OTLP/JSON with enum names (`"kind": "SPAN_KIND_INTERNAL"`, `"code": "STATUS_CODE_ERROR"`: what
protobuf's JSON printer writes by default, and what the Collector's reader takes) reads as the numbers
do in `otelguard analyze` and `otelguard serve` alike; ids in base64 are still refused, and a file
whose spans were all unreadable says so in its summary."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from otelguard.cli import main
from otelguard.otlp.values import SPAN_KINDS, STATUS_CODE_NAMES
from service_support import post, running_service

TRACE = "5b8efff798038103d269b633813fc60c"


def _tool_spans(kind: int | str, code: int | str, ids=lambda hex_id: hex_id) -> dict:
    """Four tool calls failing alike, a value changed in each (an error loop's evidence), enums written
    as `kind` and `code`."""
    spans = [{"traceId": ids(TRACE), "spanId": ids(f"{index + 1:016x}"), "name": "execute_tool grep", "kind": kind,
              "startTimeUnixNano": str(1_000 + 100 * index), "endTimeUnixNano": str(1_050 + 100 * index),
              "status": {"code": code, "message": "exit status 2"},
              "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in {
                  "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "grep",
                  "gen_ai.tool.call.arguments": f'{{"pattern":"x{index}"}}',
                  "gen_ai.tool.call.result": "no such file"}.items()]}
             for index in range(4)]
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "named"}}]},
                               "scopeSpans": [{"scope": {"name": "hand"}, "spans": spans}]}]}


def _analyzed(tmp_path: Path, capsys, document: dict) -> dict:
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(document) + "\n", encoding="utf-8")
    assert main(["analyze", "--json", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


def _findings(document: dict) -> list[tuple[str, str, str]]:
    return [(v["guard"], v["rule"], v["action"]) for v in document["verdicts"]]


def test_the_names_are_the_protos_own() -> None:
    assert SPAN_KINDS == dict(Span.SpanKind.items())
    assert STATUS_CODE_NAMES == dict(Status.StatusCode.items())


def test_analyze_reads_enum_names_as_their_numbers(tmp_path: Path, capsys) -> None:
    by_number = _analyzed(tmp_path, capsys, _tool_spans(1, 2))
    by_name = _analyzed(tmp_path, capsys, _tool_spans("SPAN_KIND_INTERNAL", "STATUS_CODE_ERROR"))
    assert by_name["coverage"] == by_number["coverage"]
    assert _findings(by_name) == _findings(by_number) != []
    assert ("no-progress", "error-loop", "remind") in _findings(by_name)  # the status was read as an error


def test_serve_accepts_enum_names_and_still_refuses_base64_ids() -> None:
    base64_ids = _tool_spans("SPAN_KIND_INTERNAL", "STATUS_CODE_ERROR",
                             ids=lambda hex_id: base64.b64encode(bytes.fromhex(hex_id)).decode())
    with running_service() as service:
        status, answer, _ = post(service, "/v1/traces",
                                 json.dumps(_tool_spans("SPAN_KIND_INTERNAL", "STATUS_CODE_ERROR")).encode(),
                                 "application/json")
        assert (status, json.loads(answer)) == (200, {})  # no partial success: every span accepted
        status, answer, _ = post(service, "/v1/traces", json.dumps(base64_ids).encode(), "application/json")
        partial = json.loads(answer)["partialSuccess"]
        assert status == 200 and partial["rejectedSpans"] == "4" and "base64" in partial["errorMessage"]
        assert service.flush()
        assert service.judge.received == 4


def test_a_file_of_unreadable_spans_says_how_many_were_read(tmp_path: Path, capsys) -> None:
    base64_ids = _tool_spans(1, 2, ids=lambda hex_id: base64.b64encode(bytes.fromhex(hex_id)).decode())
    path = tmp_path / "base64.jsonl"
    path.write_text(json.dumps(base64_ids) + "\n", encoding="utf-8")
    assert main(["analyze", str(path)]) == 0
    out = capsys.readouterr().out
    assert "nothing was judged: 4 spans read, none readable" in out
    words = " ".join(out.split())  # (the warning is wrapped to the report's width)
    assert "only empty requests" not in words and "is base64" in words
