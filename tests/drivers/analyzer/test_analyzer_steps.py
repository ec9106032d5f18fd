"""A listed step keeps a small summary of its record and is put into words only when shown."""

from __future__ import annotations

from otelguard.report.steps import describe, summarize
from otelguard.model.records import Content, ModelCall, RequestedToolCall, Status, ToolCall


def test_model_step_keeps_lengths_not_text():
    record = ModelCall(text="done", reasoning="x" * 10_000, output_content=Content.OK,
                       tool_calls=(RequestedToolCall("search", "{}"), RequestedToolCall(None, "{}")),
                       status=Status.ERROR)
    summary = summarize(record, "m")
    assert max(len(item) for item in summary if isinstance(item, str)) < 100
    what, facts = describe(summary)
    assert what == "reasoning 10,000 chars · text 4 chars · calls ?, search · error"
    assert facts["reasoning_chars"] == 10_000 and facts["tool_calls_requested"] == ["search", None]
    assert facts["has_output"] is True and facts["output_content"] == "ok" and facts["status"] == "error"
    assert facts["model"] == "m"


def test_tool_step_keeps_bounded_previews():
    record = ToolCall(name="fetch", arguments='{"q":"' + "a" * 20_000 + '"}', arguments_content=Content.OK)
    summary = summarize(record)
    assert sum(len(item) for item in summary[2]) < 700
    what, facts = describe(summary)
    assert what.startswith('fetch {"q":"aaa') and what.endswith("more chars)")
    assert facts["arguments"].endswith("(+19508 more chars)")
    assert describe(summarize(ToolCall(name=None, arguments=None)))[0] == "(unnamed tool) (arguments not captured)"
