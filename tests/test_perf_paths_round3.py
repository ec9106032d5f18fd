"""Round 3 of the per-span shortcuts: each reaches the same answer as the long way it replaces.

- the processor classifies with `classify_marked`, skipping the marker test it has already made;
- OpenLLMetry's marker keys are looked up one by one instead of a set test first (now inline in
  `classify_marked`, held to the set test by test_perf_paths_round4);
- a GenAI model span's facts (model name, token counts, finish reasons) are read as written;
- the per-span paths compare against enum members bound once (`records.AGENT_KIND`, ...);
- `BoundedMap` touches its newest entry without a lookup (agent state: LRU order, idle times, evictions
  and their reports as before; an evicted agent is made anew);
- the processor's span view reads the SDK status and scope fields instead of their properties.
"""

from __future__ import annotations

import json
from itertools import takewhile

import pytest

from otelguard import records
from otelguard.conventions import (
    MARKER_KEYS,
    NAMED_SPANS,
    classify,
    classify_marked,
    genai,
    model_name,
    model_usage,
)
from otelguard.records import (
    Classification,
    Content,
    ModelUsage,
    SpanKind,
    SpanView,
    Status,
)

_OUTPUT = json.dumps([{"role": "assistant", "parts": [
    {"type": "thinking", "content": "r" * 40}, {"type": "text", "content": "t" * 30},
    {"type": "tool_call", "id": "c", "name": "f", "arguments": {"b": 1, "a": 2}}]}])

SPANS = [  # (name, attributes, (kind, convention) or None)
    ("chat gpt-4o", {"gen_ai.operation.name": "chat", "gen_ai.system": "openai"}, ("model", "genai")),
    ("invoke_agent weather", {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}, ("agent", "genai")),
    ("execute_tool f", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"}, ("tool", "genai")),
    ("execute_tool f", {"gen_ai.operation.name": "bogus"}, None),
    ("execute_tool f", {"gen_ai.operation.name": 3}, None),
    ("openai.chat", {"gen_ai.operation.name": "chat"}, ("model", "openllmetry")),  # OpenLLMetry by its name
    ("chat x", {"gen_ai.operation.name": "chat", "llm.request.type": "chat"}, ("model", "openllmetry")),
    ("chat x", {"gen_ai.operation.name": "chat", "llm.is_streaming": False}, ("model", "genai")),
    ("chat x", {"gen_ai.operation.name": "chat", "gen_ai.openai.api_base": "https://x"}, ("model", "openllmetry")),
    ("chat x", {"gen_ai.operation.name": "chat", "traceloop.span.kind": None, "llm.request.type": None}, ("model", "genai")),
    ("x", {"openinference.span.kind": "LLM", "gen_ai.operation.name": "invoke_agent"}, ("model", "openinference")),
    ("x", {"openinference.span.kind": "chain"}, None),
    ("x", {"openinference.span.kind": 7}, None),
    ("x", {"traceloop.span.kind": "tool"}, ("tool", "openllmetry")),
    ("x", {"traceloop.span.kind": "workflow"}, None),
    ("x", {"llm.request.type": "completion"}, ("model", "openllmetry")),
    ("x", {"llm.request.type": "embedding"}, None),
    ("agent run", {"agent_name": "a"}, ("agent", "genai")),
    ("agent run", {"gen_ai.agent.name": None}, None),
    ("running tool", {"gen_ai.tool.name": "f"}, ("tool", "genai")),
    ("openai.response", {}, ("model", "openllmetry")),
    ("x", {"gen_ai.operation.name": None, "traceloop.span.kind": "agent"}, ("agent", "openllmetry")),
]


@pytest.mark.parametrize(("name", "attributes", "expected"), SPANS)
def test_classify_marked_classifies_every_marked_span(name, attributes, expected):
    """The shortcut the processor takes (its own marker test already made) gives each span its kind
    and convention, and so does `classify`, which makes the marker test itself."""
    assert not MARKER_KEYS.isdisjoint(attributes) or name in NAMED_SPANS
    found = classify_marked(name, attributes)
    assert (None if found is None else (found.kind.value, found.convention)) == expected
    assert classify(name, attributes) == found


def test_classify_still_rejects_what_is_not_a_mapping():
    assert classify("chat", None) is None  # type: ignore[arg-type]
    assert classify("chat", ["gen_ai.operation.name"]) is None  # type: ignore[arg-type]
    assert classify("chat x", {"http.method": "GET"}) is None


MODEL_USAGE = [
    ({"gen_ai.request.model": "m", "gen_ai.usage.output_tokens": 41, "gen_ai.output.messages": _OUTPUT,
      "gen_ai.response.finish_reasons": ("tool_call",)}, ModelUsage("m", 41, None, ("tool_call",))),
    ({"gen_ai.response.model": " r ", "gen_ai.usage.completion_tokens": "12", "gen_ai.usage.reasoning_tokens": 3.0},
     ModelUsage("r", 12, 3)),
    ({"gen_ai.request.model": None, "gen_ai.response.model": 5, "gen_ai.usage.output_tokens": True,
      "gen_ai.usage.completion_tokens": 9, "llm.usage.reasoning_tokens": "x"}, ModelUsage("5", 9, None)),
    # An empty model name is the name given (unset): the response model does not stand in for it.
    ({"gen_ai.request.model": "", "gen_ai.response.model": "r", "gen_ai.usage.details.reasoning_tokens": float("nan"),
      "gen_ai.output.messages": "[{", "gen_ai.response.finish_reasons": '["stop", "length"]'},
     ModelUsage(None, None, None, ("stop", "length"))),
    ({}, ModelUsage()),
]


@pytest.mark.parametrize(("attributes", "expected"), MODEL_USAGE)
def test_model_usage_read_as_written(attributes, expected):
    span = SpanView("chat m", 1, 2, 3, attributes, status=Status.UNSET)
    assert model_usage(span, genai.classification(SpanKind.MODEL)) == expected


@pytest.mark.parametrize(("convention", "attributes", "expected"), [
    ("openinference", {"llm.model_name": "oi", "gen_ai.request.model": "g"}, "oi"),
    ("openinference", {"llm.model_name": " ", "gen_ai.response.model": "r"}, None),  # a blank name is the name
    ("openinference", {"llm.model_name": 7}, "7"),
    ("genai", {"llm.model_name": "oi", "gen_ai.request.model": "g"}, "g"),
    ("genai", {"gen_ai.request.model": ("m",)}, None),
    ("openllmetry", {"llm.model_name": "oi", "gen_ai.response.model": "r"}, "r"),  # GenAI's keys
])
def test_model_name_reads_each_conventions_keys(convention, attributes, expected):
    """The analyzer's shortcut reads the model alone, from the convention's own keys: the name
    `model_usage` reads too."""
    span = SpanView("chat m", 1, 2, 3, attributes)
    classification = Classification(SpanKind.MODEL, convention)
    assert model_name(span, classification) == expected == model_usage(span, classification).model


def test_bound_enum_members_are_the_members():
    assert records.AGENT_KIND is SpanKind.AGENT and records.MODEL_KIND is SpanKind.MODEL
    assert records.TOOL_KIND is SpanKind.TOOL
    assert records.CONTENT_OK is Content.OK and records.CONTENT_UNREAD is Content.UNREAD
    assert records.STATUS_UNSET is Status.UNSET and records.STATUS_ERROR is Status.ERROR


# --- BoundedMap: the newest entry is touched without a lookup -----------------------------------------
class ReferenceBoundedMap:
    """The map's rules said as plainly as can be: a list of [key, value, last seen], least recently
    touched first; a touch moves an entry last; an insert evicts the oldest past the bound, then, at
    most once a sweep interval, the idle ones at the front."""

    def __init__(self, max_items, idle_ttl_s=None, *, clock, on_evict=None):
        self.entries, self._max_items, self._ttl, self._clock = [], max_items, idle_ttl_s, clock
        self._on_evict, self._next_sweep = on_evict, 0.0

    def _take(self, key):
        found = [entry for entry in self.entries if entry[0] == key]
        for entry in found:
            self.entries.remove(entry)
        return found[0] if found else None

    def get(self, key):
        entry = self._take(key)
        if entry is None:
            return None
        self.entries.append([key, entry[1], self._clock()])
        return entry[1]

    def get_or_create(self, key, factory):
        now = self._clock()
        entry = self._take(key)
        if entry is not None:
            self.entries.append([key, entry[1], now])
            return entry[1]
        value = factory()
        self.entries.append([key, value, now])
        self._evict(now)
        return value

    def put(self, key, value):
        now = self._clock()
        self._take(key)
        self.entries.append([key, value, now])
        self._evict(now)

    def pop(self, key):
        entry = self._take(key)
        return None if entry is None else entry[1]

    def clear(self):
        self.entries = []

    def _evict(self, now):
        reports = []
        over = len(self.entries) - self._max_items
        if over > 0:
            del self.entries[:over]
            reports.append(("capacity", over))
        if self._ttl is not None and now >= self._next_sweep:
            self._next_sweep = now + min(1.0, self._ttl)
            idle = len(list(takewhile(lambda entry: now - entry[2] >= self._ttl, self.entries)))
            if idle:
                del self.entries[:idle]
                reports.append(("idle", idle))
        for reason, count in reports:
            self._on_evict(reason, count)


def snapshot(bounded) -> list:
    return [(key, entry[0], entry[1]) for key, entry in bounded._items.items()]


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(("max_items", "ttl"), [(1, None), (3, None), (4, 2.5), (2, 0.5), (50, 1.0)])
def test_bounded_map_touches_evicts_and_reports_as_before(seed, max_items, ttl):
    import random

    from otelguard.state import BoundedMap

    rng = random.Random(seed)
    now = [0.0]

    def clock():
        return now[0]

    reports, reference_reports = [], []
    bounded = BoundedMap(max_items, ttl, clock=clock, on_evict=lambda *report: reports.append(report))
    reference = ReferenceBoundedMap(max_items, ttl, clock=clock, on_evict=lambda *r: reference_reports.append(r))
    # Keys as the engine makes them: equal strings that are not always the same object.
    keys = [f"agent-{i}" for i in range(6)]
    for step in range(300):
        now[0] += rng.choice((0.0, 0.0, 0.1, 0.4, 1.0, 3.0, -0.2))  # a clock may even step back
        key = rng.choice(keys)
        if rng.random() < 0.3:
            key = "".join(key)  # an equal key, not the same object
        operation = rng.random()
        if operation < 0.4:
            assert bounded.get_or_create(key, lambda made=step: made) == reference.get_or_create(
                key, lambda made=step: made)
        elif operation < 0.6:
            assert bounded.get(key) == reference.get(key)
        elif operation < 0.8:
            bounded.put(key, -step)
            reference.put(key, -step)
        elif operation < 0.97:
            assert bounded.pop(key) == reference.pop(key)
        else:
            bounded.clear()
            reference.clear()
        assert snapshot(bounded) == [tuple(entry) for entry in reference.entries]
        assert reports == reference_reports


def test_an_evicted_agent_is_made_anew_not_resurrected():
    from otelguard.state import BoundedMap

    now = [0.0]
    bounded = BoundedMap(2, 10.0, clock=lambda: now[0])
    first = bounded.get_or_create("a", object)
    assert bounded.get_or_create("a", object) is first  # the newest, touched without a lookup
    bounded.put("b", 1)
    bounded.put("c", 2)  # capacity: "a" goes
    assert bounded.get("a") is None
    assert bounded.get_or_create("a", object) is not first
    now[0] = 100.0
    bounded.put("d", 3)  # idle: every older entry goes
    assert bounded.get("a") is None and bounded.get("c") is None


# --- the processor's span view reads the SDK's status and scope fields directly -------------------------
class PublicOnly:
    """A span showing only the ReadableSpan properties: the view's fallback (the long way)."""

    def __init__(self, span):
        self._span = span

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._span, name)


@pytest.mark.parametrize("status", ["unset", "ok", "error", "error-described"])
@pytest.mark.parametrize("with_event", [False, True])
def test_span_view_from_sdk_fields_matches_the_public_properties(status, with_event):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Status as OtelStatus
    from opentelemetry.trace import StatusCode

    from otelguard.processor import _view

    tracer = TracerProvider().get_tracer("scope-name", "1.0")
    with tracer.start_as_current_span("agent"):
        span = tracer.start_span("chat m", attributes={"gen_ai.operation.name": "chat"})
        if with_event:
            span.add_event("otelguard.chunk", {"otelguard.chunk.text": "x"}, timestamp=5)
        if status == "ok":
            span.set_status(OtelStatus(StatusCode.OK))
        elif status == "error":
            span.set_status(OtelStatus(StatusCode.ERROR))
        elif status == "error-described":
            span.set_status(OtelStatus(StatusCode.ERROR, "boom"))
        span.end()
    attributes, context, parent = span._attributes._dict, span.get_span_context(), span.parent
    ids = (context.trace_id, context.span_id, parent.span_id)  # the caller reads them (see the test below)
    fast = _view(span, span.name, *ids, attributes)
    long_way = _view(PublicOnly(span), span.name, *ids, attributes)  # type: ignore[arg-type]
    assert fast == long_way
    assert fast.scope == "scope-name"
    assert fast.status is {"unset": Status.UNSET, "ok": Status.OK}.get(status, Status.ERROR)


def test_the_processor_judges_spans_showing_only_public_properties_as_sdk_spans():
    """The processor reads the SDK span's own fields (ids from its SpanContext tuples); any other
    ReadableSpan is read through the public properties, to the same agents, ids handed to the engine
    at each span's end, and verdicts."""
    from opentelemetry.sdk.trace import TracerProvider
    from otel_support import Guarded, RecordingProcessor

    recording = RecordingProcessor()
    provider = TracerProvider()
    provider.add_span_processor(recording)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                    "gen_ai.agent.name": "a"}):
        for _ in range(3):  # the same call three times: a repeat verdict at the second and third
            with tracer.start_as_current_span("execute_tool f", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f",
                    "gen_ai.tool.call.arguments": '{"q": 1}'}):
                pass

    def verdicts(wrap) -> tuple[list[tuple], list[tuple]]:
        with Guarded() as g:  # its processor fed the recorded spans directly
            guard = g.processor
            ended: list[tuple] = []  # (trace id, span id, parent id) the engine was given at each end
            span_ended, run_ended = guard.engine.span_ended, guard.engine.run_ended

            def span_ended_seen(view, **kwargs):
                ended.append((view.trace_id, view.span_id, view.parent_span_id))
                return span_ended(view, **kwargs)

            def run_ended_seen(span_id, parent_span_id, trace_id):
                ended.append((trace_id, span_id, parent_span_id))
                return run_ended(span_id, parent_span_id, trace_id)

            guard.engine.span_ended, guard.engine.run_ended = span_ended_seen, run_ended_seen
            agents = []  # the agent each span was found to belong to, as it started
            for event, span, _ in recording.calls:
                if event == "start":
                    guard.on_start(wrap(span), None)
                    agent = guard.engine.agent_of(span.get_span_context().span_id)
                    agents.append(agent.name if agent else None)
                else:
                    guard.on_end(wrap(span))
            assert agents == ["a"] * 4  # the run, and each tool span inside it (found through its parent)
            return ended, [(span.name, span.attributes.get("otelguard.verdict"),
                            span.attributes.get("otelguard.repeat.count")) for span in g.exporter.get_finished_spans()]

    (sdk_ids, sdk), (public_ids, public) = verdicts(lambda span: span), verdicts(PublicOnly)
    assert sdk_ids == public_ids and len(sdk_ids) == 4 and all(parent is not None for _, _, parent in sdk_ids[:3])
    assert sdk == public
    assert [count for _, verdict, count in sdk if verdict == "repeated_tool_call"] == [2, 3]


def test_idle_entries_go_oldest_first_at_most_once_a_sweep_interval():
    """The eviction rules themselves, on a timeline worked by hand (the reference above states them too)."""
    from otelguard.state import BoundedMap

    now = [0.0]
    reports: list[tuple[str, int]] = []
    bounded = BoundedMap(10, 2.0, clock=lambda: now[0], on_evict=lambda *report: reports.append(report))
    bounded.put("a", 1)  # t=0: a sweep runs (nothing idle); the next is due a second later
    now[0] = 0.9
    bounded.put("b", 2)  # not due: no sweep
    now[0] = 2.0
    bounded.put("c", 3)  # due: a, idle for 2.0 >= 2, goes; b (1.1) stays; the next sweep is due at 3.0
    assert reports == [("idle", 1)] and len(bounded) == 2
    now[0] = 2.95
    bounded.put("d", 4)  # b is idle now (2.05), but no sweep is due: it stays
    assert reports == [("idle", 1)] and len(bounded) == 3
    now[0] = 3.0
    bounded.put("e", 5)  # due: b goes, the rest are fresh
    assert reports == [("idle", 1), ("idle", 1)] and len(bounded) == 3
    assert bounded.get("b") is None and bounded.get("c") == 3


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan")])
def test_an_idle_ttl_that_would_evict_the_entry_just_touched_is_refused(ttl):
    from otelguard.state import BoundedMap

    with pytest.raises(ValueError, match="idle_ttl_s"):
        BoundedMap(3, ttl)
