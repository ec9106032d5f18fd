"""The analyzer and the service read log records alike (one reader, `otelguard.otlp.logs`): a logs request
read from the JSON the analyzer parsed for spans and the same request decoded by the service give
the same CLI tool calls, GenAI events, evaluation events and counts; and the analyzer reads a
pretty-printed logs document as it reads one on a line.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from otelguard.analyzer import analyze
from otelguard.otlp.json_spans import log_records
from otelguard.otlp.logs import read_records
from otelguard.otlp.requests import log_calls_of, parse_json
import paths

FIXTURES = paths.FIXTURES
LOG_FILES = sorted([*FIXTURES.glob("*.logs.otlp.jsonl"), *(FIXTURES / "agent-clis").glob("*/logs.jsonl.gz")])


def lines(path: Path) -> list[str]:
    opened = gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")
    with opened as handle:
        return [line for line in handle if line.strip()]


@pytest.mark.parametrize("path", LOG_FILES, ids=lambda path: str(path.relative_to(FIXTURES)))
def test_the_analyzer_and_the_service_read_a_logs_request_alike(path: Path) -> None:
    records = 0
    for line in lines(path):
        offline = read_records(log_records(json.loads(line)))
        served = log_calls_of(parse_json(line.encode(), ExportLogsServiceRequest))
        assert [call for call, _ in offline.calls] == [call for call, _ in served.calls]
        assert offline.events == served.events
        assert offline.evaluations == served.evaluations
        assert (offline.records, offline.not_read, offline.genai_not_read) == (
            served.records, served.not_read, served.genai_not_read)
        records += offline.records
    assert records  # (opencode's logs hold none the guard reads: its tool calls are spans)


def test_a_pretty_printed_logs_document_is_read_like_its_line(tmp_path) -> None:
    """An evaluation event in an indented document (a multi-line JSON file) is read and counted as
    the same event on one line is."""
    request = {"resourceLogs": [{"scopeLogs": [{"logRecords": [{
        "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
        "eventName": "gen_ai.evaluation.result",
        "attributes": [{"key": "gen_ai.evaluation.name", "value": {"stringValue": "relevance"}},
                       {"key": "gen_ai.evaluation.score.label", "value": {"stringValue": "relevant"}}]}]}]}]}
    one_line, indented = tmp_path / "line.json", tmp_path / "indented.json"
    one_line.write_text(json.dumps(request) + "\n", encoding="utf-8")
    indented.write_text(json.dumps(request, indent=2) + "\n", encoding="utf-8")
    for path in (one_line, indented):
        analysis = analyze([path])
        assert analysis.coverage.to_json()["evaluation_event_records"] == 1, path.name
        (entry,) = analysis.evaluations.entries
        assert (entry.recorded.name, entry.recorded.label, entry.agrees) == ("relevance", "relevant", None)
