"""Replay stored spans through one `GuardEngine`, in the order the live processor would have seen them.

A file holds spans in the order they *ended* (and a batch exporter may split one trace across many
lines, children before parents). The live processor saw each span twice: at start and at end. So
spans are buffered per trace until the trace looks complete, then its start and end events are
replayed in time order:

- a span starts at `start_ns` and ends at `end_ns`;
- ties: starts before ends; among starts, parents before children; among ends, children before
  parents (a child ends before the parent that waits for it);
- a child never starts before its parent (clock skew between services is clamped), so it always
  finds its agent.

Memory is bounded by the spans buffered at once, not by the file: a trace is handed over for replay
once its root span has arrived, every buffered span's parent is present, and `settle_records`
records went by without a span of it (a batch exporter writes spans in end order, so the root comes
last; the short wait covers other processes' batches of the same trace); a trace whose root never
comes (a remote parent, a lost root) is replayed once `flush_after_records` records went by without
a span of it; and when more than `max_buffered_spans` spans are buffered, the least recently seen
traces are replayed early. So the bound is the traces in flight at once (about the largest trace),
not the file. Spans that arrive after their trace was replayed are replayed on their own and counted
(`late_spans`), because they were judged without their earlier context; a recently replayed span
that arrives again (an export retried, overlapping files) is a duplicate and skipped.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..runtime.containment import Containment
from ..model.actions import Action
from ..conventions import classify, read
from ..engine import GuardEngine, Judged
from ..guards.thinking_loop_guard import REPETITIVE_OUTPUT
from .event_outputs import EventOutputs
from ..otlp.json_spans import ReadSpan
from ..model.records import Classification, ModelCall, SpanView, Verdict
from ..model.semconv import (
    OTELGUARD_ACTION,
    OTELGUARD_CHUNK_EVENT,
    OTELGUARD_GUARD,
    OTELGUARD_RULE,
    OTELGUARD_TOOL_TIMEOUT_MS,
    OTELGUARD_VERDICT,
)

DEFAULT_FLUSH_AFTER_RECORDS = 1000
DEFAULT_MAX_BUFFERED_SPANS = 100_000
DEFAULT_SETTLE_RECORDS = 2
_RECENT_TRACES = 16_384  # replayed trace ids remembered to recognise late spans (a bounded LRU)
_RECENT_SPANS = 65_536  # replayed span keys remembered to recognise duplicates (a bounded LRU)
_MAX_DEPTH = 10_000  # parent chains deeper than this are treated as broken

_START, _END = 0, 1
_TOOL_TIMEOUT_RULE = "tool-timeout"
_VERDICT_EVENT = "otelguard.verdict"
_STREAM_CHARS = "otelguard.stream.chars"
_ERROR_CODE = "otelguard.error.code"

# Why a trace was handed over for replay.
COMPLETE = "complete"
IDLE = "idle"
MEMORY = "memory"
END_OF_INPUT = "end_of_input"
AGE = "age"  # waited `max_wait_records` since its first span (a service judging live)


@dataclass(frozen=True, slots=True)
class ReplayLimits:
    """How long spans may wait for the rest of their trace. Both bound memory; see the module doc."""

    flush_after_records: int = DEFAULT_FLUSH_AFTER_RECORDS
    max_buffered_spans: int = DEFAULT_MAX_BUFFERED_SPANS
    settle_records: int = DEFAULT_SETTLE_RECORDS
    # A trace is replayed this many records after its first span at the latest, complete or not (its
    # later spans then replay on their own, late). None: no bound (a file is read to its end anyway).
    max_wait_records: int | None = None

    def __post_init__(self) -> None:
        if self.settle_records < 0:
            raise ValueError(f"settle_records must be >= 0, got {self.settle_records}")
        if self.flush_after_records < 1:
            raise ValueError(f"flush_after_records must be >= 1, got {self.flush_after_records}")
        if self.max_buffered_spans < 1:
            raise ValueError(f"max_buffered_spans must be >= 1, got {self.max_buffered_spans}")
        if self.max_wait_records is not None and self.max_wait_records < 1:
            raise ValueError(f"max_wait_records must be >= 1, got {self.max_wait_records}")


@dataclass(frozen=True, slots=True)
class Batch:
    """Spans of one or more traces to replay together; `late_traces`: those replayed before."""

    spans: list[ReadSpan]
    traces: dict[int, dict[int, ReadSpan]]  # trace id -> span id -> span, the same spans
    late_traces: frozenset[int] = frozenset()


class _Trace:
    """One trace's buffered spans, with what is known of its completeness kept up to date per span."""

    __slots__ = ("trace_id", "spans", "last_record", "late", "roots", "missing")

    def __init__(self, trace_id: int, record: int, late: bool):
        self.trace_id = trace_id
        self.spans: dict[int, ReadSpan] = {}
        self.last_record = record
        self.late = late  # this trace had already been replayed once
        self.roots = 0
        self.missing: set[int] = set()  # parent ids referenced but not (yet) buffered

    def add(self, span: ReadSpan) -> None:
        self.spans[span.span_id] = span
        self.missing.discard(span.span_id)
        parent = span.parent_span_id
        if parent is None:
            self.roots += 1
        elif parent not in self.spans:
            self.missing.add(parent)

    def complete(self) -> bool:
        """The root has arrived and every span's parent is here: nothing earlier is missing."""
        return self.roots > 0 and not self.missing


class TraceBuffer:
    """Groups spans per trace and says which traces are ready for replay.

    `add` each span with the number of the record (line) it came from; call `ready` whenever a
    record is finished and `drain` at the end of the input. Both return batches: lists of traces'
    spans to replay together, in the order their traces became ready.
    """

    def __init__(self, limits: ReplayLimits = ReplayLimits()):
        self.limits = limits
        self._traces: OrderedDict[int, _Trace] = OrderedDict()  # least recently seen first
        self._first_seen: dict[int, int] = {}  # trace id -> its first record, oldest first (insertion order)
        self._complete: dict[int, _Trace] = {}  # complete traces waiting to settle
        self._touched: set[int] = set()
        self._replayed: OrderedDict[int, None] = OrderedDict()
        self._replayed_spans: OrderedDict[int, None] = OrderedDict()
        self.buffered = 0
        self.peak_buffered = 0
        # counters for the coverage block
        self.duplicates = 0
        self.late_spans = 0
        self.late_traces = 0
        self.flushed: dict[str, int] = {COMPLETE: 0, IDLE: 0, MEMORY: 0, END_OF_INPUT: 0}
        if limits.max_wait_records is not None:
            self.flushed[AGE] = 0
        self.traces_seen = 0

    def add(self, span: ReadSpan, record: int) -> list[Batch] | tuple[()]:
        """Buffer one span. Returns batches that must be replayed now to stay within memory."""
        trace_id = span.trace_id
        trace = self._traces.get(trace_id)
        if trace is None:
            late = trace_id in self._replayed
            if late and (trace_id << 64 | span.span_id) in self._replayed_spans:
                self.duplicates += 1  # replayed already: the same span exported twice
                return ()
            if late:
                self.late_traces += 1
            else:
                self.traces_seen += 1
            trace = self._traces[trace_id] = _Trace(trace_id, record, late)
            self._first_seen[trace_id] = record
            self._touched.add(trace_id)
        elif span.span_id in trace.spans or (trace.late and (trace_id << 64 | span.span_id) in self._replayed_spans):
            self.duplicates += 1  # the same span exported twice (retries, overlapping files)
            return ()
        elif trace.last_record != record:
            trace.last_record = record
            self._traces.move_to_end(trace_id)
            self._touched.add(trace_id)  # (a trace already seen in this record is in there)
        trace.add(span)
        if trace.late:
            self.late_spans += 1
        buffered = self.buffered = self.buffered + 1
        if buffered > self.peak_buffered:
            self.peak_buffered = buffered
        if buffered <= self.limits.max_buffered_spans:
            return ()
        batches = []
        while self.buffered > self.limits.max_buffered_spans and len(self._traces) > 1:
            oldest = next(iter(self._traces))
            if oldest == span.trace_id:  # never split the trace being read, if anything else can go
                self._traces.move_to_end(oldest)
                oldest = next(iter(self._traces))
            batches.append(self._take([oldest], MEMORY))
        return batches

    def ready(self, record: int) -> list[Batch]:
        """Traces ready after record `record` ended: settled complete ones, then idle ones."""
        batches = []
        for trace_id in self._touched:
            trace = self._traces.get(trace_id)
            if trace is None:
                continue
            if trace.complete():
                self._complete[trace_id] = trace
            else:
                self._complete.pop(trace_id, None)
        self._touched.clear()
        settle = self.limits.settle_records
        settled = [tid for tid, trace in self._complete.items() if record - trace.last_record >= settle]
        if settled:
            batches.append(self._take(settled, COMPLETE))
        horizon = record - self.limits.flush_after_records
        idle = []
        for trace_id, trace in self._traces.items():
            if trace.last_record > horizon:
                break  # ordered by last record seen: the rest are more recent
            idle.append(trace_id)
        if idle:
            batches.append(self._take(idle, IDLE))
        if self.limits.max_wait_records is not None:
            oldest = record - self.limits.max_wait_records
            aged = []
            for trace_id, first in self._first_seen.items():
                if first > oldest:
                    break  # in order of first record: the rest are younger
                aged.append(trace_id)
            if aged:
                batches.append(self._take(aged, AGE))
        return batches

    def drain(self) -> list[Batch]:
        """Everything still buffered (the input ended): one batch, replayed interleaved in time."""
        self._touched.clear()
        self._complete.clear()
        if not self._traces:
            return []
        return [self._take(list(self._traces), END_OF_INPUT)]

    def _take(self, trace_ids: list[int], reason: str) -> Batch:
        spans: list[ReadSpan] = []
        traces: dict[int, dict[int, ReadSpan]] = {}
        late: list[int] = []
        recent = self._replayed_spans
        for trace_id in trace_ids:
            trace = self._traces.pop(trace_id)
            self._first_seen.pop(trace_id, None)
            self._complete.pop(trace_id, None)
            spans.extend(trace.spans.values())
            traces[trace_id] = trace.spans
            if trace.late:
                late.append(trace_id)
            for span_id in trace.spans:
                recent[trace_id << 64 | span_id] = None
            while len(recent) > _RECENT_SPANS:
                recent.popitem(last=False)
            self.buffered -= len(trace.spans)
            self.flushed[reason] += 1
            self._replayed[trace_id] = None
            self._replayed.move_to_end(trace_id)
            if len(self._replayed) > _RECENT_TRACES:
                self._replayed.popitem(last=False)
        return Batch(spans, traces, frozenset(late))


OnJudged = Callable[[SpanView, Judged], None]


class ReplayClock:
    """The engine's clock during a replay: trace time in seconds, as far as the replay has got, so
    idle TTLs count as they did live. The replayer moves it; the engine only reads it."""

    __slots__ = ("ns",)

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> float:
        return self.ns / 1e9


class Replayer:
    """Feeds batches of spans to one engine (`start` and `end`), in time order: a thin driver.

    `on_judged(span, judged)` is called at the end of every agent, model and tool span; the other
    spans are only counted (`not_ours`). `clock`, the engine's, follows the replayed time, so the
    engine's idle TTL for agent state counts trace time, as it counted wall time live. An internal
    error on one event is contained (counted, logged once) and the replay goes on.
    """

    def __init__(self, engine: GuardEngine, on_judged: OnJudged, clock: ReplayClock, *,
                 contain: Containment | None = None, event_outputs: EventOutputs | None = None):
        self.engine = engine
        self.event_outputs = event_outputs  # model output told in log events, added to its span when it ends
        self.on_judged = on_judged
        self.clock = clock
        self.contain = contain or Containment(lambda where: None)
        self.not_ours = 0  # spans that are not agent, model or tool spans
        self.recorded_used = 0  # verdicts taken from the live run's record (see recorded_* below)

    def replay(self, batch: Batch) -> None:
        spans = batch.spans
        if not spans:
            return
        engine = self.engine
        traces = batch.traces
        clock = self.clock
        for time_ns, phase, _, index in _event_order(spans, traces):
            span = spans[index]
            if time_ns > clock.ns:
                clock.ns = time_ns
            try:
                if phase == _START:
                    engine.start(span)
                    continue
                parent_id = span.parent_span_id
                span.parent = traces[span.trace_id].get(parent_id) if parent_id is not None else None
                if self.event_outputs:
                    self.event_outputs.merge_into(span)
                judged = engine.end(span, timed_out_ms=self._recorded_facts(span))
                if judged is None:
                    self.not_ours += 1
                else:
                    self.on_judged(span.view(), judged)
            except Exception:
                self.contain.record_and_maybe_raise("span_started" if phase == _START else "span_ended")

    def _recorded_facts(self, span: ReadSpan) -> float | None:
        """What only the live guard knew of this span, from the verdict it wrote on it: whether its
        own deadline fired (returned: the budget), and a stream trip (reported to the engine)."""
        if OTELGUARD_VERDICT not in span.attributes:
            return None
        view = span.view()
        timed_out_ms = recorded_timeout_ms(view)
        classification = classify(view.name, view.attributes)
        trip = recorded_stream_verdict(view, classification) if classification is not None else None
        if trip is not None:
            self.engine.report_stream_trip(view.trace_id, view.span_id, trip)
        if timed_out_ms is not None or trip is not None:
            self.recorded_used += 1
        return timed_out_ms


def _event_order(spans: list[ReadSpan], traces: dict[int, dict[int, ReadSpan]]) -> list[tuple[int, int, int, int]]:
    """(time, phase, tie-break, index) for every start and end of the batch's spans, sorted.

    Only a cycle of parent ids, or a chain past `_MAX_DEPTH`, makes depths and clamped starts depend on
    where the walks up the chains start; then they start at every span in batch order.
    """
    depth: dict[int, int] = {}  # id(span) -> depth in its trace (0: root or orphan)
    start: dict[int, int] = {}  # id(span) -> start, clamped to be no earlier than its parent's
    events: list[tuple[int, int, int, int]] = []
    append = events.append
    irregular = False
    for span in spans:
        key = id(span)
        if key in depth:
            continue
        parent_id = span.parent_span_id
        parent = traces[span.trace_id].get(parent_id) if parent_id is not None else None
        if parent is None:  # a root, or its parent is not here
            depth[key] = 0
            start[key] = span.start_ns
        elif id(parent) in depth:
            depth[key] = depth[id(parent)] + 1
            floor = start[id(parent)]
            start[key] = span.start_ns if span.start_ns > floor else floor
        else:
            irregular |= _place(span, traces[span.trace_id], depth, start)
    if irregular:
        depth.clear()
        start.clear()
        for span in spans:
            _place(span, traces[span.trace_id], depth, start)
    for index, span in enumerate(spans):
        key = id(span)
        d = depth[key]
        begin = start[key]
        end = span.end_ns if span.end_ns is not None and span.end_ns >= begin else begin
        append((begin, _START, d, index))
        append((end, _END, -d, index))
    events.sort()
    return events


def _place(span: ReadSpan, trace: dict[int, ReadSpan], depth: dict[int, int], start: dict[int, int]) -> bool:
    """Depth and clamped start of `span` (of `trace`: span id -> span), computing its ancestors first
    (iteratively). True when the walk met a cycle of parent ids or the depth cap."""
    if id(span) in depth:
        return False
    chain = [span]
    seen = {id(span)}
    node = span
    cycle = False
    while node.parent_span_id is not None and len(chain) < _MAX_DEPTH:
        parent = trace.get(node.parent_span_id)
        if parent is None or id(parent) in depth:
            break
        if id(parent) in seen:  # a cycle of parent ids: broken data, treat the chain as rootless
            cycle = True
            break
        seen.add(id(parent))
        chain.append(parent)
        node = parent
    irregular = cycle or len(chain) >= _MAX_DEPTH
    top = chain[-1]
    above = trace.get(top.parent_span_id) if top.parent_span_id is not None else None
    if above is not None and id(above) in depth:
        d, floor = depth[id(above)] + 1, start[id(above)]
    else:
        d, floor = 0, 0
    for node in reversed(chain):
        begin = node.start_ns if node.start_ns > floor else floor
        depth[id(node)] = d
        start[id(node)] = begin
        d, floor = d + 1, begin
    return irregular


def _recorded_verdicts(span: SpanView) -> list[Mapping[str, Any]]:
    """The live guard's verdicts on this span: its `otelguard.verdict` events, else its attributes."""
    found = [event.attributes for event in span.events if event.name == _VERDICT_EVENT]
    return found or [span.attributes]


def recorded_stream_verdict(span: SpanView, classification: Classification) -> Verdict | None:
    """The live breaker's verdict on this model call's stream, when nothing recorded lets the replay
    see why: a cut (`break`), or a repetition flagged as the stream ran out (`none`).

    `watch_stream` without `record_chunks=True` leaves only its verdict on the span; replayed as the
    live trip it was, the call gets the same verdict (a cut call is not judged as a thinking step),
    as live. With recorded chunks the replay re-runs the breaker on them instead, unless they hold
    more than the read limits let replay (it then sees only the stream's end, the live watch saw it
    all). A `none` verdict on a span whose output was captured is left to the replay too: it may be
    the live judge's of that output, which the replay judges itself, with its own configuration.
    """
    for recorded in _recorded_verdicts(span):
        action = recorded.get(OTELGUARD_ACTION)
        if recorded.get(OTELGUARD_VERDICT) == REPETITIVE_OUTPUT and action in _STREAM_ACTIONS:
            if any(event.name == OTELGUARD_CHUNK_EVENT for event in span.events) \
                    and not _chunks_read_in_part(span, classification):
                return None
            if action == "none" and _output_captured(span, classification):
                return None
            chars = recorded.get(_STREAM_CHARS)
            code = recorded.get(_ERROR_CODE)
            return Verdict(
                str(recorded.get(OTELGUARD_GUARD) or "thinking-loop-guard"), REPETITIVE_OUTPUT,
                str(recorded.get(OTELGUARD_RULE) or ""), Action.parse(action),
                stream_chars=int(chars) if isinstance(chars, (int, float)) and not isinstance(chars, bool) else None,
                error_code=code if isinstance(code, str) else None,
            )
    return None


_STREAM_ACTIONS = ("break", "none")


def _chunks_read_in_part(span: SpanView, classification: Classification) -> bool:
    record = read(span, classification)
    return isinstance(record, ModelCall) and any(chunk.skipped for chunk in record.chunks)


def _output_captured(span: SpanView, classification: Classification) -> bool:
    record = read(span, classification)
    return isinstance(record, ModelCall) and record.has_output is not None


def recorded_timeout_ms(span: SpanView) -> float | None:
    """The guard's own deadline fired for this tool span in the live run (read from its verdict).

    Only the live process knew its timer fired; the exported span says so in its `otelguard.*`
    verdict attributes or `otelguard.verdict` events. Returns the declared budget, 0.0 if unknown.
    """
    attributes = span.attributes
    if not attributes or OTELGUARD_VERDICT not in attributes:
        return None
    if not any(recorded.get(OTELGUARD_RULE) == _TOOL_TIMEOUT_RULE for recorded in _recorded_verdicts(span)):
        return None
    budget = attributes.get(OTELGUARD_TOOL_TIMEOUT_MS)
    if isinstance(budget, (int, float)) and not isinstance(budget, bool) and budget > 0:
        return float(budget)
    return 0.0
