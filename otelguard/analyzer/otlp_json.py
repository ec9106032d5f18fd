"""Streaming reader of OTLP/JSON trace files.

Reads what the Collector's file exporter writes (JSON Lines, one `ExportTraceServiceRequest` per line)
and single, possibly pretty-printed documents; gzip is detected by its magic bytes. A JSON Lines file
is read line by line, never whole. Liberal in what it accepts: ids as lowercase hex (the OTLP/JSON
rule) or base64 (the plain protobuf JSON mapping), enums as integers or names, 64-bit integers as
decimal strings or numbers, lowerCamelCase or snake_case field names.

Nothing on a line is fatal: whatever is skipped comes out as a `ReadProblem`, in order, so a reader can
count it. Only an unreadable file (missing, unreadable, corrupt gzip) raises `UnreadableInput`.

`iter_lazy_spans` reads the same, but hands out `LazySpan`s: ids, name and times decoded and checked,
the `SpanView` built only when a span turns out to matter (the analyzer skips most spans).
A line in the shape exporters write is decoded by msgspec against a schema of that shape, string
and integer attribute values included (in C, faster than keeping them as JSON to decode on demand
in Python); the general reader is the reference for anything else.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Annotated, Any

import msgspec

from .. import fastjson
from ..errors import OtelGuardError
from ..otlp_logs import LogRecordFields
from ..records import SpanEvent, SpanView, Status
from .lines import (
    DEFAULT_MAX_LINE_BYTES,
    InputLimitError,
    LineReader,
    Numbered,
    ReadFailed,
    text_lines,
    too_long,
)

__all__ = ["LazySpan", "ReadProblem", "UnreadableInput", "iter_lazy_spans", "iter_spans"]

_GZIP_MAGIC = b"\x1f\x8b"
_TRACE_ID_BYTES = 16
_SPAN_ID_BYTES = 8


@dataclass(frozen=True, slots=True)
class ReadProblem:
    """Something in the input that was skipped. `reason` is one of a small fixed set, for counting;
    `detail` says more about this one."""

    file: str
    line: int
    reason: str
    detail: str = ""
    lines: int = 1  # lines it covers from `line` on: a run of blank lines, a multi-line document
    # For LOG_RECORDS: the request, decoded from JSON, for `log_records` (the line is not parsed twice).
    document: Any = field(default=None, compare=False, repr=False)


# ReadProblem.reason values
NOT_JSON = "not json"
BLANK = "blank"
NOT_A_REQUEST = "not an ExportTraceServiceRequest"
LOG_RECORDS = "log records (not read)"  # as spans: `log_records` reads them
METRICS = "metrics (not read)"
BAD_SPAN = "bad span"
DUPLICATE_KEY = "duplicate key"  # a key given twice in one object: only the last copy is read


class UnreadableInput(OtelGuardError, OSError):
    """The input itself cannot be read (missing, permission, corrupt or truncated gzip)."""

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}: cannot read input (line {line}): {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def iter_spans(source: str | os.PathLike[str] | IO[bytes] | IO[str] | LineReader, *,
               max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[SpanView | ReadProblem]:
    """Spans and skipped items of an OTLP/JSON trace file or stream, in file order.

    The file is opened now (so a missing file raises here); it is read as the iterator advances. A
    line (or multi-line document) longer than `max_line_bytes` raises `UnreadableInput`.
    """
    label = _label(source)
    lines, limit = _open_lines(source, label, max_line_bytes)
    return _read_lines(lines, label, _span, limit=limit)


def iter_lazy_spans(source: str | os.PathLike[str] | IO[bytes] | IO[str] | LineReader, *,
                    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[LazySpan | ReadProblem]:
    """As `iter_spans`, with each span's `SpanView` built only by `LazySpan.view()` (and the attribute
    list of a span not in the usual shape decoded only then).

    The same spans and the same problems, in the same order: a span is checked as fully as
    `iter_spans` checks it, only the decoding of what cannot fail is put off.
    """
    label = _label(source)
    lines, limit = _open_lines(source, label, max_line_bytes)
    return _read_lines(lines, label, _lazy_span, _read_usual_request, limit=limit)


# --- input ---------------------------------------------------------------------------------------


def _label(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", "<stream>"))


def _open_lines(source: Any, label: str, max_line_bytes: int) -> tuple[Iterator[Numbered], int]:
    """Numbered lines of the source (see `lines`), and the line bound they keep. Streams the caller
    passed in are read, never closed; a `LineReader` brings its own bounds."""
    if isinstance(source, LineReader):
        return _checked(iter(source), label), source.max_line_bytes
    if isinstance(source, io.TextIOBase):
        return _checked(text_lines(source, max_line_bytes), label), max_line_bytes
    owned = isinstance(source, (str, os.PathLike))
    try:
        binary = open(source, "rb") if owned else source  # noqa: SIM115 - released by _released
    except OSError as error:
        raise UnreadableInput(label, 0, error.strerror or str(error)) from error
    try:
        stream, layers = _decode(binary)
    except OSError as error:
        if owned:
            binary.close()
        raise UnreadableInput(label, 0, str(error)) from error

    def release() -> None:
        if owned:
            stream.close()
            binary.close()  # a GzipFile over a file object leaves that file open
            return
        # Unwrap without closing the caller's stream (closing a wrapper closes what it wraps).
        for layer in reversed(layers):
            if isinstance(layer, gzip.GzipFile):
                layer.close()  # closes only the decompressor, not the stream under it
            else:
                layer.detach()

    reader = LineReader(stream, name=label, max_line_bytes=max_line_bytes)
    return _released(_checked(iter(reader), label), release), max_line_bytes


def _decode(binary: IO[bytes]) -> tuple[IO[bytes], list[Any]]:
    """The bytes, un-gzipped when they start with the gzip magic; and the layers added over them."""
    buffered: Any = binary if hasattr(binary, "peek") else io.BufferedReader(binary)  # type: ignore[arg-type]
    layers: list[Any] = [buffered] if buffered is not binary else []
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        buffered = gzip.GzipFile(fileobj=buffered)
        layers.append(buffered)
    return buffered, layers


def _checked(lines: Iterator[Numbered], label: str) -> Iterator[Numbered]:
    """The lines, with a failing stream or a passed bound raised as `UnreadableInput`."""
    try:
        yield from lines
    except (ReadFailed, InputLimitError) as error:
        raise UnreadableInput(label, error.line, error.reason) from None


def _released(lines: Iterator[Numbered], release: Callable[[], None]) -> Iterator[Numbered]:
    try:
        yield from lines
    finally:
        release()


# --- documents -----------------------------------------------------------------------------------


# Builds one span from its JSON object; raises (see `_built`) when it cannot be read.
_SpanBuilder = Callable[[Any, "str | None"], Any]
# Reads a line in the usual shape to its items; None when the line is not in that shape.
_UsualReader = Callable[[str, str, int], "list[Any] | None"]


def _read_lines(lines: Iterable[Numbered], label: str, build: _SpanBuilder, read_usual: _UsualReader | None = None,
                *, limit: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Any]:
    """The items of numbered lines. JSON Lines are read line by line. A line that opens an object it
    does not close starts a multi-line (pretty-printed) document, held (up to `limit`) until it
    parses; a line at column 0 that is an object on its own ends it early, as cut off: its lines
    are reported, and every line after it is read as usual, with its own number."""
    json_lines = False  # once a line parsed on its own, the file is JSON Lines: no documents over lines
    document: _Document | None = None
    for number, line in lines:
        if type(line) is int:
            yield ReadProblem(label, number, BLANK, lines=line)
            continue
        if document is not None:
            if line[0] != "{" or not _is_object(line):
                if document.add(number, line):  # (a line that may close it)
                    yield from document.parse(final=False)
                    if document.done:
                        document = None
                continue
            yield document.cut_off(number)  # a record on its own: the document before it ended early
            document = None
        if read_usual is not None:
            items = read_usual(line, label, number)
            if items is not None:
                json_lines = True
                yield from items
                continue
        try:
            parsed = fastjson.loads(line)
        except (ValueError, RecursionError):
            if not json_lines and _opens_multiline_document(line):
                document = _Document(label, number, line, build, limit)
                continue
            yield ReadProblem(label, number, NOT_JSON, _excerpt(line))
            continue
        json_lines = True
        yield from _duplicate_key_problems(line, _containers(parsed), label, number)
        yield from _read_document(parsed, label, number, build)
    if document is not None:
        yield from document.parse(final=True)


def _is_object(line: str) -> bool:
    try:
        return isinstance(fastjson.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _opens_multiline_document(line: str) -> bool:
    """A pretty-printed document starts with an object that does not close on its first line."""
    stripped = line.strip()
    return stripped.startswith("{") and not stripped.endswith("}")


class _Document:
    """A multi-line document being read: its text so far (at most `limit` characters), parsed when a
    line starts with `}` (where a pretty-printed document closes) and at the end of the input."""

    _JOIN_LINES = 1024  # lines joined into one string: no per-line object overhead for short lines

    def __init__(self, label: str, first: int, line: str, build: _SpanBuilder, limit: int):
        self.label = label
        self.first = first
        self.last = first
        self.build = build
        self.limit = limit
        self.parts: list[str] = []
        self.recent: list[str] = []
        self.size = 0
        self.done = False
        self._hold(line)

    def _hold(self, line: str) -> None:
        self.size += len(line)
        if self.size > self.limit:
            raise UnreadableInput(self.label, self.first, too_long("the multi-line JSON document starting here is",
                                                                   self.size, self.limit))
        self.recent.append(line)
        if len(self.recent) >= self._JOIN_LINES:
            self.parts.append("".join(self.recent))
            self.recent.clear()

    def add(self, number: int, line: str) -> bool:
        """Hold one more line; whether it may close the document (worth a `parse`)."""
        self.last = number
        self._hold(line)
        return line[0] == "}"

    def cut_off(self, before: int) -> ReadProblem:
        self.done = True
        return self._unreadable(f"a multi-line document cut off before line {before}")

    def parse(self, final: bool) -> Iterator[Any]:
        """The document's items if it parses; if it cannot (at the end of the input, or broken
        before its end), the problem that its lines are not JSON."""
        text = "".join((*self.parts, *self.recent))
        try:
            document = fastjson.loads(text)
        except (ValueError, RecursionError) as error:
            position = getattr(error, "pos", None)
            broken = isinstance(position, int) and not text[position:].isspace() and position < len(text)
            if final or broken:
                self.done = True
                yield self._unreadable(f"a multi-line document from line {self.first} to {self.last} that is not "
                                       f"JSON: {_excerpt(text[:200])}")
            return
        self.done = True
        yield from _duplicate_key_problems(text, _containers(document), self.label, self.first)
        yield from _read_document(document, self.label, self.first, self.build)

    def _unreadable(self, detail: str) -> ReadProblem:
        self.parts.clear()
        self.recent.clear()
        return ReadProblem(self.label, self.first, NOT_JSON, detail, lines=self.last - self.first + 1)


def _read_document(document: Any, label: str, line: int, build: _SpanBuilder) -> Iterator[Any]:
    if not isinstance(document, Mapping):
        yield ReadProblem(label, line, NOT_A_REQUEST, f"a JSON {type(document).__name__}")
        return
    resource_spans = _field(document, "resourceSpans", "resource_spans")
    if resource_spans is not None:
        yield from _read_resource_spans(resource_spans, label, line, build)
        return
    if _field(document, "resourceLogs", "resource_logs") is not None:
        yield ReadProblem(label, line, LOG_RECORDS, document=document)
    elif _field(document, "resourceMetrics", "resource_metrics") is not None:
        yield ReadProblem(label, line, METRICS)
    elif document:  # `{}` is an empty request, which holds nothing
        yield ReadProblem(label, line, NOT_A_REQUEST, "keys: " + ", ".join(_excerpt(key, 40)
                                                                           for key in sorted(map(str, document))[:5]))


# Every container key (resourceSpans, scopeSpans, spans, and their snake_case forms) ends so: a line
# holding more of them than its parsed form has containers may hold a key twice (or only a value
# that ends so), and is checked key by key.
_CONTAINER_KEY_END = 'pans"'
_MAX_DUPLICATES_NAMED = 3


def _duplicate_key_problems(text: str, containers: int, label: str, line: int) -> Iterator[ReadProblem]:
    """A problem when a key is given twice in one object of `text` (JSON parsers keep the last
    copy: the first would be dropped unseen). `containers`: the container keys its parsed form holds."""
    if text.count(_CONTAINER_KEY_END) <= containers:
        return
    duplicated = _duplicated_keys(text)
    if duplicated:
        names = ", ".join(repr(name[:40]) for name in duplicated[:_MAX_DUPLICATES_NAMED])
        yield ReadProblem(label, line, DUPLICATE_KEY, f"{names} given more than once in an object: the earlier "
                                                      "copies were not read")


def _duplicated_keys(text: str) -> list[str]:
    duplicated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        mapping = dict(items)
        if len(mapping) != len(items):
            seen: set[str] = set()
            duplicated.extend(key for key, _ in items if key in seen or seen.add(key))  # type: ignore[func-returns-value]
        return mapping

    try:
        json.loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return []
    return duplicated


def _containers(document: Any) -> int:
    """The container keys of a parsed request (see `_CONTAINER_KEY_END`)."""
    if not isinstance(document, Mapping):
        return 0
    count = 0
    for resources in (document.get("resourceSpans"), document.get("resource_spans")):
        if resources is None:
            continue
        count += 1
        for resource in resources if isinstance(resources, list) else ():
            if not isinstance(resource, Mapping):
                continue
            for scopes in (resource.get("scopeSpans"), resource.get("scope_spans")):
                if scopes is None:
                    continue
                count += 1
                count += sum(1 for scope in scopes if isinstance(scope, Mapping) and scope.get("spans") is not None) \
                    if isinstance(scopes, list) else 0
    return count


def _read_resource_spans(resource_spans: Any, label: str, line: int, build: _SpanBuilder) -> Iterator[Any]:
    malformed: list[str] = []
    for resource in _objects(resource_spans, "resourceSpans", malformed):
        for scope_spans in _objects(_field(resource, "scopeSpans", "scope_spans"), "scopeSpans", malformed):
            scope_name = _field(_field(scope_spans, "scope", "scope"), "name", "name")
            scope = scope_name if isinstance(scope_name, str) else None
            for raw in _entries(_field(scope_spans, "spans", "spans"), "spans", malformed):
                yield _built(build, raw, scope, label, line)
    for what in malformed:
        yield ReadProblem(label, line, NOT_A_REQUEST, f"malformed {what}")


def _built(build: _SpanBuilder, raw: Any, scope: str | None, label: str, line: int) -> Any:
    """The span `build` makes of its JSON object, or the problem that it cannot be read."""
    try:
        return build(raw, scope)
    except (_BadSpan, ValueError, TypeError, AttributeError, OverflowError, RecursionError) as error:
        return ReadProblem(label, line, BAD_SPAN, _excerpt(str(error), 200) or type(error).__name__)


def _entries(value: Any, what: str, malformed: list[str]) -> list[Any]:
    """The items of a list field; anything else but absence is noted as malformed."""
    if isinstance(value, list):
        return value
    if value is not None:
        malformed.append(what)
    return []


def _objects(value: Any, what: str, malformed: list[str]) -> Iterator[Mapping[str, Any]]:
    for item in _entries(value, what, malformed):
        if isinstance(item, Mapping):
            yield item
        else:
            malformed.append(what)


# --- spans ---------------------------------------------------------------------------------------


class _BadSpan(ValueError):
    pass


class LazySpan:
    """A span whose ids, name, times, status, counts and events are decoded, and whose attributes are
    decoded (those of a span in the usual shape already are) and made a `SpanView` on the first
    `view()`. Reading it checked everything that can be wrong with it, so `view()` cannot fail: it only
    puts off work that a span none of the guard's business never needs."""

    __slots__ = ("_attributes", "_dropped_attributes", "_dropped_events", "_events", "_scope", "_status",
                 "_status_message", "_view", "end_ns", "name", "parent", "parent_span_id", "span_id", "start_ns",
                 "trace_id")

    def __init__(self, name: str, trace_id: int, span_id: int, parent_span_id: int | None, start_ns: int,
                 end_ns: int | None, scope: str | None, attributes: list[Any] | dict[str, Any] | None,
                 status: Status = Status.UNSET, status_message: str | None = None, dropped_attributes: int = 0,
                 events: tuple[SpanEvent, ...] = (), dropped_events: int = 0, view: SpanView | None = None):
        self.name = name
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_span_id = parent_span_id
        self.start_ns = start_ns
        self.end_ns = end_ns
        self._scope = scope
        # The attributes: decoded already (the usual shape), or until `view()` the list of JSON objects.
        self._attributes = attributes
        self._status = status
        self._status_message = status_message
        self._dropped_attributes = dropped_attributes
        self._events = events
        self._dropped_events = dropped_events
        self._view = view
        self.parent: LazySpan | None = None  # its parent span, once the replay has its trace together

    @classmethod
    def decoded(cls, view: SpanView) -> LazySpan:
        return cls(view.name, view.trace_id, view.span_id, view.parent_span_id, view.start_ns, view.end_ns,
                   view.scope, None, view=view)

    def view(self) -> SpanView:
        view = self._view
        if view is None:
            source = self._attributes
            attributes, unreadable = (source, 0) if type(source) is dict else _attributes(source)
            # Positional (a third of the time keywords take), in SpanView's field order.
            view = self._view = SpanView(
                self.name, self.trace_id, self.span_id, self.parent_span_id, attributes, self._events, self._status,
                self._status_message, self._scope, self.start_ns, self.end_ns, self._dropped_events,
                self._dropped_attributes + unreadable,  # unreadable values count as dropped
            )
            self._attributes = None
        return view

    # --- a SpanSource (the engine's protocol) ---
    @property
    def attributes(self) -> Mapping[str, Any]:
        source = self._attributes
        return source if type(source) is dict else self.view().attributes

    @property
    def has_events(self) -> bool:
        return bool(self._events)

    def parent_view(self) -> SpanView | None:
        return self.parent.view() if self.parent is not None else None


def _lazy_span(raw: Any, scope: str | None) -> LazySpan:
    """A span read as `_span` reads it, its attributes left for `LazySpan.view()`. The usual shape
    (hex ids, counts that are numbers) is checked here; anything else, and anything wrong, is read
    by `_span` itself, so the checks and the first error found are the same."""
    if type(raw) is dict:
        try:
            span = _usual_span(raw, scope)
        except (ValueError, TypeError, OverflowError):
            span = None
        if span is not None:
            return span
    return LazySpan.decoded(_span(raw, scope))


def _usual_span(raw: dict[str, Any], scope: str | None) -> LazySpan | None:
    """`raw` read lazily when it has the usual shape (see `_lazy_span`); None when not."""
    attributes = raw.get("attributes")
    events = _field(raw, "events", "events")
    if (attributes is not None and type(attributes) is not list) or (events is not None and type(events) is not list):
        return None
    status = raw.get("status")
    status_code, status_message = _status(status) if status else (Status.UNSET, None)
    return _usual_fields(
        raw.get("name"), _field(raw, "traceId", "trace_id"), _field(raw, "spanId", "span_id"),
        _field(raw, "parentSpanId", "parent_span_id"), _field(raw, "startTimeUnixNano", "start_time_unix_nano"),
        _field(raw, "endTimeUnixNano", "end_time_unix_nano"), status_code, status_message,
        _field(raw, "droppedAttributesCount", "dropped_attributes_count"),
        _field(raw, "droppedEventsCount", "dropped_events_count"), scope, attributes,
        tuple(_events(events)) if events else (),
    )


def _usual_fields(name: Any, trace_hex: Any, span_hex: Any, parent_hex: Any, start: Any, end: Any,
                  status: Status, status_message: str | None, dropped_attributes: Any, dropped_events: Any,
                  scope: str | None, attributes: list[Any] | dict[str, Any] | None,
                  events: tuple[SpanEvent, ...]) -> LazySpan | None:
    """A LazySpan of a span's fields when they have the usual shape (hex ids, times as decimal strings
    or numbers, counts as numbers); None when not, or an error: either way the caller reads the span
    with `_span`, the reference."""
    if type(name) is not str or type(trace_hex) is not str or type(span_hex) is not str \
            or len(trace_hex) != 2 * _TRACE_ID_BYTES or len(span_hex) != 2 * _SPAN_ID_BYTES:
        return None
    trace_id = int(trace_hex, 16)
    span_id = int(span_hex, 16)
    if not trace_id or not span_id:
        return None
    if (dropped_attributes is not None and (type(dropped_attributes) is not int or dropped_attributes < 0)) \
            or (dropped_events is not None and (type(dropped_events) is not int or dropped_events < 0)):
        return None
    if parent_hex is None or parent_hex == "":
        parent_span_id = None
    elif type(parent_hex) is str and len(parent_hex) == 2 * _SPAN_ID_BYTES:
        parent_span_id = int(parent_hex, 16) or None
    else:
        return None
    start_ns = int(start) if type(start) is str else _uint(start) or 0
    end_ns = int(end) if type(end) is str else _uint(end)
    if start_ns < 0 or (end_ns is not None and end_ns < 0):
        return None
    return LazySpan(name, trace_id, span_id, parent_span_id, start_ns, end_ns, scope, attributes, status,
                    status_message, dropped_attributes or 0, events, dropped_events or 0)


# --- the usual shape, decoded by msgspec ---------------------------------------------------------
# What OTLP exporters write: camelCase names, every field of its OTLP type. A line that fails this
# schema in any way (a field unknown or of another type, snake_case names, NaN, ...) is read by the
# general reader above, which is the reference: reading a line either way gives the same items.

_NO_JSON = msgspec.Raw()
_UNSET = msgspec.UNSET
# A JSON integer the schema takes: an int64, which `fastjson` (orjson) reads exactly too. Any other
# sends the line to the general reader (orjson reads one beyond 64 bits as a float), so both agree.
_Int = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class _AnyValue(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True, gc=False):
    """An attribute's AnyValue. A string (most values) or an int64 is decoded by the schema; the rarer
    kinds stay JSON and are read as `_readable_value` reads them."""

    string_value: str | msgspec.UnsetType = _UNSET
    int_value: str | _Int | msgspec.UnsetType = _UNSET
    double_value: msgspec.Raw = _NO_JSON
    bool_value: msgspec.Raw = _NO_JSON
    array_value: msgspec.Raw = _NO_JSON
    kvlist_value: msgspec.Raw = _NO_JSON
    bytes_value: msgspec.Raw = _NO_JSON


_NO_VALUE = _AnyValue()  # an entry without a value: unreadable, as the reference finds it


class _KeyValue(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    key: str
    value: _AnyValue = _NO_VALUE


class _SpanStatus(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    code: _Int | str | None = None
    message: str | None = None


class _Span(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    trace_id: str
    span_id: str
    name: str
    parent_span_id: str | None = None
    start_time_unix_nano: str | _Int | None = None
    end_time_unix_nano: str | _Int | None = None
    attributes: list[_KeyValue] | None = None
    dropped_attributes_count: _Int | None = None
    events: list[msgspec.Raw] | None = None
    dropped_events_count: _Int | None = None
    status: _SpanStatus | None = None
    # Fields the guard does not read.
    trace_state: msgspec.Raw = _NO_JSON
    kind: msgspec.Raw = _NO_JSON
    flags: msgspec.Raw = _NO_JSON
    links: msgspec.Raw = _NO_JSON
    dropped_links_count: msgspec.Raw = _NO_JSON


class _Scope(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    name: str | None = None
    version: msgspec.Raw = _NO_JSON
    attributes: msgspec.Raw = _NO_JSON
    dropped_attributes_count: msgspec.Raw = _NO_JSON


class _ScopeSpans(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    scope: _Scope | None = None
    spans: list[_Span] | None = None
    schema_url: msgspec.Raw = _NO_JSON


class _ResourceSpans(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    resource: msgspec.Raw = _NO_JSON
    scope_spans: list[_ScopeSpans] | None = None
    schema_url: msgspec.Raw = _NO_JSON


class _Request(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    resource_spans: list[_ResourceSpans]


_USUAL_REQUEST = msgspec.json.Decoder(_Request)


def _read_usual_request(line: str, label: str, line_number: int) -> list[Any] | None:
    """The items of a line in the usual shape, as `_read_document` would read them; None when the
    line is not in that shape. A span the schema admits but `_usual_fields` does not (a key given
    twice, odd ids, counts or events) is read from the line's JSON by the general reader.

    One difference, on purpose: a value of the rarer kinds is parsed on its own, so a number orjson
    refuses (out of float range) no longer sends the whole line to the standard library's parser,
    which would read an integer beyond 64 bits inside an array or kvlist value on that line exactly
    instead of as orjson reads it (a float). (Such an integer anywhere else fails the schema, and
    the line is read by the general reader.)"""
    try:
        request = _USUAL_REQUEST.decode(line)
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):  # (a str with lone surrogates)
        return None  # a ValidationError is a DecodeError
    items: list[Any] = list(_duplicate_key_problems(line, _usual_containers(request), label, line_number))
    document = None
    for r, resource in enumerate(request.resource_spans):
        for s, scope_spans in enumerate(resource.scope_spans or ()):
            scope = scope_spans.scope.name if scope_spans.scope is not None else None
            for i, span in enumerate(scope_spans.spans or ()):
                item = _usual_schema_span(span, scope)
                if item is None:
                    if document is None:
                        document = fastjson.loads(line)
                    item = _built(_lazy_span, document["resourceSpans"][r]["scopeSpans"][s]["spans"][i], scope,
                                  label, line_number)
                items.append(item)
    return items


def _usual_containers(request: _Request) -> int:
    count = 1
    for resource in request.resource_spans:
        if resource.scope_spans is not None:
            count += 1 + sum(1 for scope in resource.scope_spans if scope.spans is not None)
    return count


def _usual_schema_span(span: _Span, scope: str | None) -> LazySpan | None:
    entries = span.attributes
    status = span.status
    unreadable: list[str] = []
    try:
        if entries:
            # Strings, most values, come decoded by the schema: a span's attributes are read here,
            # once, by one comprehension.
            values = {entry.key: text if (text := entry.value.string_value) is not _UNSET
                      else _other_value(entry, unreadable) for entry in entries}
            if len(values) != len(entries):
                return None  # a key given twice: which value stands depends on which are readable
            for key in unreadable:
                del values[key]
        else:
            values = {}
        status_code, status_message = _status_of(status.code, status.message) if status else (Status.UNSET, None)
        # Events are read with the span, as `_span` reads them (each from its own JSON).
        events = tuple(_events([fastjson.loads(bytes(event)) for event in span.events])) if span.events else ()
        dropped_attributes = span.dropped_attributes_count
        if unreadable and (dropped_attributes is None or dropped_attributes >= 0):  # (negative: not the usual shape)
            dropped_attributes = (dropped_attributes or 0) + len(unreadable)  # unreadable values count as dropped
        return _usual_fields(span.name, span.trace_id, span.span_id, span.parent_span_id,
                             span.start_time_unix_nano, span.end_time_unix_nano, status_code, status_message,
                             dropped_attributes, span.dropped_events_count, scope, values, events)
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None


def _other_value(entry: _KeyValue, unreadable: list[str]) -> Any:
    """A value that is not a string, decoded as `_readable_value` decodes it; an unreadable one has
    its key noted in `unreadable` (and gives None)."""
    value = entry.value
    number = value.int_value
    if number is not _UNSET:  # a decimal string (OTLP/JSON) or a JSON integer, as `_decode_int` reads them
        try:
            return int(number)
        except ValueError:
            unreadable.append(entry.key)
            return None
    # The kinds the schema keeps as JSON (all but string and int), as the reference reads them.
    raw = {camel: fastjson.loads(bytes(field)) for camel, snake, _ in _ANY_VALUE_FIELDS[2:]
           if (field := getattr(value, snake))}
    decoded = _readable_value(raw)
    if decoded is None:
        unreadable.append(entry.key)
    return decoded


def _span(raw: Any, scope: str | None) -> SpanView:
    if not isinstance(raw, Mapping):
        raise _BadSpan("span is not an object")
    name = _field(raw, "name", "name")
    if not isinstance(name, str):
        raise _BadSpan("span has no name")
    trace_id = _id(_field(raw, "traceId", "trace_id"), _TRACE_ID_BYTES)
    span_id = _id(_field(raw, "spanId", "span_id"), _SPAN_ID_BYTES)
    if not trace_id or not span_id:
        raise _BadSpan("span has no valid traceId/spanId")
    status_code, status_message = _status(_field(raw, "status", "status"))
    attributes, unreadable = _attributes(_field(raw, "attributes", "attributes"))
    dropped_attributes = _uint(_field(raw, "droppedAttributesCount", "dropped_attributes_count")) or 0
    return SpanView(
        name=name,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=_id(_field(raw, "parentSpanId", "parent_span_id"), _SPAN_ID_BYTES) or None,
        attributes=attributes,
        events=tuple(_events(_field(raw, "events", "events"))),
        status=status_code,
        status_message=status_message,
        scope=scope,
        start_ns=_uint(_field(raw, "startTimeUnixNano", "start_time_unix_nano")) or 0,
        end_ns=_uint(_field(raw, "endTimeUnixNano", "end_time_unix_nano")),
        dropped_events=_uint(_field(raw, "droppedEventsCount", "dropped_events_count")) or 0,
        dropped_attributes=dropped_attributes + unreadable,  # unreadable values count as dropped
    )


def _id(value: Any, size: int) -> int | None:
    """An id as hex (OTLP/JSON) or base64 (protobuf JSON); None when absent, empty or all zero."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise _BadSpan(f"id is a {type(value).__name__}")
    if len(value) == 2 * size:
        try:
            return int(value, 16) or None
        except ValueError:
            pass
    try:
        raw = base64.b64decode(value.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise _BadSpan(f"id {value[:40]!r} is neither hex nor base64") from None
    if len(raw) != size:
        raise _BadSpan(f"id {value[:40]!r} is not {size} bytes")
    return int.from_bytes(raw, "big") or None


_STATUS_CODES = {
    0: Status.UNSET,
    1: Status.OK,
    2: Status.ERROR,
    "STATUS_CODE_UNSET": Status.UNSET,
    "STATUS_CODE_OK": Status.OK,
    "STATUS_CODE_ERROR": Status.ERROR,
    "UNSET": Status.UNSET,
    "OK": Status.OK,
    "ERROR": Status.ERROR,
}


def _status(raw: Any) -> tuple[Status, str | None]:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return Status.UNSET, None
    return _status_of(raw.get("code"), raw.get("message"))


def _status_of(code: Any, message: Any) -> tuple[Status, str | None]:
    if isinstance(code, str):
        code = int(code) if code.strip().isdigit() else code.strip().upper()
    status = _STATUS_CODES.get(code, Status.UNSET) if isinstance(code, (int, str)) else Status.UNSET
    return status, message if isinstance(message, str) and message else None


def _events(raw: Any) -> Iterator[SpanEvent]:
    for event in _list(raw):
        if not isinstance(event, Mapping):
            raise _BadSpan("event is not an object")
        name = _field(event, "name", "name")
        yield SpanEvent(
            name=name if isinstance(name, str) else "",
            attributes=_attributes(_field(event, "attributes", "attributes"))[0],
            time_ns=_uint(_field(event, "timeUnixNano", "time_unix_nano")) or 0,
        )


def _attributes(raw: Any) -> tuple[dict[str, Any], int]:
    """(attributes, how many entries were unreadable and dropped)."""
    attributes: dict[str, Any] = {}
    dropped = 0
    for entry in _list(raw):
        key = entry.get("key") if type(entry) is dict or isinstance(entry, Mapping) else None
        value = _readable_value(entry.get("value")) if type(key) is str or isinstance(key, str) else None
        if value is None:
            dropped += 1
        else:
            attributes[key] = value
    return attributes, dropped


def _readable_value(raw: Any) -> Any:
    """An AnyValue decoded; None when it is unreadable."""
    # Fast path: most values are plain strings in plain dicts (json.loads never makes other Mappings).
    if type(raw) is dict:
        text = raw.get("stringValue")
        if type(text) is str:
            return text
        number = raw.get("intValue")
        if type(number) is str and len(raw) == 1:  # the usual int64: a decimal string
            try:
                return int(number)
            except ValueError:
                return None  # unreadable (`_any_value` would try the same int() again)
    try:
        return _any_value(raw)
    except (_BadSpan, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _any_value(raw: Any) -> Any:
    """Decode an OTLP AnyValue: arrays become tuples (as the SDK stores them), kvlists dicts."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        return None
    for camel, snake, decode in _ANY_VALUE_FIELDS:
        if camel in raw:
            return decode(raw[camel])
        if snake in raw:
            return decode(raw[snake])
    return None


def _decode_int(value: Any) -> int:
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise _BadSpan(f"intValue {value!r}")
    return int(value)


def _decode_double(value: Any) -> float:
    if isinstance(value, bool):
        raise _BadSpan("doubleValue is a boolean")
    return float(value)  # also "NaN", "Infinity", "-Infinity", as protobuf JSON writes them


def _decode_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    raise _BadSpan(f"boolValue {value!r}")


def _decode_bytes(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _BadSpan("bytesValue is not a string")
    try:
        return base64.b64decode(value.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        raise _BadSpan("bytesValue is not base64") from None


def _decode_array(value: Any) -> tuple[Any, ...]:
    values = _field(value, "values", "values") if isinstance(value, Mapping) else None
    return tuple(_any_value(item) for item in _list(values))


def _decode_kvlist(value: Any) -> dict[str, Any]:
    values = _field(value, "values", "values") if isinstance(value, Mapping) else None
    return _attributes(values)[0]


def _decode_string(value: Any) -> str:
    if not isinstance(value, str):
        raise _BadSpan("stringValue is not a string")
    return value


_ANY_VALUE_FIELDS = (
    ("stringValue", "string_value", _decode_string),
    ("intValue", "int_value", _decode_int),
    ("doubleValue", "double_value", _decode_double),
    ("boolValue", "bool_value", _decode_bool),
    ("arrayValue", "array_value", _decode_array),
    ("kvlistValue", "kvlist_value", _decode_kvlist),
    ("bytesValue", "bytes_value", _decode_bytes),
)


def _uint(value: Any) -> int | None:
    """A 64-bit unsigned integer: a decimal string (OTLP/JSON) or a JSON number."""
    if value is None or isinstance(value, bool):
        return None
    number = int(value)
    if number < 0:
        raise _BadSpan(f"negative count {number}")
    return number


def _field(obj: Any, camel: str, snake: str) -> Any:
    if type(obj) is not dict and not isinstance(obj, Mapping):
        return None
    value = obj.get(camel)
    return value if value is not None else obj.get(snake)


def _list(value: Any) -> Iterable[Any]:
    if value is None:
        return ()
    if isinstance(value, list):
        return value
    raise _BadSpan(f"expected a list, got a {type(value).__name__}")


# --- log records ---------------------------------------------------------------------------------


def log_records(document: Mapping[str, Any]) -> Iterator[LogRecordFields | None]:
    """The log records of an OTLP/JSON logs request (a LOG_RECORDS problem's `document`), decoded
    for `otlp_logs.read_records`; None for a record that cannot be read (not an object, a bad id)."""
    for resource in _items_if_list(_field(document, "resourceLogs", "resource_logs")):
        for scope in _items_if_list(_field(resource, "scopeLogs", "scope_logs")):
            for record in _items_if_list(_field(scope, "logRecords", "log_records")):
                yield _log_record(record)


def _items_if_list(value: Any) -> Iterator[Any]:
    """The items of a list, tolerating a list that is not one (nothing in it is read)."""
    if isinstance(value, list):
        yield from value


def _log_record(raw: Any) -> LogRecordFields | None:
    if not isinstance(raw, Mapping):
        return None
    try:
        name = _field(raw, "eventName", "event_name")
        return LogRecordFields(
            None, _id(_field(raw, "traceId", "trace_id"), _TRACE_ID_BYTES) or 0,
            _id(_field(raw, "spanId", "span_id"), _SPAN_ID_BYTES) or 0, name if isinstance(name, str) else "",
            _attributes(_field(raw, "attributes", "attributes"))[0], _any_value(_field(raw, "body", "body")),
            _uint(_field(raw, "timeUnixNano", "time_unix_nano")) or 0,
            _uint(_field(raw, "observedTimeUnixNano", "observed_time_unix_nano")) or 0)
    except (_BadSpan, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _excerpt(line: str, limit: int = 80) -> str:
    text = line.strip()
    return text if len(text) <= limit else text[:limit] + "…"
