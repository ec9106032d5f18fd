"""`SpanSource`: how a driver hands a span to the engine.

The live processor adapts an SDK span (`otelguard.live.sdk_span`), the analyzer a span read from
OTLP JSON (`otelguard.otlp.json_spans.ReadSpan`); a `SpanView` is a source of its own. The engine
reads the ids, the name and the attributes of every span it is handed, at its start and at its end;
the rest (events, status, times, scope, dropped counts) only through `view()`, and only for a span
it judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..model.records import SpanView


class SpanSource(Protocol):
    """One span, at its start (attributes known so far) or at its end. Of a span that is none of its
    business the engine asks only the ids, the name and the attributes."""

    @property
    def name(self) -> str: ...

    @property
    def trace_id(self) -> int: ...

    @property
    def span_id(self) -> int: ...

    @property
    def parent_span_id(self) -> int | None: ...

    @property
    def attributes(self) -> Mapping[str, Any]: ...

    def view(self) -> SpanView:
        """The whole span as the conventions read it; read on first call."""
        ...

    def parent_view(self) -> SpanView | None:
        """The parent span, where the driver has it (LangChain writes tool arguments on the parent)."""
        ...
