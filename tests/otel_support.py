"""Helpers for tests on the real OTel SDK (a module, not conftest: conftest names clash across folders)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from opentelemetry.sdk.metrics.export import InMemoryMetricReader


def metric_points(reader: InMemoryMetricReader, name: str, *, include_zero: bool = False
                  ) -> list[tuple[dict[str, Any], Any]]:
    """(attributes, value) of the data points of metric `name` (sum for counters, count for histograms).

    The guard publishes its failure counters at 0 from the start; those are left out unless asked for.
    """
    data = reader.get_metrics_data()
    points = []
    for resource_metrics in (data.resource_metrics if data else []):
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name != name:
                    continue
                for point in metric.data.data_points:
                    value = getattr(point, "value", None)
                    if value is None:
                        value = point.count
                    if value or include_zero:
                        points.append((dict(point.attributes), value))
    return points


def output_messages(text: str = "", reasoning: str = "", tool: str | None = None,
                    tool_calls: list[dict] | None = None) -> str:
    """A `gen_ai.output.messages` value as pydantic-ai writes it; `tool` is a call with {"city": "Paris"}."""
    parts: list[dict[str, Any]] = []
    if reasoning:
        parts.append({"type": "thinking", "content": reasoning})
    if text:
        parts.append({"type": "text", "content": text})
    if tool:
        parts.append({"type": "tool_call", "id": "call", "name": tool, "arguments": {"city": "Paris"}})
    for call in tool_calls or []:
        parts.append({"type": "tool_call", "id": call.get("id", "c"), "name": call["name"],
                      "arguments": call.get("arguments", {})})
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "stop"}])


def tool_span(tracer: Any, name: str = "probe", arguments: str = '{"q":"same"}', result: str = "ok") -> None:
    """One `execute_tool` span with GenAI semconv attributes, its result set before it ends."""
    with tracer.start_as_current_span(
        f"execute_tool {name}",
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    "gen_ai.tool.call.arguments": arguments},
    ) as span:
        span.set_attribute("gen_ai.tool.call.result", result)


# The captured fixtures: `../shared/fixtures/` beside the repository, or the OTELGUARD_FIXTURES directory.
FIXTURES = Path(
    os.environ.get("OTELGUARD_FIXTURES") or Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
)
