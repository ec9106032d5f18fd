"""Shared helpers for the conformance-vector tests (`/work/shared/vectors.md`)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from otelguard.guards.config import GuardConfig
from otelguard.errors import ConfigError

# Verbatim texts of design §4.2 (the tests pin the contract, not the module's constants).
SHORT_REMINDER = (
    "You are repeating the exact same tool call with identical arguments. Carefully analyze the "
    "previous result before calling again: if the task is not complete, try a different approach or "
    "different arguments instead of repeating the call."
)
DETAILED_ADVICE = (
    "The repeated calls are not making progress. Do not call this tool with these exact arguments "
    "again. Inspect the latest result and choose a different action, different arguments, or finish "
    "the task if enough evidence has been gathered."
)
BLOCK_HEADER = "Repeated tool call blocked:"
BLOCK_ADVICE = (
    "This identical call was blocked because it made no progress. Do not retry this tool with these "
    "exact arguments. Inspect prior results and take a different action, or finish the task if enough "
    "evidence has been gathered."
)


def load_row(guard_id: str, config: object) -> GuardConfig:
    """A config holding one guard row."""
    return GuardConfig.load({"guards": [{"id": guard_id, "config": config}]})


def assert_invalid(guard_id: str, key: str, value: object) -> str:
    """Loading `{key: value}` as the row's config raises a ConfigError naming the key where it sits
    (`guards[0] (<id>).config.<key>`, then `:` or an item index); returns the message."""
    with pytest.raises(ConfigError) as caught:
        load_row(guard_id, {key: value})
    message = str(caught.value)
    assert re.search(rf"guards\[0\] \({re.escape(guard_id)}\)\.config\.{re.escape(key)}[:\[]", message), message
    return message


def R(seed: str, n: int = 400) -> str:
    """The vectors' deterministic lowercase text generator."""
    h = 0
    for c in seed:
        h = (h * 31 + ord(c)) % 2**32
    out = []
    while len(out) < n:
        h = (h * 1103515245 + 12345) % 2**32
        out.append(chr(97 + h % 26))
    return "".join(out)


def detailed_reminder(tool: str, count: int, preview: str) -> str:
    """The detailed reminder text of design §4.2."""
    return "\n".join([
        "Repeated tool call detected:",
        f"- tool: {tool}",
        f"- consecutive_calls: {count}",
        f"- arguments: {preview}",
        DETAILED_ADVICE,
    ])


def break_correction(chars: int) -> str:
    """The mid-stream break correction of design §4.4."""
    return (
        f"Your output had repeated itself for {chars} characters without progressing, so the response "
        "was cut off mid-stream. Do not resume the repetition: state the conclusion once, briefly, and "
        "then either call a tool or finish the answer."
    )


def timeout_error(ms: int) -> dict[str, Any]:
    """The structured error of design §4.1 that replaces a timed-out tool's result."""
    message = f"tool call timed out after {ms}ms"
    return {
        "isError": True,
        "error": {"message": message, "info": {"name": "ToolTimeoutError", "code": "TOOL_TIMEOUT"}},
        "content": [{"type": "text", "text": f"Error: {message}"}],
    }


def assistant_text(text: str) -> str:
    """A `gen_ai.output.messages` value holding one assistant text part."""
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])
