"""Containment hardening: outside tests, an internal error never reaches the agent; it is counted and logged once.

The suite runs with the switch on (re-raise); these tests switch it off with
OTELGUARD_RAISE_INTERNAL_ERRORS=0 and break the guard on purpose, to check what production sees.
"""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelguard
from otelguard.runtime.containment import RAISE_ENV
from otel_support import Guarded, metric_points

REPEAT_2 = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}}]}
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe", "gen_ai.tool.call.arguments": '{"q": 1}'}


class Broken(Exception):
    pass


def _raise(*args, **kwargs):
    raise Broken("a guard bug")


@pytest.fixture
def guarded(monkeypatch):
    monkeypatch.setenv(RAISE_ENV, "0")
    with Guarded(REPEAT_2, control=otelguard.Mailbox()) as g:
        yield g


def _run(tracer, calls: int = 3) -> None:
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for _ in range(calls):
            with tracer.start_as_current_span("execute_tool probe", attributes=TOOL):
                pass


def test_a_failing_guard_at_span_end_is_contained_counted_and_logged_once(guarded, monkeypatch, caplog):
    """A guard raising on every tool end: the agent sees nothing, every span is still exported untouched,
    each failure is counted under where=on_end, and it is logged once."""
    monkeypatch.setattr(guarded.processor.engine.guards[0], "on_tool_end", _raise)
    with caplog.at_level(logging.ERROR, logger="otelguard"):
        _run(guarded.tracer)
    spans = guarded.exporter.get_finished_spans()
    assert len(spans) == 4
    assert not [s for s in spans if "otelguard.verdict" in s.attributes]
    assert metric_points(guarded.metric_reader, "otelguard.internal.errors") == [({"where": "on_end"}, 3)]
    assert len([r for r in caplog.records if "internal error in on_end" in r.getMessage()]) == 1


def test_a_failing_guard_at_span_start_is_contained_and_counted(guarded, monkeypatch):
    """A failure while a span starts is counted under where=on_start and the span still runs and exports."""
    monkeypatch.setattr(guarded.processor.engine, "start", _raise)
    _run(guarded.tracer, calls=2)
    assert len(guarded.exporter.get_finished_spans()) == 3
    assert ({"where": "on_start"}, 3) in metric_points(guarded.metric_reader, "otelguard.internal.errors")


class RaisingExporterProcessor(SimpleSpanProcessor):
    """A downstream processor whose ending and end hooks raise (a broken exporter pipeline)."""

    def _on_ending(self, span) -> None:
        raise Broken("a downstream bug")

    def on_end(self, span) -> None:
        raise Broken("a downstream bug")


def test_a_failing_downstream_processor_does_not_stop_the_guard(monkeypatch):
    """A downstream processor that raises is counted under where=downstream.on_ending / on_end; the guard
    still judges."""
    monkeypatch.setenv(RAISE_ENV, "0")
    # The raising processor is the guard's only downstream (`export=False`): nothing else takes the spans.
    with Guarded(REPEAT_2, export=False, downstream=[RaisingExporterProcessor(InMemorySpanExporter())],
                 control=otelguard.Mailbox()) as g:
        _run(g.tracer, calls=2)
        assert g.processor.force_flush(5_000)
        errors = metric_points(g.metric_reader, "otelguard.internal.errors")
        assert ({"where": "downstream.on_ending"}, 3) in errors and ({"where": "downstream.on_end"}, 3) in errors
        assert sum(v for _, v in metric_points(g.metric_reader, "otelguard.verdicts")) == 1


def test_with_the_switch_on_an_internal_error_is_raised(monkeypatch):
    """With OTELGUARD_RAISE_INTERNAL_ERRORS=1 (this suite's setting) the same bug fails loudly."""
    monkeypatch.setenv(RAISE_ENV, "1")
    with Guarded({"guards": [{"id": "repeat-tool-reminder"}]}, export=False) as g:  # sibling mode, no control
        monkeypatch.setattr(g.processor.engine.guards[0], "on_tool_end", _raise)
        with pytest.raises(Broken):
            _run(g.tracer, calls=1)


def test_pytest_being_imported_is_no_reason_to_raise(monkeypatch):
    """An application's own test run imports pytest too: without the switch, the bug stays contained."""
    monkeypatch.delenv(RAISE_ENV, raising=False)
    with Guarded({"guards": [{"id": "repeat-tool-reminder"}]}, export=False) as g:
        monkeypatch.setattr(g.processor.engine.guards[0], "on_tool_end", _raise)
        _run(g.tracer, calls=1)  # no exception reaches the application
        errors = metric_points(g.metric_reader, "otelguard.internal.errors")
        assert ({"where": "on_end"}, 1) in errors
