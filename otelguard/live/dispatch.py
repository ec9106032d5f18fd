"""Control-hook calls off the span thread: a fast hook completes before the span thread goes on,
a slow or stuck one finishes in the background after at most `wait_s`.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable

from ..forksafe import reinit_after_fork

MAX_PENDING = 1000
WORKERS = 2


class ControlDispatcher:
    def __init__(self, *, wait_s: float, on_outcome: Callable[[str, str], None],
                 on_error: Callable[[str], None], workers: int = WORKERS):
        self._wait_s = wait_s
        self._on_outcome = on_outcome
        self._on_error = on_error
        self._workers = workers
        self._init()
        reinit_after_fork(self, "_init")

    def _init(self) -> None:
        self._queue: queue.Queue = queue.Queue(MAX_PENDING)
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._idle = threading.Condition(threading.Lock())
        self._pending = 0
        self._stopped = False

    def call(self, action: str, hook: Callable[[], object]) -> None:
        """Run `hook` on a worker; wait up to `wait_s` for it. Never raises."""
        if self._stopped:
            self._on_outcome(action, "dropped")
            return
        self._ensure_workers()
        done = threading.Event()
        with self._idle:
            # Every worker is still on an earlier (slow) call: waiting cannot get this one run sooner.
            busy = self._pending >= self._workers
            self._pending += 1
        try:
            self._queue.put_nowait((action, hook, done))
        except queue.Full:
            self._finished()
            self._on_outcome(action, "dropped")
            return
        if busy or not done.wait(self._wait_s):
            self._on_outcome(action, "slow")

    def _ensure_workers(self) -> None:
        if len(self._threads) >= self._workers:
            return
        with self._lock:
            while len(self._threads) < self._workers:
                thread = threading.Thread(target=self._run, name=f"otelguard-control-{len(self._threads)}",
                                          daemon=True)
                thread.start()
                self._threads.append(thread)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            action, hook, done = item
            try:
                hook()
                self._on_outcome(action, "ok")
            except Exception:
                self._on_outcome(action, "error")
                self._on_error("control_hook")
            finally:
                done.set()
                self._finished()

    def _finished(self) -> None:
        with self._idle:
            self._pending -= 1
            if self._pending == 0:
                self._idle.notify_all()

    def flush(self, timeout_s: float) -> bool:
        """Wait until every queued hook call finished; False when the timeout passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout_s)

    def shutdown(self, timeout_s: float = 2.0) -> None:
        self._stopped = True
        for _ in self._threads:
            try:
                self._queue.put_nowait(None)
            except queue.Full:
                break
        for thread in self._threads:
            thread.join(timeout_s)
