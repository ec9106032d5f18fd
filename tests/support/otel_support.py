"""Helpers for tests on the real OTel SDK (a module, not conftest: conftest names clash across folders)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Self

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otelguard import GuardSpanProcessor
import paths


class RecordingProcessor(SpanProcessor):
    """A processor that keeps what it is handed, in order: `calls` holds ("start", span, parent
    context) and ("end", span, None); `ended` the ended spans alone."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any, Any]] = []

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.calls.append(("start", span, parent_context))

    def on_end(self, span: Any) -> None:
        self.calls.append(("end", span, None))

    @property
    def ended(self) -> list[Any]:
        return [span for event, span, _ in self.calls if event == "end"]


class Guarded:
    """A TracerProvider guarded by a GuardSpanProcessor that exports to memory and records metrics to memory.

    `config` and `processor_kwargs` (control, max_agents, hook_wait_s, ...) go to GuardSpanProcessor as they
    are. What differs between tests is said by the arguments:
    - `export`: the guard passes its spans on to `exporter`; False leaves `exporter` out of the guard's
      downstream (with no `downstream` either, that is sibling mode: verdicts become events on the run);
    - `downstream`: more processors the guard passes its spans to, after `exporter`;
    - `siblings`: processors added to the provider after the guard (they see the spans as ended, unjudged);
    - `exporter`: an InMemorySpanExporter to use instead of a new one (one shared by several providers);
    - a `meter_provider` given in `processor_kwargs` replaces the in-memory one (`metric_reader` is then None).
    Usable as a context manager; subclasses add what a file needs (instrumentors, span helpers).
    """

    def __init__(self, config: Any = None, *, export: bool = True, downstream: Sequence[SpanProcessor] = (),
                 siblings: Sequence[SpanProcessor] = (), exporter: InMemorySpanExporter | None = None,
                 **processor_kwargs: Any):
        self.exporter = exporter if exporter is not None else InMemorySpanExporter()
        self.metric_reader: InMemoryMetricReader | None = None
        self.meter_provider: MeterProvider | None = None  # only the one made here: shut down with the provider
        if "meter_provider" not in processor_kwargs:
            self.metric_reader = InMemoryMetricReader()
            self.meter_provider = MeterProvider(metric_readers=[self.metric_reader])
            processor_kwargs["meter_provider"] = self.meter_provider
        exported = [SimpleSpanProcessor(self.exporter)] if export else []
        self.processor = GuardSpanProcessor(config, downstream=[*exported, *downstream], **processor_kwargs)
        self.provider = TracerProvider()
        for processor in (self.processor, *siblings):
            self.provider.add_span_processor(processor)
        self.tracer = self.provider.get_tracer("otelguard-tests")

    def shutdown(self) -> None:
        self.provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()



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


# The captured fixtures: `tests/fixtures/` in the repository (a copy of the project's shared fixtures, with
# their MANIFEST.json and README.md), or the OTELGUARD_FIXTURES directory when that is set.
FIXTURES = Path(os.environ.get("OTELGUARD_FIXTURES") or paths.FIXTURES)


class PublicOnly:
    """A span showing only the public ReadableSpan properties (as a span of another pipeline may)."""

    def __init__(self, span):
        self.wrapped = span

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.wrapped, name)
