"""Every instrument otelguard records, created in one place (meter `otelguard`)."""

from __future__ import annotations

from typing import Iterable

from opentelemetry import metrics as otel_metrics
from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation

from .._version import __version__
from ..forksafe import fork_safe_lock
from ..records import Verdict

OTHER = "_other"
MAX_LABEL_VALUES = 100  # distinct model-controlled label values (tool names) before `_other`
MAX_LABEL_CHARS = 128  # longer model-controlled values are cut: a label is an identifier, not content
INTERNAL_ERROR_PLACES = ("on_start", "on_end", "downstream.on_start", "downstream.on_ending", "downstream.on_end",
                         "control_hook", "watchdog", "deliver", "dispatch.worker_died")
CONTROL_OUTCOMES_AT_ZERO = ("error", "unbound", "slow", "stuck", "dropped")  # "ok" only once it happens
CONTROL_ACTIONS = ("remind", "warn", "steer", "cancel", "block", "break")
EVICTABLE_STATE = ("agent", "span", "tool", "run", "stream")
# One span in this many of each kind and convention the guard reads (agent ends and model spans left
# unread included) is timed for `otelguard.processing.duration`: with an SDK
# MeterProvider a histogram record costs ~4 us, as much as judging a whole tool span.
PROCESSING_SAMPLE_EVERY = 16


class LabelCap:
    """Caps the distinct values a model-controlled label may take: cardinality stays bounded."""

    __slots__ = ("_seen", "_limit", "_lock", "__weakref__")

    def __init__(self, limit: int = MAX_LABEL_VALUES):
        self._seen: set[str] = set()
        self._limit = limit
        self._lock = fork_safe_lock(self, "_lock")

    def __call__(self, value: str | None) -> str:
        if not value:
            return ""
        if len(value) > MAX_LABEL_CHARS:
            value = value[:MAX_LABEL_CHARS]
        if value in self._seen:
            return value
        with self._lock:
            if len(self._seen) < self._limit:
                self._seen.add(value)
                return value
        return OTHER


class GuardMetrics:
    def __init__(self, meter_provider: MeterProvider | None = None):
        meter = (meter_provider or otel_metrics.get_meter_provider()).get_meter("otelguard", __version__)
        self.verdicts = meter.create_counter(
            "otelguard.verdicts", unit="{verdict}", description="Guard verdicts on agent spans")
        # Spans counted in plain ints by (kind, convention), read at collection: an SDK counter's
        # add() costs ~7.7 us a call, a third of the span bar (verdicts are rare and recorded directly).
        self._span_counts: dict[tuple[str, str], int] = {}
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
            description="Output tokens spent in model calls judged stalled or repetitive")
        self.control_calls = meter.create_counter(
            "otelguard.control.calls", unit="{call}", description="Control hook calls by outcome")
        self.internal_errors = meter.create_counter(
            "otelguard.internal.errors", unit="{error}", description="Errors contained inside the guard")
        self.evictions = meter.create_counter(
            "otelguard.state.evictions", unit="{entry}", description="State entries evicted by the bounds")
        self.processing = meter.create_histogram(
            "otelguard.processing.duration", unit="s",
            description=f"Time the guard spent per judged span (one in {PROCESSING_SAMPLE_EVERY} is timed)",
            explicit_bucket_boundaries_advisory=[1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.01, 0.05, 0.1])
        self._publish_zeroes()
        self._tool_label = LabelCap()
        self._agent_label = LabelCap()
        self._model_label = LabelCap()

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

    def verdict(self, verdict: Verdict, agent_name: str | None) -> None:
        self.verdicts.add(1, {
            "otelguard.guard": verdict.guard,
            "otelguard.rule": verdict.rule,
            "otelguard.action": verdict.action,
            "gen_ai.agent.name": self._agent_label(agent_name),
            "gen_ai.tool.name": self._tool_label(verdict.tool),
        })

    def span(self, kind: str, convention: str) -> int:
        """Count one judged span; return how many of its kind and convention were counted before it
        (the processor times every PROCESSING_SAMPLE_EVERY-th). `kind` may be a `SpanKind` (a str
        enum: made a plain label at collection)."""
        key = (kind, convention)
        with self._span_counts_lock:
            before = self._span_counts.get(key, 0)
            self._span_counts[key] = before + 1
        return before

    def span_counts(self) -> dict[tuple[str, str], int]:
        """{(kind label, convention): spans counted so far}."""
        with self._span_counts_lock:
            counted = list(self._span_counts.items())
        totals: dict[tuple[str, str], int] = {}
        for (kind, convention), count in counted:
            label = (str(kind), convention)
            totals[label] = totals.get(label, 0) + count
        return totals

    def _observe_spans(self, options: CallbackOptions) -> Iterable[Observation]:
        for (kind, convention), count in self.span_counts().items():
            yield Observation(count, {"otelguard.span.kind": kind, "otelguard.convention": convention})

    def loop_token_spend(self, guard: str, model: str | None, tokens: int) -> None:
        self.loop_tokens.add(tokens, {"otelguard.guard": guard, "gen_ai.request.model": self._model_label(model)})

    def control(self, action: str, outcome: str) -> None:
        self.control_calls.add(1, {"otelguard.action": action, "outcome": outcome})

    def internal_error(self, where: str) -> None:
        self.internal_errors.add(1, {"where": where})

    def evicted(self, what: str, reason: str, count: int) -> None:
        self.evictions.add(count, {"otelguard.state": what, "reason": reason})
