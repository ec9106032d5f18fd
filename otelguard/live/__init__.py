"""The live guard: the engine driven from inside the agent's TracerProvider.

`processor` (the SpanProcessor, a thin driver), `sdk_span` (SDK spans through the public ReadableSpan
API), `timeouts` (tool budgets and signals), `delivery` (metrics and control hooks),
`enrichment` (verdicts on exported spans), `evaluation_events` (verdicts as GenAI evaluation events),
`metrics`, `registry`, `watchdog`, `dispatch`.
"""

from __future__ import annotations

from .processor import GuardSpanProcessor, active_processors

__all__ = ["GuardSpanProcessor", "active_processors"]
