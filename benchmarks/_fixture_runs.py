"""Agent runs replayed from the captured fixtures: the spans real instrumentations write, as they wrote them.

Each fixture file (`tests/fixtures`, OTLP JSON Lines captured from real instrumentations) is read
once with otelguard's own reader; a replay starts its spans again through a tracer, nested as they
were, with their attributes and events, and ends them. Attributes are split between start and end
by their key: those naming a result (output, completion, response, usage, result) are set before
the end, the rest at start. Instrumentations mostly do so, not all (some write the input messages
at the end); both sides of a comparison replay the same split. Only fixtures on which the guard reaches no verdict are used, so a replay
measures the guard's everyday work, not a loop's.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

from otelguard.otlp.json_spans import iter_spans
from otelguard.model.records import SpanView
from otelguard.model.records import Status as ViewStatus

# Where the tests find them too: `tests/fixtures` in the repository, or OTELGUARD_FIXTURES.
FIXTURES = Path(os.environ.get("OTELGUARD_FIXTURES") or Path(__file__).resolve().parents[1] / "tests" / "fixtures")
# One agent run with tool calls per instrumentation, none of which the guard reaches a verdict on.
RUNS = {
    "OpenLLMetry, OpenAI Agents SDK": "openllmetry-openai-agents-responses-tool-approval-rejected.otlp.jsonl",
    "OpenInference, LangGraph": "openinference-langchain-langgraph-tool-error.otlp.jsonl",
    "pydantic-ai v5, GenAI": "pydantic-ai-v5-tool-errors-denied.otlp.jsonl",
}
_RESULT_WORDS = ("output", "completion", "response", "usage", "result")


@dataclass(slots=True)
class ReplayedSpan:
    name: str
    start: dict
    end: dict
    events: list[tuple[str, dict]]
    error: str | None  # the status description of an error span; None when not an error
    children: list["ReplayedSpan"]


def load_run(file_name: str) -> list[ReplayedSpan]:
    """The root spans of a fixture file, each with its descendants, in start order."""
    views = sorted((view for view in iter_spans(FIXTURES / file_name) if isinstance(view, SpanView)),
                   key=lambda view: view.start_ns)
    replayed = {view.span_id: _replayed(view) for view in views}
    children: dict[int, list[ReplayedSpan]] = defaultdict(list)
    roots = []
    for view in views:
        if view.parent_span_id in replayed:
            children[view.parent_span_id].append(replayed[view.span_id])
        else:
            roots.append(replayed[view.span_id])
    for span_id, span in replayed.items():
        span.children = children[span_id]
    return roots


def _replayed(view: SpanView) -> ReplayedSpan:
    start, end = {}, {}
    for key, value in view.attributes.items():
        (end if any(word in key for word in _RESULT_WORDS) else start)[key] = value
    events = [(event.name, dict(event.attributes)) for event in view.events]
    error = (view.status_message or "") if view.status is ViewStatus.ERROR else None
    return ReplayedSpan(view.name, start, end, events, error, [])


def span_count(roots: list[ReplayedSpan]) -> int:
    return sum(1 + span_count(root.children) for root in roots)


def replay(tracer, roots: list[ReplayedSpan], times: int) -> None:
    """Replay the run `times` times, each as a new trace."""
    for _ in range(times):
        for root in roots:
            _play(tracer, root, None)


def _play(tracer, node: ReplayedSpan, context) -> None:
    span = tracer.start_span(node.name, context=context, attributes=node.start)
    if node.children:
        inner = trace.set_span_in_context(span)
        for child in node.children:
            _play(tracer, child, inner)
    for name, attributes in node.events:
        span.add_event(name, attributes)
    if node.end:
        span.set_attributes(node.end)
    if node.error is not None:
        span.set_status(Status(StatusCode.ERROR, node.error))
    span.end()
