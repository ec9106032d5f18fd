"""Conformance vectors: config validation (vectors.md, repeat-tool reminder 11, and design §4.3 ranges).

Invalid config raises ConfigError at load, and the message names the field.
"""

from __future__ import annotations

import dataclasses

import pytest

from otelguard.guards.config import RepeatToolReminderConfig, ThinkingLoopGuardConfig
from otelguard.errors import ConfigError
from vectors_support import assert_invalid, load_row


# --- repeat-tool-reminder (vector 11) -------------------------------------------------------------
REPEAT_INVALID = [
    ("thresholds", [], "empty"),
    ("thresholds", [1, 3], "below-two"),
    ("thresholds", [2.5], "not-integer"),
    ("thresholds", [3, 3], "duplicates"),
    ("arguments_preview_chars", 0, "zero"),
    ("arguments_preview_chars", 12.5, "not-integer"),
    ("stop_after", 1, "below-two"),
    ("stop_after", 8.5, "not-integer"),
]


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, v, _ in REPEAT_INVALID],
                         ids=[f"{f}-{why}" for f, _, why in REPEAT_INVALID])
def test_v11_invalid_repeat_tool_reminder_value_fails_at_load(field, value):
    """An invalid repeat-tool-reminder value raises ConfigError naming the field."""
    assert_invalid("repeat-tool-reminder", field, value)


def test_v11_empty_thresholds_message_says_why():
    """The empty-thresholds error says the list must not be empty."""
    with pytest.raises(ConfigError, match="must not be empty"):
        load_row("repeat-tool-reminder", {"thresholds": []})


def test_v11_duplicate_thresholds_message_says_why():
    """The duplicate-thresholds error mentions duplicates."""
    with pytest.raises(ConfigError, match="duplicate"):
        load_row("repeat-tool-reminder", {"thresholds": [3, 3]})


def test_v11_valid_repeat_row_loads_with_thresholds_sorted():
    """A valid row loads, thresholds sorted, so the invalid cases fail for their value alone."""
    config = load_row("repeat-tool-reminder", {"thresholds": [4, 2], "arguments_preview_chars": 24,
                                               "stop_after": 8})
    row = config.row("repeat-tool-reminder").config
    assert isinstance(row, RepeatToolReminderConfig)
    assert (row.thresholds, row.arguments_preview_chars, row.stop_after) == ((2, 4), 24, 8)


# --- thinking-loop-guard: every field ------------------------------------------------------------
THINKING_INVALID = [
    ("max_thinking_steps", 1, "below-two"),
    ("max_thinking_steps", 2.5, "not-integer"),
    ("max_thinking_steps", "3", "string"),
    ("min_reasoning_chars", 255, "below-256"),
    ("min_reasoning_chars", 64, "vector-value-64"),
    ("min_reasoning_chars", 1024.5, "not-integer"),
    ("repeat_ratio", -0.1, "negative"),
    ("repeat_ratio", 1.5, "above-one"),
    ("repeat_ratio", "0.5", "string"),
    ("repeat_ratio", True, "bool"),
    ("similarity_threshold", -0.01, "negative"),
    ("similarity_threshold", 1.01, "above-one"),
    ("similarity_threshold", float("nan"), "nan"),
    ("escalate", "shout", "unknown-action"),
    ("escalate", "Steer", "wrong-case"),
    ("escalate", None, "null"),
    ("max_fires", 0, "zero"),
    ("max_fires", True, "bool"),
    ("cancel_cause", "", "empty"),
    ("cancel_cause", 5, "not-string"),
    ("max_repeated_text", -1, "negative"),
    ("max_repeated_text", 2.5, "not-integer"),
    ("max_repeated_cycle_chars", -1, "negative"),
    ("max_repeated_cycle_chars", 64.0, "float"),
    ("min_repeated_cycle_chars", 1, "below-two"),
    ("min_repeated_cycle_chars", "256", "string"),
    ("break_code", "", "empty"),
    ("break_code", 7, "not-string"),
    ("break_correction", "yes", "string"),
    ("break_correction", 1, "int"),
    ("max_structured_repeat_chars", -1, "negative"),
    ("max_structured_repeat_chars", 100, "below-the-cycle-span"),
    ("max_long_cycle_chars", 64, "not-above-the-short-cycles"),
    ("max_long_cycle_chars", 5000, "above-4096"),
    ("long_cycle_repeats", 1, "below-two"),
    ("novelty_window", 64, "below-128"),
    ("novelty_ngram", 0, "below-one"),
    ("min_novelty", 1.5, "above-one"),
    ("low_novelty_action", "steer", "not-none-or-break"),
    ("text_loop_repeats", 1, "one"),
    ("text_loop_similarity", 0, "zero"),
    ("text_loop_streak", -1, "negative"),
    ("text_loop_streak_similarity", 1.5, "above-one"),
    ("text_loop_action", "break", "not-an-action"),
    ("exempt_tools", "think", "string-not-list"),
    ("exempt_tools", [""], "empty-pattern"),
]


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, v, _ in THINKING_INVALID],
                         ids=[f"{f}-{why}" for f, _, why in THINKING_INVALID])
def test_invalid_thinking_loop_guard_value_fails_at_load(field, value):
    """An invalid thinking-loop-guard value raises ConfigError naming the field."""
    assert_invalid("thinking-loop-guard", field, value)


def test_every_thinking_loop_guard_field_has_an_invalid_case():
    """The invalid cases above cover every thinking-loop-guard config field."""
    assert {field for field, _, _ in THINKING_INVALID} == {field.name for field in dataclasses.fields(ThinkingLoopGuardConfig)}


def test_camel_case_alias_error_names_the_key_as_written():
    """An invalid value under a camelCase alias raises ConfigError naming that key."""
    assert_invalid("thinking-loop-guard", "maxThinkingSteps", 1)


def test_unknown_thinking_loop_guard_key_fails_at_load():
    """An unknown key is refused (nothing is ignored silently) and named."""
    assert_invalid("thinking-loop-guard", "max_thinking_step", 3)


def test_error_message_names_the_received_value():
    """The error names the value it received, not only the field."""
    assert "(got 0)" in assert_invalid("thinking-loop-guard", "max_fires", 0)


def test_boundary_thinking_loop_guard_values_load():
    """The smallest and largest allowed values load, so the invalid cases fail for their value alone."""
    config = load_row("thinking-loop-guard", {
        "max_thinking_steps": 2, "min_reasoning_chars": 256, "repeat_ratio": 1, "similarity_threshold": 0,
        "escalate": "cancel", "max_fires": 1, "cancel_cause": "x", "max_repeated_text": 0,
        "max_repeated_cycle_chars": 0, "min_repeated_cycle_chars": 2, "break_code": "X",
        "break_correction": False,
    })
    row = config.row("thinking-loop-guard").config
    assert isinstance(row, ThinkingLoopGuardConfig)
    assert (row.max_thinking_steps, row.min_reasoning_chars, row.repeat_ratio, row.similarity_threshold) == (
        2, 256, 1.0, 0.0)


def test_camel_case_row_ports_verbatim():
    """A seed profile row with camelCase keys loads to the same values."""
    row = load_row("thinking-loop-guard", {"maxThinkingSteps": 4, "minReasoningChars": 512,
                                           "breakCorrection": False}).row("thinking-loop-guard").config
    assert (row.max_thinking_steps, row.min_reasoning_chars, row.break_correction) == (4, 512, False)
