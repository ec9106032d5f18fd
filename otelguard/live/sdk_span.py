"""The OpenTelemetry SDK's spans as the engine reads them: the only module that reads the SDK's
private fields.

The public `ReadableSpan` API copies on every read (`attributes` wraps the SDK's mapping in a proxy
whose every lookup is a Python call; `events` copies the list), and the guard reads the name and
attributes of every span the application makes. Inside the SDK versions whose fields were checked
(`CHECKED_SDK`), the hot reads take the fields themselves; outside that range, or with
`OTELGUARD_SDK_ADAPTER=public`, everything goes through the public API, with the same verdicts (CI
runs the conformance vectors and fixture replays both ways).
"""

from __future__ import annotations

import os
from operator import attrgetter
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.version import __version__ as SDK_VERSION

from ..records import SpanEvent, SpanView, Status

ADAPTER_ENV = "OTELGUARD_SDK_ADAPTER"  # "public": never read private fields
CHECKED_SDK = ((1, 30), (1, 46))  # [from, to): opentelemetry-sdk releases whose private fields were read and checked

_STATUS = {
    trace_api.StatusCode.UNSET: Status.UNSET,
    trace_api.StatusCode.OK: Status.OK,
    trace_api.StatusCode.ERROR: Status.ERROR,
}


def _release(version: str) -> tuple[int, int]:
    try:
        major, minor = version.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def reads_private_fields(version: str = SDK_VERSION, setting: str | None = None) -> bool:
    """Whether the adapter reads the SDK's private fields: inside the checked releases, unless the
    setting (default: the `OTELGUARD_SDK_ADAPTER` environment variable) says "public"."""
    if setting is None:
        setting = os.environ.get(ADAPTER_ENV, "")
    if setting.strip().lower() == "public":
        return False
    low, high = CHECKED_SDK
    return low <= _release(version) < high


class PublicSdkSpan:
    """A `SpanSource` over the public `ReadableSpan` API (any SDK release, any span object)."""

    __slots__ = ("span", "name", "attributes", "trace_id", "span_id", "parent_span_id")

    def __init__(self, span: ReadableSpan):
        self.span = span
        self.name = span.name
        self.attributes: Mapping[str, Any] = span.attributes or {}
        context, parent = span.get_span_context(), span.parent
        if context is None:
            raise ValueError(f"span {span.name!r} has no span context")
        self.trace_id, self.span_id = context.trace_id, context.span_id
        self.parent_span_id = parent.span_id if parent is not None else None

    @property
    def has_events(self) -> bool:
        return bool(self.span.events)

    def parent_view(self) -> SpanView | None:
        return None  # a live span's parent is still open: what it holds is read where it is needed

    def view(self) -> SpanView:
        span = self.span
        status, scope = span.status, span.instrumentation_scope
        return SpanView(
            self.name, self.trace_id, self.span_id, self.parent_span_id, self.attributes,
            tuple(SpanEvent(e.name, e.attributes or {}, e.timestamp or 0) for e in span.events),
            _STATUS.get(status.status_code, Status.UNSET), status.description,
            scope.name if scope is not None else None,
            span.start_time or 0, span.end_time, span.dropped_events, span.dropped_attributes,
        )


class PrivateSdkSpan(PublicSdkSpan):
    """The same from the SDK span's own fields (SpanContext is a tuple: indexing skips its property
    calls). Built only inside `CHECKED_SDK`; raises AttributeError for a span that lacks them."""

    __slots__ = ()

    def __init__(self, span: ReadableSpan):
        self.span = span
        self.name = span._name
        attributes = span._attributes
        # An SDK span's are BoundedAttributes; a ReadableSpan made by hand may hold a plain dict.
        self.attributes = attributes._dict if type(attributes) is BoundedAttributes else (attributes or {})
        context, parent = span._context, span._parent
        self.trace_id, self.span_id = context[0], context[1]  # type: ignore[index]  # an SDK span's context is set
        self.parent_span_id = parent[1] if parent is not None else None

    @property
    def has_events(self) -> bool:
        events = self.span._events
        return bool(events._dq if type(events) is BoundedList else events)  # type: ignore[attr-defined]  # BoundedList's deque

    def view(self) -> SpanView:
        """As the public view, from the fields themselves: every agent, model and tool span's start
        and end builds one, and the public properties copy the events and wrap the status."""
        span = self.span
        status, scope = span._status, span._instrumentation_scope
        events = span._events
        return SpanView(
            self.name, self.trace_id, self.span_id, self.parent_span_id, self.attributes,
            tuple(SpanEvent(e.name, e.attributes or {}, e.timestamp or 0) for e in events) if events else (),
            _STATUS.get(status._status_code, Status.UNSET), status._description,
            scope.name if scope is not None else None,
            span._start_time or 0, span._end_time,
            getattr(events, "dropped", 0), getattr(span._attributes, "dropped", 0),
        )


PRIVATE = reads_private_fields()
# The span as the engine reads it: from its fields inside `CHECKED_SDK`, else through the public API.
# `SdkSpan(span)` raises AttributeError for a span that is not the SDK's: read it with `PublicSdkSpan`.
SdkSpan: type[PublicSdkSpan] = PrivateSdkSpan if PRIVATE else PublicSdkSpan


def source_of(span: Any) -> PublicSdkSpan:
    """The span as the engine reads it: `SdkSpan`, or through the public API for a span that is not the SDK's."""
    try:
        return SdkSpan(span)
    except AttributeError:
        return PublicSdkSpan(span)


# The processor's first test on every span of the application, with no Python call: its name and
# attributes read by C-level getters (the fields inside CHECKED_SDK; the public properties outside).
# Either raises AttributeError for a span that is not the SDK's: read it through `PublicSdkSpan` then.
name_of: Callable[[Any], str] = attrgetter("_name" if PRIVATE else "name")
attributes_of: Callable[[Any], Any] = attrgetter("_attributes._dict" if PRIVATE else "attributes")
# Its SpanContext and its parent's (tuples: [1] is the span id), for a span handed over by its ids.
context_of: Callable[[Any], Any] = attrgetter("_context" if PRIVATE else "context")
parent_of: Callable[[Any], Any] = attrgetter("_parent" if PRIVATE else "parent")


def processors_of(span: Any) -> Iterator[SpanProcessor]:
    """The span processors of the provider that made `span`, nested pipelines flattened; none when
    that cannot be read (only the SDK span's private `_span_processor` links a span to its provider)."""
    if not PRIVATE:
        return iter(())
    return _flattened(getattr(span, "_span_processor", None))


def _flattened(pipeline: Any) -> Iterator[SpanProcessor]:
    if pipeline is None:
        return
    members = getattr(pipeline, "_span_processors", None)
    if members is None:
        yield pipeline
        return
    for member in members:
        yield from _flattened(member)


# The SDK's own processors act only at a span's end: their start and ending hooks are empty. Not
# calling those for every span of the application spares two calls a span (the plain-span bars).
_EMPTY_HOOKS = frozenset(
    getattr(processor, hook)
    for processor in (SpanProcessor, BatchSpanProcessor, SimpleSpanProcessor)
    for hook in ("on_start", "_on_ending")
    if hasattr(processor, hook)
)


def acting_hooks(processors: Sequence[SpanProcessor], hook: str) -> tuple[Callable[..., None], ...]:
    """Each processor's `hook` (`on_start`, or the SDK's `_on_ending` for a span about to end and still
    writable, where its release has one), bound, unless it is one of the SDK's own empty hooks."""
    bound = (getattr(processor, hook, None) for processor in processors)
    return tuple(method for method in bound
                 if method is not None and getattr(method, "__func__", None) not in _EMPTY_HOOKS)
