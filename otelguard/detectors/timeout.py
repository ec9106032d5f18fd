"""Timeouts a framework reports itself, recognised from the tool result or error text."""

from __future__ import annotations

import re


# pydantic-ai: "Timed out after 0.05 seconds." (status ERROR); OpenAI Agents SDK: "... timed out after ..."
_FRAMEWORK_TIMEOUT = re.compile(r"\btimed out after\b", re.IGNORECASE)
_SEARCHED_CHARS = 2000


def is_framework_timeout(result: str | None, error_message: str | None) -> bool:
    """True when the tool's own result or error says the framework stopped it on a timeout."""
    for text in (result, error_message):
        if text and _FRAMEWORK_TIMEOUT.search(text, 0, _SEARCHED_CHARS):
            return True
    return False
