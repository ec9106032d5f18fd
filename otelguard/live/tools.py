"""Tool budgets and the tool signal: `@otelguard.budget(timeout_ms=...)` and `otelguard.tool_signal()`."""

from __future__ import annotations

import asyncio
import functools
import inspect
import math
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator, TypeVar

from opentelemetry import trace as trace_api

from ..errors import ConfigError
from .registry import owning_processor
from .timeouts import arm, is_tool_span, signal_scope, timeout_error, tool_signal
from ..model.semconv import OTELGUARD_TOOL_TIMEOUT_MS
from .signals import CALLER_ABORT, ToolSignal

__all__ = ["budget", "declared_budget_ms", "tool_signal"]

F = TypeVar("F", bound=Callable[..., Any])
BUDGET_ATTRIBUTE = "__otelguard_timeout_ms__"
_tracer = trace_api.get_tracer("otelguard")


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
        return wrapper

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
    """The signal of one guarded call, which `tool_signal()` finds inside it; None when no guard
    arms budgets (the tool then runs untouched)."""
    span = trace_api.get_current_span()
    processor = owning_processor(span)
    if processor is None or not processor.timeouts_enabled:
        yield None
        return
    with ExitStack() as call:
        if not is_tool_span(span):
            # No tool span around the call (a hand-written loop): make one so the verdict has a home.
            span = call.enter_context(_tracer.start_as_current_span(
                f"execute_tool {name}",
                attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                            OTELGUARD_TOOL_TIMEOUT_MS: float(timeout_ms)},
            ))
            processor = owning_processor(span) or processor
        # On a span no guard saw start (another provider's), `arm` gives the call a budget of its own.
        signal = arm(span, timeout_ms, processor)
        if signal is not None:
            call.enter_context(signal_scope(signal))
        yield signal
