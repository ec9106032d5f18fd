"""Tool budgets: a guarded tool is released when its budget runs out, and finds its signal."""

from __future__ import annotations

import asyncio
import time

from otel_support import Guarded

import otelguard
from otelguard.live.timeouts import timeout_error
from otelguard.live.signals import INERT


@otelguard.budget(timeout_ms=100)
def cooperative_lookup() -> str:
    otelguard.tool_signal().wait(5)
    return "too late"


@otelguard.budget(timeout_ms=100)
async def cooperative_async_lookup() -> str:
    signal = otelguard.tool_signal()
    await asyncio.wait_for(signal.wait_async(), 5)
    return "too late"


def test_a_budgeted_function_outside_any_tool_span_is_released_on_a_provider_that_is_not_global():
    """`@budget(timeout_ms=100)` called outside any span, the guarded provider not the global one: the
    call is released at its budget with the structured TOOL_TIMEOUT error."""
    with Guarded():
        began = time.monotonic()
        result = cooperative_lookup()
        elapsed = time.monotonic() - began
    assert elapsed < 0.2, elapsed
    assert result == timeout_error(100)


def test_a_budgeted_coroutine_outside_any_tool_span_is_released_on_a_provider_that_is_not_global():
    with Guarded():
        began = time.monotonic()
        result = asyncio.run(cooperative_async_lookup())
        elapsed = time.monotonic() - began
    assert elapsed < 0.2, elapsed
    assert result == timeout_error(100)


def test_a_budgeted_function_inside_a_tool_span_is_released_and_the_span_judged_timed_out():
    with Guarded() as g:
        with g.tracer.start_as_current_span("execute_tool cooperative_lookup", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "cooperative_lookup"}):
            began = time.monotonic()
            result = cooperative_lookup()
            elapsed = time.monotonic() - began
        (span,) = g.exporter.get_finished_spans()
    assert elapsed < 0.2 and result == timeout_error(100)
    assert span.attributes["otelguard.action"] == "abort"
    assert span.attributes["otelguard.tool.timeout_ms"] == 100.0


def test_a_tool_span_gives_its_tool_one_signal_and_none_after_it_ends():
    """Inside an open tool span `tool_signal()` is that span's signal, the same each time; outside it,
    the inert signal that never aborts."""
    with Guarded(export=False) as g:
        with g.tracer.start_as_current_span("execute_tool probe", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe"}):
            signal = otelguard.tool_signal()
            assert signal is not INERT and otelguard.tool_signal() is signal
            assert not signal.aborted
        assert otelguard.tool_signal() is INERT


def test_a_budgeted_function_runs_untouched_without_a_timeout_policy():
    with Guarded({"guards": [{"id": "repeat-tool-reminder"}]}):
        @otelguard.budget(timeout_ms=50)
        def quick() -> str:
            return "done" if otelguard.tool_signal() is INERT else "armed"

        assert quick() == "done"
