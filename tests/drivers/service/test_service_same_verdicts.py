"""The same spans get the same verdicts live (the processor), in the service and offline (the analyzer).

Every captured fixture with verdicts is started again through a real TracerProvider guarded by
`GuardSpanProcessor`, whose export pipeline is the SDK's OTLP/HTTP protobuf exporter sending to
`otelguard serve`; the same file is analysed by `analyze`. The verdicts, counting ones included, are
compared by (guard, rule, action): the live processor's metrics, the service's /metrics under the
fixture's service.name, and the analyzer's rows. The fixture files themselves, posted line by line
as OTLP/JSON requests, give the analyzer's verdicts too.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from otel_support import FIXTURES
from otelguard import GuardSpanProcessor
from otelguard.analyzer import analyze
from service_support import post, running_service, verdict_counts
import paths

sys.path.insert(0, str(paths.BENCHMARKS))  # the fixture replayer lives there
from _fixture_runs import load_run, replay  # noqa: E402

MANIFEST = json.loads((FIXTURES / "MANIFEST.json").read_text(encoding="utf-8"))
WITH_VERDICTS = sorted(entry["file"] for entry in MANIFEST if entry["expected"])


def analyzed(name: str) -> Counter[tuple[str, str, str]]:
    return Counter((row.verdict.guard, row.verdict.rule, str(row.verdict.action))
                   for row in analyze([FIXTURES / name]).verdicts)


def live_counts(reader: InMemoryMetricReader) -> Counter[tuple[str, str, str]]:
    counts: Counter[tuple[str, str, str]] = Counter()
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name != "otelguard.verdicts":
                    continue
                for point in metric.data.data_points:
                    labels = point.attributes
                    if point.value:
                        counts[labels["otelguard.guard"], labels["otelguard.rule"], labels["otelguard.action"]] += \
                            point.value
    return counts


@pytest.fixture(scope="module")
def service():
    with running_service() as running:
        yield running


@pytest.mark.parametrize("name", WITH_VERDICTS)
def test_live_service_and_analyzer_agree(name: str, service) -> None:
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    guard = GuardSpanProcessor(downstream=[SimpleSpanProcessor(OTLPSpanExporter(service.http_url + "/v1/traces"))],
                               meter_provider=meter_provider)
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(guard)
    replay(provider.get_tracer("fixture"), load_run(name), 1)
    provider.shutdown()
    assert service.flush()
    offline = analyzed(name)
    assert offline  # every fixture here has verdicts
    assert live_counts(reader) == offline
    assert verdict_counts(service, name) == offline


def test_fixture_files_posted_as_otlp_json_get_the_analyzers_verdicts() -> None:
    expected: Counter[tuple[str, str, str]] = Counter()
    with running_service() as service:
        for name in WITH_VERDICTS:
            expected += analyzed(name)
            for line in (FIXTURES / name).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    assert post(service, "/v1/traces", line.encode(), "application/json")[0] == 200
        assert service.flush()
        assert verdict_counts(service) == expected
