"""otelguard: a loop guard for LLM agents instrumented with OpenTelemetry.

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    import otelguard

    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=[BatchSpanProcessor(exporter)]))
"""

from __future__ import annotations

from ._version import __version__
from .config import GuardConfig
from .control import AgentControl, GuardMessage, Mailbox, bind_control
from .errors import (
    AgentCancelled,
    ConfigError,
    OtelGuardError,
    RepetitiveOutputError,
    ToolTimeoutError,
)
from .live.processor import GuardSpanProcessor
from .records import Verdict
from .signals import ToolSignal
from .streams import watch_stream
from .tools import budget, tool_signal

__all__ = [
    "AgentCancelled",
    "AgentControl",
    "ConfigError",
    "GuardConfig",
    "GuardMessage",
    "GuardSpanProcessor",
    "Mailbox",
    "OtelGuardError",
    "RepetitiveOutputError",
    "ToolSignal",
    "ToolTimeoutError",
    "Verdict",
    "__version__",
    "bind_control",
    "budget",
    "tool_signal",
    "watch_stream",
]
