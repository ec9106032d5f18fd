"""`otelguard analyze` over a live run's traces and its `gen_ai.evaluation.result` events: each recorded
event is listed beside the replayed verdict of its span, and a disagreement is flagged.

The live run is the scripted agent of test_analyzer_live (every guard acts) on the real SDK:
`GuardSpanProcessor(logger_provider=...)` emits the events; the SDK's own OTLP encoders write the spans
and the log records as OTLP JSON Lines, as a collector's file exporter does. The log file is then
tampered with, as a changed or lost event would look, and each kind of disagreement must be flagged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import otelguard
from otelguard.cli import main
from otel_support import Guarded
from live_export_support import OtlpJsonLinesExporter, OtlpJsonLogLines, scripted_agent

NAME, LABEL = "gen_ai.evaluation.name", "gen_ai.evaluation.score.label"


@pytest.fixture(scope="module")
def live_run(tmp_path_factory) -> tuple[Path, Path]:
    """(traces, logs) of one guarded run: the spans with their verdicts, one event per verdict with an action."""
    directory = tmp_path_factory.mktemp("live")
    traces, logs = directory / "traces.otlp.jsonl", directory / "logs.otlp.jsonl"
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(OtlpJsonLogLines(logs)))
    with Guarded(export=False, downstream=[SimpleSpanProcessor(OtlpJsonLinesExporter(traces))],
                 logger_provider=logger_provider, control=otelguard.Mailbox()) as g:
        scripted_agent(g.tracer)
        assert g.processor.force_flush()
    logger_provider.shutdown()
    return traces, logs


def analyzed(capsys, *paths: Path, json_out: bool = True) -> Any:
    status = main(["analyze", *map(str, paths), *(["--json"] if json_out else [])])
    out = capsys.readouterr().out
    assert status == 0, out
    return json.loads(out) if json_out else " ".join(out.split())  # the text's words (long lines are wrapped)


def event_lines(logs: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in logs.read_text(encoding="utf-8").splitlines()]


def records(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [record for resource in document["resourceLogs"] for scope in resource["scopeLogs"]
            for record in scope["logRecords"]]


def attribute(record: dict[str, Any], key: str) -> dict[str, Any]:
    return next(a["value"] for a in record["attributes"] if a["key"] == key)


def write(path: Path, documents: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in documents), encoding="utf-8")
    return path


def test_every_recorded_event_is_beside_the_replayed_verdict_that_agrees(live_run, capsys) -> None:
    traces, logs = live_run
    report = analyzed(capsys, traces, logs)
    acting = [row for row in report["verdicts"] if row["action"] != "none"]
    events = report["evaluations"]
    assert len(events) == len(acting) >= 7  # every verdict with an action left one event
    assert report["disagreements"] == []
    assert report["summary"]["evaluations"] == {
        "read": len(acting), "otelguard": len(acting), "other": 0, "agreeing": len(acting), "disagreements": 0,
        "disagreements_by_kind": {}, "not_compared": 0}
    assert report["coverage"]["evaluation_event_records"] == len(acting)
    assert report["coverage"]["log_records_not_read"] == 0
    assert "log-records-not-read" not in {w["code"] for w in report["coverage"]["warnings"]}
    beside = sorted((e["span_id"], e["name"], e["label"], e["replayed_action"], e["step"]) for e in events)
    assert beside == sorted((row["span_id"], f"otelguard.{row['guard']}.{row['rule']}", row["action"], row["action"],
                             row["step"]) for row in acting)
    assert all(e["agrees"] for e in events)


def test_the_text_report_lists_the_events_and_counts_them_in_coverage(live_run, capsys) -> None:
    traces, logs = live_run
    text = analyzed(capsys, logs, traces, json_out=False)
    count = sum(len(records(d)) for d in event_lines(logs))
    assert f"recorded evaluations (gen_ai.evaluation.result): {count} events: {count} by otelguard ({count} agree " \
           "with the replay), 0 by other evaluators (listed, not compared); 0 disagreements" in text
    assert "otelguard.timeout-policy.tool-timeout" in text
    assert f"{count} as evaluation events, 0 not read" in text
    assert "disagreement:" not in text


def test_a_tampered_log_file_is_flagged_where_it_disagrees(live_run, tmp_path, capsys) -> None:
    """One event's label changed, one event removed, one event added on a span with no such verdict,
    and another evaluator's event added: three disagreements of three kinds, the other event listed
    but not compared."""
    traces, logs = live_run
    documents = event_lines(logs)
    flat = [record for document in documents for record in records(document)]
    changed, removed = flat[0], flat[1]
    attribute(changed, LABEL)["stringValue"] = "cancel"
    for document in documents:
        for resource in document["resourceLogs"]:
            for scope in resource["scopeLogs"]:
                scope["logRecords"] = [r for r in scope["logRecords"] if r is not removed]
    removed_name = attribute(removed, NAME)["stringValue"]
    invented = json.loads(json.dumps(changed))  # the changed event's span, a verdict the replay never reached
    attribute(invented, NAME)["stringValue"] = "otelguard.no-progress.cycle"
    attribute(invented, LABEL)["stringValue"] = "steer"
    other = json.loads(json.dumps(removed))
    other["attributes"] = [{"key": NAME, "value": {"stringValue": "relevance"}},
                           {"key": LABEL, "value": {"stringValue": "relevant"}},
                           {"key": "gen_ai.evaluation.score.value", "value": {"doubleValue": 0.9}}]
    documents.append({"resourceLogs": [{"scopeLogs": [{"logRecords": [invented, other]}]}]})
    tampered = write(tmp_path / "tampered.logs.otlp.jsonl", documents)

    report = analyzed(capsys, traces, tampered)
    kinds = sorted((d["kind"], d["span_id"], d["name"], d["recorded_label"], d["replayed_action"])
                   for d in report["disagreements"])
    original = attribute(changed, NAME)["stringValue"]
    replayed = next(e["replayed_action"] for e in report["evaluations"] if e["span_id"] == changed["spanId"]
                    and e["name"] == original)
    assert kinds == sorted([
        ("label_mismatch", changed["spanId"], original, "cancel", replayed),
        ("not_recorded", removed["spanId"], removed_name, None, attribute(removed, LABEL)["stringValue"]),
        ("not_reproduced", changed["spanId"], "otelguard.no-progress.cycle", "steer", None),
    ])
    (relevance,) = [e for e in report["evaluations"] if e["evaluator"] == "other"]
    assert (relevance["name"], relevance["label"], relevance["value"], relevance["agrees"]) == (
        "relevance", "relevant", 0.9, None)
    assert report["summary"]["evaluations"]["disagreements_by_kind"] == {
        "label_mismatch": 1, "not_recorded": 1, "not_reproduced": 1}

    text = analyzed(capsys, traces, tampered, json_out=False)
    assert text.count("⚠ disagreement:") == 3
    assert f"{original} on span " in text and ": recorded cancel, replayed " in text
    assert "no recorded event carries it" in text and "not reproduced by the replay" in text


def test_the_same_run_without_its_log_file_flags_nothing(live_run, capsys) -> None:
    """No evaluation events in the input: nothing to compare, no section, no disagreement."""
    traces, _ = live_run
    report = analyzed(capsys, traces)
    assert report["evaluations"] == report["disagreements"] == []
    assert "recorded evaluations" not in analyzed(capsys, traces, json_out=False)
