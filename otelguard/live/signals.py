"""The tool signal: how a guarded tool learns that its budget ran out (or that it was blocked).

Cooperative, not a hard kill: a tool reads `otelguard.tool_signal()` and forwards it to whatever
does the work (`wait`, `aborted`, `raise_if_aborted`, or `await signal` in asyncio).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Generator

from ..errors import ToolTimeoutError

TOOL_TIMEOUT = "TOOL_TIMEOUT"
CALLER_ABORT = "CALLER_ABORT"
REPEAT_BLOCKED = "REPEAT_BLOCKED"
COMPLETED = "COMPLETED"  # the tool finished first: settles the race with the deadline


class ToolSignal:
    """Flipped once, by the guard's deadline, the caller, or a repeat block. Thread-safe."""

    __slots__ = ("_event", "_lock", "_reason", "_message", "_waiters", "budget_ms", "block_message")

    def __init__(self, budget_ms: float | None = None):
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._reason: str | None = None
        self._message: str | None = None
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self.budget_ms = budget_ms
        self.block_message: str | None = None  # set when the repeat guard blocks this call

    @property
    def aborted(self) -> bool:
        return self._event.is_set() and self._reason != COMPLETED

    @property
    def reason(self) -> str | None:
        """TOOL_TIMEOUT (the guard's deadline), CALLER_ABORT, or None while running."""
        return self._reason

    @property
    def message(self) -> str | None:
        return self._message

    def settle(self) -> bool:
        """The tool finished: returns True when it finished before any abort (the deadline lost)."""
        return self.abort(COMPLETED)

    @property
    def timed_out(self) -> bool:
        return self._reason == TOOL_TIMEOUT

    @property
    def blocked(self) -> bool:
        return self.block_message is not None

    def abort(self, reason: str, message: str | None = None) -> bool:
        """Flip the signal; the first abort wins. Returns whether this call flipped it."""
        with self._lock:
            if self._reason is not None:
                return False
            self._reason, self._message = reason, message
            waiters, self._waiters = self._waiters, []
        self._event.set()
        for loop, future in waiters:
            try:
                loop.call_soon_threadsafe(_resolve, future)
            except RuntimeError:
                pass  # that loop is closed: nobody is waiting any more
        return True

    def wait(self, timeout: float | None = None) -> bool:
        """Block until aborted or `timeout` seconds passed; True when aborted."""
        return self._event.wait(timeout)

    def raise_if_aborted(self) -> None:
        if self._reason == TOOL_TIMEOUT:
            raise ToolTimeoutError(self._message or "tool call timed out")
        if self._reason is not None:
            raise asyncio.CancelledError(self._message or self._reason)

    async def wait_async(self) -> None:
        """Await until the signal is aborted (asyncio)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._reason is not None:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        await future

    def __await__(self) -> Generator[Any, None, None]:
        return self.wait_async().__await__()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _InertSignal(ToolSignal):
    """The signal outside any guarded tool span: never aborts."""

    def abort(self, reason: str, message: str | None = None) -> bool:
        return False


INERT = _InertSignal()
