"""Shared fixtures: the real OTel SDK, chained span exporter → tracer provider → metric reader."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otelguard


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def metric_reader() -> InMemoryMetricReader:
    return InMemoryMetricReader()


@pytest.fixture
def meter_provider(metric_reader: InMemoryMetricReader) -> Iterator[MeterProvider]:
    provider = MeterProvider(metric_readers=[metric_reader])
    yield provider
    provider.shutdown()


@pytest.fixture
def mailbox() -> otelguard.Mailbox:
    return otelguard.Mailbox()


@pytest.fixture
def guard_factory(span_exporter, meter_provider, mailbox):
    """Build a guarded TracerProvider: `guard_factory(config) -> (tracer, processor)`; shut down after."""
    providers: list[TracerProvider] = []

    def build(config: Any = None, **kwargs: Any):
        processor = otelguard.GuardSpanProcessor(
            config,
            downstream=[SimpleSpanProcessor(span_exporter)],
            control=kwargs.pop("control", mailbox),
            meter_provider=meter_provider,
            **kwargs,
        )
        provider = TracerProvider()
        provider.add_span_processor(processor)
        providers.append(provider)
        return provider.get_tracer("tests"), processor

    yield build
    for provider in providers:
        provider.shutdown()


def metric_points(reader: InMemoryMetricReader, name: str) -> list[tuple[dict[str, Any], Any]]:
    """(attributes, value) of every data point of metric `name` (sum for counters, count for histograms)."""
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
                    points.append((dict(point.attributes), value))
    return points


def output_messages(text: str = "", reasoning: str = "", tool_calls: list[dict] | None = None) -> str:
    """A `gen_ai.output.messages` value as pydantic-ai writes it."""
    parts: list[dict[str, Any]] = []
    if reasoning:
        parts.append({"type": "thinking", "content": reasoning})
    if text:
        parts.append({"type": "text", "content": text})
    for call in tool_calls or []:
        parts.append({"type": "tool_call", "id": call.get("id", "c"), "name": call["name"],
                      "arguments": call.get("arguments", {})})
    return json.dumps([{"role": "assistant", "parts": parts, "finish_reason": "stop"}])


FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"
