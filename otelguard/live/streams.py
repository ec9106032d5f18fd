"""`watch_stream`: the mid-stream breaker around a stream of model output.

Wrap the stream the agent consumes; every visible text delta is fed to the breaker, and on a trip
the agent is steered (when `break_correction`) and the consumer gets `RepetitiveOutputError`. A
repetition that completes only in the stream's last deltas is flagged when the stream runs out (the
verdict, with action `none`, on the model span), not cut: there is nothing left to cut. In a paused
session (`GuardSpanProcessor.pause`) a trip is recorded, marked `paused`, and the stream goes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, overload

from opentelemetry import trace as trace_api

from ..conventions import classify
from ..detectors.stream import StreamBreaker, Trip
from ..errors import RepetitiveOutputError
from .processor import GuardSpanProcessor, default_stream_guard
from .registry import owning_processor
from ..model.records import SpanKind, Verdict
from ..model.semconv import OTELGUARD_CHUNK_EVENT, OTELGUARD_CHUNK_KIND, OTELGUARD_CHUNK_TEXT

TextOf = Callable[[Any], "tuple[str, str] | None"]  # item -> (text, kind) or None when it carries no text


def default_text_of(item: Any) -> tuple[str, str] | None:
    """Text of a stream item: a str, an OpenAI chat chunk, or an OpenAI Responses text delta event."""
    if isinstance(item, str):
        return item, "text"
    choices = getattr(item, "choices", None)
    if choices:
        delta = getattr(choices[0], "delta", None)
        content = getattr(delta, "content", None)
        if isinstance(content, str):
            return content, "text"
        reasoning = getattr(delta, "reasoning_content", None)
        if isinstance(reasoning, str):
            return reasoning, "reasoning"
        return None
    kind = getattr(item, "type", None)
    delta = getattr(item, "delta", None)
    if isinstance(delta, str) and isinstance(kind, str):
        if kind.endswith("output_text.delta"):
            return delta, "text"
        if "reasoning" in kind:
            return delta, "reasoning"
    return None


class _Watch:
    """Shared state of one watched stream (sync or async)."""

    def __init__(self, record_chunks: bool, text_of: TextOf, processor: GuardSpanProcessor | None):
        self.span = trace_api.get_current_span()
        self.processor = processor or owning_processor(self.span)
        # Without any guard installed, the stream is still judged by the default thinking-loop guard's breaker.
        guard = self.processor.stream_guard if self.processor is not None else default_stream_guard()
        self.guard = guard
        self.breaker: StreamBreaker | None = guard.new_breaker() if guard is not None else None
        self.reasoning_breaker: StreamBreaker | None = None  # made on the first reasoning delta
        self.record_chunks = record_chunks and self.span.is_recording()
        self.text_of = text_of

    def feed(self, item: Any) -> RepetitiveOutputError | None:
        """Judge one item, the same for sync and async streams: its text (if any) recorded and fed
        to its breaker. Returns the error on the trip (raised after the item is delivered)."""
        found = self.text_of(item)
        if found is None:
            return None
        text, kind = found
        if self.record_chunks:
            self.span.add_event(OTELGUARD_CHUNK_EVENT, {OTELGUARD_CHUNK_TEXT: text, OTELGUARD_CHUNK_KIND: kind})
        if kind == "reasoning":
            breaker = self.reasoning_breaker
            if breaker is None and self.guard is not None:
                breaker = self.reasoning_breaker = self.guard.new_reasoning_breaker()
        else:
            breaker = self.breaker if kind == "text" else None
        if breaker is None:
            return None
        trip = breaker.push(text)
        return self.tripped(trip) if trip is not None else None

    def tripped(self, trip: Trip) -> RepetitiveOutputError | None:
        """The breaker tripped: tell the engine and the agent; the error for the consumer (None in a
        paused session: the cut is recorded, not made)."""
        assert self.guard is not None  # a trip comes from a breaker, made by the guard
        verdict = self.guard.break_verdict(trip, cut=True)
        if self.processor is not None and self.processor.is_paused(self.span):
            self._reported(replace(verdict, paused=True), self._on_open_model_span())
            return None
        verdict = self._reported(verdict, self._on_open_model_span())
        return RepetitiveOutputError(
            f"model output repeated itself for {verdict.stream_chars} characters "
            f"(rule {verdict.rule}); stream cut by otelguard",
            code=verdict.error_code or "REPETITIVE_OUTPUT", rule=verdict.rule, chars=verdict.stream_chars or 0,
        )

    def finished(self) -> None:
        """The stream ran out: the breakers judge its end (`StreamBreaker.finish`).

        A trip there is flagged, not cut (every delta is already with the consumer), and shown on
        the model span being watched. It needs that span open and current: otherwise the model span
        (started but not made current by client instrumentations, and ended as the stream runs out)
        judges its own recorded output when it ends, and the verdict would have nowhere to go.
        """
        if self.breaker is None or self.processor is None or not self._on_open_model_span():
            return
        trip = self.breaker.finish()
        if trip is None and self.reasoning_breaker is not None:
            trip = self.reasoning_breaker.finish()
        if trip is not None:
            assert self.guard is not None  # a trip comes from a breaker, made by the guard
            self._reported(self.guard.break_verdict(trip, cut=False), on_model_span=True)

    def _reported(self, verdict: Verdict, on_model_span: bool) -> Verdict:
        """Hand a stream verdict to the engine and the agent. The engine shows it on the model span
        when that span ends (and does not judge it again); a verdict reached while some other span
        is current is delivered, not kept: no span end would ever take it."""
        if self.processor is not None:
            self.processor.report_stream_verdict(self.span, verdict, on_model_span=on_model_span)
        return verdict

    def _on_open_model_span(self) -> bool:
        if not self.span.is_recording():
            return False
        classification = classify(getattr(self.span, "name", ""), getattr(self.span, "attributes", None) or {})
        return classification is not None and classification.kind is SpanKind.MODEL


@overload
def watch_stream(stream: AsyncIterable[Any], *, record_chunks: bool = ..., text_of: TextOf = ...,
                 processor: GuardSpanProcessor | None = ...) -> AsyncIterator[Any]: ...
@overload
def watch_stream(stream: Iterable[Any], *, record_chunks: bool = ..., text_of: TextOf = ...,
                 processor: GuardSpanProcessor | None = ...) -> Iterator[Any]: ...


def watch_stream(stream: Any, *, record_chunks: bool = False, text_of: TextOf = default_text_of,
                 processor: GuardSpanProcessor | None = None) -> Any:
    """Pass the stream's items through unchanged; raise `RepetitiveOutputError` once it repeats itself.

    `record_chunks=True` also writes each delta as an `otelguard.chunk` event on the current span,
    so a stored trace can be replayed delta by delta by `otelguard analyze` (the deltas of its last
    `conventions.READ_LIMITS.judged_chars` characters; this watch's verdict stands for the rest).
    """
    watch = _Watch(record_chunks, text_of, processor)
    # Instrumentations wrap a client's stream in a proxy that offers both protocols (OpenInference's
    # wrapt `_Stream`), only one of which works: the stream it wraps tells which.
    if hasattr(getattr(stream, "__wrapped__", stream), "__aiter__"):
        return _watch_async(stream, watch)
    return _watch_sync(stream, watch)


def _watch_sync(stream: Iterable[Any], watch: _Watch) -> Iterator[Any]:
    for item in stream:
        error = watch.feed(item)
        yield item
        if error is not None:
            _close(stream)
            raise error
    watch.finished()


async def _watch_async(stream: AsyncIterable[Any], watch: _Watch) -> AsyncIterator[Any]:
    async for item in stream:
        error = watch.feed(item)
        yield item
        if error is not None:
            closer = getattr(stream, "aclose", None) or getattr(stream, "close", None)
            if closer is not None:
                result = closer()
                if hasattr(result, "__await__"):
                    await result
            raise error
    watch.finished()


def _close(stream: Any) -> None:
    closer = getattr(stream, "close", None)
    if callable(closer):
        closer()
