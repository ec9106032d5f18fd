"""The analyzer's verdicts equal the live processor's on the same spans.

A scripted agent loop runs on the real SDK with `GuardSpanProcessor(downstream=[SimpleSpanProcessor(
exporter)])`; the exporter writes what it is handed as OTLP JSON Lines, the way the Collector's file
exporter does (the SDK's own OTLP protobuf encoder, then the protobuf JSON mapping with hex ids and
integer enums). The live verdicts are read back from the exported spans' `otelguard.verdict` events;
the file is then analysed and every verdict must match, counting verdicts included.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.trace import StatusCode

import otelguard
from otelguard.analyzer import analyze
from otel_support import tool_span
from stream_support import ending_in_a_chant
from live_export_support import (
    CHAT, agent_run, analyzer_verdicts, export_live, export_one_run, live_verdicts, model_call, scripted_agent,
)


@pytest.fixture
def exported_run(tmp_path) -> Path:
    path = tmp_path / "live.otlp.jsonl"
    export_live(path, scripted_agent)
    return path


def test_live_run_exported_and_reanalysed_gives_identical_verdicts(exported_run: Path) -> None:
    """Every verdict the live processor wrote on the exported spans is the analyzer's on the file, and no other."""
    live = live_verdicts(exported_run)
    assert live == analyzer_verdicts(exported_run)


def test_the_scripted_run_exercises_every_guard(exported_run: Path) -> None:
    """The live run really did remind, steer, cut a stream and abort a tool (so the equality above means something)."""
    acting = {(guard, rule, action, count) for _, guard, _, rule, action, count, *_ in live_verdicts(exported_run)
              if action != "none"}
    assert acting == {
        ("repeat-tool-reminder", "repeat-threshold", "remind", 3),
        ("repeat-tool-reminder", "repeat-threshold", "remind", 5),
        ("thinking-loop-guard", "reasoning-only", "steer", None),
        ("thinking-loop-guard", "identical-chunks", "break", None),
        ("timeout-policy", "tool-timeout", "abort", None),
        ("no-progress", "cycle", "remind", 3),
        ("no-progress", "cycle", "steer", 5),
    }
    lines = exported_run.read_text(encoding="utf-8").splitlines()
    assert len(lines) > 20  # one export per span: a trace spread over many lines, children first


def test_a_long_failing_output_is_judged_alike_live_and_in_the_analyzer(tmp_path: Path) -> None:
    """Three retries of one command, each failing with a long log whose head and tail are read (its
    start time differs, its summary is the same): the same error-loop reminder live and replayed."""
    log = "".join(f"step {n}: compiling module_{n}.c\n" for n in range(400)) + "error: undefined reference to `main'\n"

    def body(tracer) -> None:
        for n, command in enumerate(["make all", "make all -k", "make  all -k"]):
            with tracer.start_as_current_span("execute_tool bash", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "bash",
                    "gen_ai.tool.call.arguments": json.dumps({"command": command})}) as span:
                span.set_attribute("gen_ai.tool.call.result", f"started 2026-12-02T10:0{n}:00Z\n{log}")
                span.set_status(StatusCode.ERROR, "exit code 2")

    path = tmp_path / "long-failure.otlp.jsonl"
    export_one_run(path, body)
    live = live_verdicts(path)
    assert [(rule, action) for _, _, _, rule, action, *_ in live] == [("error-loop", "remind")]
    assert live == analyzer_verdicts(path)


NO_CYCLE_RULE = {"guards": [{"id": "thinking-loop-guard", "config": {"max_repeated_cycle_chars": 0}}]}


def test_a_live_flag_on_captured_output_is_judged_again_with_the_analyzers_config(tmp_path: Path) -> None:
    """The live span-end judge flagged the call's captured output: the analyzer judges that output
    itself, so its own configuration decides (the live verdict is not taken over)."""
    path = tmp_path / "flagged.otlp.jsonl"
    export_one_run(path, lambda tracer: model_call(tracer, text="Checking the file.\n" * 40))
    assert [(rule, action) for _, _, _, rule, action, *_ in live_verdicts(path)] == [("repeating-cycle", "none")]
    assert live_verdicts(path) == analyzer_verdicts(path)
    assert analyze([path], NO_CYCLE_RULE).verdicts == []


def test_a_live_end_of_stream_flag_without_captured_output_is_taken_over(tmp_path: Path) -> None:
    """Only the live watch saw the deltas (not recorded, output not captured): the analyzer shows its
    verdict whatever its own configuration, as it does a live cut."""
    path = tmp_path / "streamed.otlp.jsonl"

    def streamed(tracer) -> None:
        with tracer.start_as_current_span("chat scripted", attributes=CHAT):
            for _ in otelguard.watch_stream(iter(ending_in_a_chant())):
                pass

    export_one_run(path, streamed)
    assert [(rule, action) for _, _, _, rule, action, *_ in live_verdicts(path)] == [("repeating-cycle", "none")]
    assert [row.verdict.rule for row in analyze([path], NO_CYCLE_RULE).verdicts] == ["repeating-cycle"]


STOP_CYCLES = {"guards": [{"id": "repeat-tool-reminder"}, {"id": "no-progress", "config": {"stop_after": 4}}]}


def test_a_cycle_blocked_live_is_blocked_in_the_analyzer_too(tmp_path: Path) -> None:
    """no-progress with stop_after: the call blocked at its start live carries the same verdicts offline."""
    path = tmp_path / "blocked.otlp.jsonl"

    def cycling(tracer) -> None:
        with agent_run(tracer, "pager", "conversation-3"):
            for _ in range(5):
                tool_span(tracer, "read_page", '{"page": 2}', result="page two")
                tool_span(tracer, "read_page", '{"page": 3}', result="page three")

    export_live(path, cycling, STOP_CYCLES)
    live = live_verdicts(path)
    assert [(rule, action, count) for _, guard, _, rule, action, count, *_ in live
            if guard == "no-progress" and action != "none"].count(("cycle", "block", 4)) >= 1
    assert live == analyzer_verdicts(path, STOP_CYCLES)
