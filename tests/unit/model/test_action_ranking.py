"""One order of actions, everywhere: none < remind < warn < steer < block < abort < break < cancel.

The span's attributes show its strongest verdict, live and in the analyzer alike, and `--fail-on`
ranks actions the same way.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otel_support import Guarded, tool_span
from live_export_support import OtlpJsonLinesExporter

import otelguard
from otelguard.model.actions import ACTION_ORDER, Action, reaches, strongest
from otelguard.analyzer import analyze
from otelguard.cli import main
from otelguard.model.records import Verdict

ORDER = ["none", "remind", "warn", "steer", "block", "abort", "break", "cancel"]


def verdict(action: str, guard: str = "g") -> Verdict:
    return Verdict(guard, "v", "r", action)


def test_actions_are_ranked_weakest_first():
    assert [action.value for action in ACTION_ORDER] == ORDER
    assert [Action(name).rank for name in ORDER] == list(range(len(ORDER)))


def test_strongest_is_the_highest_ranked_verdict_the_first_of_equals():
    first_remind, abort, second_remind = verdict("remind", "a"), verdict("abort"), verdict("remind", "b")
    assert strongest([first_remind, abort, second_remind]) is abort
    assert strongest([first_remind, second_remind]) is first_remind
    assert strongest([verdict("break"), verdict("cancel"), verdict("block")]).action == "cancel"
    assert strongest([verdict("junk"), verdict("none")]).action == "junk"  # names no action: ranks as none


@pytest.mark.parametrize("threshold", ORDER[1:])
def test_an_action_reaches_a_threshold_at_or_below_it(threshold):
    for action in ORDER:
        assert reaches(action, threshold) == (ORDER.index(action) >= ORDER.index(threshold) and action != "none")
    assert not reaches("junk", threshold)


def test_parse_names_none_for_anything_that_names_no_action():
    assert Action.parse("abort") is Action.ABORT
    assert Action.parse("bogus") is Action.NONE and Action.parse(None) is Action.NONE


def _timed_out_third_call(tracer) -> None:
    """Three identical tool calls in one run; the third overruns its 50 ms budget, waiting for its signal."""
    with tracer.start_as_current_span("invoke_agent a", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": "c"}):
        for _ in range(2):
            tool_span(tracer, "lookup", '{"q":"same"}')
        with tracer.start_as_current_span("execute_tool lookup", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.arguments": '{"q":"same"}', "otelguard.tool.timeout_ms": 50}) as span:
            assert otelguard.tool_signal().wait(5)  # released by the guard's deadline
            span.set_attribute("gen_ai.tool.call.result", "late")


@pytest.fixture
def exported(tmp_path: Path) -> tuple[Path, list]:
    """The run's spans as the live guard exported them, also written as OTLP JSON Lines."""
    path = tmp_path / "ranked.otlp.jsonl"
    with Guarded(downstream=[SimpleSpanProcessor(OtlpJsonLinesExporter(path))]) as g:
        _timed_out_third_call(g.tracer)
        assert g.processor.force_flush()
        spans = list(g.exporter.get_finished_spans())
    return path, spans


def test_a_timed_out_third_identical_call_shows_abort_live(exported):
    """Both a reminder (the third identical call) and an abort (its deadline fired): the span shows abort."""
    _, spans = exported
    third = [span for span in spans if span.name == "execute_tool lookup"][-1]
    assert third.attributes["otelguard.action"] == "abort"
    shown = {(event.attributes["otelguard.guard"], event.attributes["otelguard.action"])
             for event in third.events if event.name == "otelguard.verdict"}
    assert shown == {("repeat-tool-reminder", "remind"), ("timeout-policy", "abort")}


def test_the_analyzer_ranks_the_replayed_span_as_the_live_guard_did(exported):
    path, spans = exported
    third = [span for span in spans if span.name == "execute_tool lookup"][-1]
    rows = [row for row in analyze([path]).verdicts if row.step.span_id == third.get_span_context().span_id]
    assert sorted(row.verdict.action for row in rows) == ["abort", "remind"]
    assert strongest([row.verdict for row in rows]).action == third.attributes["otelguard.action"] == "abort"


@pytest.mark.parametrize(("fail_on", "status"), [("remind", 1), ("abort", 1), ("break", 0), ("cancel", 0)])
def test_fail_on_ranks_actions_the_same_way(exported, fail_on, status, capsys):
    path, _ = exported
    assert main(["analyze", str(path), "--fail-on", fail_on]) == status
    capsys.readouterr()
