"""Streaming reader of OTLP/JSON trace files.

Reads what the Collector's file exporter writes (JSON Lines, one `ExportTraceServiceRequest` per line)
and single, possibly pretty-printed documents; gzip is detected by its magic bytes. A JSON Lines file
is read line by line, never whole. Each span is read by `otlp_json_values.span`, the reader the
service's request decoder uses too: ids in hex, enums as integers, 64-bit integers as decimal strings
or numbers; lowerCamelCase or snake_case field names.

Nothing on a line is fatal: whatever is skipped comes out as a `ReadProblem`, in order, so a reader can
count it (a number of more digits than Python converts included: `otlp_json_values.loads`). A span
that is not OTLP/JSON (a base64 id, an enum name, a time that is no integer) is a `BAD_SPAN` problem;
an attribute value that is not is dropped and counted in the span's `dropped_attributes`. Only an
unreadable file (missing, unreadable, corrupt gzip) raises `UnreadableInput`.
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import IO, Any

from . import values as otlp_json_values
from ..errors import OtelGuardError
from .values import (
    SPAN_ID_BYTES,
    TRACE_ID_BYTES,
    UINT64,
    NotOtlpJson,
    any_value,
    attribute_values,
    field,
    hex_id,
    integer,
    loads,
)
from .values import attributes as read_attributes
from .values import span_view
from .logs import LogRecordFields
from ..model.records import SpanEvent, SpanView
from .inputs import ungzipped
from .lines import DEFAULT_MAX_LINE_BYTES, InputLimitError, LineReader, Numbered, ReadFailed, text_lines, too_long

__all__ = ["ReadProblem", "ReadSpan", "UnreadableInput", "iter_spans"]

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
    return _read_lines(lines, label, limit=limit)


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


def _read_lines(lines: Iterable[Numbered], label: str, *, limit: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[Any]:
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
        try:
            parsed = loads(line)
        except (ValueError, RecursionError):
            if not json_lines and _opens_multiline_document(line):
                document = _Document(label, number, line, limit)
                continue
            yield ReadProblem(label, number, NOT_JSON, _excerpt(line))
            continue
        json_lines = True
        yield from _duplicate_key_problems(line, _containers(parsed), label, number)
        yield from _read_document(parsed, label, number)
    if document is not None:
        yield from document.parse(final=True)


def _is_object(line: str) -> bool:
    try:
        return isinstance(loads(line), dict)
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

    def __init__(self, label: str, first: int, line: str, limit: int):
        self.label = label
        self.first = first
        self.last = first
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
            document = loads(text)
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
        yield from _read_document(document, self.label, self.first, self.last - self.first + 1)

    def _unreadable(self, detail: str) -> ReadProblem:
        self.parts.clear()
        self.recent.clear()
        return ReadProblem(self.label, self.first, NOT_JSON, detail, lines=self.last - self.first + 1)


def _read_document(document: Any, label: str, line: int, lines: int = 1) -> Iterator[Any]:
    """The items of one parsed record, from `line` on over `lines` lines (a document's problem covers
    them all: its lines are not empty records)."""
    if not isinstance(document, Mapping):
        yield ReadProblem(label, line, NOT_A_REQUEST, f"a JSON {type(document).__name__}", lines)
        return
    resource_spans = field(document, "resourceSpans", "resource_spans")
    if resource_spans is not None:
        yield from _read_resource_spans(resource_spans, label, line)
        return
    if field(document, "resourceLogs", "resource_logs") is not None:
        yield ReadProblem(label, line, LOG_RECORDS, lines=lines, document=document)
    elif field(document, "resourceMetrics", "resource_metrics") is not None:
        yield ReadProblem(label, line, METRICS, lines=lines)
    elif document:  # `{}` is an empty request, which holds nothing
        yield ReadProblem(label, line, NOT_A_REQUEST, "keys: " + ", ".join(_excerpt(key, 40)
                                                                           for key in sorted(map(str, document))[:5]),
                          lines)


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
    duplicated = otlp_json_values.duplicated_keys(text)
    if duplicated:
        names = ", ".join(repr(name[:40]) for name in duplicated[:_MAX_DUPLICATES_NAMED])
        yield ReadProblem(label, line, DUPLICATE_KEY, f"{names} given more than once in an object: the earlier "
                                                      "copies were not read")


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


def _read_resource_spans(resource_spans: Any, label: str, line: int) -> Iterator[Any]:
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
                yield _built(raw, scope, label, line)
    for what in malformed:
        yield ReadProblem(label, line, NOT_A_REQUEST, f"malformed {what}")


def _built(raw: Any, scope: str | None, label: str, line: int) -> SpanView | ReadProblem:
    """The span read from its JSON object, or the problem that it cannot be read."""
    try:
        return _span(raw, scope)
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


class ReadSpan:
    """A span read from OTLP (a file's line, or a request the service received) as the engine's
    `SpanSource`: the facts the engine asks of every span, its whole `SpanView`, and its parent span
    once the replay has its trace together."""

    __slots__ = ("name", "trace_id", "span_id", "parent_span_id", "attributes", "start_ns", "end_ns", "_view",
                 "parent")

    def __init__(self, view: SpanView):
        self.name, self.trace_id, self.span_id = view.name, view.trace_id, view.span_id
        self.parent_span_id, self.attributes = view.parent_span_id, view.attributes
        self.start_ns, self.end_ns = view.start_ns, view.end_ns
        self._view = view
        self.parent: ReadSpan | None = None

    def view(self) -> SpanView:
        return self._view

    def parent_view(self) -> SpanView | None:
        return self.parent.view() if self.parent is not None else None


def _span(raw: Any, scope: str | None) -> SpanView:
    """One span (`otlp_json_values.span`), which must have a trace and a span id; raises `NotOtlpJson`
    (or another ValueError) when it cannot be read. Attribute values that cannot be read, or hold
    none, are dropped and counted in `dropped_attributes`."""
    read = otlp_json_values.span(raw)
    if not read.trace_id or not read.span_id:
        raise NotOtlpJson("span has no valid traceId/spanId")
    attributes, dropped = attribute_values(read.attributes)
    events = []
    for event in read.events:
        event_attributes, event_dropped = attribute_values(event.attributes)
        dropped += event_dropped
        events.append(SpanEvent(name=event.name, attributes=event_attributes, time_ns=event.time_ns))
    return span_view(read.name, (read.trace_id, read.span_id, read.parent_span_id), attributes, tuple(events),
                     (read.status_code, read.status_message), scope, (read.start_ns, read.end_ns),
                     (read.dropped_events, read.dropped_attributes + dropped + len(read.unreadable)))


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
