"""The per-span shortcuts reach the same answers as the plain reading they replace.

- `is_framework_timeout` looks for a lowered substring before running its case-insensitive regex;
- model output parts are told apart by one lookup of their type;
- the engine calls no guard on output left unread with no recorded deltas and no live trip;
- the processor counts judged spans by kind with plain string labels.
"""

from __future__ import annotations

import json
import re

import pytest
from otel_support import Guarded, metric_points, output_messages

from otelguard.conventions import OutputFloor, classify, model_usage, read
from otelguard.detectors.stream import Trip
from otelguard.detectors.timeout import is_framework_timeout
from otelguard.engine import GuardEngine
from otelguard.guards import ThinkingLoopGuard
from otelguard.records import Content, ModelUsage, SpanEvent, SpanView

_REFERENCE_TIMEOUT = re.compile(r"\btimed out after\b", re.IGNORECASE)


def reference_is_framework_timeout(result, error_message):
    return any(text and _REFERENCE_TIMEOUT.search(text[:2000]) for text in (result, error_message))


@pytest.mark.parametrize("text", [
    "Timed out after 0.05 seconds.",
    "tool call TIMED OUT AFTER 30s",
    "It is sunny in Paris, 21C.",
    "x" * 1990 + "timed out after 1s",  # crosses the 2000-character cut: not found
    "x" * 1980 + " timed out after",  # ends right at the cut
    "x" * 1981 + " timed out after",  # one character past it
    "outtimed out after",  # no word boundary before
    "timed out afterwards",  # none after
    "tİmed out after 3s",  # a dotted capital I matches i under IGNORECASE
    "tımed out after 3s",  # so does a dotless i
    "timed out aftER",
    "İ" * 1500 + " timed out after",  # lowering makes the prefix longer than the text it came from
    "",
])
def test_the_timeout_prefilter_never_changes_the_answer(text):
    assert is_framework_timeout(text, None) == reference_is_framework_timeout(text, None)
    assert is_framework_timeout(None, text) == reference_is_framework_timeout(None, text)


@pytest.mark.parametrize(("parts", "text", "reasoning", "tools", "content"), [
    ([{"type": "thinking", "content": "r"}, {"type": "text", "content": "t"},
      {"type": "tool_call", "id": "c", "name": "f", "arguments": {"a": 1}}], "t", "r", ["f"], Content.OK),
    ([{"type": "reasoning", "content": "r"}, {"type": "reasoning_text", "content": "r2"}, {"content": "untyped"},
      {"type": "refusal", "content": "no"}], "untyped\nno", "r\nr2", [], Content.OK),
    ([{"type": "text"}, {"type": "thinking"}], "", "", [], Content.ABSENT),  # capture off: content dropped
    ([{"type": "tool_call_response", "result": "x"}, {"type": "blob"}, "plain", 7],  # skipped, skipped, text, bad
     "plain", "", [], Content.MALFORMED),
    ([{"type": ["unhashable"], "content": "x"}], "", "", [], Content.MALFORMED),  # reported, never raised
])
def test_output_parts_read_as_their_type_says(parts, text, reasoning, tools, content):
    view = SpanView("chat m", 1, 2, None, {"gen_ai.operation.name": "chat",
                                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])})
    record = read(view, classify(view.name, view.attributes))
    assert (record.text, record.reasoning, [call.name for call in record.tool_calls]) == (text, reasoning, tools)
    assert record.output_content is content


def test_the_engine_skips_unread_output_without_deltas_or_live_trip_only(monkeypatch):
    """Output under every guard's floor is left unread; the engine then calls no guard on it (and
    makes no agent state for it). Recorded deltas, or a live stream trip, are still judged."""
    engine = GuardEngine(full_records=False)
    observed: list[tuple] = []
    real_on_model_end = ThinkingLoopGuard.on_model_end

    def recording_on_model_end(guard, *args):
        observed.append(args)
        return real_on_model_end(guard, *args)

    monkeypatch.setattr(ThinkingLoopGuard, "on_model_end", recording_on_model_end)
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output_messages(text="ok")}
    judged = engine.span_ended(SpanView("chat m", 1, 2, None, attributes))
    assert judged.record.output_content is Content.UNREAD and judged.verdicts == []
    assert observed == [] and engine.tracked_agents == 0
    # Recorded deltas are judged even when the output attribute was left unread.
    cycle = "abc, " * 60
    chunks = tuple(SpanEvent("otelguard.chunk", {"otelguard.chunk.text": cycle[at:at + 5], "otelguard.chunk.kind": "text"})
                   for at in range(0, 300, 5))
    judged = engine.span_ended(SpanView("chat m", 1, 3, None, attributes, chunks))
    assert [v.verdict for v in judged.verdicts] == ["repetitive_output"] and len(observed) == 1
    # So is a call with a live stream trip: shown, and the call still reaches the guards.
    trip = engine.thinking.break_verdict(Trip("identical-chunks", 240, run=60), cut=False)
    engine.record_stream_trip(4, trip)
    judged = engine.span_ended(SpanView("chat m", 1, 4, None, attributes))
    assert judged.stream_verdict is trip and len(observed) == 2


def test_span_counts_are_labelled_with_plain_strings():
    with Guarded(export=False) as g:  # the guard alone: no downstream
        with g.tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            pass
        points = metric_points(g.metric_reader, "otelguard.spans")
    assert [value for _, value in points] == [1]
    labels = dict(points[0][0])
    assert labels["otelguard.span.kind"] == "model" and type(labels["otelguard.span.kind"]) is str
    assert labels["otelguard.convention"] == "genai"


def test_usage_is_read_from_a_span_whose_output_was_left_unread():
    view = SpanView("chat m", 1, 2, None, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.details.reasoning_tokens": "3", "gen_ai.response.finish_reasons": ("tool_call", ""),
        "gen_ai.output.messages": output_messages(text="Checking.", tool="get_weather")})
    classification = classify(view.name, view.attributes)
    record = read(view, classification, output_floor=OutputFloor(256, 2048))
    assert record.output_content is Content.UNREAD  # the output was too short to read...
    assert model_usage(view, classification) == ModelUsage("m", 7, 3, ("tool_call",))  # ...the facts are there


@pytest.mark.parametrize(("stop_after", "state_at_start"), [(None, False), (3, True)])
def test_a_tool_start_takes_agent_state_only_when_a_hook_needs_it(stop_after, state_at_start):
    """The repeat reminder acts at a tool's start only with stop_after (a pre-emptive block); the
    timeout policy's budget needs no agent state. So by default a tool start looks up no state."""
    engine = GuardEngine({"guards": [{"id": "timeout-policy"},
                                     {"id": "repeat-tool-reminder", "config": {"stop_after": stop_after}}]})
    tool = SpanView("execute_tool probe", 1, 2, None, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe", "gen_ai.tool.call.arguments": "{}",
        "otelguard.tool.timeout_ms": 250})
    started = engine.span_started(tool)
    assert started.tool.budget_ms == 250.0  # the stateless hook still ran
    assert engine.tracked_agents == (1 if state_at_start else 0)
