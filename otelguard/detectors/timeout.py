"""Timeouts a framework reports itself, recognised from the tool result or error text."""

from __future__ import annotations

import re


# pydantic-ai: "Timed out after 0.05 seconds." (status ERROR); OpenAI Agents SDK: "... timed out after ..."
_FRAMEWORK_TIMEOUT = re.compile(r"\btimed out after\b", re.IGNORECASE)
_SEARCHED_CHARS = 2000
# A case-insensitive regex tries every position (~13 ns a character); lowering the text and looking
# for a plain substring first costs a tenth of that. Only ASCII letters match "out after" under
# IGNORECASE, and each lowers to its own lower case, so the test never misses a match.
_PREFILTER = "out after"


def is_framework_timeout(result: str | None, error_message: str | None) -> bool:
    """True when the tool's own result or error says the framework stopped it on a timeout."""
    for text in (result, error_message):
        if (text and _PREFILTER in text[:_SEARCHED_CHARS].lower()
                and _FRAMEWORK_TIMEOUT.search(text, 0, _SEARCHED_CHARS)):
            return True
    return False
