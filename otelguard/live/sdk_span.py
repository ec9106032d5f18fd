"""The OpenTelemetry SDK's spans as the engine reads them, through the public `ReadableSpan` API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan

from ..model.records import SpanEvent, SpanView, Status

_STATUS = {
    trace_api.StatusCode.UNSET: Status.UNSET,
    trace_api.StatusCode.OK: Status.OK,
    trace_api.StatusCode.ERROR: Status.ERROR,
}


class SdkSpan:
    """A `SpanSource` over the public `ReadableSpan` API (any SDK release, any span object showing it),
    each fact read from the span when the engine asks for it."""

    __slots__ = ("span",)

    def __init__(self, span: ReadableSpan):
        self.span = span

    @property
    def name(self) -> str:
        return self.span.name

    @property
    def attributes(self) -> Mapping[str, Any]:
        return self.span.attributes or {}

    @property
    def trace_id(self) -> int:
        return self._context().trace_id

    @property
    def span_id(self) -> int:
        return self._context().span_id

    def _context(self) -> trace_api.SpanContext:
        context = self.span.get_span_context()
        if context is None:  # (a span made by hand may lack one: the caller contains the error)
            raise ValueError(f"span {self.span.name!r} has no span context")
        return context

    @property
    def parent_span_id(self) -> int | None:
        parent = self.span.parent
        return parent.span_id if parent is not None else None

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
