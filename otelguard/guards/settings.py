"""Each guard's settings: one frozen dataclass per guard, which `config.GuardConfig` validates a row's
`config` into (pydantic reads the constraints below) and the guard reads.

Keys are snake_case; the seeds' camelCase keys are accepted as aliases so an existing profile row ports
verbatim. Values are strict: no string is read as a number, no number as a bool. Built directly
(`RepeatToolReminderConfig(stop_after=8)`), a settings object is not validated: validate a config
through `GuardConfig.load`. This module imports no pydantic, so a driver that has a validated config
at hand (a CLI hook's cache) builds the guards without it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from annotated_types import Ge, Gt, Le, MinLen

from ..conventions import READ_LIMITS
from ..detectors.progress import CYCLE, ERROR_LOOP, INTERLEAVED_REPEAT, NEAR_DUPLICATE, SAME_RESULT
from ..detectors.stream import LONG_CYCLE_FLOOR
from ..runtime.terminal import short_repr


class Check:
    """`Annotated` metadata pydantic applies around a field's own validation: `before` may reshape the
    raw value, `after` checks (and may normalise) the validated one; with `with_info`, `after` also
    gets pydantic's ValidationInfo (`info.data`: the fields before it, those that were valid)."""

    def __init__(self, after: Callable[..., Any] | None = None, *, before: Callable[[Any], Any] | None = None,
                 with_info: bool = False):
        self.after, self.before, self.with_info = after, before, with_info

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        schema = handler(source)
        if self.after is not None:
            wrap = (core_schema.with_info_after_validator_function if self.with_info
                    else core_schema.no_info_after_validator_function)
            schema = wrap(self.after, schema)
        if self.before is not None:
            schema = core_schema.no_info_before_validator_function(self.before, schema)
        return schema


def _camel(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


class _Settings:
    """What every guard's settings share: pydantic's options, and the guard the settings are for."""

    __slots__ = ()
    guard_id: ClassVar[str]
    __pydantic_config__: ClassVar[dict[str, Any]] = {
        "extra": "forbid", "strict": True, "alias_generator": _camel, "populate_by_name": True}

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        schema = handler(source)
        schema["strict"] = False  # a mapping validates into the dataclass (its fields stay strict)
        return core_schema.no_info_after_validator_function(_agreed, schema)

    def _check_agreement(self) -> None:
        """Raise ValueError when settings contradict each other (the error names the row's config)."""


def _agreed(settings: _Settings) -> _Settings:
    settings._check_agreement()
    return settings


def _as_tuple(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _non_empty_patterns(value: tuple[str, ...]) -> tuple[str, ...]:
    if any(not pattern for pattern in value):
        raise ValueError(f"patterns must be non-empty strings, got {short_repr(list(value))}")
    return value


def _no_duplicates(value: tuple[Any, ...]) -> tuple[Any, ...]:
    if len(set(value)) != len(value):
        raise ValueError(f"must not contain duplicates, got {short_repr(list(value))}")
    return value


def _ratio_number(value: Any) -> Any:
    # strict mode refuses ints for floats; 0 and 1 are natural ratios.
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def _thresholds_valid(value: tuple[int, ...]) -> tuple[int, ...]:
    if not value:
        raise ValueError("must not be empty")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or item < 2:
            raise ValueError(f"every threshold must be an integer >= 2, got {short_repr(item)}")
    return tuple(sorted(_no_duplicates(value)))


def _streak_length(value: int) -> int:
    if value == 1:
        raise ValueError("must be 0 (off) or at least 2: one answer is no streak")
    return value


# Checks against an earlier field: each names its own field when it fails (the field it compares with
# is validated already, and absent from info.data when invalid).
def _above_the_short_cycles(value: int, info: Any) -> int:
    floor = info.data.get("max_repeated_cycle_chars", 64) or LONG_CYCLE_FLOOR  # (64: the field's default)
    if value and value <= floor:
        raise ValueError(f"must be 0 (off) or above max_repeated_cycle_chars ({floor}), got {value}")
    return value


def _past_the_cycle_span(value: int, info: Any) -> int:
    span = info.data.get("min_repeated_cycle_chars", 2)
    if value and value < span:
        raise ValueError(f"must be 0 (off) or at least min_repeated_cycle_chars ({span}), got {value}")
    return value


# Tool-name patterns (`*` is the only special character), given as a YAML/JSON list.
ToolPatterns = Annotated[tuple[str, ...], Check(_non_empty_patterns, before=_as_tuple)]
# Every guard's `exempt_tools`: patterns (as `include` / `exclude` take them) of tools that never
# trigger the guard; each guard says what that means for its calls.
Ratio = Annotated[float, Ge(0), Le(1), Check(before=_ratio_number)]
Text = Annotated[str, MinLen(1)]


@dataclass(slots=True, frozen=True)
class TimeoutPolicyConfig(_Settings):
    """Budgets come from the tools' own declarations; none is armed for an exempt tool."""

    guard_id: ClassVar[str] = "timeout-policy"

    exempt_tools: ToolPatterns = ()


@dataclass(slots=True, frozen=True)
class RepeatToolReminderConfig(_Settings):
    guard_id: ClassVar[str] = "repeat-tool-reminder"

    thresholds: Annotated[tuple[int, ...], Check(_thresholds_valid, before=_as_tuple)] = (3, 5, 8)
    include: ToolPatterns = ()
    exclude: ToolPatterns = ()
    arguments_preview_chars: Annotated[int, Ge(1)] = 500
    include_arguments: bool = True  # false: detailed reminders leave the arguments preview out
    # false: messages quote nothing the model or a tool wrote (no tool name, no arguments): for
    # messages shown in a system-level role, where such text must not gain that role's authority.
    quote_untrusted: bool = True
    stop_after: Annotated[int | None, Ge(2)] = None
    # True: a call whose result differs from the previous identical call's restarts the run (polling
    # whose result moves on is progress). False, the seed's: results are not read.
    result_aware: bool = False
    # An exempt tool's identical calls are a run of their own (another tool's call still breaks it),
    # never reminded or blocked; unlike `exclude`, its calls do break other tools' runs.
    exempt_tools: ToolPatterns = ()


NO_PROGRESS_RULES = (CYCLE, INTERLEAVED_REPEAT, SAME_RESULT, ERROR_LOOP, NEAR_DUPLICATE)
DEFAULT_TRANSPARENT_TOOLS = ("think", "todo_write", "todo_read", "TodoWrite", "TodoRead", "todowrite", "todoread",
                             "write_todos", "update_plan", "sequentialthinking", "sequential_thinking")

_NoProgressRule = Literal[NO_PROGRESS_RULES]  # type: ignore[valid-type]  # of constants: pydantic reads it, mypy cannot


def _rules_exemptions(value: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    return {rule: patterns for rule, patterns in value.items() if patterns}  # (an empty list exempts nothing)


@dataclass(slots=True, frozen=True)
class NoProgressConfig(_Settings):
    guard_id: ClassVar[str] = "no-progress"

    rules: Annotated[tuple[_NoProgressRule, ...], Check(_no_duplicates, before=_as_tuple)] = NO_PROGRESS_RULES
    max_period: Annotated[int, Ge(2), Le(10)] = 5
    min_repeats: Annotated[int, Ge(2)] = 3
    window: Annotated[int, Ge(3), Le(100)] = 10
    min_errors: Annotated[int, Ge(2)] = 3
    transparent: ToolPatterns = DEFAULT_TRANSPARENT_TOOLS
    steer_after: Annotated[int, Ge(1)] = 2
    stop_after: Annotated[int | None, Ge(3)] = None
    arguments_preview_chars: Annotated[int, Ge(1)] = 200
    include_arguments: bool = True  # false: messages quote neither arguments nor results
    quote_untrusted: bool = True  # false: no tool names, arguments or error text in messages (as above)
    # A pattern any of whose calls is of an exempt tool is reported by no rule (`exempt_tools`) or not
    # by the rules named (`exempt_tools_by_rule`: rule -> patterns); its calls are still steps.
    exempt_tools: ToolPatterns = ()
    exempt_tools_by_rule: Annotated[dict[_NoProgressRule, ToolPatterns], Check(_rules_exemptions)] = \
        field(default_factory=dict)

    def _check_agreement(self) -> None:
        if self.window < 2 * self.min_repeats - 1:
            # same-result needs min_repeats identical calls with another call between each pair
            raise ValueError(f"window ({self.window}) must be at least 2 * min_repeats - 1 "
                             f"({2 * self.min_repeats - 1})")
        if self.stop_after is not None and self.stop_after <= max(self.min_repeats, self.min_errors):
            raise ValueError(f"stop_after ({self.stop_after}) must exceed min_repeats ({self.min_repeats}) "
                             f"and min_errors ({self.min_errors}): the first detection reminds")


@dataclass(slots=True, frozen=True)
class ThinkingLoopGuardConfig(_Settings):
    guard_id: ClassVar[str] = "thinking-loop-guard"

    max_thinking_steps: Annotated[int, Ge(2)] = 3
    # At most what the guard judges of a call's reasoning, and of its text (the last characters of longer ones).
    min_reasoning_chars: Annotated[int, Ge(256), Le(READ_LIMITS.judged_chars)] = 2048
    repeat_ratio: Ratio = 0.5
    similarity_threshold: Ratio = 0.8
    escalate: Literal["warn", "steer", "cancel"] = "steer"
    max_fires: Annotated[int, Ge(1)] = 4
    cancel_cause: Text = "thinking-loop"
    max_repeated_text: Annotated[int, Ge(0)] = 60
    max_repeated_cycle_chars: Annotated[int, Ge(0)] = 64
    min_repeated_cycle_chars: Annotated[int, Ge(2), Le(READ_LIMITS.judged_chars)] = 256
    break_code: Text = "REPETITIVE_OUTPUT"
    break_correction: bool = True
    # Structure-aware cycle rules: repetition inside a code fence, a table, CSV/TSV rows, a JSON array
    # or a drawn grid is cut only past this many characters (0: cut it like prose).
    max_structured_repeat_chars: Annotated[int, Ge(0), Check(_past_the_cycle_span, with_info=True)] = 8192
    # long-cycle: periods above max_repeated_cycle_chars up to this (0 disables), repeated this often.
    max_long_cycle_chars: Annotated[int, Ge(0), Le(4096), Check(_above_the_short_cycles, with_info=True)] = 512
    long_cycle_repeats: Annotated[int, Ge(2), Le(16)] = 3
    # low-novelty: the share of new word n-grams over a window of the call's text (min 0 disables).
    novelty_window: Annotated[int, Ge(128), Le(READ_LIMITS.judged_chars)] = 1024
    novelty_ngram: Annotated[int, Ge(1), Le(8)] = 3
    min_novelty: Ratio = 0.2
    low_novelty_action: Literal["none", "break"] = "none"
    # text-loop: text-only answers of one run restating each other (repeats 0 and streak 0 disable).
    text_loop_repeats: Annotated[int, Ge(0), Check(_streak_length)] = 3
    text_loop_similarity: Annotated[float, Gt(0), Le(1), Check(before=_ratio_number)] = 0.8
    text_loop_streak: Annotated[int, Ge(0), Check(_streak_length)] = 5
    text_loop_streak_similarity: Annotated[float, Gt(0), Le(1), Check(before=_ratio_number)] = 0.4
    text_loop_action: Literal["none", "warn", "steer", "cancel"] = "steer"
    # A model call that asks for an exempt tool is no thinking step (judged after it ends as a call
    # with reasoning too short to judge); the mid-stream breaker cuts before tool calls are known.
    exempt_tools: ToolPatterns = ()


GuardSettings = TimeoutPolicyConfig | RepeatToolReminderConfig | ThinkingLoopGuardConfig | NoProgressConfig
# Each guard's settings type, by the guard's id, in the default composition order.
SETTINGS_TYPES: dict[str, type[GuardSettings]] = {
    settings.guard_id: settings
    for settings in (TimeoutPolicyConfig, RepeatToolReminderConfig, ThinkingLoopGuardConfig, NoProgressConfig)}
