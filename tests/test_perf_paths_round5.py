"""Round 5 of the per-span shortcuts: each reaches the same answer as the long way it replaces.

- the replay classifies the spans it decoded with `classify_marked`, skipping `classify`'s marker test:
  a span is decoded only when its name or raw attribute keys passed that test already.
"""

from __future__ import annotations

import io
import json
import random
from typing import Any

import pytest

from otelguard.analyzer import analyze
from otelguard.analyzer.replay import may_be_ours
from otelguard.conventions import (
    NAMED_SPANS,
    classify,
    classify_marked,
)
from otelguard.otlp_json import LazySpan, iter_lazy_spans

_NAMES = ["chat m", "agent run", "running tool", "openai.response", "openai.chat", "x.tool", "POST", ""]
_VALUES = {
    "gen_ai.operation.name": ["chat", "execute_tool", "invoke_agent", "embeddings", 3],
    "openinference.span.kind": ["LLM", "TOOL", "chain"],
    "traceloop.span.kind": ["tool", "workflow"],
    "llm.request.type": ["chat", "embedding"],
    "gen_ai.agent.name": ["a"],
    "gen_ai.tool.name": ["f"],
    "pydantic_ai.tool_arguments": ['{"a": 1}'],
    "http.method": ["GET"],
}


def _otlp_value(rng: random.Random, value: Any) -> dict[str, Any]:
    """`value` as an OTLP AnyValue; now and then one that cannot be read (the view then drops its key,
    though the raw keys the pre-test looks at still hold it)."""
    if rng.random() < 0.1:
        return {}
    return {"intValue": str(value)} if isinstance(value, int) else {"stringValue": value}


def _otlp_span_line(rng: random.Random, index: int) -> str:
    attributes = [{"key": key, "value": _otlp_value(rng, rng.choice(values))}
                  for key, values in _VALUES.items() if rng.random() < 0.3]
    rng.shuffle(attributes)
    span: dict[str, Any] = {"traceId": "ab" * 16, "spanId": f"{index + 1:016x}", "name": rng.choice(_NAMES),
                            "attributes": attributes}
    if rng.random() < 0.3:  # off the usual shape: the reader keeps the attribute list, not values by key
        span["unknownField"] = 1
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}, separators=(",", ":"))


@pytest.mark.parametrize("seed", range(20))
def test_replay_views_every_span_classify_classifies_and_classifies_it_alike(seed):
    """Spans read as the analyzer reads them: every one `classify` classifies passes the replay's
    pre-test, and on every one that passes, `classify_marked` gives what `classify` gives."""
    rng = random.Random(seed)
    text = "\n".join(_otlp_span_line(rng, index) for index in range(300)) + "\n"
    passed_by_keys = skipped = 0
    for span in iter_lazy_spans(io.StringIO(text)):
        assert isinstance(span, LazySpan), span
        viewed = may_be_ours(span)  # made before `view()`, as the replay makes it
        view = span.view()
        expected = classify(view.name, view.attributes)
        if expected is not None:
            assert viewed, (view.name, dict(view.attributes))
            passed_by_keys += view.name not in NAMED_SPANS
        if viewed:
            assert classify_marked(view.name, view.attributes) == expected, (view.name, dict(view.attributes))
        else:
            skipped += 1
    # Exercised both ways: spans classified by their keys alone, and spans the pre-test skips.
    assert passed_by_keys > 50 and skipped > 10


def _line(spans: list[dict[str, Any]]) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]})


def test_a_marker_key_with_an_unreadable_value_leaves_the_span_not_ours(tmp_path):
    trace = "ab" * 16
    spans = [
        {"traceId": trace, "spanId": "01" * 8, "name": "chat m", "startTimeUnixNano": "1", "endTimeUnixNano": "5",
         "attributes": [{"key": "gen_ai.operation.name", "value": {}}]},
        {"traceId": trace, "spanId": "02" * 8, "name": "chat m", "startTimeUnixNano": "2", "endTimeUnixNano": "4",
         "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}]},
    ]
    path = tmp_path / "spans.jsonl"
    path.write_text(_line(spans) + "\n")
    coverage = analyze([path]).coverage
    assert coverage.not_ours == 1 and coverage.steps == 1
