"""The live path's shortcuts reach the same verdicts as reading everything.

The live processor leaves model output too short for any rule unread (`GuardEngine(full_records=False)`,
an `OutputFloor` on `conventions.read`); the analyzer reads every record whole. A judged span's
processing time is sampled, and a tool span's signal is made only when asked for.
"""

from __future__ import annotations

import json

import pytest
from otel_support import Guarded, metric_points, output_messages

from otelguard.conventions import OutputFloor, classify, read
from otelguard.engine import GuardEngine
from otelguard.metrics import PROCESSING_SAMPLE_EVERY
from otelguard.records import Content, SpanView

FLOOR = OutputFloor(text_chars=256, reasoning_chars=2048)
CYCLE = "abc, " * 60  # 300 characters of a period-5 cycle: the cycle rule trips on it


def model_span(messages, span_id: int = 2, **extra) -> SpanView:
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.output.messages": messages,
                  "gen_ai.usage.output_tokens": 7, **extra}
    return SpanView("chat m", 1, span_id, None, attributes)


def read_model(view: SpanView, floor: OutputFloor | None):
    return read(view, classify(view.name, view.attributes), output_floor=floor)


def test_short_output_is_left_unread_but_everything_else_is_read():
    view = model_span(output_messages(text="Checking Paris.", reasoning="Short thought.", tool="get_weather"))
    whole = read_model(view, None)
    skipped = read_model(view, FLOOR)
    assert whole.output_content is Content.OK and whole.text == "Checking Paris." and whole.tool_calls
    assert skipped.output_content is Content.UNREAD
    assert (skipped.text, skipped.reasoning, skipped.tool_calls) == ("", "", ())
    assert skipped.has_output is None  # unread says nothing either way


@pytest.mark.parametrize("messages", [
    output_messages(text=CYCLE),  # text over the text floor
    output_messages(reasoning="r" * 2048),  # reasoning at the reasoning floor
    json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": [1e15] * 20}]}]),  # not a string
    json.dumps([{"role": "assistant", "content": "x" * 300}]),  # a plain message
    json.dumps([{"role": "assistant", "parts": ["y" * 130, "z" * 130]}]),  # string parts, joined over the floor
])
def test_output_that_could_reach_a_floor_is_read_whole(messages):
    view = model_span(messages)
    assert read_model(view, FLOOR) == read_model(view, None)


@pytest.mark.parametrize(("messages", "whole_content"), [
    ('[{"role": "assistant", "parts": [{"type": "text", "content": "cut', Content.TRUNCATED),
    (json.dumps([{"role": "assistant", "parts": [{"type": "thinking"}]}]), Content.ABSENT),  # capture off
    (json.dumps([7]), Content.MALFORMED),
])
def test_short_output_is_unread_however_it_reads(messages, whole_content):
    assert read_model(model_span(messages), None).output_content is whole_content
    assert read_model(model_span(messages), FLOOR).output_content is Content.UNREAD


def test_output_that_is_not_json_is_unread_under_the_floor_and_malformed_over_it():
    short = model_span("not json")  # too short to hold anything a rule judges: not even parsed
    assert read_model(short, None).output_content is Content.MALFORMED
    assert read_model(short, FLOOR).output_content is Content.UNREAD
    long = model_span("not json " * 40)  # long enough that it might have: read, and found malformed
    assert read_model(long, FLOOR) == read_model(long, None)
    assert read_model(long, FLOOR).output_content is Content.MALFORMED


def test_the_floor_comes_from_the_guards_config():
    assert GuardEngine(full_records=False)._output_floor == FLOOR
    assert GuardEngine()._output_floor is None  # the analyzer's engine reads everything
    no_cycle = {"guards": [{"id": "thinking-loop-guard", "config": {"maxRepeatedCycleChars": 0,
                                                                     "minReasoningChars": 512}}]}
    assert GuardEngine(no_cycle, full_records=False)._output_floor == OutputFloor(float("inf"), 512)
    no_model_guard = {"guards": [{"id": "repeat-tool-reminder"}]}
    assert GuardEngine(no_model_guard, full_records=False)._output_floor == OutputFloor(float("inf"), float("inf"))


@pytest.mark.parametrize("text", ["ab" * 127 + "a",  # 255 characters: under the cycle rule's span
                                  "ab" * 128,  # 256: the rule's span exactly
                                  CYCLE])
def test_live_and_full_engines_reach_the_same_verdicts(text):
    spans = [model_span(output_messages(text=text), span_id=i) for i in range(2, 5)]
    live, full = GuardEngine(full_records=False), GuardEngine()
    for span in spans:
        got = live.span_ended(span)
        want = full.span_ended(span)
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
    ("Short thought.", langchain_payload("Short thought.")),  # a short payload: not decoded live
    # a long payload with short reasoning: decoded, the reasoning read
    ("Short thought.", langchain_payload("Short thought.", pad=3000)),
    # reasoning one short of the floor, in a payload past it
    (_AT_FLOOR[:-1], langchain_payload(_AT_FLOOR[:-1])),
    (_AT_FLOOR, langchain_payload(_AT_FLOOR)),  # reasoning at the floor: read, live as in full
    # the shortest payload that can hold reasoning at the floor: its only key, no padding
    (_AT_FLOOR, json.dumps({"reasoning_content": _AT_FLOOR})),
])
def test_openinference_raw_reasoning_is_read_live_whenever_it_could_reach_the_floor(reasoning, payload):
    view = openinference_llm(payload)
    whole, live = read_model(view, None), read_model(view, FLOOR)
    assert whole.reasoning == reasoning
    if len(view.attributes["output.value"]) < FLOOR.reasoning_chars:
        assert live.reasoning == ""  # the payload was not decoded: nothing in it reaches the floor
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
        verdicts = full.span_ended(span).verdicts
        assert live.span_ended(span).verdicts == verdicts
        rules += [verdict.rule for verdict in verdicts]
    assert len(rules) == 3  # a thinking-loop verdict on every call: the equality above is not vacuous


def test_processing_time_is_sampled_from_the_first_judged_span():
    with Guarded(export=False) as g:  # the guard alone: no downstream
        tracer, reader = g.tracer, g.metric_reader

        def chat_spans(n: int) -> None:
            for _ in range(n):
                with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
                    pass

        chat_spans(1)
        assert [count for _, count in metric_points(reader, "otelguard.processing.duration")] == [1]
        chat_spans(PROCESSING_SAMPLE_EVERY)
        assert [count for _, count in metric_points(reader, "otelguard.processing.duration")] == [2]
        assert [value for _, value in metric_points(reader, "otelguard.spans")] == [1 + PROCESSING_SAMPLE_EVERY]


def test_a_tool_signal_is_made_once_on_demand():
    with Guarded(export=False) as g:  # the guard alone: no downstream
        processor = g.processor
        with g.tracer.start_as_current_span("execute_tool probe", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe"}) as span:
            span_id = span.get_span_context().span_id
            assert processor._tools.get(span_id).signal is None  # nothing asked yet: nothing made
            signal = processor.signal_for(span_id)
            assert signal is not None and processor.signal_for(span_id) is signal
            assert not signal.aborted
        assert processor.signal_for(span_id) is None  # the span ended: its entry is gone
