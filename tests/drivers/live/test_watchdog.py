"""Watchdog hardening: no budget value, however large or odd, stops the watchdog from firing later deadlines.

A budget reaches the watchdog from the span attribute `otelguard.tool.timeout_ms` (any float an
instrumentation writes, infinity included), from `@budget` and from integrations via `otelguard.live.timeouts.arm`.
One bad value must cost at most its own deadline, never every tool timeout in the process.
"""

from __future__ import annotations

import math

import pytest

import otelguard
from otelguard.live.timeouts import arm
from otel_support import Guarded

TIMEOUT_ONLY = {"guards": [{"id": "timeout-policy"}]}


@pytest.fixture
def guarded():
    with Guarded(TIMEOUT_ONLY) as g:
        yield g


def _tool_span(tracer, name: str, budget_ms: float):
    return tracer.start_as_current_span(f"execute_tool {name}", attributes={
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name, "otelguard.tool.timeout_ms": budget_ms})


def _normal_deadlines_still_fire(tracer, exporter) -> None:
    """Two 30 ms budgets in a row, while the odd deadline is still pending, both fire."""
    for attempt in range(2):
        with _tool_span(tracer, "normal", 30):
            assert otelguard.tool_signal().wait(2), f"30 ms budget {attempt + 1} did not fire: the watchdog is stuck"
    spans = [s for s in exporter.get_finished_spans() if s.name == "execute_tool normal"]
    assert [s.attributes.get("otelguard.verdict") for s in spans] == ["tool_timeout", "tool_timeout"]


@pytest.mark.parametrize("budget_ms", [math.inf, 1e300, 1e18, 2**63], ids=["inf", "1e300", "1e18", "2**63"])
def test_a_huge_budget_attribute_leaves_later_deadlines_firing(guarded, budget_ms):
    """A tool declaring an enormous (or infinite) budget does not stop a later 30 ms budget from firing."""
    with _tool_span(guarded.tracer, "huge", budget_ms):  # still running while the others come and go
        _normal_deadlines_still_fire(guarded.tracer, guarded.exporter)


@pytest.mark.parametrize("budget_ms", [math.nan, math.inf, 1e300], ids=["nan", "inf", "1e300"])
def test_a_bad_budget_armed_by_an_integration_leaves_later_deadlines_firing(guarded, budget_ms):
    """`timeouts.arm` (the decorator's and integrations' entry) with a non-finite or huge budget does not stop
    a later 30 ms budget from firing."""
    with guarded.tracer.start_as_current_span("execute_tool odd", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "odd"}) as span:
        arm(span, budget_ms, guarded.processor)
        _normal_deadlines_still_fire(guarded.tracer, guarded.exporter)
