"""The output floor: live, model output too short for any guard is left unread, with the same
verdicts as the analyzer reading everything.

The live processor's engine (`GuardEngine(full_records=False)`) measures model output against the
shortest text and reasoning any configured guard judges; the analyzer's engine reads every record whole.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from json_strategies import messages
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otel_support import Guarded, output_messages
from test_analyzer_live import OtlpJsonLinesExporter, analyzer_verdicts, live_verdicts
from vectors_support import R

from otelguard.conventions import OutputFloor, classify, output_unread, read
from otelguard.detectors.stream import Trip
from otelguard.engine import GuardEngine
from otelguard.guards import ThinkingLoopGuard
from otelguard.records import Content, SpanEvent, SpanView, Status

FLOOR = OutputFloor(text_chars=256, reasoning_chars=2048)  # the default guards' without the text-loop rule
# The thinking-loop guard's defaults but the text-loop rule, which reads every text-only answer however
# short: under it, model output has a floor to be measured against.
NO_TEXT_LOOP = {"guards": [{"id": "thinking-loop-guard", "config": {"textLoopRepeats": 0, "textLoopStreak": 0}}]}
CYCLE = "abc, " * 60  # 300 characters of a period-5 cycle: the cycle rule trips on it


def model_span(messages_value: Any, span_id: int = 2, parent: int | None = None, **extra: Any) -> SpanView:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                  "gen_ai.output.messages": messages_value, "gen_ai.usage.output_tokens": 7, **extra}
    return SpanView("chat m", 1, span_id, parent, attributes)


def read_model(view: SpanView, floor: OutputFloor | None):
    return read(view, classify(view.name, view.attributes), output_floor=floor)


def judge(engine: GuardEngine, span: SpanView):
    engine.start(span)
    return engine.end(span)


# --- reading under a floor ------------------------------------------------------------------------
def test_short_output_is_left_unread_but_read_whole_without_a_floor():
    """Under the floor nothing of the output is read (unread says nothing of whether there was any)."""
    view = model_span(output_messages(text="Checking Paris.", reasoning="Short thought.", tool="get_weather"))
    whole, skipped = read_model(view, None), read_model(view, FLOOR)
    assert whole.output_content is Content.OK and whole.text == "Checking Paris." and whole.tool_calls
    assert skipped.output_content is Content.UNREAD
    assert (skipped.text, skipped.reasoning, skipped.tool_calls) == ("", "", ())
    assert skipped.has_output is None


@pytest.mark.parametrize("messages_value", [
    output_messages(text=CYCLE),  # text over the text floor
    output_messages(reasoning="r" * 2048),  # reasoning at the reasoning floor
    json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": [1e15] * 20}]}]),  # not a string
    json.dumps([{"role": "assistant", "content": "x" * 300}]),  # a plain message
    json.dumps([{"role": "assistant", "parts": ["y" * 130, "z" * 130]}]),  # string parts, joined over the floor
])
def test_output_that_could_reach_the_floor_is_read_whole(messages_value):
    view = model_span(messages_value)
    assert read_model(view, FLOOR) == read_model(view, None)


@pytest.mark.parametrize(("messages_value", "whole_content"), [
    ('[{"role": "assistant", "parts": [{"type": "text", "content": "cut', Content.TRUNCATED),
    (json.dumps([{"role": "assistant", "parts": [{"type": "thinking"}]}]), Content.ABSENT),  # capture off
    (json.dumps([7]), Content.MALFORMED),
])
def test_short_output_is_unread_however_it_would_read(messages_value, whole_content):
    assert read_model(model_span(messages_value), None).output_content is whole_content
    assert read_model(model_span(messages_value), FLOOR).output_content is Content.UNREAD


def test_text_that_is_not_json_is_unread_under_the_floor_and_malformed_over_it():
    short = model_span("not json")
    assert read_model(short, None).output_content is Content.MALFORMED
    assert read_model(short, FLOOR).output_content is Content.UNREAD
    long = model_span("not json " * 40)
    assert read_model(long, FLOOR) == read_model(long, None)
    assert read_model(long, FLOOR).output_content is Content.MALFORMED


_LONG_OUTPUT = json.dumps([{"role": "assistant", "parts": [
    {"type": "thinking", "content": "r" * 3000}, {"type": "text", "content": "t" * 300},
    {"type": "tool_call", "id": "c", "name": "f", "arguments": {"b": 1, "a": 2}}]}])
_SHORT_OUTPUT = json.dumps([{"role": "assistant", "parts": [
    {"type": "thinking", "content": "r" * 40}, {"type": "text", "content": "t" * 30}]}])
_FLOORS = {"usual": FLOOR, "lowest": OutputFloor(1, 1), "none reachable": OutputFloor(float("inf"), float("inf"))}
_READ_LONG = ("t" * 300, "r" * 3000, 1, Content.OK)
_READ_SHORT = ("t" * 30, "r" * 40, 0, Content.OK)
_UNREAD = ("", "", 0, Content.UNREAD)
_EXPECTED = {
    _LONG_OUTPUT: {"usual": _READ_LONG, "lowest": _READ_LONG, "none reachable": _UNREAD},
    _SHORT_OUTPUT: {"usual": _UNREAD, "lowest": _READ_SHORT, "none reachable": _UNREAD},
    "[{": dict.fromkeys(_FLOORS, _UNREAD),  # cut JSON, salvaged as an empty message
    "{}": dict.fromkeys(_FLOORS, _UNREAD),  # a message with no parts
}


@pytest.mark.parametrize("messages_value", [_LONG_OUTPUT, _SHORT_OUTPUT, "[{", None, "{}"])
@pytest.mark.parametrize("status", [Status.UNSET, Status.ERROR, Status.OK])
@pytest.mark.parametrize("floor", list(_FLOORS))
def test_output_is_read_whole_or_left_unread_as_the_floor_says(messages_value, status, floor):
    """Output is read whole when its text or reasoning could reach the floor, else left unread; output
    not captured is absent (or, for a failed call, nothing produced)."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": "chat"}
    if messages_value is not None:
        attributes["gen_ai.output.messages"] = messages_value
    span = SpanView("chat m", 1, 2, 3, attributes, status=status)
    record = read_model(span, _FLOORS[floor])
    if messages_value is None:
        expected = ("", "", 0, Content.OK if status is Status.ERROR else Content.ABSENT)
    else:
        expected = _EXPECTED[messages_value][floor]
    assert (record.text, record.reasoning, len(record.tool_calls), record.output_content) == expected
    assert record.status is status and record.chunks == ()


def _random_part(rng: random.Random) -> Any:
    choice = rng.randrange(9)
    if choice == 0:
        return "s" * rng.randrange(0, 40)
    if choice == 1:
        return 5
    kind = rng.choice(["text", "thinking", "reasoning", "reasoning_text", "refusal", None, "tool_call", "blob", 3,
                       "omit"])
    part: dict[str, Any] = {} if kind == "omit" else {"type": kind}
    if rng.random() < 0.8:
        part["content"] = rng.choice(["c" * rng.randrange(0, 60), None, 7, ["x"], {"text": "y"}])
    return part


def _random_messages(rng: random.Random) -> Any:
    found = []
    for _ in range(rng.randrange(0, 4)):
        shape = rng.randrange(6)
        if shape == 0:
            found.append("not a message")
        elif shape == 1:
            found.append({"role": "assistant", "content": rng.choice(["x" * rng.randrange(50), 3, None])})
        elif shape == 2:
            found.append({"role": "assistant"})
        else:
            parts = [_random_part(rng) for _ in range(rng.randrange(0, 5))]
            found.append({"role": "assistant", "parts": parts if shape != 3 else tuple(parts)})
    return found if rng.random() < 0.9 else (found[0] if found else {})


@pytest.mark.parametrize("seed", range(20))
def test_output_left_unread_could_not_have_reached_the_floor(seed):
    """Whatever a floor leaves unread (decoded messages or their JSON text), read in full, stays under it."""
    rng = random.Random(seed)
    floors = [OutputFloor(1, 1), OutputFloor(20, 30), OutputFloor(60, 10), FLOOR]
    unread = 0
    for _ in range(300):
        decoded = _random_messages(rng)
        for value in (decoded, json.dumps(decoded)):
            view = model_span(value)
            whole = read_model(view, None)
            for floor in floors:
                if read_model(view, floor).output_content is Content.UNREAD:
                    unread += 1
                    assert len(whole.text) < floor.text_chars and len(whole.reasoning) < floor.reasoning_chars, value
    assert unread


dump_styles = st.sampled_from([
    {"separators": (",", ":")},
    {},
    {"separators": (",", ":"), "ensure_ascii": False},
    {"indent": 1},
])


def _told_unread_only_if_unreachable(raw: str, floor: OutputFloor) -> bool:
    """When the attributes tell `raw` unread under `floor`, reading it says so too, and what reading it
    in full gives stays under the floor; returns whether it was told unread."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": raw}
    classification = classify("chat m", attributes)
    if not output_unread(attributes, classification, floor):
        return False
    view = SpanView("chat m", 1, 2, None, attributes)
    assert read(view, classification, output_floor=floor).output_content is Content.UNREAD
    whole = read(view, classification)
    assert len(whole.text) < floor.text_chars and len(whole.reasoning) < floor.reasoning_chars, raw
    return True


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, dump_styles, st.integers(-3, 3), st.booleans())
def test_output_text_told_unread_could_not_have_reached_the_floor(decoded, style, margin, text_floor_lower):
    """Floors around the JSON text's own length, where telling it unread from its length is tight."""
    raw = json.dumps(decoded, **style)
    low, high = max(1, len(raw) + margin), len(raw) + 3  # a floor of 0 judges nothing (no text is shorter)
    floor = OutputFloor(low, high) if text_floor_lower else OutputFloor(high, low)
    _told_unread_only_if_unreachable(raw, floor)


MAY_PRINT_LONGER, PRINT_AS_WRITTEN = "may print longer", "print as written"
written_numbers = st.one_of(
    st.tuples(st.just(MAY_PRINT_LONGER), st.lists(
        st.sampled_from(["1e-7", "1E5", "2.50", "1e0", "0.1", "-0.0", "7", "-12"]), min_size=30, max_size=160)),
    st.tuples(st.just(MAY_PRINT_LONGER), st.lists(
        st.sampled_from([str(2**64), str(-(2**63) - 1), str(2**63 - 1), "7", "-12"]), min_size=30, max_size=160)),
    st.tuples(st.just(PRINT_AS_WRITTEN), st.lists(
        st.sampled_from([str(10**18 - 1), str(-(10**18) + 1), "7", "-12", "0", "true", "false", "null"]),
        min_size=1, max_size=160)),
)


@settings(max_examples=examples(1500), deadline=None)
@given(written_numbers, st.integers(-3, 3), st.booleans())
def test_output_of_written_numbers_told_unread_could_not_have_reached_the_floor(kind_numbers, margin, in_parts):
    """Numbers as producers write them (exponents, fractions, integers past 64 bits) may read to more
    text than their JSON; numbers that print as written, in text under the floor, are told unread."""
    kind, numbers = kind_numbers
    content = "[" + ",".join(numbers) + "]"
    raw = ('[{"role":"assistant","parts":[{"type":"text","content":' + content + "}]}]" if in_parts
           else '[{"role":"assistant","content":' + content + "}]")
    told = _told_unread_only_if_unreachable(raw, OutputFloor(len(raw) + margin, len(raw) + 3))
    if kind == PRINT_AS_WRITTEN and margin >= 1:
        assert told, raw


@pytest.mark.parametrize("number, why", [
    ("1e-7", "prints as 1e-07"),
])
def test_numbers_that_print_longer_than_written_are_read_whole(number, why):
    """A hundred such numbers read to more text than the JSON they came in: not told unread, read whole."""
    raw = '[{"role":"assistant","content":[' + ",".join([number] * 100) + "]}]"
    whole = read_model(model_span(raw), None)
    assert len(whole.text) > len(raw), why
    floor = OutputFloor(len(raw) + 1, len(raw) + 1)
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": raw}
    assert not output_unread(attributes, classify("chat m", attributes), floor)
    assert read_model(model_span(raw), floor).text == whole.text


def test_an_integer_of_19_digits_may_print_longer():
    """-2**63 - 1 reads as a float; shorter integers print as written."""
    def told(raw: str) -> bool:
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": raw}
        return output_unread(attributes, classify("chat m", attributes), FLOOR)

    assert not told('[{"content":[-9223372036854775809]}]')
    assert told('[{"content":[922337203685477580]}]')
    assert not told('[{"content":[1E5]}]')  # either exponent mark counts
    assert told('[{"content":"\ud800 x"}]')  # a lone surrogate does not break the test


@settings(max_examples=examples(500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages, dump_styles, st.sampled_from(["chat", "openai.response"]))
def test_output_told_unread_from_the_attributes_is_read_as_unread(decoded, style, name):
    """GenAI and OpenLLMetry model spans: whenever the attributes tell the output unread, reading says so too."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.dumps(decoded, **style)}
    view = SpanView(name, 1, 2, None, attributes)
    classification = classify(name, attributes)
    if output_unread(attributes, classification, FLOOR):
        record = read(view, classification, output_floor=FLOOR)
        assert record.output_content is Content.UNREAD and not record.chunks
        whole = read(view, classification)
        assert len(whole.text) < FLOOR.text_chars and len(whole.reasoning) < FLOOR.reasoning_chars


def test_only_gen_ai_output_messages_text_is_told_unread_without_reading():
    short = output_messages(text="ok")
    genai_span = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": short}
    assert output_unread(genai_span, classify("chat m", genai_span), FLOOR)
    decoded = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": json.loads(short)}  # not text
    assert not output_unread(decoded, classify("chat m", decoded), FLOOR)
    missing = {"gen_ai.operation.name": "chat"}  # not captured: read, and recorded as absent
    assert not output_unread(missing, classify("chat m", missing), FLOOR)
    openinference = {"openinference.span.kind": "LLM", "llm.output_messages.0.message.content": "ok"}
    assert not output_unread(openinference, classify("ChatOpenAI", openinference), FLOOR)


# --- the engine ----------------------------------------------------------------------------------------
@pytest.mark.parametrize(("config", "text", "read_live"), [
    (None, "ok", True),  # the text-loop rule judges every text-only answer
    (NO_TEXT_LOOP, "x" * 255, False),
    (NO_TEXT_LOOP, "x" * 256, True),
    ({"guards": [{"id": "thinking-loop-guard", "config": {"maxRepeatedCycleChars": 0, "maxLongCycleChars": 0,
                                                          "minReasoningChars": 512, "textLoopRepeats": 0,
                                                          "textLoopStreak": 0, "minNovelty": 0}}]},
     "x" * 3000, False),  # no cycle, novelty or text-loop rule: no text is judged
    ({"guards": [{"id": "repeat-tool-reminder"}]}, "x" * 3000, False),  # no model guard at all
])
def test_the_floor_comes_from_the_configured_guards(config, text, read_live):
    """The live engine reads model output only as long as the shortest text a configured guard judges."""
    judged = judge(GuardEngine(config, full_records=False), model_span(output_messages(text=text)))
    assert (judged.record is not None and judged.record.output_content is Content.OK) == read_live
    assert judge(GuardEngine(config), model_span(output_messages(text=text))).record.text == text


def test_reasoning_is_read_live_from_the_configured_reasoning_floor():
    config = {"guards": [{"id": "thinking-loop-guard", "config": {
        "maxRepeatedCycleChars": 0, "maxLongCycleChars": 0, "minReasoningChars": 512, "textLoopRepeats": 0,
        "textLoopStreak": 0}}]}
    engine = GuardEngine(config, full_records=False)
    assert judge(engine, model_span(output_messages(reasoning="r" * 511), span_id=2)).record is None
    assert judge(engine, model_span(output_messages(reasoning="r" * 512), span_id=3)).record.reasoning == "r" * 512


@pytest.mark.parametrize("text", ["ab" * 127 + "a", "ab" * 128, CYCLE])
def test_live_and_full_engines_reach_the_same_verdicts(text):
    """Just under, at and over the cycle rule's span: the same verdicts read live as read whole."""
    live, full = GuardEngine(NO_TEXT_LOOP, full_records=False), GuardEngine(NO_TEXT_LOOP)
    for span_id in range(2, 5):
        span = model_span(output_messages(text=text), span_id=span_id)
        got, want = judge(live, span), judge(full, span)
        assert got.verdicts == want.verdicts
    assert bool(want.verdicts) == (len(text) >= 256)


def openinference_llm(payload: str, span_id: int = 2) -> SpanView:
    """An OpenInference LLM span whose reasoning is only in its raw provider payload (output.value)."""
    return SpanView("ChatOpenAI", 1, span_id, None, {
        "openinference.span.kind": "LLM", "output.value": payload, "output.mime_type": "application/json"})


def langchain_payload(reasoning: str, pad: int = 0) -> str:
    return json.dumps({"generations": [[{"text": "", "message": {"kwargs": {
        "content": "", "additional_kwargs": {"reasoning_content": reasoning}}}, "padding": "." * pad}]]})


_AT_FLOOR = "x" * FLOOR.reasoning_chars


@pytest.mark.parametrize(("reasoning", "payload"), [
    ("Short thought.", langchain_payload("Short thought.")),
    ("Short thought.", langchain_payload("Short thought.", pad=3000)),
    (_AT_FLOOR[:-1], langchain_payload(_AT_FLOOR[:-1])),
    (_AT_FLOOR, langchain_payload(_AT_FLOOR)),
    (_AT_FLOOR, json.dumps({"reasoning_content": _AT_FLOOR})),  # the shortest payload that can hold it
])
def test_openinference_raw_reasoning_is_read_live_whenever_it_could_reach_the_floor(reasoning, payload):
    view = openinference_llm(payload)
    whole, live = read_model(view, None), read_model(view, FLOOR)
    assert whole.reasoning == reasoning
    if len(payload) < FLOOR.reasoning_chars:
        assert live.reasoning == ""  # nothing in a payload this short reaches the floor
    else:
        assert live.reasoning == reasoning
    assert (live.text, live.tool_calls, live.output_content) == (whole.text, whole.tool_calls, whole.output_content)


def test_openinference_reasoning_loops_are_judged_live_as_in_full():
    """Three calls with long, self-repeating reasoning only in the raw payload: the same verdicts live."""
    live, full = GuardEngine(full_records=False), GuardEngine()
    rules = []
    for index in range(3):
        reasoning = " ".join(f"angle {index} thought {i} about the failing test" for i in range(90))
        span = openinference_llm(langchain_payload(reasoning), span_id=2 + index)
        verdicts = judge(full, span).verdicts
        assert judge(live, span).verdicts == verdicts
        rules += [verdict.rule for verdict in verdicts]
    assert len(rules) == 3  # a verdict on every call: the equality above is not vacuous


def test_no_guard_is_called_on_output_left_unread_but_recorded_deltas_and_live_trips_are_judged(monkeypatch):
    """Output under every guard's floor reaches no guard and makes no agent state; the same output with
    recorded stream deltas, or with a live stream trip, is still judged."""
    engine = GuardEngine(NO_TEXT_LOOP, full_records=False)
    observed: list[tuple] = []
    real_on_model_end = ThinkingLoopGuard.on_model_end

    def recording_on_model_end(guard, *args):
        observed.append(args)
        return real_on_model_end(guard, *args)

    monkeypatch.setattr(ThinkingLoopGuard, "on_model_end", recording_on_model_end)
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output_messages(text="ok")}
    judged = judge(engine, SpanView("chat m", 1, 2, None, attributes))
    assert judged.verdicts == () and (judged.record is None or judged.record.output_content is Content.UNREAD)
    assert observed == [] and engine.tracked_agents == 0
    cycle = "abc, " * 60
    chunks = tuple(SpanEvent("otelguard.chunk", {"otelguard.chunk.text": cycle[at:at + 5], "otelguard.chunk.kind": "text"})
                   for at in range(0, 300, 5))
    judged = judge(engine, SpanView("chat m", 1, 3, None, attributes, chunks))
    assert [v.verdict for v in judged.verdicts] == ["repetitive_output"] and len(observed) == 1
    trip = engine.stream_guard.break_verdict(Trip("identical-chunks", 240, run=60), cut=False)
    engine.report_stream_trip(4, trip)
    judged = judge(engine, SpanView("chat m", 1, 4, None, attributes))
    assert judged.stream_verdict is trip and len(observed) == 2


def _run(span_id: int, conversation: str) -> SpanView:
    """An agent run of agent `a` in `conversation` (its state is kept across runs)."""
    return SpanView("invoke_agent a", 1, span_id, None, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": conversation})


def test_a_model_call_left_unread_keeps_its_agent_seen_active():
    """Two kept agents in a map of two: the one whose (unread) model call ended last stays when a third
    arrives, so starting its run again evicts nothing more."""
    evicted: list[tuple] = []
    engine = GuardEngine(full_records=False, max_agents=2, on_evict=lambda *report: evicted.append(report))
    for run in (_run(10, "first"), _run(20, "second")):
        engine.start(run)
    unread = model_span(output_messages(text="ok"), span_id=11, parent=10)
    assert judge(engine, unread).verdicts == ()
    engine.start(_run(30, "third"))
    assert evicted == [("agent", "capacity", 1)]
    engine.start(_run(40, "first"))  # still held: nothing made, nothing evicted
    assert evicted == [("agent", "capacity", 1)] and engine.tracked_agents == 2
    engine.start(_run(50, "second"))  # the one evicted: made anew, evicting another
    assert evicted == [("agent", "capacity", 1), ("agent", "capacity", 1)]


# --- live, end to end ---------------------------------------------------------------------------------
def test_live_verdicts_with_output_left_unread_equal_the_analyzers_reading_everything(tmp_path: Path):
    """A run with model output under, at and over every floor, exported as OTLP JSON: the live guard
    (reading only what could reach a floor) wrote exactly the verdicts the analyzer finds reading all."""
    path = tmp_path / "floor.otlp.jsonl"
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m"}
    outputs = [dict(text="ok"), dict(text="ab" * 127 + "a"), dict(text="ab" * 128), dict(text=CYCLE),
               dict(reasoning="short"), dict(reasoning=R("one", 3000)), dict(reasoning=R("two", 3000)),
               dict(reasoning=R("three", 3000)), dict(reasoning="r" * 2047), dict(text="done", tool="get_weather")]
    with Guarded(export=False, downstream=[SimpleSpanProcessor(OtlpJsonLinesExporter(path))]) as g:
        with g.tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": "c"}):
            for output in outputs:
                with g.tracer.start_as_current_span("chat m", attributes=chat) as span:
                    span.set_attribute("gen_ai.output.messages", output_messages(**output))
        assert g.processor.force_flush()
    live = live_verdicts(path)
    assert live == analyzer_verdicts(path)
    assert {rule for _, _, _, rule, *_ in live} >= {"repeating-cycle", "reasoning-only"}
