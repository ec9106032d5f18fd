"""Defensive readers shared by the convention modules.

Attribute values arrive as the SDK stores them (str, int, float, bool, tuples) or already decoded
from OTLP JSON (dicts, lists). Every function here accepts anything and never raises: what cannot
be read comes back as None (or empty) together with a `Content` saying why.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import semconv as sc
from ..model.canonical import canonical_arguments
from ..model.fences import open_fence
from ..model.records import Chunk, Content, ModelCall, ModelUsage, RequestedToolCall, SpanEvent, Status

# A broken instrumentation may nest absurdly; deeper payloads are not worth walking.
_MAX_WALK_DEPTH = 16
_MAX_WALK_NODES = 20_000

_TEXTLESS_CHUNK_EVENTS = frozenset(
    {sc.GEN_AI_COMPLETION_CHUNK_EVENT, sc.LLM_COMPLETION_CHUNK_EVENT, sc.OI_FIRST_TOKEN_EVENT}
)

# Content.OK < TRUNCATED < OVERSIZED < ABSENT < MALFORMED: when parts of one output disagree, the worst wins.
_CONTENT_SEVERITY = {Content.OK: 0, Content.TRUNCATED: 1, Content.OVERSIZED: 2, Content.ABSENT: 3,
                     Content.MALFORMED: 4}


@dataclass(slots=True, frozen=True)
class ReadLimits:
    """What the guard reads of one span, so that judging it is bounded on the agent's thread whatever
    the span carries (benchmarks/span_end_by_size.py). Past them the record is marked
    `Content.OVERSIZED`; every driver reads alike, so live and offline verdicts agree."""

    json_chars: int = 1 << 18  # a JSON attribute decoded (model output, tool arguments)
    # A value read by a scan in Python (a repr of the Agents SDK's reasoning, JSON cut by a length limit).
    scanned_chars: int = 1 << 15
    judged_chars: int = 1 << 12  # a call's reasoning, and its text, judged: their last characters


READ_LIMITS = ReadLimits()


# --- span-level access ---------------------------------------------------------------------------


def attributes_of(span: Any) -> Mapping[str, Any]:
    """The span's attributes, or an empty mapping when they are not a mapping."""
    attributes = getattr(span, "attributes", None)
    return attributes if isinstance(attributes, Mapping) else {}


def status_of(span: Any) -> Status:
    status = getattr(span, "status", None)
    return status if isinstance(status, Status) else Status.UNSET


def events_of(span: Any) -> tuple[SpanEvent, ...]:
    events = getattr(span, "events", None)
    if type(events) is tuple:  # the usual case (often empty), without the ABC check below
        if not events:
            return ()
    elif not isinstance(events, Sequence) or isinstance(events, (str, bytes)):
        return ()
    return tuple(event for event in events if isinstance(event, SpanEvent))


def dropped_events_of(span: Any) -> int:
    dropped = getattr(span, "dropped_events", 0)
    return dropped if type(dropped) is int else as_int(dropped) or 0


def span_name_of(span: Any) -> str:
    name = getattr(span, "name", None)
    return name if isinstance(name, str) else ""


def error_message(span: Any) -> str | None:
    """The exception event's message (short), else the status description (often a traceback)."""
    events = getattr(span, "events", None)
    if type(events) is tuple and not events and getattr(span, "status", None) is not Status.ERROR:
        return None  # the usual span: no events to search, no error status to describe
    for event in events_of(span):
        if event.name == sc.EXCEPTION_EVENT and isinstance(event.attributes, Mapping):
            message = as_text(event.attributes.get(sc.EXCEPTION_MESSAGE))
            if message:
                return message
    if status_of(span) is Status.ERROR:
        message = getattr(span, "status_message", None)
        if isinstance(message, str) and message:
            return message
    return None


def read_chunks(span: Any) -> tuple[tuple[Chunk, ...], int]:
    """(otelguard chunk events with text, in order; count of textless chunk events)."""
    return _chunks_in(events_of(span))


def _chunks_in(events: tuple[SpanEvent, ...]) -> tuple[tuple[Chunk, ...], int]:
    if not events:  # most spans
        return (), 0
    chunks: list[Chunk] = []
    textless = 0
    for event in events:
        if event.name == sc.OTELGUARD_CHUNK_EVENT:
            attributes = event.attributes if isinstance(event.attributes, Mapping) else {}
            text = attributes.get(sc.OTELGUARD_CHUNK_TEXT)
            if isinstance(text, str):
                reasoning = attributes.get(sc.OTELGUARD_CHUNK_KIND) == sc.CHUNK_KIND_REASONING
                chunks.append(Chunk(text, sc.CHUNK_KIND_REASONING if reasoning else sc.CHUNK_KIND_TEXT))
            else:
                textless += 1
        elif event.name in _TEXTLESS_CHUNK_EVENTS:
            textless += 1
    return tuple(chunks), textless


# --- scalar coercion ----------------------------------------------------------------------------


def as_text(value: Any) -> str | None:
    """A value as text: strings verbatim, bytes decoded, structures as compact JSON, else str()."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (Mapping, list, tuple)):
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError, RecursionError):
            return None
    try:
        return str(value)
    except Exception:  # a hostile __str__ must not break reading
        return None


def as_name(value: Any) -> str | None:
    """A non-empty string, else None (names and ids: an empty string means unset)."""
    if isinstance(value, str):
        value = value.strip()
        return value or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def as_int(value: Any) -> int | None:
    """A count: ints, integral floats and decimal strings; never bools, NaN or infinities."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) else None
    if isinstance(value, (str, bytes)) and len(value) < 32:
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def as_str_tuple(value: Any) -> tuple[str, ...]:
    """Finish reasons and the like: a sequence, a single string, or a JSON array string."""
    if value is None:
        return ()
    if isinstance(value, str):
        if value.startswith("["):
            decoded, content = load_json(value)
            if content is Content.OK and isinstance(decoded, list):
                return as_str_tuple(decoded)
        return (value,) if value else ()
    # type() first: the SDK's tuples and JSON's lists skip the ABC check.
    if type(value) in _PLAIN_SEQUENCES or (isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray))):
        return tuple(filter(None, map(as_name, value)))  # as_name gives a non-empty string or None
    return ()


_PLAIN_SEQUENCES = (tuple, list)


def first_present(attributes: Mapping[str, Any], *keys: str) -> Any:
    """The value of the first key that is present and not None."""
    for key in keys:
        value = attributes.get(key)
        if value is not None:
            return value
    return None


def first_int(attributes: Mapping[str, Any], *keys: str) -> int | None:
    for key in keys:
        value = attributes.get(key)
        if value is not None:  # most keys are absent: skip the call
            number = as_int(value)
            if number is not None:
                return number
    return None


def group_indexed(items: Iterable[tuple[Any, Any]], prefix: str) -> dict[int, dict[str, Any]]:
    """Group flattened `<prefix><i>.<rest>` keys by index i: {i: {rest: value}}."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in items:
        if isinstance(key, str) and key.startswith(prefix):
            index, _, rest = key[len(prefix):].partition(".")
            if rest and index.isascii() and index.isdigit():
                groups.setdefault(int(index), {})[rest] = value
    return groups


# --- JSON ---------------------------------------------------------------------------------------


def load_json(value: Any) -> tuple[Any, Content]:
    """Decode a JSON attribute. Already-decoded structures pass through; cut JSON is salvaged.

    Returns (value, OK), (salvaged prefix, TRUNCATED), (None, MALFORMED), (None, ABSENT) or, past
    the read limit, (None, OVERSIZED).
    """
    if value is None:
        return None, Content.ABSENT
    if type(value) is not str:  # JSON text is the usual case: it skips the ABC check
        if isinstance(value, (Mapping, list)):
            return value, Content.OK
        if isinstance(value, tuple):
            return [_decode_element(item) for item in value], Content.OK
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("utf-8", "replace")
        if not isinstance(value, str):
            return None, Content.MALFORMED
    if len(value) > READ_LIMITS.json_chars:
        return None, Content.OVERSIZED
    try:
        return json.loads(value), Content.OK
    except (ValueError, RecursionError):
        pass
    if len(value) > READ_LIMITS.scanned_chars:
        return None, Content.OVERSIZED
    salvaged = _salvage_truncated_json(value)
    if salvaged is not None:
        return salvaged, Content.TRUNCATED
    return None, Content.MALFORMED


def _decode_element(item: Any) -> Any:
    """SDK sequences of JSON strings (one message per element) decode element-wise."""
    if isinstance(item, str) and item[:1] in ("{", "["):
        decoded, content = load_json(item)
        if content is not Content.MALFORMED:
            return decoded
    return item


def looks_truncated(text: str) -> bool:
    """JSON text that ends inside a string or with brackets still open: cut, not malformed."""
    return _close_truncated_json(text) is not None


def _salvage_truncated_json(text: str) -> Any:
    """Read what there is of JSON cut by a span-attribute length limit, or None if not a cut."""
    for candidate in _truncation_repairs(text):
        try:
            return json.loads(candidate)
        except (ValueError, RecursionError):
            continue
    return None


# A dangling object key (with or without its colon) or a trailing comma at the cut.
_DANGLING_TAIL = re.compile(r'(?:,\s*"(?:[^"\\]|\\.)*"\s*:?\s*|,\s*|:\s*)$')


def _truncation_repairs(text: str) -> list[str]:
    closed = _close_truncated_json(text)
    if closed is None:
        return []
    candidates = [closed]
    trimmed = _DANGLING_TAIL.sub("", text.rstrip())
    if trimmed != text:
        closed_trimmed = _close_truncated_json(trimmed)
        if closed_trimmed is not None:
            candidates.append(closed_trimmed)
    return candidates


_PARTIAL_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{0,3})?$")


def _close_truncated_json(text: str) -> str | None:
    """Close the open string and brackets of cut JSON; None when the text is not an open prefix."""
    closers: list[str] = []
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            closers.append("}")
        elif char == "[":
            closers.append("]")
        elif char in "}]":
            if not closers or closers.pop() != char:
                return None
    if not closers:
        return None  # complete (or not JSON at all): a cut would leave something open
    tail = text
    if in_string:
        tail = _PARTIAL_ESCAPE.sub("", tail) + '"'
    return tail + "".join(reversed(closers))


def iter_mappings(root: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping in a decoded JSON tree, depth-first in document order, depth- and size-bounded."""
    stack = [(root, 0)]
    visited = 0
    while stack and visited < _MAX_WALK_NODES:
        node, depth = stack.pop()
        visited += 1
        if isinstance(node, Mapping):
            yield node
            children = list(node.values())
        elif isinstance(node, (list, tuple)):
            children = list(node)
        else:
            continue
        if depth < _MAX_WALK_DEPTH:
            containers = [child for child in children if isinstance(child, (Mapping, list, tuple))]
            stack.extend((child, depth + 1) for child in reversed(containers))


# --- tool arguments -----------------------------------------------------------------------------


def read_arguments(value: Any) -> tuple[str | None, Content]:
    """Canonical tool arguments; JSON cut by a length limit is kept verbatim and marked TRUNCATED."""
    if isinstance(value, tuple):
        value = list(value)
    elif type(value) is str and len(value) > READ_LIMITS.json_chars:
        return _oversized_arguments(value), Content.OVERSIZED
    try:
        canonical, content = canonical_arguments(value)
    except Exception:  # canonical_arguments trusts json.dumps; a hostile object may still break it
        return None, Content.MALFORMED
    if content is Content.MALFORMED and isinstance(value, str) and looks_truncated(value):
        return canonical, Content.TRUNCATED
    return canonical, content


def _oversized_arguments(text: str) -> str:
    """Arguments too long to decode, as their identity: the length and both ends of the text (the
    same call repeated is the same text; two calls alike at both ends and in length are taken as
    one)."""
    edge = 512
    return f"{text[:edge]}…({len(text) - 2 * edge} chars)…{text[-edge:]}"


# --- reasoning encodings ------------------------------------------------------------------------


def decode_reasoning(content: Any) -> tuple[str, Content]:
    """Reasoning part content as plain text.

    Unwraps the two encodings OpenLLMetry writes: a JSON string of Responses summary items
    (`[{"text": ..., "type": "summary_text"}]`) and the Python repr of the Agents SDK's content
    object (`Content(text='...', type='reasoning_text')`), read with `ast` (never evaluated).
    """
    if type(content) is str and "Content(" not in content and content.lstrip()[:1] != "[":
        return content, Content.OK  # plain text, the usual case: it starts neither encoding
    if content is None:
        return "", Content.ABSENT
    if isinstance(content, (list, tuple, Mapping)):
        return _summary_text(content), Content.OK
    text = as_text(content) or ""
    stripped = text.lstrip()
    if _JSON_LIST_START.match(stripped):
        decoded, state = load_json(stripped)
        if state is not Content.MALFORMED and isinstance(decoded, list):
            return _summary_text(decoded), state
    if _CONTENT_REPR_START.match(text):
        if len(text) > READ_LIMITS.scanned_chars:
            return "", Content.OVERSIZED
        return _decode_content_repr(text)
    return text, Content.OK


def _summary_text(items: Any) -> str:
    if isinstance(items, Mapping):
        items = [items]
    texts = []
    for item in items:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, Mapping) and isinstance(item.get("text"), str):
            texts.append(item["text"])
    return "\n".join(texts)


_JSON_LIST_START = re.compile(r'\[\s*[{"]')
_CONTENT_REPR_START = re.compile(r"\s*\[?\s*\w*Content\(\s*text=")
_CONTENT_REPR_TEXT = re.compile(r"text=(?P<quote>'|\")")


def _decode_content_repr(text: str) -> tuple[str, Content]:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _salvage_content_repr(text)
    texts = [
        keyword.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for keyword in node.keywords
        if keyword.arg == "text" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str)
    ]
    if not texts:
        return text, Content.MALFORMED
    return "\n".join(texts), Content.OK


def _salvage_content_repr(text: str) -> tuple[str, Content]:
    """A repr cut by a length limit: keep the text literal up to its closing quote or the cut."""
    match = _CONTENT_REPR_TEXT.search(text)
    if match is None:
        return text, Content.MALFORMED
    quote = match.group("quote")
    body = _literal_body(text[match.end():], quote)
    import ast  # (see _decode_content_repr)

    try:
        decoded = ast.literal_eval(quote + body + quote)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        decoded = body
    return (decoded if isinstance(decoded, str) else body), Content.TRUNCATED


def _literal_body(rest: str, quote: str) -> str:
    """The body of a Python string literal up to its closing quote, or to the cut."""
    escaped = False
    for index, char in enumerate(rest):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == quote:
            return rest[:index]
    return _PARTIAL_ESCAPE.sub("", rest)


# --- model output ---------------------------------------------------------------------------------


@dataclass(slots=True)
class Output:
    """What one model call produced, gathered part by part, and how readable it was."""

    texts: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    tool_calls: list[RequestedToolCall] = field(default_factory=list)
    content: Content = Content.OK

    def note(self, content: Content) -> None:
        if _CONTENT_SEVERITY[content] > _CONTENT_SEVERITY[self.content]:  # the worst state wins
            self.content = content

    def add_text(self, value: Any) -> None:
        text = as_text(value)
        if text:
            self.texts.append(text)

    def add_reasoning(self, value: Any) -> None:
        text, content = decode_reasoning(value)
        self.note(content)
        if text:
            self.reasoning.append(text)

    def add_tool_call(self, name: Any, arguments: Any) -> None:
        canonical, content = read_arguments(arguments)
        if content is Content.TRUNCATED:
            self.note(content)
        self.tool_calls.append(RequestedToolCall(as_name(name), canonical))


def model_call(span: Any, output: Output | None) -> ModelCall:
    """Assemble a ModelCall. `output` None means no output attribute was found at all."""
    status = status_of(span)
    chunks, chunk_events = read_chunks(span)
    if output is None:
        # A failed call produced nothing, whatever the capture setting: that is known, not absent.
        output = Output(content=Content.OK if status is Status.ERROR else Content.ABSENT)
    text, reasoning = "\n".join(output.texts), "\n".join(output.reasoning)
    judged = READ_LIMITS.judged_chars
    chunks, unjudged = _last_chunks(chunks, judged)
    if len(text) > judged or len(reasoning) > judged:  # read whole, judged by its last characters
        unjudged += max(0, len(text) - judged) + max(0, len(reasoning) - judged)
        text, reasoning = _last(text, judged), _last(reasoning, judged)
    return ModelCall(text, reasoning, tuple(output.tool_calls), output.content, chunks, chunk_events,
                     dropped_events_of(span), status, unjudged)


def _last_chunks(chunks: tuple[Chunk, ...], chars: int) -> tuple[tuple[Chunk, ...], int]:
    """The recorded chunks that hold each kind's last `chars` characters (the first of them cut to
    its end, and saying how many characters of its kind came before it), and how many were left out
    in all. Replaying recorded chunks is judging a call's text and reasoning delta by delta: bounded
    by the same limit as judging them whole, whatever the span's events carry."""
    totals: dict[str, int] = {}
    for chunk in chunks:
        totals[chunk.kind] = totals.get(chunk.kind, 0) + len(chunk.text)
    if all(total <= chars for total in totals.values()):
        return chunks, 0
    room = dict.fromkeys(totals, chars)
    kept: list[Chunk] = []
    for chunk in reversed(chunks):
        left = room[chunk.kind]
        if left > 0:
            text = chunk.text if len(chunk.text) <= left else chunk.text[-left:]
            room[chunk.kind] = left - len(text)
            kept.append(Chunk(text, chunk.kind))
    kept.reverse()
    skipped = {kind: total - (chars - room[kind]) for kind, total in totals.items()}
    left_out = sum(skipped.values())
    for chunk in kept:
        chunk.skipped, skipped[chunk.kind] = skipped[chunk.kind], 0  # on the first of its kind only
    return tuple(kept), left_out


def _last(text: str, chars: int) -> str:
    """The last `chars` characters of `text`; when they begin inside fenced code, that code's fence
    first, so that what is judged knows it starts in code (the cut dropped the opening line)."""
    if len(text) <= chars:
        return text
    fence = open_fence(text[:-chars])
    return f"{fence}\n{text[-chars:]}" if fence else text[-chars:]


# --- model usage ----------------------------------------------------------------------------------


@dataclass(slots=True, frozen=True)
class UsageKeys:
    """Where a convention writes a model call's usage: each fact's attribute keys, preferred first."""

    model: tuple[str, ...]
    output_tokens: tuple[str, ...]
    reasoning_tokens: tuple[str, ...]
    finish_reasons: tuple[str, ...]
    input_tokens: tuple[str, ...] = ()


def model_name_of(span: Any, keys: UsageKeys) -> str | None:
    return as_name(first_present(attributes_of(span), *keys.model))


def model_usage_of(span: Any, keys: UsageKeys) -> ModelUsage:
    attributes = attributes_of(span)
    return ModelUsage(
        model_name_of(span, keys),
        first_int(attributes, *keys.output_tokens),
        first_int(attributes, *keys.reasoning_tokens),
        as_str_tuple(first_present(attributes, *keys.finish_reasons)),
        first_int(attributes, *keys.input_tokens),
    )
