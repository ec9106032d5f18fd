"""Streaming reader of OTLP/JSON trace files.

Reads what the Collector's file exporter writes (JSON Lines, one `ExportTraceServiceRequest` per line)
and single, possibly pretty-printed documents; gzip is detected by its magic bytes. A JSON Lines file
is read line by line, never whole. Values are read as OTLP/JSON writes them (`otlp_json_values`,
which the service's request decoder uses too): ids in hex, enums as integers, 64-bit integers as
decimal strings or numbers; lowerCamelCase or snake_case field names.

Nothing on a line is fatal: whatever is skipped comes out as a `ReadProblem`, in order, so a reader can
count it. A span that is not OTLP/JSON (a base64 id, an enum name, a time that is no integer) is a
`BAD_SPAN` problem; an attribute value that is not is dropped and counted in the span's
`dropped_attributes`. Only an unreadable file (missing, unreadable, corrupt gzip) raises `UnreadableInput`.

`iter_lazy_spans` reads the same, but hands out `LazySpan`s: ids, name and times decoded and checked,
the `SpanView` built only when a span turns out to matter (the analyzer skips most spans).
A line in the shape exporters write is decoded by msgspec against a schema of that shape, string
and integer attribute values included (in C, faster than keeping them as JSON to decode on demand
in Python); the general reader is the reference for anything else.
"""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
import dataclasses
from dataclasses import dataclass
from typing import IO, Annotated, Any

import msgspec

from .. import fastjson
from ..errors import OtelGuardError
from ..otlp_json_values import (
    INT32,
    INT64,
    SPAN_ID_BYTES,
    STATUS_CODES,
    TRACE_ID_BYTES,
    UINT32,
    UINT64,
    NotOtlpJson,
    any_value,
    enum,
    field,
    hex_id,
    integer,
    items,
    link,
    status,
    text,
)
from ..otlp_json_values import attributes as read_attributes
from ..otlp_logs import LogRecordFields
from ..records import SpanEvent, SpanView, Status
from .inputs import ungzipped
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
    document: Any = dataclasses.field(default=None, compare=False, repr=False)


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
    buffered, stream = ungzipped(binary)
    layers: list[Any] = [buffered] if buffered is not binary else []
    if stream is not buffered:
        layers.append(stream)
    return stream, layers


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
        if isinstance(line, int):
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
    resource_spans = field(document, "resourceSpans", "resource_spans")
    if resource_spans is not None:
        yield from _read_resource_spans(resource_spans, label, line, build)
        return
    if field(document, "resourceLogs", "resource_logs") is not None:
        yield ReadProblem(label, line, LOG_RECORDS, document=document)
    elif field(document, "resourceMetrics", "resource_metrics") is not None:
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
            for key, _ in items:
                if key in seen:
                    duplicated.append(key)
                seen.add(key)
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
        for scope_spans in _objects(field(resource, "scopeSpans", "scope_spans"), "scopeSpans", malformed):
            scope_object = field(scope_spans, "scope", "scope")
            scope_name = field(scope_object, "name", "name")
            if (scope_object is not None and not isinstance(scope_object, Mapping)) \
                    or (scope_name is not None and not isinstance(scope_name, str)):
                malformed.append("scope")  # (the service cannot forward it either)
                continue
            scope = scope_name or None  # (an empty name is no name, as the service reads it)
            for raw in _entries(field(scope_spans, "spans", "spans"), "spans", malformed):
                yield _built(build, raw, scope, label, line)
    for what in malformed:
        yield ReadProblem(label, line, NOT_A_REQUEST, f"malformed {what}")


def _built(build: _SpanBuilder, raw: Any, scope: str | None, label: str, line: int) -> Any:
    """The span `build` makes of its JSON object, or the problem that it cannot be read."""
    try:
        return build(raw, scope)
    except (ValueError, TypeError, AttributeError, OverflowError, RecursionError) as error:
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
            attributes, unreadable = (source, 0) if type(source) is dict else read_attributes(source)
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
        except (ValueError, TypeError, OverflowError, RecursionError):
            span = None
        if span is not None:
            return span
    return LazySpan.decoded(_span(raw, scope))


def _usual_span(raw: dict[str, Any], scope: str | None) -> LazySpan | None:
    """`raw` read lazily when it has the usual shape (see `_lazy_span`); None when not."""
    attributes = raw.get("attributes")
    events = field(raw, "events", "events")
    if (attributes is not None and type(attributes) is not list) or (events is not None and type(events) is not list):
        return None
    _check_unread_fields(raw)
    status = raw.get("status")
    status_code, status_message = _status(status) if status else (Status.UNSET, None)
    read_events, unreadable = _events(events) if events else ((), 0)
    return _usual_fields(
        raw.get("name"), field(raw, "traceId", "trace_id"), field(raw, "spanId", "span_id"),
        field(raw, "parentSpanId", "parent_span_id"), field(raw, "startTimeUnixNano", "start_time_unix_nano"),
        field(raw, "endTimeUnixNano", "end_time_unix_nano"), status_code, status_message,
        field(raw, "droppedAttributesCount", "dropped_attributes_count"),
        field(raw, "droppedEventsCount", "dropped_events_count"), scope, attributes, read_events, unreadable,
    )


def _usual_fields(name: Any, trace_hex: Any, span_hex: Any, parent_hex: Any, start: Any, end: Any,
                  status: Status, status_message: str | None, dropped_attributes: Any, dropped_events: Any,
                  scope: str | None, attributes: list[Any] | dict[str, Any] | None,
                  events: tuple[SpanEvent, ...], unreadable: int) -> LazySpan | None:
    """A LazySpan of a span's fields when they have the usual shape (a name, hex ids, times and counts
    as OTLP/JSON writes them); None when not, or an error: either way the caller reads the span with
    `_span`, the reference. `unreadable`: attribute values already found unreadable (dropped)."""
    if type(name) is not str:
        if name is not None:
            return None
        name = ""
    trace_id = hex_id(trace_hex, TRACE_ID_BYTES, "traceId")
    span_id = hex_id(span_hex, SPAN_ID_BYTES, "spanId")
    if not trace_id or not span_id:
        return None
    if (dropped_attributes is not None and type(dropped_attributes) is not int) \
            or (dropped_events is not None and type(dropped_events) is not int):
        return None
    return LazySpan(name, trace_id, span_id, hex_id(parent_hex, SPAN_ID_BYTES, "parentSpanId") or None,
                    integer(start, UINT64, "startTimeUnixNano"), integer(end, UINT64, "endTimeUnixNano") or None,
                    scope, attributes, status, status_message,
                    integer(dropped_attributes, UINT32, "droppedAttributesCount") + unreadable, events,
                    integer(dropped_events, UINT32, "droppedEventsCount"))


# --- the usual shape, decoded by msgspec ---------------------------------------------------------
# What OTLP exporters write: camelCase names, every field of its OTLP type. A line that fails this
# schema in any way (a field unknown or of another type, snake_case names, NaN, ...) is read by the
# general reader above, which is the reference: reading a line either way gives the same items.

_NO_JSON = msgspec.Raw()
_UNSET = msgspec.UNSET
# A JSON integer the schema takes: an int64, which `fastjson` (orjson) reads exactly too. Any other
# sends the line to the general reader (orjson reads one beyond 64 bits as a float), so both agree.
_Int = Annotated[int, msgspec.Meta(ge=INT64[0], le=INT64[1])]
_Int32 = Annotated[int, msgspec.Meta(ge=INT32[0], le=INT32[1])]
_UInt32 = Annotated[int, msgspec.Meta(ge=UINT32[0], le=UINT32[1])]


class _AnyValue(msgspec.Struct, rename="camel", forbid_unknown_fields=True, frozen=True, gc=False):
    """An attribute's AnyValue. A string (most values) or an int64 is decoded by the schema; the rarer
    kinds stay JSON and are read by `otlp_json_values.any_value`."""

    string_value: str | msgspec.UnsetType = _UNSET
    int_value: str | _Int | msgspec.UnsetType = _UNSET
    double_value: msgspec.Raw = _NO_JSON
    bool_value: msgspec.Raw = _NO_JSON
    array_value: msgspec.Raw = _NO_JSON
    kvlist_value: msgspec.Raw = _NO_JSON
    bytes_value: msgspec.Raw = _NO_JSON


_RAW_VALUE_FIELDS = (("doubleValue", "double_value"), ("boolValue", "bool_value"), ("arrayValue", "array_value"),
                     ("kvlistValue", "kvlist_value"), ("bytesValue", "bytes_value"))
_NO_VALUE = _AnyValue()  # an entry without a value: unreadable, as the reference finds it


class _KeyValue(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    key: str
    value: _AnyValue = _NO_VALUE


class _SpanStatus(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    code: _Int32 | None = None
    message: str | None = None


class _Span(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    trace_id: str
    span_id: str
    name: str = ""
    parent_span_id: str | None = None
    start_time_unix_nano: str | _Int | None = None
    end_time_unix_nano: str | _Int | None = None
    attributes: list[_KeyValue] | None = None
    dropped_attributes_count: _Int | None = None
    events: list[msgspec.Raw] | None = None
    dropped_events_count: _Int | None = None
    status: _SpanStatus | None = None
    # Fields the guard does not read, checked as `_check_unread_fields` checks them (links by it).
    trace_state: str | None = None
    kind: _Int32 | None = None
    flags: _UInt32 | None = None
    links: msgspec.Raw = _NO_JSON
    dropped_links_count: _UInt32 | None = None


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
            scope = (scope_spans.scope.name or None) if scope_spans.scope is not None else None
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
    if span.links:
        return None  # (rare) links are checked by the general reader
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
        status_code, status_message = (STATUS_CODES.get(status.code or 0, Status.UNSET), status.message or None) \
            if status else (Status.UNSET, None)
        # Events are read with the span, as `_span` reads them (each from its own JSON).
        events, unreadable_in_events = _events([fastjson.loads(bytes(event)) for event in span.events]) \
            if span.events else ((), 0)
        return _usual_fields(span.name, span.trace_id, span.span_id, span.parent_span_id,
                             span.start_time_unix_nano, span.end_time_unix_nano, status_code, status_message,
                             span.dropped_attributes_count, span.dropped_events_count, scope, values, events,
                             len(unreadable) + unreadable_in_events)  # unreadable values count as dropped
    except (ValueError, TypeError, OverflowError, RecursionError):
        return None


def _other_value(entry: _KeyValue, unreadable: list[str]) -> Any:
    """A value that is not a string, decoded as `otlp_json_values.any_value` decodes it; an
    unreadable one has its key noted in `unreadable` (and gives None)."""
    value = entry.value
    number = value.int_value
    try:
        if number is not _UNSET:  # a decimal string (OTLP/JSON) or a JSON integer
            return integer(number, INT64, "intValue")
        # The kinds the schema keeps as JSON (all but string and int), as the reference reads them.
        decoded = any_value({camel: fastjson.loads(bytes(raw)) for camel, snake in _RAW_VALUE_FIELDS
                             if (raw := getattr(value, snake))})
    except NotOtlpJson:
        decoded = None
    if decoded is None:
        unreadable.append(entry.key)
    return decoded


def _span(raw: Any, scope: str | None) -> SpanView:
    """The reference reader of one span: every field checked as OTLP/JSON writes it
    (`otlp_json_values`); raises `NotOtlpJson` (or another ValueError) when the span cannot be read.
    Attribute values that cannot be read are dropped and counted in `dropped_attributes`."""
    if not isinstance(raw, Mapping):
        raise NotOtlpJson("span is not an object")
    name = text(raw.get("name"), "span name")
    trace_id = hex_id(field(raw, "traceId", "trace_id"), TRACE_ID_BYTES, "traceId")
    span_id = hex_id(field(raw, "spanId", "span_id"), SPAN_ID_BYTES, "spanId")
    if not trace_id or not span_id:
        raise NotOtlpJson("span has no valid traceId/spanId")
    parent_span_id = hex_id(field(raw, "parentSpanId", "parent_span_id"), SPAN_ID_BYTES, "parentSpanId") or None
    status_code, status_message = _status(raw.get("status"))
    _check_unread_fields(raw)
    attributes, unreadable = read_attributes(raw.get("attributes"))
    events, unreadable_in_events = _events(field(raw, "events", "events"))
    return SpanView(
        name=name,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id,
        attributes=attributes,
        events=events,
        status=status_code,
        status_message=status_message,
        scope=scope,
        start_ns=integer(field(raw, "startTimeUnixNano", "start_time_unix_nano"), UINT64, "startTimeUnixNano"),
        end_ns=integer(field(raw, "endTimeUnixNano", "end_time_unix_nano"), UINT64, "endTimeUnixNano") or None,
        dropped_events=integer(field(raw, "droppedEventsCount", "dropped_events_count"), UINT32, "droppedEventsCount"),
        # unreadable values count as dropped
        dropped_attributes=integer(field(raw, "droppedAttributesCount", "dropped_attributes_count"), UINT32,
                                   "droppedAttributesCount") + unreadable + unreadable_in_events,
    )


def _status(raw: Any) -> tuple[Status, str | None]:
    code, message = status(raw)
    return STATUS_CODES.get(code, Status.UNSET), message or None


def _check_unread_fields(raw: Mapping[str, Any]) -> None:
    """The fields of a span the guard does not read are checked all the same (the service forwards
    them, and rejects a span they make malformed)."""
    enum(raw.get("kind"), "kind")
    integer(raw.get("flags"), UINT32, "flags")
    text(field(raw, "traceState", "trace_state"), "traceState")
    for entry in items(raw.get("links"), "links"):
        link(entry)
    integer(field(raw, "droppedLinksCount", "dropped_links_count"), UINT32, "droppedLinksCount")


def _events(raw: Any) -> tuple[tuple[SpanEvent, ...], int]:
    """A span's events, and how many of their attribute values were unreadable (dropped)."""
    events = []
    unreadable = 0
    for event in items(raw, "events"):
        if not isinstance(event, Mapping):
            raise NotOtlpJson("event is not an object")
        attributes, dropped = read_attributes(event.get("attributes"))
        integer(field(event, "droppedAttributesCount", "dropped_attributes_count"), UINT32,
                "event droppedAttributesCount")
        unreadable += dropped
        events.append(SpanEvent(
            name=text(event.get("name"), "event name"),
            attributes=attributes,
            time_ns=integer(field(event, "timeUnixNano", "time_unix_nano"), UINT64, "event timeUnixNano"),
        ))
    return tuple(events), unreadable


# --- log records ---------------------------------------------------------------------------------


def log_records(document: Mapping[str, Any]) -> Iterator[LogRecordFields | None]:
    """The log records of an OTLP/JSON logs request (a LOG_RECORDS problem's `document`), decoded
    for `otlp_logs.read_records`; None for a record that cannot be read (not an object, a bad id)."""
    for resource in _items_if_list(field(document, "resourceLogs", "resource_logs")):
        for scope in _items_if_list(field(resource, "scopeLogs", "scope_logs")):
            for record in _items_if_list(field(scope, "logRecords", "log_records")):
                yield _log_record(record)


def _items_if_list(value: Any) -> Iterator[Any]:
    """The items of a list, tolerating a list that is not one (nothing in it is read)."""
    if isinstance(value, list):
        yield from value


def _log_record(raw: Any) -> LogRecordFields | None:
    if not isinstance(raw, Mapping):
        return None
    try:
        name = field(raw, "eventName", "event_name")
        body = field(raw, "body", "body")
        return LogRecordFields(
            None, hex_id(field(raw, "traceId", "trace_id"), TRACE_ID_BYTES, "traceId"),
            hex_id(field(raw, "spanId", "span_id"), SPAN_ID_BYTES, "spanId"), name if isinstance(name, str) else "",
            read_attributes(raw.get("attributes"))[0], any_value(body) if body is not None else None,
            integer(field(raw, "timeUnixNano", "time_unix_nano"), UINT64, "timeUnixNano"),
            integer(field(raw, "observedTimeUnixNano", "observed_time_unix_nano"), UINT64, "observedTimeUnixNano"))
    except (ValueError, TypeError, OverflowError, RecursionError):  # NotOtlpJson is a ValueError
        return None


def _excerpt(line: str, limit: int = 80) -> str:
    text = line.strip()
    return text if len(text) <= limit else text[:limit] + "…"
