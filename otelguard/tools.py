"""Tool budgets and the tool signal: `@otelguard.budget(timeout_ms=...)` and `otelguard.tool_signal()`."""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar

from opentelemetry import trace as trace_api

from .errors import ConfigError
from .guards.timeout_policy import timeout_error
from .processor import GuardSpanProcessor, owning_processor
from .semconv import OTELGUARD_TOOL_TIMEOUT_MS
from .signals import CALLER_ABORT, INERT, ToolSignal

F = TypeVar("F", bound=Callable[..., Any])
BUDGET_ATTRIBUTE = "__otelguard_timeout_ms__"
_TOOL_MARKERS = (("gen_ai.operation.name", "execute_tool"), ("openinference.span.kind", "TOOL"))
_tracer = trace_api.get_tracer("otelguard")


def tool_signal() -> ToolSignal:
    """The signal of the current tool span; an inert signal (never aborted) when there is none."""
    span = trace_api.get_current_span()
    processor = owning_processor(span)
    signal = processor.signal_for(span.get_span_context().span_id) if processor is not None else None
    return signal if signal is not None else INERT


def declared_budget_ms(function: Any) -> float | None:
    """The budget a function declared with `@budget` (integrations read it)."""
    return getattr(function, BUDGET_ATTRIBUTE, None)


def budget(*, timeout_ms: float) -> Callable[[F], F]:
    """Declare a tool's time budget. Cooperative: the tool should forward `tool_signal()`.

    When the guard's deadline fires first, the call's result is replaced by the structured
    TOOL_TIMEOUT error (also when the tool raised on abort). A caller's own cancellation stands.
    Without an installed GuardSpanProcessor the tool runs untouched.
    """
    if (isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float))
            or not math.isfinite(timeout_ms) or timeout_ms <= 0):
        raise ConfigError(f"budget timeout_ms: must be a finite number > 0 (got {timeout_ms!r})")

    def decorate(function: F) -> F:
        name = getattr(function, "__name__", "tool")
        if inspect.iscoroutinefunction(function):
            @functools.wraps(function)
            async def async_guarded(*args: Any, **kwargs: Any) -> Any:
                with _guarded_call(name, timeout_ms) as signal:
                    if signal is None:
                        return await function(*args, **kwargs)
                    return await _race(function(*args, **kwargs), signal, timeout_ms)

            wrapper: Any = async_guarded
        else:
            @functools.wraps(function)
            def sync_guarded(*args: Any, **kwargs: Any) -> Any:
                with _guarded_call(name, timeout_ms) as signal:
                    if signal is None:
                        return function(*args, **kwargs)
                    try:
                        result = function(*args, **kwargs)
                    except Exception:
                        if not signal.settle() and signal.timed_out:
                            return timeout_error(timeout_ms)
                        raise
                    # settle() decides the race with the deadline: whoever flipped the signal first wins.
                    if not signal.settle() and signal.timed_out:
                        return timeout_error(timeout_ms)
                    return result

            wrapper = sync_guarded
        setattr(wrapper, BUDGET_ATTRIBUTE, float(timeout_ms))
        return wrapper  # type: ignore[return-value]

    return decorate


async def _race(coroutine: Any, signal: ToolSignal, timeout_ms: float) -> Any:
    task = asyncio.ensure_future(coroutine)
    waiter = asyncio.ensure_future(signal.wait_async())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        signal.abort(CALLER_ABORT, "cancelled by the caller")  # the caller's abort stands
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task.done() and signal.settle():
        return task.result()
    if signal.timed_out:
        if not task.done():
            task.cancel()
            # Give the tool a moment to run its cleanup; cooperative, so never wait long.
            await asyncio.wait({task}, timeout=0.1)
        if task.done() and not task.cancelled():
            task.exception()  # retrieved: the tool's own error is replaced by the timeout
        return timeout_error(timeout_ms)
    return task.result()


@contextmanager
def _guarded_call(name: str, timeout_ms: float) -> Iterator[ToolSignal | None]:
    span = trace_api.get_current_span()
    processor = owning_processor(span)
    if processor is None or not processor.timeouts_enabled:
        yield None
        return
    if _is_tool_span(span):
        yield _arm(processor, span, timeout_ms)
        return
    # No tool span around the call (a hand-written loop): make one so the verdict has a home.
    with _tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    OTELGUARD_TOOL_TIMEOUT_MS: float(timeout_ms)},
    ) as own_span:
        own = owning_processor(own_span) if own_span.is_recording() else None
        yield _arm(own, own_span, timeout_ms) if own is not None else processor.standalone_budget(timeout_ms)


def _is_tool_span(span: Any) -> bool:
    if not span.is_recording():
        return False
    attributes = getattr(span, "attributes", None) or {}
    return any(attributes.get(key) == value for key, value in _TOOL_MARKERS)


def _arm(processor: GuardSpanProcessor, span: Any, timeout_ms: float) -> ToolSignal | None:
    span_id = span.get_span_context().span_id
    signal = processor.signal_for(span_id)
    if signal is not None and signal.budget_ms is not None:
        return signal  # armed at span start from the span's own declaration
    if span.is_recording():
        span.set_attribute(OTELGUARD_TOOL_TIMEOUT_MS, float(timeout_ms))
    return processor.arm_budget(span_id, float(timeout_ms))
