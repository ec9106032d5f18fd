"""Config hardening: the invalid values test_vectors_config.py leaves out, each a ConfigError naming its field.

test_vectors_config.py covers every thinking-loop-guard field and thresholds / arguments_preview_chars /
stop_after values. This file adds the rest of repeat-tool-reminder (include, exclude, wrong shapes and
types), timeout-policy, the row and top-level shape, config files, the processor's keyword settings
(max_agents, idle_ttl_s, hook_wait_s) and `@budget(timeout_ms=...)`.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from vectors_support import assert_invalid, load_row

import otelguard
from otelguard.guards.config import GuardConfig, NoProgressConfig, RepeatToolReminderConfig
from otelguard.errors import ConfigError

# --- repeat-tool-reminder: what the vectors leave out ------------------------------------------------------
REPEAT_INVALID = [
    ("include", "todo_write", "string-not-list"),
    ("include", [1, 2], "not-strings"),
    ("include", None, "null"),
    ("include", [""], "empty-pattern"),
    ("exclude", {"todo_write": True}, "mapping"),
    ("exclude", [None], "null-item"),
    ("exclude", [""], "empty-pattern"),
    ("thresholds", 3, "scalar"),
    ("thresholds", "3,5,8", "string"),
    ("thresholds", None, "null"),
    ("thresholds", [True, 3], "bool-item"),
    ("thresholds", [[3]], "nested"),
    ("arguments_preview_chars", True, "bool"),
    ("arguments_preview_chars", "500", "string"),
    ("arguments_preview_chars", -1, "negative"),
    ("arguments_preview_chars", None, "null"),
    ("include_arguments", "no", "string"),
    ("include_arguments", 0, "int"),
    ("include_arguments", None, "null"),
    ("quote_untrusted", "false", "string"),
    ("quote_untrusted", 0, "int"),
    ("stop_after", True, "bool"),
    ("stop_after", "8", "string"),
    ("stop_after", 0, "zero"),
    ("result_aware", "yes", "string"),
    ("result_aware", 1, "int"),
    ("exempt_tools", "bash", "string-not-list"),
    ("exempt_tools", [""], "empty-pattern"),
    ("exempt_tools", [7], "not-strings"),
]


def test_unknown_repeat_tool_reminder_key_is_named():
    """A misspelt repeat-tool-reminder key is refused and named."""
    assert_invalid("repeat-tool-reminder", "threshold", [3])


# --- no-progress ------------------------------------------------------------------------------------------
NO_PROGRESS_INVALID = [
    ("rules", "cycle", "string-not-list"),
    ("rules", ["cycle", "loops"], "unknown-rule"),
    ("rules", ["cycle", "cycle"], "duplicate"),
    ("max_period", 1, "below-two"),
    ("max_period", 11, "above-ten"),
    ("max_period", 2.5, "float"),
    ("min_repeats", 1, "below-two"),
    ("min_repeats", True, "bool"),
    ("window", 2, "below-three"),
    ("window", 101, "above-hundred"),
    ("min_errors", 1, "below-two"),
    ("transparent", "think", "string-not-list"),
    ("transparent", [""], "empty-pattern"),
    ("steer_after", 0, "zero"),
    ("stop_after", 2, "below-three"),
    ("stop_after", "5", "string"),
    ("arguments_preview_chars", 0, "zero"),
    ("include_arguments", "no", "string"),
    ("quote_untrusted", None, "null"),
    ("exempt_tools", "pytest*", "string-not-list"),
    ("exempt_tools", [""], "empty-pattern"),
    ("exempt_tools_by_rule", ["same-result"], "list-not-mapping"),
]


@pytest.mark.parametrize(("value", "named"), [
    ({"loops": ["bash"]}, "exempt_tools_by_rule.loops"),
    ({"same-result": "bash"}, "exempt_tools_by_rule.same-result"),
    ({"error-loop": [""]}, "exempt_tools_by_rule.error-loop"),
])
def test_exempt_tools_by_rule_names_the_rule_at_fault(value, named):
    """An unknown rule, or patterns that are no list of non-empty strings, fail at load naming the rule."""
    with pytest.raises(ConfigError) as caught:
        load_row("no-progress", {"exempt_tools_by_rule": value})
    assert f"guards[0] (no-progress).config.{named}" in str(caught.value)


INVALID = {"repeat-tool-reminder": (REPEAT_INVALID, RepeatToolReminderConfig),
           "no-progress": (NO_PROGRESS_INVALID, NoProgressConfig)}


@pytest.mark.parametrize(("guard_id", "field", "value"),
                         [(guard_id, f, v) for guard_id, (cases, _) in INVALID.items() for f, v, _ in cases],
                         ids=[f"{guard_id}-{f}-{why}" for guard_id, (cases, _) in INVALID.items() for f, _, why in cases])
def test_invalid_value_fails_at_load(guard_id, field, value):
    """An invalid repeat-tool-reminder or no-progress value raises ConfigError naming the field."""
    assert_invalid(guard_id, field, value)


@pytest.mark.parametrize("guard_id", INVALID)
def test_every_field_has_an_invalid_case(guard_id):
    """The invalid cases above cover every config field of the guard."""
    cases, model = INVALID[guard_id]
    assert {field for field, _, _ in cases} == {field.name for field in dataclasses.fields(model)}


@pytest.mark.parametrize(("config", "named"), [
    ({"min_repeats": 6}, "window (10) must be at least 2 * min_repeats - 1 (11)"),
    ({"stop_after": 3}, "stop_after (3) must exceed min_repeats (3) and min_errors (3)"),
    ({"min_errors": 5, "stop_after": 4}, "stop_after (4) must exceed"),
])
def test_no_progress_settings_that_contradict_each_other_fail_at_load(config, named):
    """A window too short for min_repeats, or a stop_after that would block before the first reminder,
    is refused naming both settings."""
    with pytest.raises(ConfigError) as caught:
        load_row("no-progress", config)
    assert "guards[0] (no-progress).config" in str(caught.value) and named in str(caught.value)


def test_no_config_runs_four_guards_with_no_progress_last():
    """Without a config every guard runs, no-progress with its defaults."""
    config = GuardConfig.load(None)
    assert [row.id for row in config.guards] == ["timeout-policy", "repeat-tool-reminder", "thinking-loop-guard",
                                                  "no-progress"]
    assert config.row("no-progress").config == NoProgressConfig(
        max_period=5, min_repeats=3, window=10, min_errors=3, steer_after=2, stop_after=None)


@pytest.mark.parametrize("key", ["timeout_ms", "timeoutMs", "tools"])
def test_timeout_policy_takes_no_budget_key(key):
    """timeout-policy's budgets are the tools' own: a budget key is refused and named."""
    assert_invalid("timeout-policy", key, 100)


@pytest.mark.parametrize("value", ["slow_tool", [""], [3]])
def test_timeout_policy_exempt_tools_must_be_patterns(value):
    """timeout-policy's one setting, exempt_tools, takes a list of non-empty patterns."""
    assert_invalid("timeout-policy", "exempt_tools", value)


# --- rows and the top level ---------------------------------------------------------------------------------
@pytest.mark.parametrize("config", [[1], "thresholds: [3]", 5, True])
@pytest.mark.parametrize("guard_id", ["timeout-policy", "repeat-tool-reminder", "thinking-loop-guard", "no-progress"])
def test_a_row_config_that_is_not_a_mapping_names_config(guard_id, config):
    """A row whose config is not a mapping raises ConfigError naming the row's config."""
    with pytest.raises(ConfigError) as caught:
        load_row(guard_id, config)
    assert "guards[0]" in str(caught.value) and "config" in str(caught.value)


@pytest.mark.parametrize(("row", "field"), [
    ({"id": "nope"}, "id"),
    ({"id": 3}, "id"),
    ({"config": {}}, "id"),
    ({"id": "timeout-policy", "name": 5}, "name"),
])
def test_an_invalid_row_field_is_named(row, field):
    """An unknown, missing or mistyped row id or name raises ConfigError naming it."""
    with pytest.raises(ConfigError) as caught:
        GuardConfig.load({"guards": [row]})
    assert "guards[0]" in str(caught.value) and f".{field}" in str(caught.value)


def test_an_unknown_row_key_is_named_as_a_row_key():
    """An unknown key next to `id` is named where it is, not as if it were inside `config`."""
    with pytest.raises(ConfigError) as caught:
        GuardConfig.load({"guards": [{"id": "timeout-policy", "enabled": True}]})
    message = str(caught.value)
    assert "enabled" in message
    assert "config.enabled" not in message


@pytest.mark.parametrize("guards", [{"id": "timeout-policy"}, "timeout-policy", None, 3])
def test_guards_that_is_not_a_list_names_guards(guards):
    """`guards` that is not a list raises ConfigError naming `guards`."""
    with pytest.raises(ConfigError, match="guards"):
        GuardConfig.load({"guards": guards})


@pytest.mark.parametrize("row", ["timeout-policy", None, 7, ["timeout-policy"]])
def test_a_row_that_is_not_a_mapping_names_its_index(row):
    """A guards entry that is not a mapping raises ConfigError naming its index."""
    with pytest.raises(ConfigError, match=r"guards\[0\]"):
        GuardConfig.load({"guards": [row]})


def test_a_duplicate_guard_names_the_guard():
    """Listing a guard twice raises ConfigError naming it."""
    with pytest.raises(ConfigError, match="repeat-tool-reminder"):
        GuardConfig.load({"guards": [{"id": "repeat-tool-reminder"}, {"id": "repeat-tool-reminder"}]})


def test_an_unknown_top_level_key_is_named():
    """A misspelt top-level key (`guard`) is refused and named."""
    # Anchored: every ConfigError starts "invalid otelguard config", which a bare "guard" would match.
    with pytest.raises(ConfigError, match=r"^invalid otelguard config: guard: "):
        GuardConfig.load({"guard": []})


@pytest.mark.parametrize("source", [[{"id": "timeout-policy"}], 42, 1.5, b"guards: []"])
def test_a_config_that_is_not_a_mapping_says_what_it_got(source):
    """A config that is not a mapping (or a path) raises ConfigError saying a mapping with `guards` is needed."""
    with pytest.raises(ConfigError, match="guards"):
        GuardConfig.load(source)


@pytest.mark.parametrize(("text", "says"), [
    ("guards: [", "not valid YAML"),
    ("- id: timeout-policy\n", "guards"),
    ("guards:\n  - id: timeout-policy\n    config: {timeout_ms: 5}\n", "timeout_ms"),
    ("guards:\n  - id: thinking-loop-guard\n    config: {escalate: shout}\n", "escalate"),
])
def test_an_invalid_config_file_fails_at_load(tmp_path, text, says):
    """A YAML file that is not valid YAML, not a mapping, or holds an invalid value raises ConfigError."""
    path = tmp_path / "otelguard.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=says):
        GuardConfig.load(str(path))


def test_a_missing_config_file_fails_at_load(tmp_path):
    """A path that cannot be read raises ConfigError naming the path."""
    with pytest.raises(ConfigError, match="missing.yaml"):
        GuardConfig.load(str(tmp_path / "missing.yaml"))


def test_an_invalid_config_fails_when_the_processor_is_built():
    """GuardSpanProcessor refuses an invalid config at construction, with the same ConfigError."""
    with pytest.raises(ConfigError, match="max_fires"):
        otelguard.GuardSpanProcessor({"guards": [{"id": "thinking-loop-guard", "config": {"max_fires": 0}}]})


# --- the processor's keyword settings -------------------------------------------------------------------------
PROCESSOR_INVALID = [
    ("max_agents", 0, "zero"),
    ("max_agents", -5, "negative"),
    ("max_agents", "10", "string"),
    ("max_agents", 2.5, "float"),
    ("max_agents", True, "bool"),
    ("idle_ttl_s", -1.0, "negative"),
    ("idle_ttl_s", 0, "zero"),
    ("idle_ttl_s", math.nan, "nan"),
    ("idle_ttl_s", "1h", "string"),
    ("hook_wait_s", -0.05, "negative"),
    ("hook_wait_s", math.nan, "nan"),
    ("hook_wait_s", math.inf, "infinite"),
    ("hook_wait_s", "50ms", "string"),
]


@pytest.mark.parametrize(("field", "value"), [(f, v) for f, v, _ in PROCESSOR_INVALID],
                         ids=[f"{f}-{why}" for f, _, why in PROCESSOR_INVALID])
def test_invalid_processor_setting_fails_at_construction(field, value):
    """An invalid GuardSpanProcessor keyword setting raises ConfigError naming it, before anything runs."""
    with pytest.raises(ConfigError) as caught:
        processor = otelguard.GuardSpanProcessor(**{field: value})
        processor.shutdown()
    assert field in str(caught.value)


# --- @budget ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [0, -1, True, "5", None, math.nan, math.inf, -math.inf],
                         ids=["zero", "negative", "bool", "string", "null", "nan", "inf", "-inf"])
def test_invalid_budget_fails_at_decoration(value):
    """@budget(timeout_ms=...) with anything but a finite number > 0 raises ConfigError naming timeout_ms."""
    with pytest.raises(ConfigError, match="timeout_ms"):
        otelguard.budget(timeout_ms=value)
