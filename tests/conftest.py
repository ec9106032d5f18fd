"""Shared fixtures: the real OTel SDK, chained span exporter → tracer provider → metric reader.

Also the Hypothesis profile (see hypothesis_support): quick by default, HYPOTHESIS_PROFILE=thorough
for the full example counts, loaded here before any test module states its counts; and the markers of
external components (see external_support): a marked test is skipped when its component is missing,
with the command that installs it, and fails instead under CI=true.
"""

from __future__ import annotations

import os
from contextlib import ExitStack
from typing import Any, Iterator

import pytest
from hypothesis import settings
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

# The guard re-raises its internal errors only when asked: this suite asks (and its subprocesses inherit it).
os.environ.setdefault("OTELGUARD_RAISE_INTERNAL_ERRORS", "1")
# Text reports are written at their full width (100 columns) in every test: pytest-xdist's workers set
# COLUMNS=80. Tests of other widths set COLUMNS themselves.
os.environ["COLUMNS"] = "100"

import otelguard  # noqa: E402

# Helpers moved out of test modules into tests/support/ keep pytest's detailed assertion messages (a
# test module's asserts are rewritten by pytest, a plain module's only when registered before its import).
pytest.register_assert_rewrite("analyzer_support", "browser_support", "live_export_support")
from external_support import COMPONENT_FIXTURES, COMPONENTS, require
from hypothesis_support import THOROUGH, load_profile, register_profiles
from otel_support import Guarded

register_profiles()
load_profile()


def pytest_report_header(config: pytest.Config) -> str:
    return f"hypothesis profile: {settings.get_current_profile_name()} (HYPOTHESIS_PROFILE=thorough for full counts)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A test handed a component's binary must carry its marker, so `-m "not <component>"` leaves it out."""
    unmarked = [
        f"{item.nodeid} uses {fixture} but is not marked @pytest.mark.{marker}"
        for item in items
        for fixture, marker in COMPONENT_FIXTURES.items()
        if fixture in getattr(item, "fixturenames", ()) and item.get_closest_marker(marker) is None
    ]
    if unmarked:
        raise pytest.UsageError("\n".join(unmarked))


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a test whose external component is missing, with the command that installs it (fail under CI),
    and a `thorough` test outside the thorough profile (it would push the default run past its budget)."""
    for marker in COMPONENTS:
        if item.get_closest_marker(marker) is not None:
            require(marker)
    if item.get_closest_marker("thorough") is not None and settings.get_current_profile_name() != THOROUGH:
        pytest.skip("runs in the thorough profile only: HYPOTHESIS_PROFILE=thorough ./scripts/test")


@pytest.fixture
def span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def log_exporter() -> InMemoryLogRecordExporter:
    return InMemoryLogRecordExporter()


@pytest.fixture
def logger_provider(log_exporter: InMemoryLogRecordExporter) -> Iterator[LoggerProvider]:
    """The SDK's LoggerProvider, exporting each log record (the guard's evaluation events) to `log_exporter`."""
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(log_exporter))
    yield provider
    provider.shutdown()


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
    """Build a guarded TracerProvider: `guard_factory(config) -> (tracer, processor)`; shut down after.

    Every one built exports to `span_exporter`, records to `meter_provider` and, unless given another
    `control` (None included), sends to `mailbox`.
    """
    with ExitStack() as built:
        def build(config: Any = None, **kwargs: Any):
            kwargs.setdefault("control", mailbox)
            guarded = built.enter_context(
                Guarded(config, exporter=span_exporter, meter_provider=meter_provider, **kwargs))
            return guarded.tracer, guarded.processor

        yield build


@pytest.fixture
def hook_state(tmp_path, monkeypatch):
    """The coding-agent CLI hooks' state for one test: a fresh history, no user config, a home of its own."""
    state = tmp_path / "state"
    monkeypatch.setenv("OTELGUARD_HOOK_DB", str(state / "hooks.sqlite3"))
    monkeypatch.delenv("OTELGUARD_CONFIG", raising=False)
    monkeypatch.delenv("OTELGUARD_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTELGUARD_DISABLE", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return state
