"""`timeout-policy`: budgets come from the tool's own declaration, never from the guard's config."""

from __future__ import annotations

from typing import Any

from ..config import TIMEOUT_POLICY, TimeoutPolicyConfig
from ..detectors.timeout import is_framework_timeout
from ..records import SpanView, ToolCall, Verdict
from ..semconv import OTELGUARD_TOOL_TIMEOUT_MS
from .base import Guard, ToolStart

TOOL_TIMEOUT = "tool_timeout"


def timeout_error(budget_ms: float) -> dict[str, Any]:
    """The structured error that replaces a timed-out tool's result."""
    ms = _format_ms(budget_ms)
    message = f"tool call timed out after {ms}ms"
    return {
        "isError": True,
        "error": {"message": message, "info": {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"}},
        "content": [{"type": "text", "text": f"Error: {message}"}],
    }


def _format_ms(budget_ms: float) -> str:
    return str(int(budget_ms)) if float(budget_ms).is_integer() else f"{budget_ms:g}"


def declared_budget_ms(attributes: Any) -> float | None:
    """The budget declared on the span (`otelguard.tool.timeout_ms`), if it is a positive number."""
    value = attributes.get(OTELGUARD_TOOL_TIMEOUT_MS) if attributes else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
        return float(value)
    return None


class TimeoutPolicy(Guard):
    id = TIMEOUT_POLICY

    def __init__(self, config: TimeoutPolicyConfig):
        self.config = config

    def on_tool_start(self, state: Any, call: ToolCall, span: SpanView, decision: ToolStart) -> None:
        decision.budget_ms = declared_budget_ms(span.attributes)

    def on_tool_end(self, state: Any, call: ToolCall, span: SpanView, timed_out_ms: float | None) -> list[Verdict]:
        if timed_out_ms is not None:
            return [Verdict(self.id, TOOL_TIMEOUT, "tool-timeout", "abort", tool=call.name,
                            error_code="TOOL_TIMEOUT")]
        if is_framework_timeout(call.result, call.error_message):
            return [Verdict(self.id, TOOL_TIMEOUT, "framework-timeout", "none", tool=call.name)]
        return []
