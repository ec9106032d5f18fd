"""A marker attribute whose value cannot be read does not make a span the guard's."""

from __future__ import annotations

import json
from typing import Any

from otelguard.analyzer import analyze

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
