"""otelguard: a loop guard for LLM agents instrumented with OpenTelemetry.

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    import otelguard

    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=[BatchSpanProcessor(exporter)]))

The names below are imported on first use: `import otelguard` alone (as the `otelguard` command and
its per-tool-call CLI hooks do) loads neither OpenTelemetry nor pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

# public name -> the module that defines it
_EXPORTS = {
    "AgentCancelled": ".errors",
    "AgentControl": ".reactions.control",
    "ConfigError": ".errors",
    "GuardConfig": ".guards.config",
    "GuardMessage": ".reactions.control",
    "GuardSpanProcessor": ".live.processor",
    "Mailbox": ".reactions.control",
    "OtelGuardError": ".errors",
    "RepetitiveOutputError": ".errors",
    "ToolSignal": ".live.signals",
    "ToolTimeoutError": ".errors",
    "Verdict": ".model.records",
    "bind_control": ".reactions.control",
    "budget": ".live.tools",
    "tool_signal": ".live.tools",
    "watch_stream": ".live.streams",
}

__all__ = ["__version__", *_EXPORTS]  # the names above: one list


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'otelguard' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # once imported, an ordinary module attribute
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:  # (`X as X`: re-exported, for type checkers, which cannot read `__all__` above)
    from .guards.config import GuardConfig as GuardConfig
    from .reactions.control import AgentControl as AgentControl
    from .reactions.control import GuardMessage as GuardMessage
    from .reactions.control import Mailbox as Mailbox
    from .reactions.control import bind_control as bind_control
    from .errors import AgentCancelled as AgentCancelled
    from .errors import ConfigError as ConfigError
    from .errors import OtelGuardError as OtelGuardError
    from .errors import RepetitiveOutputError as RepetitiveOutputError
    from .errors import ToolTimeoutError as ToolTimeoutError
    from .live.processor import GuardSpanProcessor as GuardSpanProcessor
    from .model.records import Verdict as Verdict
    from .live.signals import ToolSignal as ToolSignal
    from .live.streams import watch_stream as watch_stream
    from .live.tools import budget as budget
    from .live.tools import tool_signal as tool_signal
