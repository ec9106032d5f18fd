"""A framework's own tool timeout is recognised in a tool's result or error text, as the regex says."""

from __future__ import annotations

import re

import pytest

from otelguard.detectors.timeout import is_framework_timeout

_REFERENCE_TIMEOUT = re.compile(r"\btimed out after\b", re.IGNORECASE)


def reference_is_framework_timeout(result, error_message):
    """The rule plainly: "timed out after" as words, any case, in the first 2000 characters of either text."""
    return any(text and _REFERENCE_TIMEOUT.search(text[:2000]) for text in (result, error_message))


@pytest.mark.parametrize("text", [
    "Timed out after 0.05 seconds.",
    "tool call TIMED OUT AFTER 30s",
    "It is sunny in Paris, 21C.",
    "x" * 1990 + "timed out after 1s",  # crosses the 2000-character cut: not found
    "x" * 1980 + " timed out after",  # ends right at the cut
    "x" * 1981 + " timed out after",  # one character past it
    "outtimed out after",  # no word boundary before
    "timed out afterwards",  # none after
    "tİmed out after 3s",  # a dotted capital I matches i under IGNORECASE
    "tımed out after 3s",  # so does a dotless i
    "timed out aftER",
    "İ" * 1500 + " timed out after",  # lowering makes the prefix longer than the text it came from
    "",
])
def test_a_framework_timeout_is_found_exactly_where_the_rule_finds_it(text):
    assert is_framework_timeout(text, None) == reference_is_framework_timeout(text, None)
    assert is_framework_timeout(None, text) == reference_is_framework_timeout(None, text)


def test_neither_text_means_no_timeout():
    assert not is_framework_timeout(None, None)
