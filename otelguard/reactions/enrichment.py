"""Verdicts on the exported spans.

An ended SDK span is read-only, so the export pipeline (the processor's downstream) is handed an
enriched copy: the strongest verdict's `otelguard.*` attributes, and one `otelguard.verdict` event per
verdict. With no downstream, each verdict is an event on the still-open agent-run span instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import Event, ReadableSpan

from ..model.actions import strongest
from ..model.records import Verdict

VERDICT_EVENT = "otelguard.verdict"


def enriched(span: ReadableSpan, verdicts: Sequence[Verdict], extra: Mapping[str, Any] | None = None) -> ReadableSpan:
    """A copy of the ended span with the verdict attributes (and `extra`: a loop's spend) and one
    `otelguard.verdict` event each."""
    attributes = dict(span.attributes or {})
    attributes.update(strongest(verdicts).attributes())
    attributes.update(extra or {})
    end = span.end_time
    events = [*span.events, *(Event(VERDICT_EVENT, verdict.attributes(), end) for verdict in verdicts)]
    return ReadableSpan(
        name=span.name,
        context=span.get_span_context(),
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=end,
        instrumentation_scope=span.instrumentation_scope,
    )


def mark_run(run_span: Any, verdicts: Sequence[Verdict], judged_span_id: int,
             extra: Mapping[str, Any] | None = None) -> None:
    """Each verdict as an event on the open agent-run span, naming the span it is about (with `extra`)."""
    if run_span is None or not run_span.is_recording():
        return
    judged = f"{judged_span_id:016x}"
    for verdict in verdicts:
        run_span.add_event(VERDICT_EVENT, {**verdict.attributes(), **(extra or {}), "otelguard.span_id": judged})
