"""Every instrument otelguard records, created in one place (meter `otelguard`)."""

from __future__ import annotations

import time
from typing import Callable, Iterable

from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from .._version import __version__
from ..runtime.forksafe import fork_safe_lock
from ..guards.repeat_tool_reminder import REPEATED_TOOL_CALL
from ..model.records import Verdict

OTHER = "_other"
MAX_LABEL_VALUES = 100  # distinct model-controlled label values (tool names) before `_other`
LABEL_GENERATION_S = 600.0  # a capped label value not seen for two of these frees its slot
MAX_LABEL_CHARS = 128  # longer model-controlled values are cut: a label is an identifier, not content
INTERNAL_ERROR_PLACES = ("on_start", "on_end", "downstream.on_start", "downstream.on_ending", "downstream.on_end",
                         "control_hook", "watchdog", "deliver", "dispatch.worker_died", "evaluation_events")
CONTROL_OUTCOMES_AT_ZERO = ("error", "unbound", "slow", "stuck", "dropped")  # "ok" only once it happens
CONTROL_ACTIONS = ("remind", "warn", "steer", "cancel", "block", "break")
EVICTABLE_STATE = ("agent", "span", "tool", "run", "stream")
# One in this many agent, model or tool span ends the guard handles is timed for
# `otelguard.processing.duration` (the histogram's description says so).
PROCESSING_SAMPLE_EVERY = 16


class LabelCap:
    """Caps the distinct values a model-controlled label may take: cardinality stays bounded.

    `reserved` values (names the configuration lists) always pass and take no slot. The others share
    `limit` slots in two generations: every `generation_s` the current generation becomes the previous
    one and the previous one is forgotten; a value seen again is carried into the current one. A value
    not seen for two generations frees its slot, so 100 junk names cannot keep a legitimate one at
    `_other` for the life of the process, and a value in use keeps its slot under a flood of new ones.
    """

    __slots__ = ("_current", "_previous", "_reserved", "_limit", "_generation_s", "_clock", "_rotated",
                 "_lock", "__weakref__")

    def __init__(self, limit: int = MAX_LABEL_VALUES, *, reserved: Iterable[str] = (),
                 generation_s: float = LABEL_GENERATION_S, clock: Callable[[], float] = time.monotonic):
        self._current: set[str] = set()
        self._previous: set[str] = set()  # seen last generation, not yet this one
        self._reserved = frozenset(value[:MAX_LABEL_CHARS] for value in reserved if value)
        self._limit = limit
        self._generation_s = generation_s
        self._clock = clock
        self._rotated = clock()
        self._lock = fork_safe_lock(self, "_lock")

    def __call__(self, value: str | None) -> str:
        if not value:
            return ""
        if len(value) > MAX_LABEL_CHARS:
            value = value[:MAX_LABEL_CHARS]
        if value in self._current or value in self._reserved:
            return value
        with self._lock:
            now = self._clock()
            if now - self._rotated >= self._generation_s:
                # Two generations gone by: nothing is left to carry over.
                self._previous = set() if now - self._rotated >= 2 * self._generation_s else self._current
                self._current = set()
                self._rotated = now
            if value in self._previous:
                self._previous.discard(value)
                self._current.add(value)
                return value
            if len(self._current) + len(self._previous) < self._limit:
                self._current.add(value)
                return value
        return OTHER


class GuardMetrics:
    def __init__(self, meter_provider: MeterProvider | None = None):
        meter = (meter_provider or otel_metrics.get_meter_provider()).get_meter("otelguard", __version__)
        self.verdicts = meter.create_counter(
            "otelguard.verdicts", unit="{verdict}", description="Guard verdicts on agent spans")
        # Spans counted in plain ints by (kind, convention) under a lock (spans end on any thread),
        # read at collection by an observable counter; verdicts are recorded directly.
        self._span_counts: dict[tuple[str, str, str | None], int] = {}
        self._span_counts_lock = fork_safe_lock(self, "_span_counts_lock")
        self.spans = meter.create_observable_counter(
            "otelguard.spans", callbacks=[self._observe_spans], unit="{span}",
            description="Agent, model and tool spans the guard read")
        self.run_length = meter.create_histogram(
            "otelguard.repeat.run_length", unit="{call}",
            description="Length of runs of identical tool calls",
            explicit_bucket_boundaries_advisory=[1, 2, 3, 4, 5, 8, 13, 21, 34])
        self.loop_tokens = meter.create_counter(
            "otelguard.loop.tokens", unit="{token}",
            description="Output tokens spent in the loops the guard acted on (model calls judged stalled or "
                        "repetitive, the model calls that asked for repeated tool calls)")
        # Unit "usd": the Prometheus exporters append it, making `otelguard_loop_cost_usd_total`.
        self.loop_cost_counter = meter.create_counter(
            "otelguard.loop.cost", unit="usd",
            description="Price in USD (genai-prices) of the tokens spent in the loops the guard acted on")
        self.control_calls = meter.create_counter(
            "otelguard.control.calls", unit="{call}", description="Control hook calls by outcome")
        self.internal_errors = meter.create_counter(
            "otelguard.internal.errors", unit="{error}", description="Errors contained inside the guard")
        self.evictions = meter.create_counter(
            "otelguard.state.evictions", unit="{entry}", description="State entries evicted by the bounds")
        self.processing = meter.create_histogram(
            "otelguard.processing.duration", unit="s",
            description=f"Time the guard spent per agent, model or tool span (one in {PROCESSING_SAMPLE_EVERY} is timed)",
            explicit_bucket_boundaries_advisory=[1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1])
        self._publish_zeroes()
        self._tool_label = LabelCap()  # replaced by reserve_tools once the configuration is known
        self._agent_label = LabelCap()
        self._model_label = LabelCap()
        self._service_label = LabelCap()  # senders name themselves: as capped as a model-controlled name

    def reserve_tools(self, names: Iterable[str]) -> None:
        """Tool names the configuration lists always report as themselves, whatever the model named."""
        self._tool_label = LabelCap(reserved=names)

    def _publish_zeroes(self) -> None:
        """Failure counters exist at 0 from the start: "no errors" must not read as "no data"."""
        for where in INTERNAL_ERROR_PLACES:
            self.internal_errors.add(0, {"where": where})
        for action in CONTROL_ACTIONS:
            for outcome in CONTROL_OUTCOMES_AT_ZERO:
                self.control_calls.add(0, {"otelguard.action": action, "outcome": outcome})
        for what in EVICTABLE_STATE:
            for reason in ("capacity", "idle"):
                self.evictions.add(0, {"otelguard.state": what, "reason": reason})

    def verdict(self, verdict: Verdict, agent_name: str | None, service_name: str | None = None) -> None:
        """Count one verdict; `service_name` (the sender's, in `otelguard serve`) adds a `service.name` label."""
        labels = {
            "otelguard.guard": verdict.guard,
            "otelguard.rule": verdict.rule,
            "otelguard.action": str(verdict.action),
            "gen_ai.agent.name": self._agent_label(agent_name),
            "gen_ai.tool.name": self._tool_label(verdict.tool),
        }
        if service_name is not None:
            labels["service.name"] = self._service_label(service_name)
        self.verdicts.add(1, labels)
        # The run-length histogram is of identical-call runs: no-progress's repeats are not those.
        if verdict.repeat_count is not None and verdict.verdict == REPEATED_TOOL_CALL:
            self.run_length.record(verdict.repeat_count, {"otelguard.guard": verdict.guard})

    def span(self, kind: str, convention: str, service_name: str | None = None) -> None:
        """Count one judged span. `kind` may be a `SpanKind` (a str enum: made a plain label at
        collection); `service_name` as in `verdict`."""
        key = (kind, convention, service_name)
        with self._span_counts_lock:
            self._span_counts[key] = self._span_counts.get(key, 0) + 1

    def span_counts(self) -> dict[tuple[str, str], int]:
        """{(kind label, convention): spans counted so far}, over every sender."""
        totals: dict[tuple[str, str], int] = {}
        for (kind, convention, _), count in self._counts_by_service().items():
            totals[kind, convention] = totals.get((kind, convention), 0) + count
        return totals

    def _counts_by_service(self) -> dict[tuple[str, str, str | None], int]:
        with self._span_counts_lock:
            counted = list(self._span_counts.items())
        totals: dict[tuple[str, str, str | None], int] = {}
        for (kind, convention, service), count in counted:
            label = (str(kind), convention, service)
            totals[label] = totals.get(label, 0) + count
        return totals

    def _observe_spans(self, options: CallbackOptions) -> Iterable[Observation]:
        for (kind, convention, service), count in self._counts_by_service().items():
            labels = {"otelguard.span.kind": kind, "otelguard.convention": convention}
            if service is not None:
                labels["service.name"] = self._service_label(service)
            yield Observation(count, labels)

    def loop_token_spend(self, guard: str, model: str | None, tokens: int) -> None:
        self.loop_tokens.add(tokens, {"otelguard.guard": guard, "gen_ai.request.model": self._model_label(model)})

    def loop_cost(self, verdict: Verdict, agent_name: str | None, model: str | None, usd: float) -> None:
        self.loop_cost_counter.add(usd, {
            "otelguard.guard": verdict.guard,
            "otelguard.rule": verdict.rule,
            "gen_ai.agent.name": self._agent_label(agent_name),
            "gen_ai.request.model": self._model_label(model),
        })

    def control(self, action: str, outcome: str) -> None:
        self.control_calls.add(1, {"otelguard.action": action, "outcome": outcome})

    def internal_error(self, where: str) -> None:
        self.internal_errors.add(1, {"where": where})

    def evicted(self, what: str, reason: str, count: int) -> None:
        self.evictions.add(count, {"otelguard.state": what, "reason": reason})
