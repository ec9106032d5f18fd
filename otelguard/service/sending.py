"""`QueuedSender`: one thread POSTing what is queued, so neither the receivers nor the judge ever wait
on a slow endpoint (`--forward`, `--webhook`).

The queue is bounded in items and in bytes (`max_queue`, `max_bytes`: what the queued bodies hold):
`put` never blocks and says whether the item was taken (a full queue drops it, for the caller to
count). Only a 2xx answer is a delivery. A redirect is not followed (the body, signed or not, goes
only where it was configured to) and is final, as is any other answer outside the retryable
statuses; connection errors and those statuses are retried with exponential backoff (`backoff_s`,
twice as long each time). `close` sends what is queued for a while, then cuts any backoff short and
stops.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import requests

logger = logging.getLogger("otelguard")

_STOP = object()


class QueuedSender:
    def __init__(self, name: str, *, max_queue: int, max_bytes: int, attempts: int, backoff_s: float,
                 timeout_s: float, retryable: frozenset[int]):
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._timeout_s = timeout_s
        self._retryable = retryable
        self._queue: queue.Queue[Any] = queue.Queue(max_queue)
        self._max_bytes = max_bytes
        self._queued_bytes = 0  # of the items queued, not yet taken by the sending thread
        self._bytes_lock = threading.Lock()
        self._stopping = threading.Event()
        self._session = requests.Session()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def put(self, item: Any, size: int) -> bool:
        """Queue `item` (holding `size` bytes) for `deliver`; False when the queue is full, in items or
        in bytes (nothing waits)."""
        with self._bytes_lock:
            if self._queued_bytes + size > self._max_bytes:
                return False
            try:
                self._queue.put_nowait((item, size))
            except queue.Full:
                return False
            self._queued_bytes += size
        return True

    def flush(self) -> None:
        """Wait until every queued item has been sent (or given up on)."""
        self._queue.join()

    def close(self, timeout_s: float = 10.0) -> None:
        """Send what is queued for up to `timeout_s`, then give up on retries and stop."""
        deadline = time.monotonic() + timeout_s
        try:
            self._queue.put(_STOP, timeout=timeout_s)
        except queue.Full:
            pass
        self._thread.join(max(0.0, deadline - time.monotonic()))
        self._stopping.set()  # a retry still waiting gives up now
        self._thread.join(1.0)
        self._session.close()

    # --- for subclasses --------------------------------------------------------------------------
    def deliver(self, item: Any) -> None:
        """Send one queued item (on the sender's thread)."""
        raise NotImplementedError

    def failed(self, item: Any) -> None:
        """`deliver` raised (a bug, logged): count the item as failed."""

    def post(self, url: str, body: bytes, headers: Callable[[], Mapping[str, str]],
             on_retry: Callable[[], None] | None = None) -> bool:
        """POST `body`, retrying as the module says; `headers` is made afresh for each attempt.
        True once accepted; False (logged) when given up on."""
        problem = ""
        for attempt in range(self._attempts):
            if attempt:
                if on_retry is not None:
                    on_retry()
                if self._stopping.wait(self._backoff_s * 2 ** (attempt - 1)):
                    break
            try:
                answer = self._session.post(url, data=body, headers=headers(), timeout=self._timeout_s,
                                            allow_redirects=False, stream=True)  # (the answer's body unread)
            except requests.RequestException as error:
                problem = str(error)
                continue
            answer.close()
            if 200 <= answer.status_code < 300:
                return True
            problem = f"HTTP {answer.status_code}" + (" (a redirect, not followed)" if answer.is_redirect else "")
            if answer.status_code not in self._retryable:
                break
        logger.warning("otelguard serve: POST to %s failed: %s", url, problem)
        return False

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    return
                item, size = item
                with self._bytes_lock:
                    self._queued_bytes -= size
                try:
                    self.deliver(item)
                except Exception:  # a bug: logged and counted; the thread goes on (flush waits on it)
                    logger.exception("otelguard serve: sending failed (%s)", self._thread.name)
                    self.failed(item)
            finally:
                self._queue.task_done()
