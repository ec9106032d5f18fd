"""Streaming reader of OTLP/JSON trace files.

Reads what the Collector's file exporter writes (JSON Lines, one `ExportTraceServiceRequest` per line)
and single, possibly pretty-printed documents; gzip is detected by its magic bytes. A JSON Lines file
is read line by line, never whole. Liberal in what it accepts: ids as lowercase hex (the OTLP/JSON
rule) or base64 (the plain protobuf JSON mapping), enums as integers or names, 64-bit integers as
decimal strings or numbers, lowerCamelCase or snake_case field names.

Nothing on a line is fatal: whatever is skipped comes out as a `ReadProblem`, in order, so a reader can
count it. Only an unreadable file (missing, unreadable, corrupt gzip) raises `UnreadableInput`.

`iter_lazy_spans` reads the same, but hands out `LazySpan`s: ids, name and times decoded and checked,
attributes and events decoded only when a span turns out to matter (the analyzer skips most spans).
"""

from __future__ import annotations

import base64
import binascii
import gzip
import io
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import IO, Any

from . import fastjson
from .errors import OtelGuardError
from .records import SpanEvent, SpanView, Status

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


# ReadProblem.reason values
NOT_JSON = "not json"
BLANK = "blank"
NOT_A_REQUEST = "not an ExportTraceServiceRequest"
LOG_RECORDS = "log records (not read)"
METRICS = "metrics (not read)"
BAD_SPAN = "bad span"


class UnreadableInput(OtelGuardError, OSError):
    """The input itself cannot be read (missing, permission, corrupt or truncated gzip)."""

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}: cannot read input (line {line}): {reason}")
        self.path = path
        self.line = line
        self.reason = reason


def iter_spans(source: str | os.PathLike[str] | IO[bytes] | IO[str]) -> Iterator[SpanView | ReadProblem]:
    """Spans and skipped items of an OTLP/JSON trace file or stream, in file order.

    The file is opened now (so a missing file raises here); it is read as the iterator advances.
    """
    label = _label(source)
    lines = _open_lines(source, label)
    return _read_lines(lines, label, _span)


def iter_lazy_spans(source: str | os.PathLike[str] | IO[bytes] | IO[str]) -> Iterator[LazySpan | ReadProblem]:
    """As `iter_spans`, with each span's attributes and events decoded only by `LazySpan.view()`.

    The same spans and the same problems, in the same order: a span is checked as fully as
    `iter_spans` checks it, only the decoding of what cannot fail is put off.
    """
    label = _label(source)
    lines = _open_lines(source, label)
    return _read_lines(lines, label, _lazy_span)


# --- input ---------------------------------------------------------------------------------------


def _label(source: Any) -> str:
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    return str(getattr(source, "name", "<stream>"))


def _open_lines(source: Any, label: str) -> Iterator[str]:
    """Lines of the source as text. Streams the caller passed in are read, never closed."""
    if isinstance(source, io.TextIOBase):
        return _lines(source, label, release=lambda: None)
    owned = isinstance(source, (str, os.PathLike))
    try:
        binary = open(source, "rb") if owned else source  # noqa: SIM115 - released by _lines
    except OSError as error:
        raise UnreadableInput(label, 0, error.strerror or str(error)) from error
    try:
        text, layers = _decode(binary)
    except OSError as error:
        if owned:
            binary.close()
        raise UnreadableInput(label, 0, str(error)) from error

    def release() -> None:
        if owned:
            text.close()
            binary.close()  # a GzipFile over a file object leaves that file open
            return
        # Unwrap without closing the caller's stream (closing a wrapper closes what it wraps).
        text.detach()
        for layer in reversed(layers):
            if isinstance(layer, gzip.GzipFile):
                layer.close()  # closes only the decompressor, not the stream under it
            else:
                layer.detach()

    return _lines(text, label, release)


def _decode(binary: IO[bytes]) -> tuple[io.TextIOWrapper, list[Any]]:
    """UTF-8 text over the bytes, un-gzipped when they start with the gzip magic; and the layers
    added between the two."""
    buffered: Any = binary if hasattr(binary, "peek") else io.BufferedReader(binary)  # type: ignore[arg-type]
    layers: list[Any] = [buffered] if buffered is not binary else []
    if buffered.peek(2)[:2] == _GZIP_MAGIC:
        buffered = gzip.GzipFile(fileobj=buffered)
        layers.append(buffered)
    # Invalid UTF-8 becomes U+FFFD: the line then fails as JSON and is reported, never raised.
    return io.TextIOWrapper(buffered, encoding="utf-8", errors="replace"), layers


def _lines(stream: IO[str], label: str, release: Callable[[], None]) -> Iterator[str]:
    line_number = 0
    try:
        for line_number, line in enumerate(stream, 1):  # noqa: B007 - reported on failure
            yield line
    except (OSError, EOFError, zlib.error) as error:
        raise UnreadableInput(label, line_number + 1, str(error) or type(error).__name__) from error
    finally:
        release()


# --- documents -----------------------------------------------------------------------------------


# Builds one span from its JSON object; raises (see `_read_resource_spans`) when it cannot be read.
_SpanBuilder = Callable[[Any, "str | None"], Any]


def _read_lines(lines: Iterator[str], label: str, build: _SpanBuilder) -> Iterator[Any]:
    json_lines = False  # once a line parsed on its own, the file is JSON Lines: never read it whole
    for line_number, line in enumerate(lines, 1):
        if not line or line.isspace():  # not `strip()`: that copies the whole line
            yield ReadProblem(label, line_number, BLANK)
            continue
        try:
            document = fastjson.loads(line)
        except (ValueError, RecursionError):
            if not json_lines and _opens_multiline_document(line):
                yield from _read_whole(line, lines, label, line_number, build)
                return
            yield ReadProblem(label, line_number, NOT_JSON, _excerpt(line))
            continue
        json_lines = True
        yield from _read_document(document, label, line_number, build)


def _opens_multiline_document(line: str) -> bool:
    """A pretty-printed document starts with an object that does not close on its first line."""
    stripped = line.strip()
    return stripped.startswith("{") and not stripped.endswith("}")


def _read_whole(first: str, rest: Iterator[str], label: str, first_number: int, build: _SpanBuilder) -> Iterator[Any]:
    """A single (pretty-printed) document may be read whole; if it is not one, fall back to lines."""
    text_lines = [first, *rest]
    try:
        document = fastjson.loads("".join(text_lines))
    except (ValueError, RecursionError):
        for offset, line in enumerate(text_lines):
            number = first_number + offset
            if not line.strip():
                yield ReadProblem(label, number, BLANK)
                continue
            try:
                yield from _read_document(fastjson.loads(line), label, number, build)
            except (ValueError, RecursionError):
                yield ReadProblem(label, number, NOT_JSON, _excerpt(line))
        return
    yield from _read_document(document, label, first_number, build)


def _read_document(document: Any, label: str, line: int, build: _SpanBuilder) -> Iterator[Any]:
    if not isinstance(document, Mapping):
        yield ReadProblem(label, line, NOT_A_REQUEST, f"a JSON {type(document).__name__}")
        return
    resource_spans = _field(document, "resourceSpans", "resource_spans")
    if resource_spans is not None:
        yield from _read_resource_spans(resource_spans, label, line, build)
        return
    if _field(document, "resourceLogs", "resource_logs") is not None:
        yield ReadProblem(label, line, LOG_RECORDS)
    elif _field(document, "resourceMetrics", "resource_metrics") is not None:
        yield ReadProblem(label, line, METRICS)
    elif document:  # `{}` is an empty request, which holds nothing
        yield ReadProblem(label, line, NOT_A_REQUEST, "keys: " + ", ".join(sorted(map(str, document))[:5]))


def _read_resource_spans(resource_spans: Any, label: str, line: int, build: _SpanBuilder) -> Iterator[Any]:
    malformed: list[str] = []
    for resource in _objects(resource_spans, "resourceSpans", malformed):
        for scope_spans in _objects(_field(resource, "scopeSpans", "scope_spans"), "scopeSpans", malformed):
            scope_name = _field(_field(scope_spans, "scope", "scope"), "name", "name")
            scope = scope_name if isinstance(scope_name, str) else None
            for raw in _entries(_field(scope_spans, "spans", "spans"), "spans", malformed):
                try:
                    item = build(raw, scope)
                except (_BadSpan, ValueError, TypeError, AttributeError, OverflowError, RecursionError) as error:
                    item = ReadProblem(label, line, BAD_SPAN, str(error) or type(error).__name__)
                yield item
    for what in malformed:
        yield ReadProblem(label, line, NOT_A_REQUEST, f"malformed {what}")


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


_KEY = itemgetter("key")


class LazySpan:
    """A span whose ids, name and times are decoded, and whose attributes and events are decoded on
    the first `view()`. Reading it checked everything that can be wrong with it, so `view()` cannot
    fail: it only puts off work that a span none of the guard's business never needs."""

    __slots__ = ("_raw", "_scope", "_view", "end_ns", "name", "parent_span_id", "span_id", "start_ns", "trace_id")

    def __init__(self, name: str, trace_id: int, span_id: int, parent_span_id: int | None, start_ns: int,
                 end_ns: int | None, scope: str | None, raw: dict[str, Any] | None, view: SpanView | None = None):
        self.name = name
        self.trace_id = trace_id
        self.span_id = span_id
        self.parent_span_id = parent_span_id
        self.start_ns = start_ns
        self.end_ns = end_ns
        self._scope = scope
        self._raw = raw  # the span's JSON object until `view()` decodes it
        self._view = view

    @classmethod
    def decoded(cls, view: SpanView) -> LazySpan:
        return cls(view.name, view.trace_id, view.span_id, view.parent_span_id, view.start_ns, view.end_ns,
                   view.scope, None, view)

    def view(self) -> SpanView:
        view = self._view
        if view is None:
            # Read as `_span` reads it; what `_usual_span` checked needs no second look.
            raw = self._raw
            attributes, unreadable = _attributes(raw.get("attributes"))
            status = raw.get("status")
            status_code, status_message = _status(status) if status else (Status.UNSET, None)
            dropped_attributes = raw.get("droppedAttributesCount")
            if dropped_attributes is None:
                dropped_attributes = raw.get("dropped_attributes_count")
            dropped_events = raw.get("droppedEventsCount")
            if dropped_events is None:
                dropped_events = raw.get("dropped_events_count")
            view = self._view = SpanView(
                name=self.name,
                trace_id=self.trace_id,
                span_id=self.span_id,
                parent_span_id=self.parent_span_id,
                attributes=attributes,
                status=status_code,
                status_message=status_message,
                scope=self._scope,
                start_ns=self.start_ns,
                end_ns=self.end_ns,
                dropped_events=dropped_events or 0,
                dropped_attributes=(dropped_attributes or 0) + unreadable,  # unreadable values count as dropped
            )
            self._raw = None
        return view

    def may_have_attribute(self, keys: frozenset[str]) -> bool:
        """Whether any of `keys` can be among the attributes (their values are not decoded, so one may
        still turn out unreadable). Decodes nothing when the attribute list has its usual shape."""
        if self._view is None:
            try:
                return not keys.isdisjoint(map(_KEY, self._raw.get("attributes") or ()))
            except (KeyError, TypeError):  # an entry without a key, or with a list for one: decode
                pass
        return not keys.isdisjoint(self.view().attributes)


def _lazy_span(raw: Any, scope: str | None) -> LazySpan:
    """A span read as `_span` reads it, its attributes left for `LazySpan.view()`. The usual shape
    (hex ids, no events, counts that are numbers) is checked here; anything else, and anything
    wrong, is read by `_span` itself, so the checks and the first error found are the same."""
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
    get = raw.get
    name = get("name")
    trace_hex = get("traceId")
    if trace_hex is None:
        trace_hex = get("trace_id")
    span_hex = get("spanId")
    if span_hex is None:
        span_hex = get("span_id")
    if type(name) is not str or type(trace_hex) is not str or type(span_hex) is not str \
            or len(trace_hex) != 2 * _TRACE_ID_BYTES or len(span_hex) != 2 * _SPAN_ID_BYTES:
        return None
    trace_id = int(trace_hex, 16)
    span_id = int(span_hex, 16)
    if not trace_id or not span_id:
        return None
    status = get("status")
    if status:
        _status(status)  # only checked here: `view()` decodes it
    attributes = get("attributes")
    events = get("events")
    if (attributes is not None and type(attributes) is not list) or (events is not None and events != []):
        return None
    dropped_attributes = get("droppedAttributesCount")
    if dropped_attributes is None:
        dropped_attributes = get("dropped_attributes_count")
    dropped_events = get("droppedEventsCount")
    if dropped_events is None:
        dropped_events = get("dropped_events_count")
    if (dropped_attributes is not None and (type(dropped_attributes) is not int or dropped_attributes < 0)) \
            or (dropped_events is not None and (type(dropped_events) is not int or dropped_events < 0)):
        return None
    parent_hex = get("parentSpanId")
    if parent_hex is None:
        parent_hex = get("parent_span_id")
    if parent_hex is None or parent_hex == "":
        parent_span_id = None
    elif type(parent_hex) is str and len(parent_hex) == 2 * _SPAN_ID_BYTES:
        parent_span_id = int(parent_hex, 16) or None
    else:
        return None
    start = get("startTimeUnixNano")
    if start is None:
        start = get("start_time_unix_nano")
    end = get("endTimeUnixNano")
    if end is None:
        end = get("end_time_unix_nano")
    start_ns = int(start) if type(start) is str else _uint(start) or 0
    end_ns = int(end) if type(end) is str else _uint(end)
    if start_ns < 0 or (end_ns is not None and end_ns < 0):
        return None
    return LazySpan(name, trace_id, span_id, parent_span_id, start_ns, end_ns, scope, raw)


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
    code = raw.get("code")
    if isinstance(code, str):
        code = int(code) if code.strip().isdigit() else code.strip().upper()
    status = _STATUS_CODES.get(code, Status.UNSET) if isinstance(code, (int, str)) else Status.UNSET
    message = raw.get("message")
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
        # Fast path: most values are plain strings in plain dicts (json.loads never makes other Mappings).
        if type(entry) is dict:
            key = entry.get("key")
            value_raw = entry.get("value")
            if type(key) is str and type(value_raw) is dict:
                text = value_raw.get("stringValue")
                if type(text) is str:
                    attributes[key] = text
                    continue
                number = value_raw.get("intValue")
                if type(number) is str and len(value_raw) == 1:  # the usual int64: a decimal string
                    try:
                        attributes[key] = int(number)
                        continue
                    except ValueError:
                        pass  # read (and counted as dropped) below
        key = entry.get("key") if isinstance(entry, Mapping) else None
        try:
            value = _any_value(entry.get("value")) if isinstance(key, str) else None
        except (_BadSpan, ValueError, TypeError, OverflowError, RecursionError):
            value = None
        if value is None:
            dropped += 1
        else:
            attributes[key] = value
    return attributes, dropped


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


def _excerpt(line: str, limit: int = 80) -> str:
    text = line.strip()
    return text if len(text) <= limit else text[:limit] + "…"
