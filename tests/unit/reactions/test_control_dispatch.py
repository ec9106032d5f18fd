"""Control delivery stays on for every agent whatever one agent's hook does.

A hook that never returns, or takes a second, holds its own agent's queue only: healthy agents
alongside still get every reminder, promptly and in order. A hook raising a BaseException that is not
an Exception, or a worker thread that dies, costs no agent its reminders. A cancel drops its agent's
pending reminders and goes ahead of other agents' messages.
"""

from __future__ import annotations

import asyncio
import ctypes
import platform
import sys
import threading
import time
from collections import defaultdict
from contextlib import ExitStack
from typing import Any

import pytest

import otelguard
from otel_support import Guarded, metric_points
from otelguard.reactions.dispatch import ControlDispatcher

CALLS = 4  # thresholds [2, 3, 4]: three reminders an agent
REPEAT = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2, 3, 4]}}]}
HEALTHY_AGENTS = 50  # 150 reminders
DELIVERY_TIMEOUT_S = 10
TOOL = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe", "gen_ai.tool.call.arguments": '{"q": 1}'}


def _control_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("otelguard-") and t.is_alive()}


@pytest.fixture
def guarded():
    """Guarded providers, shut down at the end; every thread they started must have stopped."""
    before = _control_threads()
    releases: list[threading.Event] = []
    with ExitStack() as built:
        yield lambda **kwargs: built.enter_context(Guarded(REPEAT, **kwargs)), releases
        for release in releases:  # a stuck hook returns before shutdown, so its thread can end
            release.set()
    deadline = time.monotonic() + 10
    for thread in _control_threads() - before:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not _control_threads() - before


class Tally:
    """Healthy agents' controls: records (agent, message) and wakes a waiter at a count."""

    def __init__(self) -> None:
        self.messages: dict[str, list[str]] = defaultdict(list)
        self._count = 0
        self._cond = threading.Condition()

    def control(self, agent: str) -> Any:
        tally = self

        class Control:
            def inject(self, message: otelguard.GuardMessage) -> None:
                with tally._cond:
                    tally.messages[agent].append(message.text)
                    tally._count += 1
                    tally._cond.notify_all()

            steer = inject

            def cancel(self, cause: str, verdict: Any) -> None:
                pass

        return Control()

    def wait_for(self, count: int, timeout_s: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: self._count >= count, timeout_s)


class Faulty:
    """A control whose every call misbehaves as `fault` says."""

    def __init__(self, fault: str, release: threading.Event):
        self.fault = fault
        self.release = release
        self.entered = threading.Event()

    def inject(self, message: Any) -> None:
        self.entered.set()
        if self.fault == "never returns":
            self.release.wait(60)
        elif self.fault == "takes a second":
            self.release.wait(1.0)
        elif self.fault == "CancelledError":
            raise asyncio.CancelledError()
        elif self.fault == "SystemExit":
            raise SystemExit(1)
        elif self.fault == "KeyboardInterrupt":
            raise KeyboardInterrupt()

    steer = inject

    def cancel(self, cause: str, verdict: Any) -> None:
        self.inject(None)


def _agent_run(g: Guarded, name: str, control: Any, calls: int = CALLS) -> None:
    with otelguard.bind_control(control):
        with g.tracer.start_as_current_span(f"invoke_agent {name}", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "gen_ai.agent.id": name}):
            for _ in range(calls):
                with g.tracer.start_as_current_span("execute_tool probe", attributes=TOOL):
                    pass


def _healthy_agents_get_every_reminder_in_order(g: Guarded) -> None:
    tally = Tally()
    started = time.monotonic()
    for i in range(HEALTHY_AGENTS):
        _agent_run(g, f"healthy-{i}", tally.control(f"healthy-{i}"))
    assert tally.wait_for(HEALTHY_AGENTS * 3, DELIVERY_TIMEOUT_S), sum(map(len, tally.messages.values()))
    assert time.monotonic() - started < DELIVERY_TIMEOUT_S
    for agent, texts in tally.messages.items():
        assert len(texts) == 3, agent
        assert "consecutive_calls: 3" in texts[1] and "consecutive_calls: 4" in texts[2], agent  # in order


def _outcomes(g: Guarded) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for attributes, value in metric_points(g.metric_reader, "otelguard.control.calls"):
        counts[attributes["outcome"]] += value
    return counts


@pytest.mark.parametrize("fault", ["never returns", "takes a second"])
def test_a_stuck_hook_does_not_starve_healthy_agents(guarded, fault):
    """Three agents whose hooks never return (or take a second each) occupy more than the two workers;
    50 healthy agents alongside still get all 150 reminders, in order, and the stuck calls are counted."""
    make, releases = guarded
    release = threading.Event()
    releases.append(release)
    g = make()
    faulty = [Faulty(fault, release) for _ in range(3)]
    for i, control in enumerate(faulty):
        _agent_run(g, f"stuck-{i}", control)
    assert all(control.entered.wait(5) for control in faulty)
    _healthy_agents_get_every_reminder_in_order(g)
    deadline = time.monotonic() + 5  # a metric cannot be awaited: poll it
    while _outcomes(g)["stuck"] < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _outcomes(g)["stuck"] >= 3  # each stuck agent's first call, at least


@pytest.mark.parametrize("fault", ["CancelledError", "SystemExit", "KeyboardInterrupt"])
def test_a_hook_raising_a_base_exception_does_not_kill_delivery(guarded, fault):
    """Hooks raising CancelledError, SystemExit or KeyboardInterrupt on every call are counted as hook
    errors; healthy agents afterwards still get all their reminders."""
    make, _ = guarded
    g = make()
    faulty = [Faulty(fault, threading.Event()) for _ in range(4)]
    for i, control in enumerate(faulty):
        _agent_run(g, f"raising-{i}", control)
    assert g.processor.force_flush(5_000)
    _healthy_agents_get_every_reminder_in_order(g)
    assert _outcomes(g)["error"] == 4 * 3
    errors = {a["where"]: v for a, v in metric_points(g.metric_reader, "otelguard.internal.errors")}
    assert errors == {"control_hook": 4 * 3}


@pytest.mark.skipif(platform.python_implementation() != "CPython", reason="async exceptions via the C API")
def test_a_control_worker_that_dies_is_replaced_and_counted(guarded):
    """A SystemExit raised inside each idle control worker (as a thread's async exception) kills it;
    a replacement delivers the healthy agents' reminders, and each death is counted."""
    make, _ = guarded
    g = make()
    _agent_run(g, "warm-up", otelguard.Mailbox())  # starts the workers
    assert g.processor.force_flush(5_000)
    workers = [t for t in threading.enumerate() if t.name.startswith("otelguard-control-") and t.name[-1].isdigit()]
    assert workers
    _until_blocked_waiting(workers)
    for thread in workers:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(SystemExit))
    _healthy_agents_get_every_reminder_in_order(g)
    died = [v for a, v in metric_points(g.metric_reader, "otelguard.internal.errors")
            if a["where"] == "dispatch.worker_died"]
    assert died and died[0] >= 1


def _until_blocked_waiting(threads: list[threading.Thread], timeout_s: float = 5.0) -> None:
    """Until each thread is blocked waiting for work (a `Condition.wait`). An async exception is raised
    at the thread's next bytecode: delivered while the worker is busy, it could land between a
    lock's acquire and the `with` that releases it (CPython checks for it right after a C call), and
    leave the dispatcher's lock held for ever; delivered to a waiting worker, it is raised inside
    `wait`, whose `finally` restores the lock that the worker's `with` then releases."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        frames = sys._current_frames()
        if all(thread.ident in frames and frames[thread.ident].f_code.co_name == "wait" for thread in threads):
            return
        time.sleep(0.005)
    raise AssertionError("control workers never went idle")


def test_a_cancel_drops_its_agents_pending_reminders_and_goes_first():
    """With the one worker busy, agent A's two queued reminders are dropped by A's cancel, and the
    cancel runs before agent B's reminder queued earlier."""
    outcomes: list[tuple[str, str]] = []
    dispatcher = ControlDispatcher(wait_s=0, on_outcome=lambda a, o: outcomes.append((a, o)),
                                   on_error=lambda where: None, workers=1, max_workers=1, stuck_after_s=60)
    ran: list[str] = []
    gate = threading.Event()
    try:
        dispatcher.call("Z", "remind", lambda: gate.wait(10))
        dispatcher.call("B", "remind", lambda: ran.append("B remind"))
        dispatcher.call("A", "remind", lambda: ran.append("A remind 1"))
        dispatcher.call("A", "remind", lambda: ran.append("A remind 2"))
        dispatcher.call("A", "cancel", lambda: ran.append("A cancel"), cancel=True)
        gate.set()
        assert dispatcher.flush(5)
    finally:
        gate.set()
        dispatcher.shutdown()
    assert ran == ["A cancel", "B remind"]
    assert outcomes.count(("remind", "dropped")) == 2


def test_one_agents_calls_run_in_order_never_two_at_once():
    """Calls queued for one agent run one after another, in the order queued, even with idle workers."""
    dispatcher = ControlDispatcher(wait_s=0, on_outcome=lambda a, o: None, on_error=lambda where: None,
                                   workers=4, stuck_after_s=60)
    ran: list[int] = []
    running = threading.Semaphore(1)
    overlapped = []

    def hook(i: int) -> None:
        if not running.acquire(blocking=False):
            overlapped.append(i)
            return
        time.sleep(0.001)
        ran.append(i)
        running.release()

    try:
        for i in range(50):
            dispatcher.call("A", "remind", lambda i=i: hook(i))
        assert dispatcher.flush(10)
    finally:
        dispatcher.shutdown()
    assert not overlapped
    assert ran == list(range(50))
