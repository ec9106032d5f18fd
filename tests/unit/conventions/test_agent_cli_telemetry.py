"""Coding-agent CLIs' real telemetry is judged, replayed over OTLP/HTTP to `otelguard serve` and
read from files by `otelguard analyze`, through the same conventions.

The captures (`tests/fixtures/agent-clis/`, see its README) are one run each of Claude Code, Gemini
CLI, Codex CLI and opencode making the same tool call six times, then alternating two calls three
times. Each request the CLI sent is posted as it was; the verdicts come back from /metrics: reminders
at the 3rd and 5th identical call, counting verdicts at the 2nd, 4th and 6th, and no-progress's
reminder when the alternation has repeated three times, whichever signal carries the calls and in
whichever order the log records and the spans of a call arrive.
"""

from __future__ import annotations

import gzip
import json
import logging
from collections import Counter
from pathlib import Path

import pytest

from otelguard.analyzer import AnalyzerOptions, ReplayLimits, analyze
from otelguard.service import JudgeOptions
from service_support import post, running_service, scrape, verdict_counts
import paths

CAPTURES = paths.AGENT_CLI_CAPTURES
CLIS = {"claude": "claude-code", "gemini": "gemini-cli", "codex": "codex", "opencode": "opencode"}
SIX_SAME_CALLS = Counter({("repeat-tool-reminder", "repeat-threshold", "remind"): 2,
                          ("repeat-tool-reminder", "repeat-threshold", "none"): 3})
SIX_SAME_CALLS_THEN_A_CYCLE = SIX_SAME_CALLS + Counter({("no-progress", "cycle", "remind"): 1})
# No CLI record waits out its partner here: the test flushes, which judges a waiting one.
PATIENT = JudgeOptions(tick_s=0.05, join_wait_s=60.0)


def requests(capture: str, signal: str) -> list[bytes]:
    with gzip.open(CAPTURES / capture / f"{signal}.jsonl.gz", "rt", encoding="utf-8") as lines:
        return [line.encode() for line in lines if line.strip()]


def cli_calls(service) -> dict[tuple[str, str], float]:
    return {(s.labels["cli"], s.labels["arguments"]): s.value
            for s in scrape(service).get("otelguard_cli_tool_calls", []) if s.name.endswith("_total")}


# Claude Code and Gemini CLI tell of a call in a log record and a span: both orders. opencode's two
# records of a call are both spans (in its traces); Codex's are logs only (its spans are internal).
CASES = {f"{capture}-{order[0]}-first" if len(order) > 1 else capture: (capture, order)
         for capture in ("claude", "gemini") for order in (("traces", "logs"), ("logs", "traces"))}
CASES.update({"opencode": ("opencode", ("traces",)), "codex": ("codex", ("logs",))})


@pytest.mark.parametrize("case", sorted(CASES))
def test_captured_cli_telemetry_is_judged_one_record_per_call(case: str) -> None:
    capture, order = CASES[case]
    with running_service(judge=PATIENT) as service:
        for signal in order:
            for body in requests(capture, signal):
                assert post(service, f"/v1/{signal}", body, "application/json")[0] == 200
        assert service.flush()
        assert verdict_counts(service) == SIX_SAME_CALLS_THEN_A_CYCLE
        assert cli_calls(service) == {(CLIS[capture], "exported"): 12, (CLIS[capture], "not_exported"): 0}


def _without_tool_details(body: bytes) -> bytes:
    """A Claude Code logs request as it is sent without OTEL_LOG_TOOL_DETAILS=1: no tool input."""
    document = json.loads(body)
    for resource in document["resourceLogs"]:
        for scope in resource["scopeLogs"]:
            for record in scope["logRecords"]:
                record["attributes"] = [a for a in record["attributes"]
                                        if a["key"] not in ("tool_input", "tool_parameters")]
    return json.dumps(document).encode()


def test_claude_code_without_tool_details_says_what_is_missing(caplog) -> None:
    """Without the arguments nothing can be called a repeat: no reminder, and the service says which
    setting turns them on (in the log and in `otelguard_cli_tool_calls`)."""
    with running_service(judge=PATIENT) as service, caplog.at_level(logging.WARNING, logger="otelguard"):
        for body in requests("claude", "logs"):
            assert post(service, "/v1/logs", _without_tool_details(body), "application/json")[0] == 200
        assert service.flush()
        assert verdict_counts(service) == Counter()
        assert cli_calls(service) == {("claude-code", "exported"): 0, ("claude-code", "not_exported"): 12}
    assert any("OTEL_LOG_TOOL_DETAILS=1" in record.getMessage() for record in caplog.records)


def test_log_records_that_are_no_tool_call_are_counted_as_not_read() -> None:
    with running_service(judge=PATIENT) as service:
        for body in requests("codex", "logs"):
            assert post(service, "/v1/logs", body, "application/json")[0] == 200
        assert service.flush()
        counted = {s.labels["read"]: s.value for s in scrape(service)["otelguard_service_log_records"]
                   if s.name.endswith("_total")}
        assert counted["cli_tool_call"] == 12
        assert counted["not_read"] > 0


def analyzed(*files: Path) -> tuple[Counter[tuple[str, str, str]], dict]:
    analysis = analyze(files)
    counts = Counter((row.verdict.guard, row.verdict.rule, str(row.verdict.action)) for row in analysis.verdicts)
    return counts, analysis.coverage.to_json()


@pytest.mark.parametrize("case", sorted(CASES))
def test_analyze_reads_cli_log_and_span_files_through_the_same_conventions(case: str) -> None:
    capture, order = CASES[case]
    counts, coverage = analyzed(*(CAPTURES / capture / f"{signal}.jsonl.gz" for signal in order))
    assert counts == SIX_SAME_CALLS_THEN_A_CYCLE
    assert coverage["cli_tool_calls"] == {CLIS[capture]: {"calls": 12, "without_arguments": 0,
                                                          "model_calls_with_usage": 13}}


def test_analyze_says_which_setting_exports_claude_codes_arguments(tmp_path) -> None:
    stripped = tmp_path / "claude-logs.jsonl"
    stripped.write_bytes(b"\n".join(_without_tool_details(body) for body in requests("claude", "logs")))
    counts, coverage = analyzed(stripped)
    assert counts == Counter()
    assert coverage["cli_tool_calls"] == {"claude-code": {"calls": 12, "without_arguments": 12,
                                                          "model_calls_with_usage": 13}}
    warning = next(w for w in coverage["warnings"] if w["code"] == "cli-tool-arguments-not-exported")
    assert "OTEL_LOG_TOOL_DETAILS=1" in warning["message"] and warning["incomplete"]


def _opencode_call_id(span: dict) -> str | None:
    """The call id of opencode's `ai.toolCall` span (its span of a call with the arguments), or None."""
    if span["name"] != "ai.toolCall":
        return None
    return next(a["value"]["stringValue"] for a in span["attributes"] if a["key"] == "ai.toolCall.id")


def _spans(document: dict) -> list[list[dict]]:
    return [scope["spans"] for resource in document["resourceSpans"] for scope in resource["scopeSpans"]]


def test_analyze_judges_a_cli_record_whose_partner_never_comes_after_the_wait_not_at_the_end(tmp_path) -> None:
    """opencode tells of a call in two spans. With the span that has the arguments lost, the other
    waits `flush_after` records for it and is then judged alone, in its place in the session: among
    the identical calls it came with, not after the alternation that followed. The input is span
    lines only: the wait runs out on them as on log lines."""
    lines = [json.loads(body) for body in requests("opencode", "traces")]
    second_call = [_opencode_call_id(span) for line in lines for spans in _spans(line) for span in spans
                   if _opencode_call_id(span)][1]
    for line in lines:
        for spans in _spans(line):
            spans[:] = [span for span in spans if _opencode_call_id(span) != second_call]
    path = tmp_path / "opencode-traces.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    analysis = analyze([path], options=AnalyzerOptions(limits=ReplayLimits(flush_after_records=1)))
    (agent,) = analysis.findings.agents()
    steps = [step.to_json() for step in analysis.findings.steps(agent.key)]
    assert len(steps) == 12
    alone = next(step["step"] for step in steps if step["arguments"] is None)
    first_read = next(step["step"] for step in steps if step["tool"] == "read")
    assert alone < first_read, [(step["step"], step["tool"], step["arguments"]) for step in steps]


def _gemini_llm_call(index: int, parts: list[dict]) -> dict:
    return {"traceId": f"{index + 1:032x}", "spanId": f"{index + 1:016x}", "name": "llm_call",
            "startTimeUnixNano": str(1_000_000 * index), "endTimeUnixNano": str(1_000_000 * index + 500),
            "attributes": [
                {"key": "gen_ai.operation.name", "value": {"stringValue": "llm_call"}},
                {"key": "gen_ai.conversation.id", "value": {"stringValue": "session-1"}},
                {"key": "gen_ai.request.model", "value": {"stringValue": "gemini-2.5-pro"}},
                {"key": "gen_ai.output.messages", "value": {"stringValue": json.dumps([{"role": "model",
                                                                                          "parts": parts}])}}]}


def test_gemini_model_calls_are_judged_in_their_session() -> None:
    """Gemini CLI starts a trace for every `llm_call` span: its thoughts are judged in the session's
    chain all the same, and calls that only think, again and again, get the reasoning-only steer."""
    thought = ("Let me reconsider the directory listing once more before deciding what to run; the files "
               "might have changed, so I should think about which command is best. ") * 16  # past min_reasoning_chars
    spans = [_gemini_llm_call(index, [{"text": f"{thought} (pass {index})", "thought": True}]) for index in range(3)]
    body = json.dumps({"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "gemini-cli"}}]},
        "scopeSpans": [{"scope": {"name": "gemini-cli"}, "spans": spans}]}]}).encode()
    with running_service(judge=PATIENT) as service:
        assert post(service, "/v1/traces", body, "application/json")[0] == 200
        assert service.flush()
        steer = {key: count for key, count in verdict_counts(service).items() if key[2] != "none"}
        assert steer == {("thinking-loop-guard", "reasoning-only", "steer"): 1}


def test_gemini_capture_model_calls_are_read() -> None:
    with running_service(judge=PATIENT) as service:
        for body in requests("gemini", "traces"):
            assert post(service, "/v1/traces", body, "application/json")[0] == 200
        assert service.flush()
        model = [s.value for s in scrape(service)["otelguard_spans"] if s.name.endswith("_total")
                 and s.labels["otelguard_span_kind"] == "model" and s.labels["service_name"] == "gemini-cli"]
        assert model == [13]
