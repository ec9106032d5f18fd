"""Tool budgets: arming deadlines on the watchdog, and finding the signal a tool should read.

One place for the timeout machinery that the processor, `@otelguard.budget`, `otelguard.tool_signal()`
and the integrations share:

- `ToolBudgets` (one per processor): every open tool span's budget, pre-emptive block and signal;
  armed at the span's start from the budget it declares, or later by `arm(span, budget_ms)`;
  `ended(span_id)` tells the engine whether the guard's own deadline fired first.
- `tool_signal()`: the signal of the guarded call being run (a context variable, set by
  `signal_scope`), else that of the current tool span, else an inert one.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, ContextManager

from opentelemetry import trace as trace_api

from ..engine.bounded import OnEvict, OpenSpans
from ..runtime.forksafe import reinit_after_fork
from ..guards import ToolStart
from ..model.semconv import OTELGUARD_TOOL_TIMEOUT_MS
from ..runtime.scopes import scoped
from .signals import INERT, TOOL_TIMEOUT, ToolSignal
from .registry import owning_processor
from .watchdog import Deadline, Watchdog

MAX_OPEN_TOOLS = 100_000
_TOOL_MARKERS = (("gen_ai.operation.name", "execute_tool"), ("openinference.span.kind", "TOOL"))


def timeout_message(budget_ms: float) -> str:
    ms = str(int(budget_ms)) if float(budget_ms).is_integer() else f"{budget_ms:g}"
    return f"tool call timed out after {ms}ms"


def timeout_error(budget_ms: float) -> dict[str, Any]:
    """The structured error that replaces a timed-out tool's result (design §4.1)."""
    message = timeout_message(budget_ms)
    return {
        "isError": True,
        "error": {"message": message, "info": {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"}},
        "content": [{"type": "text", "text": f"Error: {message}"}],
    }


class _ArmedTool:
    """An open tool span's budget and block. Its signal is made when the tool asks for it or a
    deadline needs it. `no_deadline`: none may be armed, not even one the tool declares itself."""

    __slots__ = ("budget_ms", "block_message", "no_deadline", "signal", "deadline")

    def __init__(self, budget_ms: float | None, block_message: str | None, no_deadline: bool = False):
        self.budget_ms = budget_ms
        self.block_message = block_message
        self.no_deadline = no_deadline
        self.signal: ToolSignal | None = None
        self.deadline: Deadline | None = None


class ToolBudgets:
    """The budgets of one processor's open tool spans. Thread-safe."""

    def __init__(self, *, enabled: bool, on_error: Callable[[BaseException], None], on_evict: OnEvict):
        self.enabled = enabled  # a timeout-policy guard runs: without one, tools run untouched
        self._on_error = on_error
        self._on_evict = on_evict
        self._start_afresh()
        reinit_after_fork(self, "_start_afresh")

    def _start_afresh(self) -> None:
        """Run again in a forked child: the parent's open tools never end there."""
        # The open tool spans: falsy while none is open, when a span's end has nothing to look up here.
        self.open_tools: OpenSpans[int, _ArmedTool] = OpenSpans(MAX_OPEN_TOOLS, on_evict=self._on_evict)
        self._lock = threading.Lock()  # two threads asking for one tool's signal must get the same
        self._watchdog = Watchdog(on_error=self._on_error)


    def started(self, span_id: int, decision: ToolStart) -> None:
        """A tool span started: keep what the guards decided, and arm its declared budget."""
        armed = _ArmedTool(decision.budget_ms, decision.block.message if decision.block is not None else None,
                           decision.no_deadline)
        self.open_tools.put(span_id, armed)
        if decision.budget_ms is not None and self.enabled:
            self._arm(armed, decision.budget_ms)

    def ended(self, span_id: int) -> float | None:
        """A span ended: if it was an open tool span whose deadline fired first, its budget."""
        armed = self.open_tools.pop(span_id, None)
        if armed is None:
            return None
        if armed.deadline is not None:
            armed.deadline.cancel()
        signal = armed.signal
        return signal.budget_ms if signal is not None and signal.timed_out else None

    def signal_for(self, span_id: int) -> ToolSignal | None:
        """The signal of an open tool span, made now if needed; None for any other span."""
        armed = self.open_tools.get(span_id)
        return self._signal(armed) if armed is not None else None

    def arm(self, span_id: int, budget_ms: float) -> ToolSignal | None:
        """Arm a budget for an open tool span (a decorator or an integration declaring one); for a
        span that is not one, a budget of its own, stored nowhere. None without a timeout policy."""
        if not self.enabled:
            return None
        armed = self.open_tools.get(span_id)
        if armed is None:
            return self.standalone(budget_ms)
        signal = self._signal(armed)
        if armed.deadline is None and not armed.no_deadline:
            self._arm(armed, budget_ms)
        return signal

    def standalone(self, budget_ms: float) -> ToolSignal | None:
        """A budget for a call with no tool span of ours around it: a signal on the watchdog."""
        if not self.enabled:
            return None
        signal = ToolSignal(budget_ms)
        message = timeout_message(budget_ms)
        self._watchdog.arm(budget_ms / 1000, lambda: signal.abort(TOOL_TIMEOUT, message))
        return signal

    def shutdown(self) -> None:
        self.enabled = False
        self._watchdog.shutdown()

    def _signal(self, armed: _ArmedTool) -> ToolSignal:
        if armed.signal is None:
            with self._lock:
                if armed.signal is None:
                    signal = ToolSignal(armed.budget_ms)
                    signal.block_message = armed.block_message
                    armed.signal = signal
        return armed.signal

    def _arm(self, armed: _ArmedTool, budget_ms: float) -> None:
        signal = self._signal(armed)
        signal.budget_ms = armed.budget_ms = budget_ms
        message = timeout_message(budget_ms)
        armed.deadline = self._watchdog.arm(budget_ms / 1000, lambda: signal.abort(TOOL_TIMEOUT, message))


# --- the signal a tool reads -----------------------------------------------------------------------
_current_signal: contextvars.ContextVar[ToolSignal | None] = contextvars.ContextVar(
    "otelguard_tool_signal", default=None)


def tool_signal() -> ToolSignal:
    """The signal of the guarded call being run, else of the current tool span; an inert signal
    (never aborted) when there is neither."""
    signal = _current_signal.get()
    if signal is not None:
        return signal
    span = trace_api.get_current_span()
    processor = owning_processor(span)
    if processor is not None:
        signal = processor.budgets.signal_for(span.get_span_context().span_id)
    return signal if signal is not None else INERT


def signal_scope(signal: ToolSignal) -> ContextManager[ToolSignal | None]:
    """`tool_signal()` returns `signal` inside this block (and in tasks started from it)."""
    return scoped(_current_signal, signal)


def is_tool_span(span: Any) -> bool:
    """Whether `span` is an open tool span (by the markers the conventions give tool spans at start)."""
    if not span.is_recording():
        return False
    attributes = getattr(span, "attributes", None) or {}
    return any(attributes.get(key) == value for key, value in _TOOL_MARKERS)


def arm(span: Any, budget_ms: float, processor: Any = None) -> ToolSignal | None:
    """Arm `budget_ms` for the open tool span `span` on `processor` (default: the span's guard).
    The budget is written on the span (`otelguard.tool.timeout_ms`), so a replay knows it. A budget
    the span declared at its start stands. None when no guard runs a timeout policy."""
    processor = processor or owning_processor(span)
    if processor is None or not processor.budgets.enabled:
        return None
    span_id = span.get_span_context().span_id
    existing = processor.budgets.signal_for(span_id)
    if existing is not None and existing.budget_ms is not None:
        return existing
    if span.is_recording():
        span.set_attribute(OTELGUARD_TOOL_TIMEOUT_MS, float(budget_ms))
    return processor.budgets.arm(span_id, float(budget_ms))
