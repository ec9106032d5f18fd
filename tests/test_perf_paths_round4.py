"""Round 4 of the per-span shortcuts: each reaches the same answer as the long way it replaces.

- model output left unread shares one empty, immutable `Output` (`_values.UNREAD_OUTPUT`); output
  is read whole, or left unread, as the floor's rule says;
- `classify_marked` looks a GenAI operation's two classifications up at once and makes the
  OpenLLMetry test inline;
- the engine binds its open-span pop, live-trip dict and agent-state lookup once.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otelguard import records
from otelguard.conventions import OutputFloor, classify_marked, genai, openinference, openllmetry, read
from otelguard.conventions._values import UNREAD_OUTPUT, Output, model_call
from otelguard.engine import GuardEngine
from otelguard.metrics import GuardMetrics
from otelguard.records import Content, SpanKind, SpanView, Status

_LONG_OUTPUT = json.dumps([{"role": "assistant", "parts": [
    {"type": "thinking", "content": "r" * 3000}, {"type": "text", "content": "t" * 300},
    {"type": "tool_call", "id": "c", "name": "f", "arguments": {"b": 1, "a": 2}}]}])
_SHORT_OUTPUT = json.dumps([{"role": "assistant", "parts": [
    {"type": "thinking", "content": "r" * 40}, {"type": "text", "content": "t" * 30}]}])

_FLOORS = {"usual": OutputFloor(256, 2048), "lowest": OutputFloor(1, 1), "none reachable": OutputFloor(float("inf"), float("inf"))}
_READ_LONG = ("t" * 300, "r" * 3000, 1, Content.OK)
_READ_SHORT = ("t" * 30, "r" * 40, 0, Content.OK)
_UNREAD = ("", "", 0, Content.UNREAD)
# (text, reasoning, tool calls, content) of each output under each floor, as the floor's rule says:
# output is read whole when its text or reasoning could reach the floor, else left unread (shared).
_EXPECTED = {
    _LONG_OUTPUT: {"usual": _READ_LONG, "lowest": _READ_LONG, "none reachable": _UNREAD},
    _SHORT_OUTPUT: {"usual": _UNREAD, "lowest": _READ_SHORT, "none reachable": _UNREAD},
    "[{": dict.fromkeys(_FLOORS, _UNREAD),  # cut JSON, salvaged as an empty message: no text to reach it
    "{}": dict.fromkeys(_FLOORS, _UNREAD),  # a message with no parts: nothing that reaches it
}


@pytest.mark.parametrize("messages", [_LONG_OUTPUT, _SHORT_OUTPUT, "[{", None, "{}"])
@pytest.mark.parametrize("status", [Status.UNSET, Status.ERROR, Status.OK])
@pytest.mark.parametrize("floor", list(_FLOORS))
def test_a_record_of_output_read_or_left_unread_under_a_floor(messages, status, floor):
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    if messages is not None:
        attributes["gen_ai.output.messages"] = messages
    span = SpanView("chat m", 1, 2, 3, attributes, status=status)
    record = genai.read_model(span, _FLOORS[floor])
    if messages is None:  # no output attribute: not captured, unless the call failed (nothing produced)
        expected = ("", "", 0, Content.OK if status is Status.ERROR else Content.ABSENT)
    else:
        expected = _EXPECTED[messages][floor]
    assert (record.text, record.reasoning, len(record.tool_calls), record.output_content) == expected
    assert record.status is status and (record.chunks, record.chunk_events, record.dropped_events) == ((), 0, 0)
    assert read(span, genai.classification(SpanKind.MODEL), output_floor=_FLOORS[floor]) == record


def test_unread_output_is_shared_and_cannot_change():
    floor = OutputFloor(256, 2048)
    first = genai.read_output_messages(_SHORT_OUTPUT, floor)
    second = genai.read_output_messages(json.loads(_SHORT_OUTPUT), floor)
    assert first is UNREAD_OUTPUT and second is UNREAD_OUTPUT
    assert (list(first.texts), list(first.reasoning), list(first.tool_calls), first.content) == \
        ([], [], [], Content.UNREAD)
    for change in (lambda: first.add_text("x"), lambda: first.add_reasoning(None),
                   lambda: first.add_tool_call("t", "{}"), lambda: first.note(Content.ABSENT)):
        with pytest.raises(TypeError):
            change()
    assert first.content is Content.UNREAD and not first.texts and not first.tool_calls
    span = SpanView("chat m", 1, 2, 3, {"gen_ai.output.messages": _SHORT_OUTPUT})
    assert model_call(span, UNREAD_OUTPUT) == model_call(span, Output(content=Content.UNREAD))
    # Long output is still read into a fresh Output.
    assert genai.read_output_messages(_LONG_OUTPUT, floor) is not UNREAD_OUTPUT


def _spans_points(reader: InMemoryMetricReader) -> dict[tuple, int]:
    points: dict[tuple, int] = {}
    data = reader.get_metrics_data()
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name == "otelguard.spans":
                    for point in metric.data.data_points:
                        points[tuple(sorted(point.attributes.items()))] = point.value
    return points


def test_span_counts_are_exact_across_threads():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    metrics = GuardMetrics(provider)
    classifications = [genai.classification(SpanKind.MODEL), genai.classification(SpanKind.TOOL),
                       openllmetry.classification(SpanKind.MODEL), openinference.classify_span_kind("AGENT")]
    per_thread = 5000

    def work(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(per_thread):
            c = classifications[rng.randrange(len(classifications))]
            metrics.span(c.kind, c.convention)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The long way: count what each thread did, by label.
    expected: dict[tuple, int] = {}
    for seed in range(8):
        rng = random.Random(seed)
        for _ in range(per_thread):
            c = classifications[rng.randrange(len(classifications))]
            key = (("otelguard.convention", c.convention), ("otelguard.span.kind", str(c.kind)))
            expected[key] = expected.get(key, 0) + 1
    assert _spans_points(reader) == expected
    assert sum(metrics.span_counts().values()) == 8 * per_thread
    provider.shutdown()


def test_span_returns_the_count_before_it():
    """The processor times every PROCESSING_SAMPLE_EVERY-th span by this number: 0, 1, 2, ... per
    kind and convention."""
    metrics = GuardMetrics(MeterProvider())
    tool, model = genai.classification(SpanKind.TOOL), genai.classification(SpanKind.MODEL)
    assert [metrics.span(tool.kind, tool.convention) for _ in range(3)] == [0, 1, 2]
    assert metrics.span(model.kind, model.convention) == 0
    assert metrics.span_counts() == {("tool", "genai"): 3, ("model", "genai"): 1}


def reference_is_openllmetry(name: Any, attributes: Mapping[str, Any]) -> bool:
    """OpenLLMetry's marks, tested the plain way: a set test of its keys, then the name."""
    if not frozenset(openllmetry.OWN_MARKER_KEYS).isdisjoint(attributes) and any(
        attributes.get(key) is not None for key in openllmetry.OWN_MARKER_KEYS
    ):
        return True
    return isinstance(name, str) and " " not in name and name.endswith(openllmetry.NAME_SUFFIXES)


def reference_classify_marked(name: str, attributes: Mapping[str, Any]):
    """classify_marked as it was before round 4, its OpenLLMetry test and its spans known by name written
    out the plain way (no call into the code under test)."""
    get = attributes.get
    span_kind = get("openinference.span.kind")
    if span_kind is not None:
        return openinference.classify_span_kind(span_kind)
    operation = get("gen_ai.operation.name")
    if operation is not None:
        kind = genai.OPERATION_KINDS.get(operation) if isinstance(operation, str) else None
        if kind is None:
            return None
        if reference_is_openllmetry(name, attributes):
            return openllmetry.classification(kind)
        return genai.classification(kind)
    traceloop_kind = get("traceloop.span.kind")
    if traceloop_kind is not None:
        return openllmetry.classify_span_kind(traceloop_kind)
    request_type = get("llm.request.type")
    if request_type is not None:
        return openllmetry.classify_request_type(request_type)
    # Spans known by name: OpenLLMetry's Responses span, and pydantic-ai v2's agent and tool spans when
    # they carry a key of their own (a user's span called "agent run" is none of ours).
    if name == "openai.response":
        return openllmetry.classification(SpanKind.MODEL)
    if name == "agent run" and (get("agent_name") is not None or get("gen_ai.agent.name") is not None):
        return genai.classification(SpanKind.AGENT)
    if name == "running tool" and (get("gen_ai.tool.name") is not None or get("tool_arguments") is not None):
        return genai.classification(SpanKind.TOOL)
    return None


class _StrSubclass(str):
    pass


@pytest.mark.parametrize("seed", range(20))
def test_classify_marked_matches_the_long_way(seed):
    rng = random.Random(seed)
    operations = ["chat", "invoke_agent", "execute_tool", "text_completion", "generate_content", "embeddings",
                  "", 3, None, _StrSubclass("chat"), ("chat",)]
    names = ["chat gpt-4o", "openai.chat", "x.tool", "my.agent", "a b.chat", "", "agent run", "running tool",
             "openai.response", "x", "thing.completion", "y.response", "my.tool", None]
    optional = {
        "llm.request.type": ["chat", "completion", "embedding", None],
        "traceloop.span.kind": ["tool", "agent", "workflow", None],
        "llm.is_streaming": [False, True, None],
        "gen_ai.openai.api_base": ["https://x", None],
        "openinference.span.kind": ["LLM", "chain", 7, None],
        "gen_ai.agent.name": ["a", None],
        "gen_ai.tool.name": ["f", None],
        "agent_name": ["a", None],  # the other keys that mark pydantic-ai v2's named spans
        "tool_arguments": ['{"a": 1}', None],
    }
    for _ in range(400):
        attributes: dict[str, Any] = {}
        if rng.random() < 0.85:
            attributes["gen_ai.operation.name"] = rng.choice(operations)
        for key, values in optional.items():
            if rng.random() < 0.25:
                attributes[key] = rng.choice(values)
        name = rng.choice(names)
        assert classify_marked(name, attributes) is reference_classify_marked(name, attributes), (name, attributes)


def test_engine_shows_a_live_trip_once():
    engine = GuardEngine({"guards": [{"id": "thinking-loop-guard"}]}, full_records=False)
    assert not len(engine._live_trips)
    verdict = records.Verdict("thinking-loop-guard", "repetitive_output", "cycle", "none", stream_chars=5)
    engine.record_stream_trip(42, verdict)
    span = SpanView("chat m", 1, 42, None, {"gen_ai.operation.name": "chat"})
    judged = engine.span_ended(span, classification=genai.classification(SpanKind.MODEL))
    assert judged.stream_verdict is verdict
    assert not len(engine._live_trips)
    assert engine.span_ended(SpanView("chat m", 1, 43, None, {"gen_ai.operation.name": "chat"}),
                             classification=genai.classification(SpanKind.MODEL)).stream_verdict is None


def _random_part(rng: random.Random) -> Any:
    choice = rng.randrange(9)
    if choice == 0:
        return "s" * rng.randrange(0, 40)
    if choice == 1:
        return 5
    kind = rng.choice(["text", "thinking", "reasoning", "reasoning_text", "refusal", None, "tool_call", "blob", 3,
                       "omit"])
    part: dict[str, Any] = {} if kind == "omit" else {"type": kind}  # "omit": a part with no type at all
    if rng.random() < 0.8:
        part["content"] = rng.choice(["c" * rng.randrange(0, 60), None, 7, ["x"], {"text": "y"}])
    return part


def _random_messages(rng: random.Random) -> Any:
    messages = []
    for _ in range(rng.randrange(0, 4)):
        shape = rng.randrange(6)
        if shape == 0:
            messages.append("not a message")
        elif shape == 1:
            messages.append({"role": "assistant", "content": rng.choice(["x" * rng.randrange(50), 3, None])})
        elif shape == 2:
            messages.append({"role": "assistant"})
        else:
            parts = [_random_part(rng) for _ in range(rng.randrange(0, 5))]
            messages.append({"role": "assistant", "parts": parts if shape != 3 else tuple(parts)})
    return messages if rng.random() < 0.9 else (messages[0] if messages else {})


@pytest.mark.parametrize("seed", range(20))
def test_output_left_unread_could_not_have_reached_the_floor(seed):
    """Whatever `_may_reach` lets go unread, read in full, stays at or under the floor."""
    rng = random.Random(seed)
    floors = [OutputFloor(0, 0), OutputFloor(20, 30), OutputFloor(60, 10), OutputFloor(256, 2048)]
    unread = 0
    for _ in range(300):
        decoded = _random_messages(rng)
        full = genai.read_output_messages(decoded)
        for floor in floors:
            if not genai._may_reach(decoded, floor):
                unread += 1
                text, reasoning = "\n".join(full.texts), "\n".join(full.reasoning)
                assert len(text) <= floor.text_chars and len(reasoning) <= floor.reasoning_chars, decoded
    assert unread  # the property was exercised


def test_engine_open_span_bound_trims_the_oldest():
    evicted: list[tuple] = []
    engine = GuardEngine(max_open_spans=3, on_evict=lambda what, reason, n: evicted.append((what, reason, n)))
    agent_span = SpanView("invoke_agent a", 1, 1, None, {"gen_ai.operation.name": "invoke_agent"})
    engine.span_started(agent_span, genai.classification(SpanKind.AGENT))
    for index in range(2, 8):
        span = SpanView("chat m", 1, index, index - 1, {"gen_ai.operation.name": "chat"})  # each inside the last
        engine.span_started(span, genai.classification(SpanKind.MODEL))
        assert len(engine.open_span_ids) <= 3
    assert sum(n for what, reason, n in evicted if what == "span") == 4
    assert list(engine.open_span_ids) == [5, 6, 7]
