"""`timeout-policy`: budgets come from the tool's own declaration, never from the guard's config."""

from __future__ import annotations

from typing import Any

from ..model.actions import Action
from ..detectors.evidence import of_tool_call
from ..detectors.repeat import any_of
from ..detectors.timeout import is_framework_timeout
from ..model.records import SpanView, ToolCall, Verdict
from ..model.semconv import OTELGUARD_TOOL_TIMEOUT_MS
from .settings import TimeoutPolicyConfig
from .base import Guard, ToolStart

TOOL_TIMEOUT_VERDICT = "tool_timeout"  # the verdict; signals.TOOL_TIMEOUT is the abort reason


def declared_budget_ms(attributes: Any) -> float | None:
    """The budget declared on the span (`otelguard.tool.timeout_ms`), if it is a positive number."""
    value = attributes.get(OTELGUARD_TOOL_TIMEOUT_MS) if attributes else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


class TimeoutPolicy(Guard):
    id = TimeoutPolicyConfig.guard_id

    def __init__(self, config: TimeoutPolicyConfig):
        self.config = config
        self._exempt = any_of(config.exempt_tools)
        self.reads_tool_start = bool(config.exempt_tools)  # an exempt tool is known by its name at its start

    def on_tool_start(self, state: Any, call: ToolCall, span: SpanView, decision: ToolStart, *,
                      step: int = 0) -> None:
        if call.name is not None and self._exempt(call.name):
            decision.no_deadline = True
            return
        decision.budget_ms = declared_budget_ms(span.attributes)

    def on_tool_end(self, state: Any, call: ToolCall, span: SpanView, timed_out_ms: float | None, *,
                    step: int = 0) -> list[Verdict]:
        if call.name is not None and self._exempt(call.name):
            return []
        if timed_out_ms is not None:
            return [Verdict(self.id, TOOL_TIMEOUT_VERDICT, "tool-timeout", Action.ABORT, tool=call.name,
                            error_code="TOOL_TIMEOUT", evidence=(of_tool_call(step, span.span_id, call),))]
        if is_framework_timeout(call.result, call.error_message):
            return [Verdict(self.id, TOOL_TIMEOUT_VERDICT, "framework-timeout", Action.NONE, tool=call.name,
                            evidence=(of_tool_call(step, span.span_id, call),))]
        return []
