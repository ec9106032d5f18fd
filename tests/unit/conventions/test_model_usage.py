"""A model span's usage facts (model name, token counts, finish reasons), read as each convention writes them."""

from __future__ import annotations

import json

import pytest
from otel_support import Guarded, metric_points, output_messages

from otelguard.conventions import classify, genai, model_name, model_usage, read
from otelguard.model.records import Classification, Content, ModelUsage, SpanKind, SpanView, Status

_OUTPUT = json.dumps([{"role": "assistant", "parts": [
    {"type": "thinking", "content": "r" * 40}, {"type": "text", "content": "t" * 30},
    {"type": "tool_call", "id": "c", "name": "f", "arguments": {"b": 1, "a": 2}}]}])

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
    # Input tokens, for the loop cost: the current key first, the legacy one otherwise.
    ({"gen_ai.usage.input_tokens": 120, "gen_ai.usage.prompt_tokens": 5, "gen_ai.usage.output_tokens": 7},
     ModelUsage(None, 7, input_tokens=120)),
    ({"gen_ai.usage.prompt_tokens": "88"}, ModelUsage(input_tokens=88)),
]


@pytest.mark.parametrize(("attributes", "expected"), MODEL_USAGE)
def test_model_usage_is_read_as_written(attributes, expected):
    """Names trimmed, counts taken from numbers and numeric text (not booleans or NaN), finish reasons
    from a tuple or JSON text."""
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
    """`model_name` reads the model alone from the convention's own keys: the name `model_usage` reads too."""
    span = SpanView("chat m", 1, 2, 3, attributes)
    classification = Classification(SpanKind.MODEL, convention)
    assert model_name(span, classification) == expected == model_usage(span, classification).model


def test_usage_is_read_beside_the_output():
    """A short answer asking for a tool: its output is read, and the span's usage facts are all there."""
    view = SpanView("chat m", 1, 2, None, {
        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.output_tokens": 7,
        "gen_ai.usage.details.reasoning_tokens": "3", "gen_ai.response.finish_reasons": ("tool_call", ""),
        "gen_ai.output.messages": output_messages(text="Checking.", tool="get_weather")})
    classification = classify(view.name, view.attributes)
    record = read(view, classification)
    assert record.output_content is Content.OK and record.text == "Checking."
    assert model_usage(view, classification) == ModelUsage("m", 7, 3, ("tool_call",))


def test_tokens_spent_in_a_loop_are_counted_by_model_once_the_guard_acts():
    """A model call only flagged as repetitive output (the guard did not act) is no loop the metric
    counts; stalled calls the guard steered count all their output tokens under their model."""
    with Guarded() as g:
        with g.tracer.start_as_current_span("chat m", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "m", "gen_ai.usage.output_tokens": 321}) as span:
            span.set_attribute("gen_ai.output.messages", output_messages(text="abc, " * 60))
        assert metric_points(g.metric_reader, "otelguard.loop.tokens") == []
        with g.tracer.start_as_current_span("invoke_agent planner", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}):
            for index in range(3):  # long reasoning-only calls: the third brings the steer
                reasoning = " ".join(f"angle {index} thought {i} about the bug" for i in range(120))
                with g.tracer.start_as_current_span("chat m", attributes={
                        "gen_ai.operation.name": "chat", "gen_ai.request.model": "m",
                        "gen_ai.usage.output_tokens": 100, "gen_ai.output.messages": output_messages(reasoning=reasoning)}):
                    pass
        points = metric_points(g.metric_reader, "otelguard.loop.tokens")
    assert [(labels["gen_ai.request.model"], value) for labels, value in points] == [("m", 300)]
