"""Model output told in GenAI log events (`conventions.genai_events`), held by the span each names
until that span is judged, then added to it as its `gen_ai.output.messages`.

Log records may come before or after their spans: `otelguard analyze` reads log files first, and the
service holds a trace about a second before judging it. Bounded: past `max_spans` the oldest held
output goes, counted in `evicted`; output whose span never came is counted in `unmatched` when the
holder is drained.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..model import semconv as sc
from ..otlp.json_spans import ReadSpan

DEFAULT_MAX_SPANS = 10_000


class EventOutputs:
    def __init__(self, max_spans: int = DEFAULT_MAX_SPANS):
        self.max_spans = max_spans
        self._held: OrderedDict[tuple[int, int], list[Mapping[str, Any]]] = OrderedDict()
        self.merged = 0  # spans given output from events
        self.evicted = 0  # held output dropped by the bound
        self.unmatched = 0  # held output whose span never came

    def __len__(self) -> int:
        return len(self._held)

    def add(self, trace_id: int, span_id: int, messages: tuple[Mapping[str, Any], ...]) -> None:
        """Output messages an event tells of the span (trace_id, span_id), in arrival order."""
        if not messages:
            return
        key = (trace_id, span_id)
        held = self._held.get(key)
        if held is None:
            self._held[key] = held = []
            if len(self._held) > self.max_spans:
                self._held.popitem(last=False)
                self.evicted += 1
        held.extend(messages)

    def merge_into(self, span: ReadSpan) -> None:
        """Give the span the output its events told, unless it carries output of its own."""
        messages = self._held.pop((span.trace_id, span.span_id), None)
        if messages is None:
            return
        view = span.view()
        if sc.GEN_AI_OUTPUT_MESSAGES not in view.attributes:
            view.attributes = {**view.attributes, sc.GEN_AI_OUTPUT_MESSAGES: messages}
            self.merged += 1

    def drain(self) -> None:
        """The end of the input: what is still held found no span."""
        self.unmatched += len(self._held)
        self._held.clear()
