"""`SpanJudge`: received spans in, through the analyzer's trace buffer and replayer, into one engine.

OTLP carries spans after they ended, in batches, children before parents and sometimes late, so the
service sees them as the analyzer sees a file: it buffers them per trace (`replay.TraceBuffer`) and
replays each trace's starts and ends in time order (`replay.Replayer`) through the same engine
lifecycle as the live processor. The only difference is what a "record" is: the analyzer counts
lines, the service counts ticks of its clock (`tick_s`), so a complete trace is judged within a tick
or two of its root's arrival, and a trace whose root never comes once it has been idle for
`flush_after_s`. An agent run still going on (its root span arrives when it ends) is judged every
`max_wait_s`: what arrived so far, then each later part on its own (late), all in the trace's chain
(an agent span not yet received names no agent). Every request's spans are added in the tick it
arrived in.

Coding-agent CLIs' tool and model records (`conventions.agent_clis`, from spans and log records) go to
the analyzer's `CliCalls` as well: one record per call, judged in the CLI session's chain.

One thread does all of it, fed by a bounded queue: receivers never wait for the guards, and the
engine, buffer and replayer are only ever touched by that thread. `close()` stops intake, judges
everything queued and buffered (a SIGTERM judges what was accepted), and returns.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..replay.cli_calls import CliCalls
from ..replay.event_outputs import EventOutputs
from ..replay.spans import Batch, ReplayClock, Replayer, ReplayLimits, TraceBuffer
from ..guards.config import GuardConfig
from ..runtime.containment import Containment
from ..conventions.agent_clis import CliModelCall, CliToolCall
from ..conventions.genai_events import EventOutput
from ..engine import GuardEngine, Judged
from ..reactions.delivery import AgentRuns, Delivery
from ..reactions.dispatch import ControlDispatcher
from ..reactions.evaluation_events import EvaluationEvents
from ..reactions.metrics import GuardMetrics
from ..model.records import SpanKind, SpanView, Verdict
from ..otlp.requests import ReceivedSpan

DEFAULT_TICK_S = 0.5
DEFAULT_FLUSH_AFTER_S = 30.0
DEFAULT_MAX_WAIT_S = 10.0
DEFAULT_QUEUE = 1024  # requests waiting for the judge
DEFAULT_MAX_BUFFERED_SPANS = 100_000
DEFAULT_JOIN_WAIT_S = 6.0  # Gemini CLI and opencode export up to 5 s apart
_STOP = object()

# What the judge hands on after each replayed batch: its spans, and the verdicts shown on each
# (keyed by trace id << 64 | span id). Forwarding enriches and sends them.
# What a judged span shows when forwarded: its verdicts, and a loop's spend so far (as the live processor's span).
Shown = tuple[tuple[Verdict, ...], dict[str, Any] | None]
OnReplayed = Callable[[list[ReceivedSpan], dict[int, Shown]], None]
# Told of each verdict as it is reached: the sender's service.name, the judged span, the verdict.
OnVerdict = Callable[[str | None, Judged, Verdict], None]
# Told of every judged span (agent, model and tool): the span, what the engine made of it, the sender.
OnJudged = Callable[[SpanView, Judged, str | None], None]


@dataclass(frozen=True, slots=True)
class JudgeOptions:
    tick_s: float = DEFAULT_TICK_S
    flush_after_s: float = DEFAULT_FLUSH_AFTER_S
    max_wait_s: float = DEFAULT_MAX_WAIT_S  # a trace still open (its run goes on) is judged this often
    max_buffered_spans: int = DEFAULT_MAX_BUFFERED_SPANS
    queue: int = DEFAULT_QUEUE
    join_wait_s: float = DEFAULT_JOIN_WAIT_S  # a CLI tool record without arguments waits this long for its other half

    def limits(self) -> ReplayLimits:
        # A complete trace is judged at the first tick after the one its last span came in.
        return ReplayLimits(flush_after_records=max(1, round(self.flush_after_s / self.tick_s)),
                            max_buffered_spans=self.max_buffered_spans, settle_records=1,
                            max_wait_records=max(1, round(self.max_wait_s / self.tick_s)))


@dataclass(frozen=True, slots=True)
class LogRecords:
    """What a logs request held for the guard: CLI tool calls, each with its sender's service.name,
    and GenAI events' output with the span each names."""

    calls: list[tuple[CliToolCall | CliModelCall, str | None]]  # in record order
    events: list[tuple[int, int, EventOutput]]


class QueueFull(Exception):
    """The judge's queue is full: the receiver answers with backpressure."""


class SpanJudge:
    def __init__(self, config: GuardConfig | dict | str | None, metrics: GuardMetrics, *,
                 options: JudgeOptions = JudgeOptions(), on_replayed: OnReplayed | None = None,
                 on_verdict: OnVerdict | None = None, evaluations: EvaluationEvents | None = None,
                 on_judged: OnJudged | None = None):
        self.options = options
        self.metrics = metrics
        self._clock = ReplayClock()
        self.engine = GuardEngine(config, clock=self._clock, on_evict=metrics.evicted)
        self.buffer = TraceBuffer(options.limits())
        self._contain = Containment(metrics.internal_error)
        self.event_outputs = EventOutputs()  # GenAI events' output, held until the span each names is judged
        self._replayer = Replayer(self.engine, self._judged_span, self._clock, contain=self._contain,
                                  event_outputs=self.event_outputs)
        self.cli_calls = CliCalls(self.engine, self._judged, self._clock, wait=options.join_wait_s,
                                  contain=self._contain)
        # No control is bound to a remote agent yet: reactions are counted as `unbound`.
        dispatcher = ControlDispatcher(wait_s=0.0, on_outcome=metrics.control, on_error=self._contain.record)
        self._delivery = Delivery(metrics, AgentRuns(1, on_evict=lambda reason, n: None), dispatcher, None,
                                  evaluations)
        self._on_replayed = on_replayed
        self._on_verdict = on_verdict
        self._on_judged = on_judged
        self._queue: queue.Queue[object] = queue.Queue(options.queue)
        self._batch: Batch | None = None
        self._shown: dict[int, Shown] = {}
        self._record = 0
        self.received = 0
        self.judged_verdicts = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="otelguard-judge", daemon=True)
        self._closed = False
        self._thread.start()

    @property
    def not_ours(self) -> int:
        """Spans that were no agent, model or tool span."""
        return self._replayer.not_ours

    # --- intake (any thread) ---------------------------------------------------------------------
    def submit(self, spans: list[ReceivedSpan]) -> None:
        """Queue one request's spans for judging. Raises `QueueFull` when the queue is full."""
        if spans:
            self._put(spans)

    def submit_logs(self, calls: list[tuple[CliToolCall | CliModelCall, str | None]],
                    events: list[tuple[int, int, EventOutput]]) -> None:
        """Queue one logs request's CLI tool calls and model calls (each with its sender's service.name)
        and GenAI events."""
        if calls or events:
            self._put(LogRecords(calls, events))

    def _put(self, item: object) -> None:
        if self._closed:
            raise QueueFull("shutting down")
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            raise QueueFull(f"{self.options.queue} requests waiting") from None

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Judge every queued request and every buffered trace now, as at shutdown, without stopping
        (its traces' later spans count as late). For tests and the demo: a service judges on its ticks."""
        done = threading.Event()
        self._queue.put((done,))
        return done.wait(timeout_s)

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop intake, judge what was accepted (queued and buffered), stop the thread."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._queue.put(_STOP)
        self._thread.join(timeout_s)
        self._delivery.shutdown()

    # --- the judge's thread ----------------------------------------------------------------------
    def _run(self) -> None:
        tick = self.options.tick_s
        next_tick = time.monotonic() + tick
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, next_tick - time.monotonic()))
            except queue.Empty:
                item = None
            now = time.monotonic()
            try:
                if now >= next_tick:
                    next_tick = now + tick
                    self._record += 1
                    self._replay(self.buffer.ready(self._record))
                    self.cli_calls.expire(now)
                if item is _STOP:
                    self._drain()
                    return
                if item is not None:
                    self._handle(item, now)
            except Exception:  # a bug in otelguard: counted and logged; the judge goes on
                self._contain.record_and_maybe_raise("judge")

    def _handle(self, item: object, now: float) -> None:
        if isinstance(item, tuple):  # flush(): drain, then say so
            self._drain()
            item[0].set()
        elif isinstance(item, LogRecords):
            for call, service in item.calls:
                self.cli_calls.add(call, service, now)
            for trace_id, span_id, event in item.events:
                self.event_outputs.add(trace_id, span_id, event.messages)
        elif isinstance(item, list):  # a trace request's spans
            self._add(item, now)

    def _drain(self) -> None:
        self._replay(self.buffer.drain())
        self.cli_calls.drain()

    def _add(self, spans: list[ReceivedSpan], now: float) -> None:
        add = self.buffer.add
        record = self._record
        for span in spans:
            self.received += 1
            # A CLI's tool span is a tool call of its session (and, like any span, part of its trace).
            self.cli_calls.add_span(span, span.origin.service, now)
            batches = add(span, record)
            if batches:
                self._replay(batches)

    def _replay(self, batches: list[Batch] | tuple[()]) -> None:
        for batch in batches:
            self._batch = batch
            self._shown = {}
            try:
                self._replayer.replay(batch)
            finally:
                self._batch = None
            if self._on_replayed is not None:
                with self._contain.contained("forward"):
                    self._on_replayed(batch.spans, self._shown)  # type: ignore[arg-type]  # all ReceivedSpans

    def _judged_span(self, view: SpanView, judged: Judged) -> None:
        batch = self._batch
        span = batch.traces[view.trace_id].get(view.span_id) if batch is not None else None
        self._judged(view, judged, span.origin.service if isinstance(span, ReceivedSpan) else None)

    def _judged(self, view: SpanView, judged: Judged, service: str | None) -> None:
        """One judged span: counted and its verdicts recorded under its sender's service.name."""
        kind = judged.classification.kind
        self.metrics.span(kind, judged.classification.convention, service)
        if self._on_judged is not None:
            with self._contain.contained("service.on_judged"):  # (a failure there never costs the verdicts)
                self._on_judged(view, judged, service)
        if kind is SpanKind.AGENT:
            return
        spent = None
        if judged.verdicts:
            self.judged_verdicts += len(judged.verdicts)
            spent = self._delivery.judged(judged, service)
            if self._on_verdict is not None:
                for verdict in judged.verdicts:
                    self._on_verdict(service, judged, verdict)
        shown = judged.shown
        if shown:
            self._shown[view.trace_id << 64 | view.span_id] = (shown, spent)
