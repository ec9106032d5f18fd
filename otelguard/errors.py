"""The exception tree: small enough to read at a glance."""

from __future__ import annotations


class OtelGuardError(Exception):
    """Base of every error otelguard raises on purpose."""


class ConfigError(OtelGuardError, ValueError):
    """A guard config is invalid. Raised at load; the message names the field and the value."""


class RepetitiveOutputError(OtelGuardError):
    """A streamed model response was cut mid-stream because it repeated itself."""

    def __init__(self, message: str, *, code: str = "REPETITIVE_OUTPUT", rule: str = "", chars: int = 0):
        super().__init__(message)
        self.code = code
        self.rule = rule
        self.chars = chars


class ToolTimeoutError(OtelGuardError, TimeoutError):
    """A guarded tool overran its declared budget (raised by `ToolSignal.raise_if_aborted`)."""

    code = "TOOL_TIMEOUT"


class AgentCancelled(OtelGuardError):
    """The guard cancelled the agent's active turn (raised by integrations and `Mailbox`)."""

    def __init__(self, cause: str, verdict: object | None = None):
        super().__init__(f"agent turn cancelled by otelguard: {cause}")
        self.cause = cause
        self.verdict = verdict
