"""The labelled real runs in tests/realruns (see its README): their files, and a run's tool calls."""

from __future__ import annotations

import json
from typing import Any

from otelguard.otlp.json_spans import iter_spans
from otelguard.model.records import SpanView
import paths

REAL_RUNS = paths.REAL_RUNS
TRACES = REAL_RUNS / "swe-lite-deepseek" / "traces"


def rows(name: str) -> list[dict[str, Any]]:
    """The lines of one of tests/realruns' JSON Lines files."""
    with (REAL_RUNS / name).open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


def spans(file: str) -> list[SpanView]:
    """A run's spans, read with otelguard's own OTLP/JSON reader, in file order."""
    return [span for span in iter_spans(TRACES / file) if isinstance(span, SpanView)]


def command(span: SpanView) -> str:
    """The shell command of one of the runs' `execute_tool bash` spans."""
    return json.loads(span.attributes["gen_ai.tool.call.arguments"])["command"]
