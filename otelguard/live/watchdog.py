"""One named daemon thread that fires tool deadlines: no thread per call."""

from __future__ import annotations

import heapq
import itertools
import math
import threading
import time
from typing import Callable

from ..runtime.forksafe import reinit_after_fork

# Longest single wait (and longest deadline): Condition.wait overflows near threading.TIMEOUT_MAX, and a
# deadline further out than this never fires in practice.
_MAX_WAIT_S = 3600.0
_MAX_DELAY_S = 10 * 365 * 24 * 3600.0


class Deadline:
    __slots__ = ("when", "callback", "cancelled")

    def __init__(self, when: float, callback: Callable[[], object]):
        self.when = when
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Watchdog:
    """Fires callbacks at deadlines. Sleeps on a Condition; survives fork; joins on shutdown.

    Callbacks run on the watchdog thread and must be quick (they flip a signal).
    `on_error(exc)` is told about a callback that raised; the thread keeps going.
    """

    def __init__(self, *, on_error: Callable[[BaseException], None] | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._on_error = on_error
        self._init_state()
        reinit_after_fork(self, "_init_state")

    def _init_state(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, Deadline]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None
        self._stopped = False

    def arm(self, delay_s: float, callback: Callable[[], object]) -> Deadline:
        deadline = Deadline(self._clock() + delay_s, callback)
        if math.isnan(delay_s) or delay_s > _MAX_DELAY_S:  # NaN, infinite or absurdly far: it never fires
            deadline.cancelled = True
            return deadline
        with self._cond:
            if self._stopped:
                deadline.cancelled = True
                return deadline
            heapq.heappush(self._heap, (deadline.when, next(self._seq), deadline))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="otelguard-watchdog", daemon=True)
                self._thread.start()
            self._cond.notify()
        return deadline

    @property
    def pending(self) -> int:
        return len(self._heap)

    def _run(self) -> None:
        while True:
            due: list[Deadline] = []
            with self._cond:
                while True:
                    if self._stopped:
                        return
                    now = self._clock()
                    while self._heap and (self._heap[0][2].cancelled or self._heap[0][0] <= now):
                        _, _, deadline = heapq.heappop(self._heap)
                        if not deadline.cancelled:
                            due.append(deadline)
                    if due:
                        break
                    timeout = min(self._heap[0][0] - now, _MAX_WAIT_S) if self._heap else None
                    self._cond.wait(timeout)
            for deadline in due:
                try:
                    deadline.callback()
                except Exception as exc:  # contained: one bad callback must not stop the watchdog
                    if self._on_error is not None:
                        self._on_error(exc)

    def shutdown(self, timeout_s: float = 5.0) -> bool:
        """Stop the thread; True when it ended within the timeout."""
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)
            return not thread.is_alive()
        return True
