"""Control-hook calls off the span thread: a fast hook completes before the span thread goes on,
a slow or stuck one finishes in the background after at most `wait_s`.

- Each agent (`AgentRef.key`) has its own queue, served in order by a small pool of workers: one
  agent's slow or stuck hook holds its own queue only, never another agent's messages.
- A hook still running after `stuck_after_s` is counted once (`outcome="stuck"`) and its worker is
  replaced, so the other agents keep `workers` healthy workers; the threads in all stay bounded
  (`max_workers`). A stuck worker whose hook returns goes back to work, or retires when the pool is
  full again.
- A cancel drops its agent's pending messages (counted `dropped`) and is served before the messages
  of other agents.
- Workers survive any `BaseException` a hook raises (`CancelledError`, `SystemExit`,
  `KeyboardInterrupt`: counted as a hook error). A worker that dies anyway is counted in
  `otelguard.internal.errors{where="dispatch.worker_died"}` and replaced.
- Bounded: at most MAX_PENDING calls queued or running; more are dropped, counted.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Callable

from ..runtime.forksafe import reinit_after_fork

MAX_PENDING = 1000
WORKERS = 2  # healthy workers kept
MAX_WORKERS = 8  # threads in all, stuck ones included
STUCK_AFTER_S = 0.5
WORKER_DIED = "dispatch.worker_died"


class _Call:
    __slots__ = ("action", "hook", "done", "cancel")

    def __init__(self, action: str, hook: Callable[[], object], cancel: bool):
        self.action = action
        self.hook = hook
        self.done = threading.Event()
        self.cancel = cancel


class _Worker:
    __slots__ = ("thread", "key", "call", "started", "stuck")

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.key: str | None = None  # the agent whose call it runs, None when idle
        self.call: _Call | None = None
        self.started = 0.0
        self.stuck = False


class ControlDispatcher:
    def __init__(self, *, wait_s: float, on_outcome: Callable[[str, str], None],
                 on_error: Callable[[str], None], workers: int = WORKERS, max_workers: int = MAX_WORKERS,
                 stuck_after_s: float = STUCK_AFTER_S):
        self._wait_s = wait_s
        self._on_outcome = on_outcome
        self._on_error = on_error
        self._target = workers
        self._max_workers = max(workers, max_workers)
        self._stuck_after_s = stuck_after_s
        self._init()
        reinit_after_fork(self, "_init")

    def _init(self) -> None:
        """Also run in a forked child: only the forking thread lives on there."""
        lock = threading.Lock()
        self._work = threading.Condition(lock)  # workers wait here for a ready agent
        self._watch = threading.Condition(lock)  # the monitor waits here for the next stuck deadline
        self._idle = threading.Condition(lock)  # flush waits here for nothing pending
        self._queues: dict[str, deque[_Call]] = {}  # agents with calls queued or running
        self._ready: deque[str] = deque()  # agents with a queued call and no worker on them
        self._urgent: deque[str] = deque()  # the same, whose next call is a cancel: served first
        self._running: set[str] = set()
        self._workers: list[_Worker] = []
        self._pending = 0  # calls queued or running
        self._named = 0
        self._monitor: threading.Thread | None = None
        self._stopped = False

    # --- the span thread ---------------------------------------------------------------------------------
    def call(self, key: str, action: str, hook: Callable[[], object], *, cancel: bool = False) -> None:
        """Queue `hook` on agent `key`'s queue; wait up to `wait_s` for it. Never raises.
        `cancel`: drop the agent's pending calls and run this one before other agents' calls."""
        if self._stopped:
            self._count(action, "dropped")
            return
        self._ensure_threads()
        job = _Call(action, hook, cancel)
        dropped: list[_Call] = []
        with self._work:
            if self._pending >= MAX_PENDING:
                dropped.append(job)
                soon = False
            else:
                soon = self._queue(key, job, dropped)
        for call in dropped:
            call.done.set()
            self._count(call.action, "dropped")
        if job in dropped:
            return
        if not soon or not job.done.wait(self._wait_s):
            self._count(action, "slow")

    def _queue(self, key: str, job: _Call, dropped: list[_Call]) -> bool:
        """Under the lock: queue `job`; return whether a worker could start it now."""
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = deque()
        if job.cancel and queue:
            dropped.extend(queue)
            self._pending -= len(queue)
            queue.clear()
        queue.append(job)
        self._pending += 1
        if key in self._running:
            return False  # behind its own agent's call
        if len(queue) == 1:
            (self._urgent if job.cancel else self._ready).append(key)
        elif job.cancel and key in self._ready:  # its queue now holds just the cancel: move it ahead
            self._ready.remove(key)
            self._urgent.append(key)
        self._work.notify()
        return any(worker.call is None for worker in self._workers)

    # --- workers -----------------------------------------------------------------------------------------
    def _ensure_threads(self) -> None:
        """Start workers up to the healthy count, and the monitor, if missing (first call, or lost)."""
        if len(self._workers) >= self._target and self._monitor is not None and self._monitor.is_alive():
            return
        with self._work:
            if self._stopped:
                return
            self._top_up()
            if self._monitor is None or not self._monitor.is_alive():
                self._monitor = threading.Thread(target=self._monitor_loop, name="otelguard-control-monitor",
                                                 daemon=True)
                self._monitor.start()

    def _top_up(self) -> None:
        """Under the lock: start workers until `workers` are healthy (not stuck), within `max_workers`."""
        healthy = sum(1 for worker in self._workers if not worker.stuck)
        while healthy < self._target and len(self._workers) < self._max_workers:
            worker = _Worker()
            worker.thread = threading.Thread(target=self._serve, args=(worker,),
                                             name=f"otelguard-control-{self._named}", daemon=True)
            self._named += 1
            self._workers.append(worker)
            worker.thread.start()
            healthy += 1

    def _next(self) -> str | None:
        if self._urgent:
            return self._urgent.popleft()
        if self._ready:
            return self._ready.popleft()
        return None

    def _serve(self, me: _Worker) -> None:
        try:
            self._serve_calls(me)
        except BaseException:  # not a hook's (those are contained in _run): counted, and replaced
            self._exit(me, died=True)
        else:
            self._exit(me, died=False)

    def _serve_calls(self, me: _Worker) -> None:
        """Run ready agents' calls until shut down, or until surplus after being stuck."""
        while True:
            with self._work:
                key = self._next()
                while key is None:
                    if self._stopped:
                        return
                    self._work.wait()
                    key = self._next()
                call = self._queues[key].popleft()
                self._running.add(key)
                me.key, me.call, me.started, me.stuck = key, call, time.monotonic(), False
                self._watch.notify()
            self._count(call.action, self._run(call))
            with self._work:
                retire = self._finished(me) and self._surplus()
            call.done.set()
            if retire:
                return

    def _run(self, call: _Call) -> str:
        try:
            call.hook()
            return "ok"
        except BaseException:  # a hook's CancelledError or SystemExit must not take the worker with it
            try:
                self._on_error("control_hook")
            except BaseException:
                pass
            return "error"

    def _finished(self, me: _Worker) -> bool:
        """Under the lock: `me`'s call is over; its agent's next call becomes ready. Returns whether
        `me` was stuck."""
        key, was_stuck = me.key, me.stuck
        me.key, me.call, me.stuck = None, None, False
        if key is None:
            return was_stuck
        self._running.discard(key)
        queue = self._queues.get(key)
        if queue:
            (self._urgent if queue[0].cancel else self._ready).append(key)
            self._work.notify()
        else:
            self._queues.pop(key, None)
        self._pending -= 1
        if self._pending == 0:
            self._idle.notify_all()
        return was_stuck

    def _surplus(self) -> bool:
        """Under the lock: more healthy workers than wanted (a stuck worker came back after its
        replacement started)."""
        return sum(1 for worker in self._workers if not worker.stuck) > self._target

    def _exit(self, me: _Worker, *, died: bool) -> None:
        """A worker leaves: retired (shutdown, surplus) or died. A dead one's call is finished, and
        the worker replaced."""
        call = me.call
        with self._work:
            if me in self._workers:
                self._workers.remove(me)
            self._finished(me)
            if died and not self._stopped:
                self._top_up()
        if call is not None:
            call.done.set()
        if died and not self._stopped:
            self._error(WORKER_DIED)

    # --- the monitor: stuck hooks ----------------------------------------------------------------------
    def _monitor_loop(self) -> None:
        try:
            while True:
                stuck: list[str] = []
                with self._watch:
                    if self._stopped:
                        return
                    now = time.monotonic()
                    due = None
                    for worker in self._workers:
                        if worker.call is not None and not worker.stuck:
                            deadline = worker.started + self._stuck_after_s
                            if deadline <= now:
                                worker.stuck = True
                                stuck.append(worker.call.action)
                            elif due is None or deadline < due:
                                due = deadline
                    if stuck:
                        self._top_up()
                    else:
                        self._watch.wait(None if due is None else due - now)
                for action in stuck:
                    self._count(action, "stuck")
        except BaseException:
            if not self._stopped:
                self._error(WORKER_DIED)  # the next call starts a new monitor

    # --- counting, flush, shutdown -----------------------------------------------------------------------
    def _count(self, action: str, outcome: str) -> None:
        try:
            self._on_outcome(action, outcome)
        except BaseException:
            pass

    def _error(self, where: str) -> None:
        try:
            self._on_error(where)
        except BaseException:
            pass

    def flush(self, timeout_s: float) -> bool:
        """Wait until every queued hook call finished; False when the timeout passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout_s)

    def shutdown(self, timeout_s: float = 2.0) -> None:
        """Workers finish the queued calls, then stop; waits up to `timeout_s` in all (a stuck hook's
        thread ends when its hook returns)."""
        with self._work:
            self._stopped = True
            self._work.notify_all()
            self._watch.notify_all()
            threads = [worker.thread for worker in self._workers]
            monitor = self._monitor
        deadline = time.monotonic() + timeout_s
        for thread in [*threads, monitor]:
            if thread is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
