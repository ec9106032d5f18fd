"""Every captured fixture, analysed by `otelguard analyze --json`, gives exactly its MANIFEST verdicts.

The fixtures live in `tests/fixtures/` (override with OTELGUARD_FIXTURES).
A verdict is compared when it is a finding: an action other than `none`, or a flag that stands on its
own (`framework-timeout`, the end-of-span `repeating-cycle`); counting verdicts (a repeat between
thresholds, a stall below `max_thinking_steps`) are not listed in the MANIFEST.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from otel_support import FIXTURES
from otelguard.cli import main
from vectors_support import SHORT_REMINDER

MANIFEST_PATH = FIXTURES / "MANIFEST.json"
MANIFEST = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
ENTRIES = {entry["file"]: entry for entry in MANIFEST}


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(["analyze", "--json", *argv])
    out = capsys.readouterr().out
    return code, json.loads(out)


def findings(document: dict) -> list[dict]:
    return [v for v in document["verdicts"] if not v["counting"]]


def key(verdict: dict) -> tuple:
    return (verdict["guard"], verdict["rule"], verdict["action"], verdict["span_id"], verdict["trace_id"])


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_fixture_verdicts_match_manifest(name: str, capsys) -> None:
    """The analyzer's findings on a fixture are exactly the MANIFEST's `expected` verdicts."""
    entry = ENTRIES[name]
    code, document = run_json(capsys, str(FIXTURES / name))
    assert code == 0
    actual = findings(document)
    assert sorted(map(key, actual)) == sorted(map(key, entry["expected"])), entry.get("not_expected")
    by_key = {key(v): v for v in actual}
    for expected in entry["expected"]:
        got = by_key[key(expected)]
        assert got["verdict"] == expected["verdict"]
        assert got["span_name"] == expected["span_name"]
        if "count" in expected:
            assert got["count"] == expected["count"]
        if "stalled" in expected:
            assert got["stalled"] == expected["stalled"]
        if expected.get("text") == "short":
            assert got["message"] == SHORT_REMINDER
        elif expected.get("text") == "detailed":
            assert got["message"].startswith("Repeated tool call detected:")
        elif "text" in expected:
            assert got["message"] == expected["text"]
        if "tool" in expected:
            assert got["tool"] == expected["tool"]
        if "text_chars" in expected:
            assert got["stream_chars"] == expected["text_chars"]


@pytest.mark.parametrize("name", sorted(ENTRIES))
def test_fixture_spans_are_all_read(name: str, capsys) -> None:
    """Every span of a fixture is read, none is unparsable, and every line is accounted for."""
    entry = ENTRIES[name]
    _, document = run_json(capsys, str(FIXTURES / name))
    coverage = document["coverage"]
    assert coverage["spans_read"] == entry["spans"]
    assert coverage["unparsable_lines"] == 0
    if entry["spans"] == 0:
        assert coverage["nothing_judged"] == "the input is empty: 0 lines in 1 file"
        assert document["verdicts"] == []


def log_records(path: Path) -> list[dict]:
    return [record for line in path.read_text(encoding="utf-8").splitlines() if line.strip()
            for resource in json.loads(line)["resourceLogs"] for scope in resource["scopeLogs"]
            for record in scope["logRecords"]]


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e.get("logs_file")))
def test_fixture_log_records_are_read_as_genai_events(name: str, capsys) -> None:
    """A fixture's companion logs file, given after it, is read first: each GenAI event that names its
    span is read (model output it tells goes to a span that carries none of its own); one that names no
    span (a streamed choice, emitted after its span ended) is counted as not read and marks the scope
    incomplete. The verdicts stay the fixture's own."""
    entry = ENTRIES[name]
    records = log_records(FIXTURES / entry["logs_file"])
    assert len(records) == entry["log_records"]
    _, document = run_json(capsys, str(FIXTURES / name), str(FIXTURES / entry["logs_file"]))
    coverage = document["coverage"]
    without_span = sum(1 for record in records if not record.get("spanId"))
    assert coverage["log_records_not_read"] == without_span
    assert coverage["genai_event_records"] == len(records) - without_span
    assert coverage["verdict_scope_incomplete"] is (without_span > 0)
    assert ("log-records-not-read" in {w["code"] for w in coverage["warnings"]}) is (without_span > 0)
    if "event_only" in name or "use_attributes_false-chat-tool-loop" in name or "legacy" in name:
        assert coverage["spans_given_output_from_events"] > 0  # their chat spans carry no output of their own
        assert "model-output-not-captured" not in {w["code"] for w in coverage["warnings"]}
    assert sorted(map(key, findings(document))) == sorted(map(key, entry["expected"]))


def test_all_fixtures_at_once_give_the_union_of_their_verdicts(capsys) -> None:
    """Analysing every fixture in one run gives the same findings as one run per file (no state leaks across traces)."""
    names = sorted(ENTRIES)
    _, document = run_json(capsys, *(str(FIXTURES / n) for n in names))
    expected = sorted(key(v) for n in names for v in ENTRIES[n]["expected"])
    assert sorted(map(key, findings(document))) == expected


@pytest.mark.parametrize("name", sorted(n for n, e in ENTRIES.items() if e["expected"]))
def test_fail_on_follows_the_strongest_expected_action(name: str, capsys) -> None:
    """`--fail-on` exits 1 exactly when an expected verdict's action reaches it."""
    from otelguard.analyzer import action_reaches

    entry = ENTRIES[name]
    for threshold in ("remind", "steer", "cancel"):
        code = main(["analyze", str(FIXTURES / name), "--fail-on", threshold])
        capsys.readouterr()
        should_fail = any(action_reaches(v["action"], threshold) for v in entry["expected"])
        assert code == (1 if should_fail else 0), threshold
