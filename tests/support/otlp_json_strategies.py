"""Hypothesis strategies for OTLP/JSON trace requests near the shape exporters write (every field of
its OTLP type, in any order, now and then one odd), shared by the tests that hold two readers of
them to each other; and `comparable`, a span or read problem as text that compares exactly."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import strategies as st

from otelguard.otlp.json_spans import ReadProblem
from otelguard.model.records import SpanView


def comparable(item: SpanView | ReadProblem) -> str:
    """A span or problem as text that compares equal when they are the same (NaN included, attribute
    order included)."""
    if isinstance(item, ReadProblem):
        return repr(item)
    fields = {field.name: getattr(item, field.name) for field in dataclasses.fields(SpanView)
              if field.name not in ("attributes", "events")}
    events = [(event.name, list(event.attributes.items()), event.time_ns) for event in item.events]
    return repr((fields, list(item.attributes.items()), events))


TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"

JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
ANY_VALUE = st.one_of(
    st.builds(lambda text: {"stringValue": text}, st.text(max_size=30)),
    st.builds(lambda number: {"intValue": str(number)}, st.integers(min_value=-(2**63), max_value=2**63)),
    st.builds(lambda number: {"intValue": number}, st.integers(min_value=-(2**40), max_value=2**40)),
    # JSON numbers past int64 (out of intValue's range: the value is unreadable).
    st.builds(lambda number: {"intValue": number}, st.integers(min_value=2**63 - 2, max_value=2**65)
              | st.integers(min_value=-(2**65), max_value=-(2**63) + 1)),
    st.builds(lambda flag: {"boolValue": flag}, st.booleans()),
    st.builds(lambda number: {"doubleValue": number}, st.floats(allow_nan=False, allow_infinity=False)),
    st.sampled_from([{"doubleValue": "NaN"}, {"doubleValue": "Infinity"}, {"intValue": "12x"}, {"intValue": " 7 "},
                     {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}]}},
                     {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}},
                     {"bytesValue": "AAEC"}, {"bytesValue": "not base64!"}, {}, {"string_value": "snake"},
                     {"stringValue": None, "intValue": "3"}, {"stringValue": "a", "intValue": "3"}]),
    st.dictionaries(st.sampled_from(["stringValue", "intValue", "doubleValue", "boolValue", "arrayValue",
                                     "kvlistValue", "bytesValue", "other"]), JSON_VALUE, max_size=2),
)
KEY = st.sampled_from(["gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.output.messages", "otelguard.verdict",
                       "a", "b"]) | st.text(max_size=6)
OUTPUT_MESSAGES = st.sampled_from([
    [{"role": "assistant", "parts": [{"type": "thinking", "content": "plan the call"},
                                     {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"q": "x"}}]}],
    [{"role": "assistant", "parts": [{"type": "text", "content": "done"}], "finish_reason": "stop"}],
    [{"role": "assistant", "parts": [{"type": "reasoning"}]}],
    {"parts": 5},
]).map(json.dumps) | st.text(max_size=20)
GUARDED_ATTRIBUTE = st.one_of(  # what the guard reads, with the values it looks for
    st.builds(lambda op: {"key": "gen_ai.operation.name", "value": {"stringValue": op}},
              st.sampled_from(["chat", "execute_tool", "invoke_agent", "other"])),
    st.builds(lambda text: {"key": "gen_ai.output.messages", "value": {"stringValue": text}}, OUTPUT_MESSAGES),
    st.builds(lambda args: {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}},
              st.sampled_from(['{"q":"Paris"}', '{"q":', "[]", ""])),
    st.builds(lambda name: {"key": "gen_ai.tool.name", "value": {"stringValue": name}}, st.sampled_from(["t", ""])),
    st.builds(lambda n: {"key": "gen_ai.usage.output_tokens", "value": {"intValue": n}}, st.sampled_from(["7", "x"])),
)
ATTRIBUTE = (st.fixed_dictionaries({"key": KEY, "value": ANY_VALUE}) | st.fixed_dictionaries({"key": KEY})
             | GUARDED_ATTRIBUTE)
HEX_ID = st.sampled_from([SPAN_ID, PARENT_ID, "0" * 16, "", "zz" * 8, "AAECAwQFBgc=", SPAN_ID.upper()])
TIME = st.sampled_from(["1796026817428896716", 1796026817428896716, "0", "-5", "12.5", "x", None, 17.0, True])
STATUS = st.sampled_from([{}, {"code": 2, "message": "boom"}, {"code": "STATUS_CODE_ERROR"}, {"code": " 1 "},
                          {"code": "²"}, {"message": 5}, {"code": None}, {"code": 1, "other": 1}, None, 3])
COUNT = st.sampled_from([None, 0, 3, -1, "2", 2.0, True])
EVENT = st.fixed_dictionaries({"name": st.sampled_from(["otelguard.chunk", "exception", 5]),
                               "timeUnixNano": TIME, "attributes": st.lists(ATTRIBUTE, max_size=2)})


@st.composite
def usual_spans(draw: st.DrawFn) -> dict[str, Any]:
    """Spans near the usual shape: fields of their OTLP types, in any order, now and then one odd."""
    span: dict[str, Any] = {
        "traceId": draw(st.sampled_from([TRACE_ID] * 6 + ["0" * 32, "W47/95gDgQPSabYzgT/GDA==", 5])),
        "spanId": draw(st.sampled_from([SPAN_ID, SPAN_ID, SPAN_ID, PARENT_ID])),
        "name": draw(st.sampled_from(["chat m", "execute_tool get_weather", "invoke_agent a", "POST"])),
    }
    usual = {
        "parentSpanId": st.sampled_from([PARENT_ID, PARENT_ID, ""]) | st.none(),
        "kind": st.integers(0, 5),
        "startTimeUnixNano": st.sampled_from(["1796026817428896716", 1796026817428896716, "0"]),
        "endTimeUnixNano": st.sampled_from(["1796026817441393605", None]),
        "attributes": st.lists(ATTRIBUTE, max_size=6),
        "events": st.just([]) | st.lists(EVENT, max_size=2),
        "status": st.sampled_from([{}, {"code": 2, "message": "boom"}, {"code": "STATUS_CODE_ERROR"}, {"code": 1}]),
        "droppedAttributesCount": st.sampled_from([0, 3]),
        "droppedEventsCount": st.sampled_from([0, 2]),
        "flags": st.just(256),
        "traceState": st.just(""),
        "links": st.just([]),
    }
    odd = {
        "parentSpanId": HEX_ID,
        "startTimeUnixNano": TIME,
        "endTimeUnixNano": TIME,
        "attributes": st.none() | st.just({}) | st.just([{"key": "a", "value": {"stringValue": "1"}}] * 2),
        "events": st.none(),
        "status": STATUS,
        "droppedAttributesCount": COUNT,
        "droppedEventsCount": COUNT,
        "dropped_attributes_count": COUNT,
        "parent_span_id": HEX_ID,
        "trace_id": st.just(TRACE_ID),
        "end_time_unix_nano": TIME,
        "unknownField": JSON_VALUE,
        "name": st.sampled_from([7, None, ""]),
    }
    for field in draw(st.lists(st.sampled_from(sorted(usual)), unique=True, max_size=len(usual))):
        span[field] = draw(usual[field])
    if draw(st.integers(0, 4)) == 0:
        field = draw(st.sampled_from(sorted(odd)))
        span[field] = draw(odd[field])
    order = draw(st.permutations(sorted(span)))
    return {field: span[field] for field in order}


# Compact, as exporters write it; now and then spaced inside the line's objects, which the schema
# must read alike.
COMPACT, SPACED = (",", ":"), (", ", ": ")
SEPARATORS = st.sampled_from([COMPACT, SPACED])
SCOPE = st.sampled_from([{"name": "pydantic-ai", "version": "1"}, {"name": 5}, {}, None, "scope", {"name": None}])


@st.composite
def requests(draw: st.DrawFn) -> str:
    resources = []
    for _ in range(draw(st.integers(1, 2))):
        scopes = []
        for _ in range(draw(st.integers(0, 2))):
            scope_spans: dict[str, Any] = {"spans": draw(st.lists(usual_spans(), max_size=3))}
            scope = draw(SCOPE)
            if scope is not None:
                scope_spans["scope"] = scope
            if draw(st.booleans()):
                scope_spans["schemaUrl"] = "https://opentelemetry.io/schemas/1.26.0"
            scopes.append(scope_spans)
        resource: dict[str, Any] = {"scopeSpans": scopes}
        if draw(st.booleans()):
            resource["resource"] = {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}
        resources.append(resource)
    document: Any = {"resourceSpans": resources}
    # A mutation anywhere in the request: a field of the wrong type, a snake_case twin, an extra key.
    mutation = draw(st.sampled_from(["none"] * 8 + ["resource_spans", "scope_spans", "resourceSpans", "extra"]))
    if mutation == "resource_spans":
        document = {"resource_spans": resources}
    elif mutation == "scope_spans" and resources:
        resources[0]["scope_spans"] = resources[0].pop("scopeSpans")
    elif mutation == "resourceSpans":
        document = {"resourceSpans": draw(JSON_VALUE)}
    elif mutation == "extra":
        document["resourceLogs"] = []
    return json.dumps(document, allow_nan=False, separators=draw(SEPARATORS))
