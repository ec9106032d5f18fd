"""On the labelled real runs (tests/realruns): every acting verdict of `otelguard analyze --json` names,
as its evidence, the calls that made its pattern. Each is checked against its label (the verdict's
step and span: `labels.jsonl`) and against the run's own calls: every evidence step is a call of the
pattern (the same command with the same outcome; for error-loop, the tool failing with the same
error), and none of the pattern's calls between its first and last step is left out."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from realruns_support import TRACES, command, rows, spans

from otelguard.cli import main as otelguard_main
from otelguard.detectors.evidence import MAX_EVIDENCE
from otelguard.detectors.signatures import outcome_signature
from otelguard.model.records import Status

LABELS = {(row["file"], row["span_id"], row["rule"]): row for row in rows("labels.jsonl")}
FILES = {row["trace_id"]: row["file"] for row in rows("swe-lite-deepseek/MANIFEST.jsonl")}
# The runs where today's rules act (the stage `remind-once` is today's rules: benchmarks/real_run_precision.py).
ACTING_TODAY = sorted({row["file"] for row in rows("stages.jsonl") if row["stage"] == "remind-once"})


def analyze_json(files: list[str]) -> dict[str, Any]:
    """`otelguard analyze --json` over the runs, as a process."""
    done = subprocess.run([sys.executable, "-m", "otelguard", "analyze", "--json", *(str(TRACES / f) for f in files)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def outcome(span: Any) -> int | None:
    """What a call printed, as the rules compare it (volatile fields masked)."""
    text = span.attributes.get("gen_ai.tool.call.result")
    if span.status is Status.ERROR and span.status_message:
        text = f"{span.status_message}\n{text}" if text else span.status_message
    return outcome_signature(text)


def check_evidence(document: dict[str, Any]) -> int:
    """Check every acting verdict's evidence (see the module doc); returns how many were checked."""
    steps = {agent["key"]: {step["step"]: step for step in agent["steps"]} for agent in document["agents"]}
    checked = 0
    for verdict in document["verdicts"]:
        if verdict["action"] == "none":
            continue
        file = FILES[verdict["trace_id"]]
        label = LABELS[(file, verdict["span_id"], verdict["rule"])]  # every acting verdict is labelled
        evidence = verdict["evidence"]
        assert 2 <= len(evidence) <= MAX_EVIDENCE, verdict
        assert (evidence[-1]["step"], evidence[-1]["span_id"]) == (label["step"], label["span_id"]) == \
            (verdict["step"], verdict["span_id"])
        listed = steps[verdict["agent_key"]]
        for entry in evidence:  # each a tool step of the run, as the report lists it
            step = listed[entry["step"]]
            assert (step["span_id"], step["kind"], step["tool"]) == (entry["span_id"], "tool", verdict["tool"])
        by_id = {f"{span.span_id:016x}": span for span in spans(file)}
        judged = by_id[verdict["span_id"]]
        if verdict["rule"] == "same-result":
            assert len(evidence) == min(verdict["count"], MAX_EVIDENCE)
            same = {step["step"] for step in listed.values() if step["kind"] == "tool"
                    and evidence[0]["step"] <= step["step"] <= evidence[-1]["step"]
                    and command(by_id[step["span_id"]]) == command(judged)
                    and outcome(by_id[step["span_id"]]) == outcome(judged)}
            assert same == {entry["step"] for entry in evidence}, (file, verdict["step"])
        elif verdict["rule"] == "error-loop":
            for entry in evidence:
                failed = by_id[entry["span_id"]]
                assert failed.status is Status.ERROR and outcome(failed) == outcome(judged), (file, entry)
        checked += 1
    return checked


def test_the_evidence_of_todays_acting_verdicts_is_the_calls_that_made_them():
    """The runs where today's rules act: each same-result reminder names the identical calls with the same output."""
    document = analyze_json(ACTING_TODAY)
    assert check_evidence(document) == len(ACTING_TODAY)
    # The labelled stuck episode: `git checkout src/marshmallow/schema.py` -> "Updated 1 path" at 180, 190 and 198.
    (stuck,) = [v for v in document["verdicts"] if v["span_id"] == "35b1775bf287a90d"]
    assert [entry["step"] for entry in stuck["evidence"]] == [180, 190, 198]
    assert stuck["evidence"][0]["arguments_preview"] == '{"command":"cd /testbed && git checkout src/marshmallow/schema.py"}'
    assert "Updated 1 path from the index" in stuck["evidence"][0]["outcome_preview"]


def test_the_text_report_shows_the_evidence(capsys):
    """`otelguard analyze` (text) writes the evidence under the verdict's row."""
    assert otelguard_main(["analyze", str(TRACES / "deepseek_chat_dev_rerun__marshmallow-code__marshmallow-1343"
                                                    ".otlp.jsonl.gz")]) == 0
    lines = capsys.readouterr().out.splitlines()
    (row,) = [at for at, line in enumerate(lines) if "same-result" in line and "remind" in line]
    assert lines[row + 1].strip() == "evidence: steps 180, 190, 198"


@pytest.mark.thorough
def test_every_acting_verdict_on_the_corpus_has_the_calls_that_made_it():
    """All 192 runs: every acting verdict is labelled and its evidence is the calls of its pattern."""
    document = analyze_json(sorted(path.name for path in TRACES.glob("*.otlp.jsonl.gz")))
    assert check_evidence(document) >= len(ACTING_TODAY)
