"""Coding-agent CLIs' tool calls (`conventions.agent_clis`) into one engine, one record per call.

Where a CLI tells of a call twice (a log record and a span), the two are joined by their join key,
in either arrival order: a record with the call's arguments is judged at once and its key
remembered, so the other record of the call is only merged away; a record without arguments waits
up to `wait` (in the caller's units: seconds in the service, records in the analyzer) for the one
that has them, and is judged alone if none comes (its arguments then count as not exported). Each
call is handed to the engine as the GenAI tool span `as_tool_span` makes, started and ended, in the
CLI session's own chain (one agent per session). Memory is bounded: at most `max_held` records wait,
and the `max_joined` most recent keys are remembered.

A record that tells what a model call spent (`CliModelCall`) goes to the engine at once, as the
session's model usage (`GuardEngine.model_usage`): the tool calls judged after it stand after it in
the session's spend. A call whose asking model call is told after it (opencode runs a tool inside
the model call's span, which ends, with the usage, after the tool: `CliToolCall.asked_by`) waits for
that record, up to `wait` too, so that it stands where it was asked for.
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ..runtime.containment import Containment
from ..conventions import session_trace_id
from ..conventions.agent_clis import (
    ARGUMENT_SETTINGS,
    SPAN_NAMES,
    CliModelCall,
    CliToolCall,
    as_tool_span,
    from_span,
    joined,
    model_span,
)
from ..engine import GuardEngine, Judged
from ..model.records import SpanView
from ..otlp.json_spans import ReadSpan
from .spans import ReplayClock

logger = logging.getLogger("otelguard")

DEFAULT_MAX_HELD = 10_000
DEFAULT_MAX_JOINED = 65_536

# Told of each judged call: the span the engine read, what it decided, and the origin the caller
# handed in with the record judged (the service: the sender's service.name).
OnCallJudged = Callable[[SpanView, Judged, Any], None]


@dataclass(eq=False)
class CliCalls:
    engine: GuardEngine
    on_judged: OnCallJudged
    clock: ReplayClock
    _: KW_ONLY
    wait: float
    contain: Containment
    max_held: int = DEFAULT_MAX_HELD
    max_joined: int = DEFAULT_MAX_JOINED
    # key -> (call, origin, since)
    _held: OrderedDict[str, tuple[CliToolCall, Any, float]] = field(default_factory=OrderedDict, init=False)
    _judged: OrderedDict[str, None] = field(default_factory=OrderedDict, init=False)  # keys of calls judged already
    # Calls waiting for the usage of the model call that asked for them, by its key (a few at once).
    _asking: OrderedDict[str, list[tuple[CliToolCall, Any, float]]] = field(default_factory=OrderedDict, init=False)
    _told: OrderedDict[str, None] = field(default_factory=OrderedDict, init=False)  # model calls whose usage came
    records: int = field(default=0, init=False)  # CLI tool records read
    calls: int = field(default=0, init=False)  # tool calls judged
    model_calls: int = field(default=0, init=False)  # model calls judged
    joined: int = field(default=0, init=False)  # records merged into a call judged from another record
    by_cli: Counter[str] = field(default_factory=Counter, init=False)  # CLI -> calls judged
    usage_by_cli: Counter[str] = field(default_factory=Counter, init=False)  # CLI -> model calls whose usage was read
    without_arguments: Counter[str] = field(default_factory=Counter, init=False)  # CLI -> calls judged without arguments

    def add(self, call: CliToolCall | CliModelCall, origin: Any, now: float) -> None:
        """One CLI tool record (or what a model call spent), at `now`."""
        if isinstance(call, CliModelCall):
            self.usage_by_cli[call.cli] += 1
            with self.contain.contained("cli_call"):
                self.engine.model_usage(session_trace_id(call.cli, call.session), call.usage)
            if call.key is not None:
                _remember(self._told, call.key, self.max_joined)
                for waiting, waiting_origin, _ in self._asking.pop(call.key, ()):
                    self._run_call(waiting, waiting_origin)
            return
        self.records += 1
        key = call.join_key
        if key in self._judged:
            self.joined += 1  # its other record was judged already, with the arguments it had
            return
        held = self._held.pop(key, None)
        if held is not None:
            self.joined += 1
            call = joined(call, held[0]) if call.arguments is not None else joined(held[0], call)
            self._judge(call, origin, now)
        elif call.arguments is None:
            self._held[key] = (call, origin, now)
            if len(self._held) > self.max_held:
                _, (oldest, oldest_origin, _) = self._held.popitem(last=False)
                self._judge(oldest, oldest_origin, now)
        else:
            self._judge(call, origin, now)

    def add_span(self, span: ReadSpan, origin: Any, now: float) -> bool:
        """A span, if it is a CLI's tool or model span (it goes on to its trace all the same): whether it was."""
        if span.name not in SPAN_NAMES:
            return False
        status = span.view().status
        model = model_span(span.name, span.attributes, span.span_id, span.start_ns, span.end_ns or span.start_ns,
                           status)
        if model is not None:
            self.model_calls += 1
            self._run(model, origin)
            return True
        call = from_span(span.name, span.attributes, span.trace_id, span.parent_span_id, span.end_ns or 0, status)
        if call is None:
            return False
        self.add(call, origin, now)
        return True

    def expire(self, now: float) -> None:
        """Judge alone the records that waited `wait` for another record of their call."""
        held = self._held
        while held:
            key, (call, origin, since) = next(iter(held.items()))
            if now - since < self.wait:
                break
            del held[key]
            self._judge(call, origin, now)
        asking = self._asking
        while asking:
            key, waiting = next(iter(asking.items()))
            if now - waiting[0][2] < self.wait:
                break
            del asking[key]  # its model call's usage never came: judged where it is
            for call, origin, _ in waiting:
                self._run_call(call, origin)

    def drain(self) -> None:
        """Judge every waiting record (the input ended)."""
        while self._held:
            _, (call, origin, _) = self._held.popitem(last=False)
            self._judge(call, origin)
        while self._asking:
            _, waiting = self._asking.popitem(last=False)
            for call, origin, _ in waiting:
                self._run_call(call, origin)

    def _judge(self, call: CliToolCall, origin: Any, now: float | None = None) -> None:
        """Judge one call now, or (`now` given) once the usage of the model call that asked for it
        came, if that is still to come."""
        _remember(self._judged, call.join_key, self.max_joined)  # (its other record merges into it)
        asked_by = call.asked_by
        if asked_by is not None and now is not None and asked_by not in self._told:
            self._asking.setdefault(asked_by, []).append((call, origin, now))
            if len(self._asking) > self.max_held:
                _, waiting = self._asking.popitem(last=False)
                for waiting_call, waiting_origin, _ in waiting:
                    self._run_call(waiting_call, waiting_origin)
            return
        self._run_call(call, origin)

    def _run_call(self, call: CliToolCall, origin: Any) -> None:
        self.calls += 1
        self.by_cli[call.cli] += 1
        if call.arguments is None:
            if not self.without_arguments[call.cli]:
                logger.warning("%s exports tool calls without their arguments: repeated calls cannot be told apart "
                               "(%s)", call.cli, missing_arguments_hint(call.cli))
            self.without_arguments[call.cli] += 1
        self._run(as_tool_span(call), origin)

    def _run(self, span: SpanView, origin: Any) -> None:
        """Start and end one span in the engine (its session's chain)."""
        if span.end_ns and span.end_ns > self.clock.ns:
            self.clock.ns = span.end_ns
        try:
            self.engine.start(span)
            judged = self.engine.end(span)
            if judged is not None:
                self.on_judged(span, judged, origin)
        except Exception:
            self.contain.record_and_maybe_raise("cli_call")


def missing_arguments_hint(cli: str) -> str:
    """How to make a CLI export its tool arguments."""
    setting = ARGUMENT_SETTINGS.get(cli)
    return f"set {setting}" if setting else "its telemetry does not carry them"


def _remember(keys: OrderedDict[str, None], key: str, most: int) -> None:
    """Note `key` among the `most` most recent."""
    keys[key] = None
    if len(keys) > most:
        keys.popitem(last=False)
