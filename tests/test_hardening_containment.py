"""Containment hardening: outside tests, an internal error never reaches the agent; it is counted and logged once.

The fuzz tests keep the pytest behaviour (re-raise); these tests switch it off with
OTELGUARD_RAISE_INTERNAL_ERRORS=0 and break the guard on purpose, to check what production sees.
"""

from __future__ import annotations

import logging

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelguard
from otelguard.containment import RAISE_ENV
from otel_support import metric_points

TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe", "gen_ai.tool.call.arguments": '{"q": 1}'}


class Broken(Exception):
    pass


def _raise(*args, **kwargs):
    raise Broken("a guard bug")


@pytest.fixture
def guarded(monkeypatch):
    monkeypatch.setenv(RAISE_ENV, "0")
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    processor = otelguard.GuardSpanProcessor(
        {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}}]},
        downstream=[SimpleSpanProcessor(exporter)], control=otelguard.Mailbox(), meter_provider=meter_provider)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    yield provider.get_tracer("hardening"), processor, exporter, reader
    provider.shutdown()
    meter_provider.shutdown()


def _run(tracer, calls: int = 3) -> None:
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for _ in range(calls):
            with tracer.start_as_current_span("execute_tool probe", attributes=TOOL):
                pass


def test_a_failing_guard_at_span_end_is_contained_counted_and_logged_once(guarded, monkeypatch, caplog):
    """A guard raising on every tool end: the agent sees nothing, every span is still exported untouched,
    each failure is counted under where=on_end, and it is logged once."""
    tracer, processor, exporter, reader = guarded
    monkeypatch.setattr(processor.engine.guards[0], "on_tool_end", _raise)
    with caplog.at_level(logging.ERROR, logger="otelguard"):
        _run(tracer)
    spans = exporter.get_finished_spans()
    assert len(spans) == 4
    assert not [s for s in spans if "otelguard.verdict" in s.attributes]
    assert metric_points(reader, "otelguard.internal.errors") == [({"where": "on_end"}, 3)]
    assert len([r for r in caplog.records if "internal error in on_end" in r.getMessage()]) == 1


def test_a_failing_guard_at_span_start_is_contained_and_counted(guarded, monkeypatch):
    """A failure while a span starts is counted under where=on_start and the span still runs and exports."""
    tracer, processor, exporter, reader = guarded
    monkeypatch.setattr(processor.engine, "span_started", _raise)
    _run(tracer, calls=2)
    assert len(exporter.get_finished_spans()) == 3
    assert ({"where": "on_start"}, 3) in metric_points(reader, "otelguard.internal.errors")


class RaisingExporterProcessor(SimpleSpanProcessor):
    """A downstream processor whose on_end raises (a broken exporter pipeline)."""

    def on_end(self, span) -> None:
        raise Broken("a downstream bug")


def test_a_failing_downstream_processor_does_not_stop_the_guard(monkeypatch):
    """A downstream processor that raises is counted under where=downstream.on_end; the guard still judges."""
    monkeypatch.setenv(RAISE_ENV, "0")
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    processor = otelguard.GuardSpanProcessor(
        {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}}]},
        downstream=[RaisingExporterProcessor(InMemorySpanExporter())], control=otelguard.Mailbox(),
        meter_provider=meter_provider)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    try:
        _run(provider.get_tracer("hardening"), calls=2)
        assert processor.force_flush(5_000)
        assert ({"where": "downstream.on_end"}, 3) in metric_points(reader, "otelguard.internal.errors")
        assert sum(v for _, v in metric_points(reader, "otelguard.verdicts")) == 1
    finally:
        provider.shutdown()
        meter_provider.shutdown()


def test_under_pytest_without_the_switch_an_internal_error_is_raised(monkeypatch):
    """With the env var unset, under pytest, the same bug fails loudly (so a swallowed bug fails the suite)."""
    monkeypatch.delenv(RAISE_ENV, raising=False)
    processor = otelguard.GuardSpanProcessor({"guards": [{"id": "repeat-tool-reminder"}]})
    provider = TracerProvider()
    provider.add_span_processor(processor)
    monkeypatch.setattr(processor.engine.guards[0], "on_tool_end", _raise)
    try:
        with pytest.raises(Broken):
            _run(provider.get_tracer("hardening"), calls=1)
    finally:
        provider.shutdown()
