"""How OTLP/JSON writes a span and the values of a span or log record, read in one place.

The analyzer's file reader (`analyzer.otlp_json`) and the service's request decoder
(`service.otlp_json_messages`) both read spans with `span` and values with these functions, so a
document reads the same in both; `tests/unit/otlp/test_otlp_json_decoders_agree.py` holds them to it. OTLP/JSON is the protobuf JSON
mapping with the deviations the OTLP specification lists (opentelemetry-proto
docs/specification.md, "JSON Protobuf Encoding"):

- trace and span ids are case-insensitive hex, "not base64-encoded as is defined in the standard
  Protobuf JSON Mapping" (`hex_id`);
- enum fields are integers: "the enum name strings MUST NOT be used" (`enum`). A reader takes the
  names all the same, as the Collector's does: protobuf's JSON printer writes them by default, and a
  name cannot be mistaken for anything else (`SPAN_KINDS`, `STATUS_CODE_NAMES`);
- 64-bit integers are decimal strings, and "either numbers or strings are accepted" (`integer`);
- unknown fields are ignored.

From the protobuf JSON mapping itself: a double may also be "NaN", "Infinity" or "-Infinity" or a
number in a string; bytes are base64, standard or URL-safe, padded or not; a bool is `true` or
`false`. Two leniencies are kept on purpose, both read the same by every decoder: snake_case field
names read like lowerCamelCase ones (`field`), which cannot be mistaken for anything else; and an
AnyValue that sets more than one value reads the first in a fixed order (`any_value`).

A value not written so raises `NotOtlpJson`, saying which field and why: each caller decides what
that costs (the service rejects the span in a partial success, the analyzer counts it and reads on).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..model.records import SpanEvent, SpanView, Status

__all__ = ["INT32", "INT64", "SPAN_ID_BYTES", "SPAN_KINDS", "STATUS_CODES", "STATUS_CODE_NAMES", "TRACE_ID_BYTES",
           "UINT32", "UINT64", "Event", "Link", "NotOtlpJson", "Span", "TooManyDigits", "any_value", "attribute_values",
           "attributes", "duplicated_keys", "enum", "field", "hex_id", "integer", "items", "key_value", "key_values", "link", "loads", "span",
           "status", "text"]

TRACE_ID_BYTES = 16
SPAN_ID_BYTES = 8
INT32 = (-(2**31), 2**31 - 1)  # enums
INT64 = (-(2**63), 2**63 - 1)  # intValue
UINT32 = (0, 2**32 - 1)  # counts, flags
UINT64 = (0, 2**64 - 1)  # times
STATUS_CODES = {0: Status.UNSET, 1: Status.OK, 2: Status.ERROR}  # another code reads as unset
# The enums' names as opentelemetry-proto defines them (trace/v1/trace.proto), read as their numbers.
SPAN_KINDS = {"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3,
              "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
STATUS_CODE_NAMES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}

_MAX_INTEGER_DIGITS = 20  # of 2**64 - 1, the longest integer OTLP/JSON writes
_DOUBLE_WORDS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


class NotOtlpJson(ValueError):
    """A value not written as OTLP/JSON writes it."""


class TooManyDigits:
    """A JSON number with more digits than Python converts to an int (`sys.get_int_max_str_digits`),
    as `loads` reads it: out of range for every integer field, and no other kind of value."""

    __slots__ = ("digits",)

    def __init__(self, digits: int):
        self.digits = digits

    def __repr__(self) -> str:
        return f"<an integer of {self.digits} digits>"


def _parse_int(digits: str) -> int | TooManyDigits:
    try:
        return int(digits)
    except ValueError:  # past the interpreter's digit limit
        return TooManyDigits(len(digits))


def loads(text: str | bytes, **options: Any) -> Any:
    """`json.loads` (with `options`), except that a number of more digits than Python converts (which
    makes `json.loads` refuse the whole document) is read as `TooManyDigits`: the value that holds it
    is unreadable, not the document. Any other error is `json.loads`'s own."""
    try:
        return json.loads(text, **options)
    except ValueError as error:
        try:
            return json.loads(text, parse_int=_parse_int, **options)
        except ValueError:
            raise error from None


def duplicated_keys(text: str) -> list[str]:
    """The keys given more than once in one object of the JSON `text`, in the order met (a reader
    keeps the last copy only: the earlier ones would be dropped unseen); [] for text that is no JSON."""
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
        loads(text, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return []
    return duplicated


def field(obj: Any, camel: str, snake: str) -> Any:
    """A field of a JSON object by its lowerCamelCase name, or its snake_case one; None when absent
    (or null, which the protobuf JSON mapping reads as absent) or when `obj` is no object."""
    if type(obj) is not dict and not isinstance(obj, Mapping):
        return None
    value = obj.get(camel)
    return value if value is not None else obj.get(snake)


def items(value: Any, what: str) -> list[Any]:
    """A repeated field's items: [] when absent."""
    if value is None:
        return []
    if type(value) is list or isinstance(value, list):
        return value
    raise NotOtlpJson(f"{what} is a {type(value).__name__}, not a list")


def text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if type(value) is str:
        return value
    raise NotOtlpJson(f"{what} is a {type(value).__name__}, not a string")


def hex_id(value: Any, size: int, what: str) -> int:
    """An id of `size` bytes as `2 * size` hex digits, as an integer; 0 when absent or empty."""
    if value is None or value == "":
        return 0
    if type(value) is str and len(value) == 2 * size:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            pass
        else:
            if len(raw) == size:  # (fromhex skips spaces between bytes)
                return int.from_bytes(raw, "big")
    if type(value) is str and _is_base64_of(value, size):
        raise NotOtlpJson(f"{what} {_shown(value)} is base64 (the plain protobuf JSON mapping): OTLP/JSON writes "
                          f"ids as {2 * size} hex digits")
    raise NotOtlpJson(f"{_named(what, value)} is not {2 * size} hex digits")


def _is_base64_of(value: str, size: int) -> bool:
    try:
        return len(_base64(value)) == size
    except NotOtlpJson:
        return False


def integer(value: Any, bounds: tuple[int, int], what: str) -> int:
    """An integer field: a JSON number with no fraction, or the same in decimal digits in a string
    (how OTLP/JSON writes 64-bit ones); 0 when absent."""
    kind = type(value)
    if kind is int:
        number = value
    elif kind is str and (value.isdigit() or (value[:1] == "-" and value[1:].isdigit())) and value.isascii():
        # (isdigit alone admits "²"). Digits past any 64-bit integer's 20 are out of range unread: a
        # string of thousands of them is more than Python converts at all.
        if len(value.lstrip("-").lstrip("0")) > _MAX_INTEGER_DIGITS:
            raise NotOtlpJson(f"{_named(what, value)} is out of range")
        number = int(value)
    elif kind is float and value.is_integer():
        number = int(value)
    elif kind is TooManyDigits:
        raise NotOtlpJson(f"{_named(what, value)} is out of range")
    elif value is None:
        return 0
    else:
        raise NotOtlpJson(f"{_named(what, value)} is not an integer")
    low, high = bounds
    if not low <= number <= high:
        raise NotOtlpJson(f"{_named(what, value)} is out of range")
    return number


def enum(value: Any, names: Mapping[str, int], what: str) -> int:
    """An enum field: its number, or one of its `names` (exactly as the .proto spells it); 0 when absent."""
    if type(value) is str:
        number = names.get(value)
        if number is None:
            raise NotOtlpJson(f"{_named(what, value)} is neither a number nor one of the enum's names")
        return number
    return integer(value, INT32, what)


def attributes(entries: Any) -> tuple[dict[str, Any], int]:
    """A list of KeyValues as a dict, read as far as it can be: (the readable values, how many entries
    were unreadable or held no value). Raises only when `entries` is not a list."""
    unreadable: list[str] = []
    values, empty = attribute_values(readable_key_values(entries, unreadable))
    return values, len(unreadable) + empty


def attribute_values(pairs: list[tuple[str, Any]]) -> tuple[dict[str, Any], int]:
    """Read KeyValues as a dict of their values (of a key given twice, the last one that holds a
    value), and how many held no value."""
    values = {key: value for key, value in pairs if value is not None}
    return values, sum(1 for _, value in pairs if value is None)


def readable_key_values(entries: Any, unreadable: list[str]) -> list[tuple[str, Any]]:
    """A list of KeyValues, every entry that can be read (None for one that holds no value), in
    order; why each of the others cannot be read is appended to `unreadable`. Raises only when
    `entries` is not a list."""
    pairs = []
    for entry in items(entries, "attributes"):
        try:
            pairs.append(key_value(entry))
        except NotOtlpJson as problem:
            unreadable.append(str(problem))
        except RecursionError:
            unreadable.append("an attribute value nested too deep")
    return pairs


def key_values(entries: Any) -> list[tuple[str, Any]]:
    """A list of KeyValues, every entry read (None for one that holds no value), in order; raises
    at the first that cannot be read."""
    try:
        return [key_value(entry) for entry in items(entries, "attributes")]
    except RecursionError:
        raise NotOtlpJson("an attribute value nested too deep") from None


def key_value(entry: Any) -> tuple[str, Any]:
    """A KeyValue: its key, and its value decoded (None when it holds none)."""
    if type(entry) is not dict and not isinstance(entry, Mapping):
        raise NotOtlpJson(f"an attribute is a {type(entry).__name__}, not an object")
    key = entry.get("key")
    if type(key) is not str:
        raise NotOtlpJson("an attribute has no key" if key is None else f"an attribute key is a {type(key).__name__}")
    raw = entry.get("value")
    try:
        return key, None if raw is None else any_value(raw)
    except NotOtlpJson as problem:
        raise NotOtlpJson(f"attribute {_shown(key)}: {problem}") from None


def status(raw: Any) -> tuple[int, str]:
    """A span's status: (code, message); (0, "") when absent."""
    if raw is None:
        return 0, ""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise NotOtlpJson(f"status is a {type(raw).__name__}, not an object")
    return enum(raw.get("code"), STATUS_CODE_NAMES, "status code"), text(raw.get("message"), "status message")


def span_view(name: str, ids: tuple[int, int, int], attributes: dict[str, Any], events: tuple[SpanEvent, ...],
              status: tuple[int, str], scope: str | None, times: tuple[int, int],
              dropped: tuple[int, int]) -> SpanView:
    """A span as OTLP carries it (`ids`: trace, span, parent; `status`: code, message; `times`: start,
    end; `dropped`: events, attributes), as the engine reads it: a zero parent id or end time and an
    empty status message are absent, an unknown status code is unset. One rule for OTLP/JSON and
    protobuf alike."""
    trace_id, span_id, parent_span_id = ids
    (status_code, status_message), (start_ns, end_ns) = status, times
    return SpanView(name, trace_id, span_id, parent_span_id or None, attributes, events,
                    STATUS_CODES.get(status_code, Status.UNSET), status_message or None, scope, start_ns,
                    end_ns or None, *dropped)


class Link(NamedTuple):
    trace_id: int
    span_id: int
    trace_state: str
    attributes: list[tuple[str, Any]]
    flags: int
    dropped_attributes: int


def link(raw: Any) -> Link:
    """A span link, every field read (the guard reads none of them; the service forwards them)."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise NotOtlpJson(f"a link is a {type(raw).__name__}, not an object")
    return Link(hex_id(field(raw, "traceId", "trace_id"), TRACE_ID_BYTES, "link traceId"),
                hex_id(field(raw, "spanId", "span_id"), SPAN_ID_BYTES, "link spanId"),
                text(field(raw, "traceState", "trace_state"), "link traceState"),
                key_values(raw.get("attributes")), integer(raw.get("flags"), UINT32, "link flags"),
                integer(field(raw, "droppedAttributesCount", "dropped_attributes_count"), UINT32,
                        "link droppedAttributesCount"))


class Event(NamedTuple):
    name: str
    time_ns: int
    attributes: list[tuple[str, Any]]  # as `readable_key_values` reads them
    dropped_attributes: int


class Span(NamedTuple):
    """Every field of a span as `span` reads it. Ids are integers, 0 when absent."""

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int
    trace_state: str
    kind: int
    flags: int
    start_ns: int
    end_ns: int
    attributes: list[tuple[str, Any]]  # as `readable_key_values` reads them
    dropped_attributes: int
    events: list[Event]
    dropped_events: int
    links: list[Link]
    dropped_links: int
    status_code: int
    status_message: str
    # Why each attribute entry of the span or its events that could not be read was left out.
    unreadable: list[str]


def span(raw: Any) -> Span:
    """One span, every field read and checked as OTLP/JSON writes it (the fields the guard does not
    read too: the service forwards them). A field that is not OTLP/JSON raises `NotOtlpJson`; an
    attribute entry (of the span or of an event) that cannot be read is left out and its reason
    noted in `Span.unreadable`, each driver deciding what that costs (the analyzer counts it dropped,
    the service rejects the span)."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise NotOtlpJson(f"a span is a {type(raw).__name__}, not an object")
    unreadable: list[str] = []
    name = text(raw.get("name"), "span name")
    trace_id = hex_id(field(raw, "traceId", "trace_id"), TRACE_ID_BYTES, "traceId")
    span_id = hex_id(field(raw, "spanId", "span_id"), SPAN_ID_BYTES, "spanId")
    parent_span_id = hex_id(field(raw, "parentSpanId", "parent_span_id"), SPAN_ID_BYTES, "parentSpanId")
    status_code, status_message = status(raw.get("status"))
    return Span(
        name=name,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_span_id,
        trace_state=text(field(raw, "traceState", "trace_state"), "traceState"),
        kind=enum(raw.get("kind"), SPAN_KINDS, "kind"),
        flags=integer(raw.get("flags"), UINT32, "flags"),
        start_ns=integer(field(raw, "startTimeUnixNano", "start_time_unix_nano"), UINT64, "startTimeUnixNano"),
        end_ns=integer(field(raw, "endTimeUnixNano", "end_time_unix_nano"), UINT64, "endTimeUnixNano"),
        attributes=readable_key_values(raw.get("attributes"), unreadable),
        dropped_attributes=integer(field(raw, "droppedAttributesCount", "dropped_attributes_count"), UINT32,
                                   "droppedAttributesCount"),
        events=[_event(event, unreadable) for event in items(field(raw, "events", "events"), "events")],
        dropped_events=integer(field(raw, "droppedEventsCount", "dropped_events_count"), UINT32,
                               "droppedEventsCount"),
        links=[link(entry) for entry in items(raw.get("links"), "links")],
        dropped_links=integer(field(raw, "droppedLinksCount", "dropped_links_count"), UINT32, "droppedLinksCount"),
        status_code=status_code,
        status_message=status_message,
        unreadable=unreadable,
    )


def _event(raw: Any, unreadable: list[str]) -> Event:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise NotOtlpJson(f"an event is a {type(raw).__name__}, not an object")
    return Event(name=text(raw.get("name"), "event name"),
                 time_ns=integer(field(raw, "timeUnixNano", "time_unix_nano"), UINT64, "event timeUnixNano"),
                 attributes=readable_key_values(raw.get("attributes"), unreadable),
                 dropped_attributes=integer(field(raw, "droppedAttributesCount", "dropped_attributes_count"), UINT32,
                                            "event droppedAttributesCount"))


def any_value(raw: Any) -> Any:
    """An AnyValue decoded: a str, int, float, bool, bytes, tuple (an array, as the SDK keeps them) or
    dict (a kvlist); None when it holds no value. An AnyValue that sets more than one value (which
    the protobuf parser refuses) reads the first in `_ANY_VALUE_FIELDS` order, whatever the order of
    its keys."""
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise NotOtlpJson(f"an attribute value is a {type(raw).__name__}, not an object")
    for camel, snake, decode in _ANY_VALUE_FIELDS:
        value = raw.get(camel)
        if value is None:
            value = raw.get(snake)
            if value is None:
                continue
        try:
            return decode(value)
        except NotOtlpJson as problem:
            raise NotOtlpJson(f"{camel} {problem}") from None
    return None


def _string(value: Any) -> str:
    if type(value) is str:
        return value
    raise NotOtlpJson(f"is a {type(value).__name__}, not a string")


def _int(value: Any) -> int:
    return integer(value, INT64, "")


def _double(value: Any) -> float:
    kind = type(value)
    if kind is float:
        return value
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            raise NotOtlpJson(f"{_shown(value)} is out of range") from None
    if kind is TooManyDigits:
        raise NotOtlpJson(f"{_shown(value)} is out of range")
    if kind is str:
        word = _DOUBLE_WORDS.get(value)
        if word is not None:
            return word
        if _JSON_NUMBER.fullmatch(value):
            number = float(value)
            if not math.isinf(number):
                return number
    raise NotOtlpJson(f"{_shown(value)} is not a number")


def _bool(value: Any) -> bool:
    if type(value) is bool:
        return value
    raise NotOtlpJson(f"{_shown(value)} is not true or false")


def _bytes(value: Any) -> bytes:
    if type(value) is not str:
        raise NotOtlpJson(f"is a {type(value).__name__}, not base64")
    return _base64(value)


def _base64(value: str) -> bytes:
    """Base64 in either alphabet (standard or URL-safe), with or without its padding."""
    standard = value.replace("-", "+").replace("_", "/").rstrip("=")
    if len(standard) % 4 == 1 or len(value) - len(standard) > 2:
        raise NotOtlpJson(f"{_shown(value)} is not base64")
    try:
        return base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise NotOtlpJson(f"{_shown(value)} is not base64") from None


def _array(value: Any) -> tuple[Any, ...]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise NotOtlpJson(f"is a {type(value).__name__}, not an object")
    return tuple(any_value(item) for item in items(value.get("values"), "values"))


def _kvlist(value: Any) -> dict[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):
        raise NotOtlpJson(f"is a {type(value).__name__}, not an object")
    values: dict[str, Any] = {}
    for entry in items(value.get("values"), "values"):
        key, decoded = key_value(entry)  # one unreadable entry makes the whole value unreadable
        if decoded is not None:
            values[key] = decoded
    return values


_ANY_VALUE_FIELDS = (
    ("stringValue", "string_value", _string),
    ("intValue", "int_value", _int),
    ("doubleValue", "double_value", _double),
    ("boolValue", "bool_value", _bool),
    ("arrayValue", "array_value", _array),
    ("kvlistValue", "kvlist_value", _kvlist),
    ("bytesValue", "bytes_value", _bytes),
)


def _named(what: str, value: Any) -> str:
    return f"{what} {_shown(value)}" if what else _shown(value)


def _shown(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= 42 else shown[:40] + "…"
