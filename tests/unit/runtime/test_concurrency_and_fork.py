"""Concurrency hardening: interleaved agents on 8 threads and an asyncio loop, shutdown/flush, fork.

Every agent runs its own repeat loop: the same tool with the same arguments, CALLS times, in one run.
All agents use the same tool and arguments, so any state shared between agents (cross-talk) shows up
as wrong run lengths. With thresholds [3, 5, 8] each agent must see exactly the verdicts for run
lengths 2..CALLS on its own tool spans and exactly three reminders in its own mailbox.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections import Counter, defaultdict
from contextlib import ExitStack
from typing import Any

import pytest
from opentelemetry import trace as trace_api

import otelguard
from otel_support import Guarded, RecordingProcessor, metric_points

CALLS = 8
THREADS = 8
AGENTS_PER_THREAD = 4
ASYNC_AGENTS = 16
JOIN_TIMEOUT_S = 60
REPEAT = {"guards": [{"id": "timeout-policy"}, {"id": "repeat-tool-reminder", "config": {"thresholds": [3, 5, 8]}}]}
TOOL_ATTRIBUTES = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe",
                   "gen_ai.tool.call.arguments": '{"q": "same"}'}
EXPECTED_ACTIONS = {2: "none", 3: "remind", 4: "none", 5: "remind", 6: "none", 7: "none", 8: "remind"}


def _otelguard_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("otelguard-") and t.is_alive()}


@pytest.fixture
def guarded():
    before = _otelguard_threads()
    with ExitStack() as built:  # each one built is shut down before the leak check
        yield lambda config=REPEAT, **kwargs: built.enter_context(Guarded(config, **kwargs))
    leaked = _otelguard_threads() - before
    assert not leaked, f"threads still running after shutdown: {sorted(t.name for t in leaked)}"


def _check_verdicts(g: Guarded, agents: dict[str, otelguard.Mailbox]) -> None:
    """Each agent's tool spans carry run lengths 2..CALLS exactly once, and its mailbox holds 3 reminders."""
    counts: dict[str, list[int]] = defaultdict(list)
    actions: dict[str, dict[int, str]] = defaultdict(dict)
    for span in g.exporter.get_finished_spans():
        agent = span.attributes.get("test.agent")
        if span.attributes.get("gen_ai.operation.name") == "execute_tool":
            count = span.attributes.get("otelguard.repeat.count")
            if count is not None:
                counts[agent].append(count)
                actions[agent][count] = span.attributes["otelguard.action"]
    assert set(counts) == set(agents)
    for agent, mailbox in agents.items():
        assert sorted(counts[agent]) == list(range(2, CALLS + 1)), agent
        assert actions[agent] == EXPECTED_ACTIONS, agent
        messages = mailbox.drain()
        assert len(messages) == 3, (agent, [m.text[:40] for m in messages])
        assert "consecutive_calls: 5" in messages[1].text and "consecutive_calls: 8" in messages[2].text
    verdicts = sum(v for _, v in metric_points(g.metric_reader, "otelguard.verdicts"))
    assert verdicts == len(agents) * (CALLS - 1)
    assert metric_points(g.metric_reader, "otelguard.internal.errors") == []


def _thread_driver(g: Guarded, names: list[str], mailboxes: dict[str, otelguard.Mailbox],
                   start: threading.Barrier, errors: list[BaseException]) -> None:
    """Interleave several agent runs on one thread: round-robin one tool call per agent."""
    try:
        start.wait(JOIN_TIMEOUT_S)
        runs = []
        for name in names:
            with otelguard.bind_control(mailboxes[name]):
                span = g.tracer.start_span(f"invoke_agent {name}", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "test.agent": name})
            runs.append((name, span, trace_api.set_span_in_context(span)))
        for _ in range(CALLS):
            for name, _, context in runs:
                tool = g.tracer.start_span("execute_tool probe", context=context,
                                           attributes={**TOOL_ATTRIBUTES, "test.agent": name})
                tool.set_attribute("gen_ai.tool.call.result", "same result")
                tool.end()
        for _, span, _ in runs:
            span.end()
    except BaseException as exc:  # reported by the test, not lost in the thread
        errors.append(exc)


async def _async_agent(g: Guarded, name: str, mailbox: otelguard.Mailbox) -> None:
    with otelguard.bind_control(mailbox):
        with g.tracer.start_as_current_span(f"invoke_agent {name}", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, "test.agent": name}):
            for _ in range(CALLS):
                with g.tracer.start_as_current_span("execute_tool probe",
                                                    attributes={**TOOL_ATTRIBUTES, "test.agent": name}) as tool:
                    await asyncio.sleep(0)  # let the other agents' tool calls interleave with this one
                    tool.set_attribute("gen_ai.tool.call.result", "same result")
                await asyncio.sleep(0)


def _async_driver(g: Guarded, names: list[str], mailboxes: dict[str, otelguard.Mailbox],
                  start: threading.Barrier, errors: list[BaseException]) -> None:
    async def main() -> None:
        await asyncio.gather(*(_async_agent(g, name, mailboxes[name]) for name in names))

    try:
        start.wait(JOIN_TIMEOUT_S)
        asyncio.run(main())
    except BaseException as exc:
        errors.append(exc)


def test_interleaved_agents_on_threads_and_asyncio_get_exactly_their_verdicts(guarded):
    """8 threads (4 interleaved agents each) and an asyncio loop (16 agents): every agent gets exactly its
    own verdicts and reminders, none lost, none duplicated, and every thread finishes."""
    g = guarded()
    thread_agents = [[f"t{t}-a{a}" for a in range(AGENTS_PER_THREAD)] for t in range(THREADS)]
    async_agents = [f"async-{a}" for a in range(ASYNC_AGENTS)]
    mailboxes = {name: otelguard.Mailbox() for names in thread_agents + [async_agents] for name in names}
    start = threading.Barrier(THREADS + 1)
    errors: list[BaseException] = []
    workers = [threading.Thread(target=_thread_driver, args=(g, names, mailboxes, start, errors), name=f"driver-{i}")
               for i, names in enumerate(thread_agents)]
    workers.append(threading.Thread(target=_async_driver, args=(g, async_agents, mailboxes, start, errors),
                                    name="driver-asyncio"))
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(JOIN_TIMEOUT_S)
    assert not [w.name for w in workers if w.is_alive()], "deadlock: a driver never finished"
    assert not errors, errors
    assert g.processor.force_flush(10_000)
    _check_verdicts(g, mailboxes)


def test_interleaved_agents_with_durable_ids_do_not_share_state(guarded):
    """Agents keyed by gen_ai.agent.id, driven from 8 threads at once, keep separate repeat chains."""
    g = guarded()
    names = [f"durable-{i}" for i in range(THREADS)]
    mailboxes = {name: otelguard.Mailbox() for name in names}
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def drive(name: str) -> None:
        try:
            start.wait(JOIN_TIMEOUT_S)
            with otelguard.bind_control(mailboxes[name]):
                with g.tracer.start_as_current_span(f"invoke_agent {name}", attributes={
                        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
                        "gen_ai.agent.id": name, "test.agent": name}):
                    for _ in range(CALLS):
                        with g.tracer.start_as_current_span("execute_tool probe",
                                                            attributes={**TOOL_ATTRIBUTES, "test.agent": name}):
                            pass
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=drive, args=(name,)) for name in names]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(JOIN_TIMEOUT_S)
    assert not [w.name for w in workers if w.is_alive()]
    assert not errors, errors
    assert g.processor.force_flush(10_000)
    _check_verdicts(g, mailboxes)


# --- shutdown and force_flush --------------------------------------------------------------------------
class BlockingControl:
    """A control hook that blocks until released (a stuck agent-side callback)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def inject(self, message: Any) -> None:
        self.entered.set()
        self.release.wait(30)

    steer = inject

    def cancel(self, cause: Any, verdict: Any) -> None:
        self.inject(None)


def _repeat_run(g: Guarded, calls: int = 3) -> None:
    with g.tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
        for _ in range(calls):
            with g.tracer.start_as_current_span("execute_tool probe", attributes=TOOL_ATTRIBUTES):
                pass


def _arm_watchdog(g: Guarded) -> None:
    """A tool span with a declared budget arms the watchdog (and starts its thread)."""
    with g.tracer.start_as_current_span("execute_tool slow", attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow", "otelguard.tool.timeout_ms": 60_000}):
        pass


def test_force_flush_with_a_stuck_hook_returns_within_its_timeout(guarded):
    """force_flush(200 ms) returns False about 200 ms later while a control hook is stuck, not when it unsticks."""
    control = BlockingControl()
    g = guarded(control=control)
    _repeat_run(g)
    assert control.entered.wait(5)
    started = time.monotonic()
    flushed = g.processor.force_flush(200)
    elapsed = time.monotonic() - started
    control.release.set()
    assert flushed is False
    assert elapsed < 5, elapsed  # bounded by its timeout, not by the hook's 30 s
    assert g.processor.force_flush(5_000) is True


def test_force_flush_with_nothing_pending_returns_true(guarded):
    """force_flush returns True when every hook call has finished."""
    g = guarded(control=otelguard.Mailbox())
    _repeat_run(g)
    assert g.processor.force_flush(5_000) is True
    assert g.processor.force_flush(5_000) is True


def test_shutdown_stops_the_watchdog_and_control_threads():
    """After shutdown, the watchdog and control threads this processor started are gone."""
    before = _otelguard_threads()
    g = Guarded(REPEAT, control=otelguard.Mailbox())
    _arm_watchdog(g)
    _repeat_run(g)
    assert g.processor.force_flush(5_000)
    started_threads = _otelguard_threads() - before
    assert {t.name for t in started_threads} >= {"otelguard-watchdog", "otelguard-control-0"}
    started = time.monotonic()
    g.shutdown()
    assert time.monotonic() - started < 10
    assert not [t.name for t in started_threads if t.is_alive()]


def test_shutdown_with_a_stuck_hook_returns_and_threads_stop_once_it_returns():
    """shutdown returns within its join timeouts while a hook is stuck; the threads end when the hook returns."""
    before = _otelguard_threads()
    control = BlockingControl()
    g = Guarded(REPEAT, control=control)
    _arm_watchdog(g)
    _repeat_run(g)
    assert control.entered.wait(5)
    g.processor.force_flush(50)  # a flush while the hook is stuck
    started = time.monotonic()
    g.shutdown()
    elapsed = time.monotonic() - started
    control.release.set()
    assert elapsed < 10, elapsed
    deadline = time.monotonic() + 10
    for thread in _otelguard_threads() - before:
        thread.join(max(0.0, deadline - time.monotonic()))
    assert not [t.name for t in _otelguard_threads() - before]


def test_spans_after_shutdown_pass_through_untouched():
    """Spans ended after shutdown are passed on as they are, unjudged: no verdict, no hook call, no
    metric; a tool span started after it arms no budget."""
    mailbox = otelguard.Mailbox()
    downstream = RecordingProcessor()  # the exporter refuses spans once shut down; this one keeps them
    g = Guarded(REPEAT, control=mailbox, downstream=[downstream])
    g.provider.shutdown()  # the meter provider stays up: it must show nothing was recorded
    try:
        # opentelemetry-sdk (1.45) still calls on_start/on_end after shutdown: the guard must ignore them.
        _repeat_run(g, calls=CALLS)
        assert len(downstream.ended) == CALLS + 1  # the spans did reach the guard...
        assert not [s.name for s in downstream.ended if any(k.startswith("otelguard.") for k in s.attributes)]
        assert not [s.name for s in downstream.ended if s.events]
        assert not mailbox.drain()  # ...and none was judged
        assert not metric_points(g.metric_reader, "otelguard.verdicts")
        assert not metric_points(g.metric_reader, "otelguard.spans")
        assert not metric_points(g.metric_reader, "otelguard.control.calls")
        with g.tracer.start_as_current_span("execute_tool slow", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow",
                "otelguard.tool.timeout_ms": 60_000}):
            assert not otelguard.tool_signal().aborted and otelguard.tool_signal().budget_ms is None  # no budget armed
    finally:
        g.meter_provider.shutdown()


# --- fork ------------------------------------------------------------------------------------------------
CHILD_OK, CHILD_WRONG, CHILD_RAISED = 0, 3, 4


def _wait_child(pid: int, timeout_s: float) -> int | None:
    """The forked child's exit code; None when it did not exit in time (it is killed then)."""
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.002)


def _child_body(g: Guarded) -> int:
    """In the forked child: the inherited processor judges a repeat loop and times out a tool."""
    g.exporter.clear()
    mailbox = otelguard.Mailbox()
    with otelguard.bind_control(mailbox):
        _repeat_run(g, calls=3)
    with g.tracer.start_as_current_span("invoke_agent child", attributes={"gen_ai.operation.name": "invoke_agent"}):
        with g.tracer.start_as_current_span("execute_tool slow", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow",
                "otelguard.tool.timeout_ms": 50}):
            aborted = otelguard.tool_signal().wait(10)  # the child's own watchdog must fire the deadline
    if not g.processor.force_flush(10_000):
        return CHILD_WRONG
    reminders = [m.rule for m in mailbox.drain()]
    verdicts = Counter(s.attributes.get("otelguard.verdict") for s in g.exporter.get_finished_spans())
    ok = reminders == ["repeat-threshold"] and aborted and verdicts["tool_timeout"] == 1
    return CHILD_OK if ok else CHILD_WRONG


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="os.fork on Linux")
def test_forked_child_uses_the_inherited_processor():
    """A child forked while the watchdog and control threads run judges spans and fires deadlines itself."""
    g = Guarded(REPEAT, control=otelguard.Mailbox())
    try:
        _arm_watchdog(g)  # the parent's watchdog thread is running at fork time
        _repeat_run(g)  # ... and its control workers
        assert g.processor.force_flush(5_000)
        pid = os.fork()
        if pid == 0:  # the child: never return into pytest
            status = CHILD_RAISED
            try:
                status = _child_body(g)
            finally:
                os._exit(status)
        exit_code = _wait_child(pid, JOIN_TIMEOUT_S)
        assert exit_code is not None, "the forked child deadlocked"
        assert exit_code == CHILD_OK
        # The parent still works after the fork.
        g.exporter.clear()
        _repeat_run(g)
        assert g.processor.force_flush(5_000)
        assert [s.attributes.get("otelguard.repeat.count") for s in g.exporter.get_finished_spans()
                if s.name == "execute_tool probe"] == [None, 2, 3]
    finally:
        g.shutdown()


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="os.fork on Linux")
def test_children_forked_while_threads_end_spans_never_hang_on_a_guard_lock():
    """Forking while two threads end guarded spans never leaves a child stuck on one of otelguard's locks.

    The guard's metrics go to the no-op meter here: the SDK's own metric aggregation locks are not
    fork-safe (open-telemetry/opentelemetry-python#4345), which is not what this test is about.
    """
    from opentelemetry.metrics import NoOpMeterProvider

    g = Guarded(REPEAT, control=otelguard.Mailbox(), meter_provider=NoOpMeterProvider())
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            _repeat_run(g, calls=3)
            g.exporter.clear()

    workers = [threading.Thread(target=busy, name=f"busy-{i}") for i in range(2)]
    for worker in workers:
        worker.start()
    outcomes: Counter = Counter()
    try:
        for _ in range(30):
            pid = os.fork()
            if pid == 0:
                status = CHILD_RAISED
                try:
                    _repeat_run(g, calls=3)
                    status = CHILD_OK if g.processor.force_flush(5_000) else CHILD_WRONG
                finally:
                    os._exit(status)
            exit_code = _wait_child(pid, 10)
            outcomes["hung" if exit_code is None else exit_code] += 1
    finally:
        stop.set()
        for worker in workers:
            worker.join(JOIN_TIMEOUT_S)
        g.shutdown()
    assert outcomes == Counter({CHILD_OK: 30})


def _guard_locks(g: Guarded, mailbox: otelguard.Mailbox) -> list:
    """Every lock otelguard's span path may take, in the engine, processor, metrics and a Mailbox.
    Listed by hand: a lock added to the span path must be added here, or the fork test won't hold it."""
    from otelguard.reactions.metrics import LabelCap

    metrics = g.processor.metrics
    caps = [value._lock for value in vars(metrics).values() if isinstance(value, LabelCap)]
    engine = g.processor.engine
    return [engine._agents._kept._lock, engine._stream_trips._lock, engine._agents._nested_lock,
            metrics._span_counts_lock, mailbox._lock, g.processor.budgets._lock, *caps]


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="os.fork on Linux")
def test_a_child_forked_while_another_thread_holds_the_guards_locks_does_not_hang():
    """Only the forking thread lives on in the child: a lock another thread held at the fork would
    stay held there. The child starts with fresh maps and locks, so it judges, reminds, arms a
    deadline, cuts a stream and tracks agents nested in a run without identity as a fresh process
    would (between them, taking every lock held)."""
    mailbox = otelguard.Mailbox()
    g = Guarded({"guards": [*REPEAT["guards"], {"id": "thinking-loop-guard", "config": {"max_repeated_text": 5}}]},
                control=mailbox)
    durable = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.agent.id": "agent-1"}
    held, release = threading.Event(), threading.Event()

    def hold_every_lock() -> None:
        locks = _guard_locks(g, mailbox)
        for lock in locks:
            lock.acquire()
        held.set()
        release.wait(JOIN_TIMEOUT_S)
        for lock in locks:
            lock.release()

    holder = threading.Thread(target=hold_every_lock, name="lock-holder")
    try:
        with g.tracer.start_as_current_span("invoke_agent a", attributes=durable):  # a kept agent's state
            pass
        holder.start()
        assert held.wait(10)
        pid = os.fork()
        if pid == 0:
            status = CHILD_RAISED
            try:
                g.exporter.clear()
                with g.tracer.start_as_current_span("invoke_agent a", attributes=durable):
                    for _ in range(3):
                        with g.tracer.start_as_current_span("execute_tool probe", attributes=TOOL_ATTRIBUTES):
                            pass
                    with g.tracer.start_as_current_span("execute_tool slow", attributes={
                            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow",
                            "otelguard.tool.timeout_ms": 50}):
                        aborted = otelguard.tool_signal().wait(10)
                graph = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "graph"}
                with g.tracer.start_as_current_span("invoke_agent graph", attributes=graph):  # run-scoped
                    with g.tracer.start_as_current_span(  # nested in it: its key noted under the nested lock
                            "invoke_agent planner", attributes={**graph, "gen_ai.agent.name": "planner"}):
                        pass
                    with g.tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
                        try:  # the trip is kept for the span's end in the engine's live trips
                            for _ in otelguard.watch_stream(iter(["tick"] * 50)):
                                pass
                            cut = False
                        except otelguard.RepetitiveOutputError:
                            cut = True
                flushed = g.processor.force_flush(10_000)
                rules = [message.rule for message in mailbox.drain()]
                nothing_kept = g.processor.engine.tracked_agents == 1  # the durable agent alone
                ok = flushed and aborted and cut and nothing_kept and rules == ["repeat-threshold", "identical-chunks"]
                status = CHILD_OK if ok else CHILD_WRONG
            finally:
                os._exit(status)
        exit_code = _wait_child(pid, 20)
        assert exit_code is not None, "the forked child hung on a lock another thread held at the fork"
        assert exit_code == CHILD_OK
    finally:
        release.set()
        if holder.is_alive():
            holder.join(JOIN_TIMEOUT_S)
        g.shutdown()


def test_a_dropped_processor_is_collected_and_leaves_the_registry():
    """A processor dropped without shutdown is garbage-collected (its fork hooks do not keep it alive),
    so it no longer counts as an active guard."""
    import gc
    import weakref

    from otelguard.live.processor import active_processors

    gc.collect()  # processors dropped by earlier tests leave the registry now, not during the count below
    registered_before = len(active_processors())
    processor = otelguard.GuardSpanProcessor(REPEAT)
    assert len(active_processors()) == registered_before + 1
    ref = weakref.ref(processor)
    del processor
    gc.collect()
    assert len(active_processors()) == registered_before
    assert ref() is None
