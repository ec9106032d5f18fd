"""Shared fixtures: the real OTel SDK, chained span exporter → tracer provider → metric reader."""

from __future__ import annotations

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
