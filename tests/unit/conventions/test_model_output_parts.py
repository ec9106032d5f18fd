"""Model output parts are read as their type says: text, reasoning, tool calls, and what is skipped."""

from __future__ import annotations

import json

import pytest

from otelguard.conventions import classify, read
from otelguard.model.records import Content, SpanView


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
def test_output_parts_are_read_as_their_type_says(parts, text, reasoning, tools, content):
    view = SpanView("chat m", 1, 2, None, {"gen_ai.operation.name": "chat",
                                          "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": parts}])})
    record = read(view, classify(view.name, view.attributes))
    assert (record.text, record.reasoning, [call.name for call in record.tool_calls]) == (text, reasoning, tools)
    assert record.output_content is content


def test_empty_output_text_reads_as_malformed_every_time():
    """An empty `gen_ai.output.messages` is malformed output, on every read alike."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": ""}
    classification = classify("chat m", attributes)
    records = [read(SpanView("chat m", 1, 2, None, attributes), classification) for _ in range(2)]
    assert [record.output_content for record in records] == [Content.MALFORMED] * 2
