"""`otelguard serve`'s output: one line per verdict that is a finding, written by a thread of its own.

The judge only queues a line: a terminal or a pipe that nobody reads never holds it (intake and
judging go on). The queue is bounded (`max_lines`); a line that finds it full is dropped, and both
outcomes are counted in `otelguard.service.alert_lines` (printed, dropped). What a sender or a model
named (service.name, agent, session, tool) is written through `terminal.printable`, cut like a metric
label: no escape sequence, line break or bidirectional override reaches the terminal raw.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import TextIO

from ..model.records import is_counting
from ..engine import Judged
from ..reactions.metrics import MAX_LABEL_CHARS
from ..model.records import Verdict
from ..runtime.terminal import printable
from ..report.text import TextReport, action_style
from .sessions import session_of_judged

DEFAULT_MAX_LINES = 1000
_STOP = object()


class AlertLines:
    """The service's `alerts`: call it with each verdict (on the judge's thread); `line` queues any
    other line of the command's output. Neither waits for `out`."""

    def __init__(self, out: TextIO, max_lines: int = DEFAULT_MAX_LINES):
        self._report = TextReport(out)  # wrapped to the terminal's width, coloured on a terminal
        self._queue: queue.Queue[object] = queue.Queue(max_lines)
        self.printed = 0
        self.dropped = 0
        self._counting = threading.Lock()  # dropped is counted on the judge's thread and the writer's
        self._thread = threading.Thread(target=self._write, name="otelguard-alerts", daemon=True)
        self._thread.start()

    def __call__(self, service: str | None, judged: Judged, verdict: Verdict) -> None:
        if not is_counting(verdict):
            self.line(alert_line(service, judged, verdict), action_style(verdict.action))

    def line(self, text: str, style: str | None = None) -> None:
        """Queue one line (in `style` on a terminal); dropped (and counted) when the queue is full."""
        try:
            self._queue.put_nowait((text, style))
        except queue.Full:
            self._drop()

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait up to `timeout_s` for the lines queued so far to be written; False if they were not
        (the output is not being read)."""
        deadline = time.monotonic() + timeout_s
        done = threading.Event()
        try:
            self._queue.put(done, timeout=timeout_s)
        except queue.Full:
            return False
        return done.wait(max(0.0, deadline - time.monotonic()))

    def close(self, timeout_s: float = 5.0) -> None:
        """Write what is queued (for up to `timeout_s`) and stop; a writer still blocked on `out` is a
        daemon thread and is left behind."""
        if self.flush(timeout_s):
            self._queue.put(_STOP)
            self._thread.join(timeout_s)

    def _write(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            assert isinstance(item, tuple)  # a line: (text, style); the queue also holds events and _STOP
            try:
                self._report.line(*item)
                self.printed += 1
            except (OSError, ValueError):  # a closed pipe or file: the line is lost, counted
                self._drop()

    def _drop(self) -> None:
        with self._counting:
            self.dropped += 1


def alert_line(service: str | None, judged: Judged, verdict: Verdict) -> str:
    session = session_of_judged(judged)
    who = (f"agent={_shown(judged.agent.name)}" if judged.agent.name else
           f"session={_shown(session)}" if session else f"agent={_shown(judged.agent.key)}")
    tool = f"  tool={_shown(verdict.tool)}" if verdict.tool else ""
    count = f"  count={verdict.repeat_count}" if verdict.repeat_count is not None else ""
    return (f"  ALERT  {verdict.guard}  rule={verdict.rule}  action={verdict.action}  "
            f"service={_shown(service)}  {who}{tool}{count}")


def _shown(value: str | None) -> str:
    """A sender's or model's name on the terminal: escaped, cut like a metric label."""
    return printable(str(value), MAX_LABEL_CHARS)
