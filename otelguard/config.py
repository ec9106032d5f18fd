"""Guard configuration: `{"guards": [row, ...]}`, rows in composition order.

Each row mirrors an original profile row (`id`, optional `name`, `config`). Keys are snake_case; the
seeds' camelCase keys are accepted as aliases so an existing profile row ports verbatim. Anything
invalid raises `ConfigError` at load, naming the field and the value: nothing falls back silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel

from .conventions import READ_LIMITS
from .detectors.progress import CYCLE, ERROR_LOOP, INTERLEAVED_REPEAT, NEAR_DUPLICATE, SAME_RESULT
from .detectors.stream import LONG_CYCLE_FLOOR
from .errors import ConfigError
from .guard_ids import GUARD_IDS, NO_PROGRESS, REPEAT_TOOL_REMINDER, THINKING_LOOP_GUARD, TIMEOUT_POLICY
from .terminal import printable, short_repr

StrictInt = Annotated[int, Field(strict=True)]


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


# Tool-name patterns (`*` is the only special character), given as a YAML/JSON list.
ToolPatterns = Annotated[tuple[str, ...], BeforeValidator(_as_tuple), AfterValidator(_non_empty_patterns)]


class _Settings(BaseModel):
    model_config = ConfigDict(
        extra="forbid", frozen=True, alias_generator=to_camel, populate_by_name=True, strict=True
    )


class TimeoutPolicyConfig(_Settings):
    """Zero config: budgets come from the tools' own declarations."""


class RepeatToolReminderConfig(_Settings):
    thresholds: tuple[int, ...] = (3, 5, 8)
    include: ToolPatterns = ()
    exclude: ToolPatterns = ()
    arguments_preview_chars: int = Field(500, ge=1)
    include_arguments: bool = True  # false: detailed reminders leave the arguments preview out
    stop_after: int | None = Field(None, ge=2)
    # True: a call whose result differs from the previous identical call's restarts the run (polling
    # whose result moves on is progress). False, the seed's: results are not read.
    result_aware: bool = False

    @field_validator("thresholds", mode="before")
    @classmethod
    def _thresholds_shape(cls, value: Any) -> Any:
        if isinstance(value, list):
            return tuple(value)
        return value

    @field_validator("thresholds")
    @classmethod
    def _thresholds_valid(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value:
            raise ValueError("must not be empty")
        for item in value:
            if isinstance(item, bool) or not isinstance(item, int) or item < 2:
                raise ValueError(f"every threshold must be an integer >= 2, got {short_repr(item)}")
        return tuple(sorted(_no_duplicates(value)))


NO_PROGRESS_RULES = (CYCLE, INTERLEAVED_REPEAT, SAME_RESULT, ERROR_LOOP, NEAR_DUPLICATE)
DEFAULT_TRANSPARENT_TOOLS = ("think", "todo_write", "todo_read", "TodoWrite", "TodoRead", "todowrite", "todoread",
                             "write_todos", "update_plan", "sequentialthinking", "sequential_thinking")


_NoProgressRule = Literal[NO_PROGRESS_RULES]  # type: ignore[valid-type]  # of constants: pydantic reads it, mypy cannot


class NoProgressConfig(_Settings):
    rules: Annotated[tuple[_NoProgressRule, ...], BeforeValidator(_as_tuple),
                     AfterValidator(_no_duplicates)] = NO_PROGRESS_RULES
    max_period: int = Field(5, ge=2, le=10)
    min_repeats: int = Field(3, ge=2)
    window: int = Field(10, ge=3, le=100)
    min_errors: int = Field(3, ge=2)
    transparent: ToolPatterns = DEFAULT_TRANSPARENT_TOOLS
    steer_after: int = Field(2, ge=1)
    stop_after: int | None = Field(None, ge=3)
    arguments_preview_chars: int = Field(200, ge=1)
    include_arguments: bool = True

    @model_validator(mode="after")
    def _bounds_agree(self) -> "NoProgressConfig":
        if self.window < 2 * self.min_repeats - 1:
            # same-result needs min_repeats identical calls with another call between each pair
            raise ValueError(f"window ({self.window}) must be at least 2 * min_repeats - 1 "
                             f"({2 * self.min_repeats - 1})")
        if self.stop_after is not None and self.stop_after <= max(self.min_repeats, self.min_errors):
            raise ValueError(f"stop_after ({self.stop_after}) must exceed min_repeats ({self.min_repeats}) "
                             f"and min_errors ({self.min_errors}): the first detection reminds")
        return self


class ThinkingLoopGuardConfig(_Settings):
    max_thinking_steps: int = Field(3, ge=2)
    # At most what the guard judges of a call's reasoning, and of its text (the last characters of longer ones).
    min_reasoning_chars: int = Field(2048, ge=256, le=READ_LIMITS.judged_chars)
    repeat_ratio: float = Field(0.5, ge=0, le=1)
    similarity_threshold: float = Field(0.8, ge=0, le=1)
    escalate: Literal["warn", "steer", "cancel"] = "steer"
    max_fires: int = Field(4, ge=1)
    cancel_cause: str = Field("thinking-loop", min_length=1)
    max_repeated_text: int = Field(60, ge=0)
    max_repeated_cycle_chars: int = Field(64, ge=0)
    min_repeated_cycle_chars: int = Field(256, ge=2, le=READ_LIMITS.judged_chars)
    break_code: str = Field("REPETITIVE_OUTPUT", min_length=1)
    break_correction: bool = True
    # Structure-aware cycle rules: repetition inside a code fence, a table, CSV/TSV rows, a JSON array
    # or a drawn grid is cut only past this many characters (0: cut it like prose).
    max_structured_repeat_chars: int = Field(8192, ge=0)
    # long-cycle: periods above max_repeated_cycle_chars up to this (0 disables), repeated this often.
    max_long_cycle_chars: int = Field(512, ge=0, le=4096)
    long_cycle_repeats: int = Field(3, ge=2, le=16)
    # low-novelty: the share of new word n-grams over a window of the call's text (min 0 disables).
    novelty_window: int = Field(1024, ge=128, le=READ_LIMITS.judged_chars)
    novelty_ngram: int = Field(3, ge=1, le=8)
    min_novelty: float = Field(0.2, ge=0, le=1)
    low_novelty_action: Literal["none", "break"] = "none"
    # text-loop: text-only answers of one run restating each other (repeats 0 and streak 0 disable).
    text_loop_repeats: int = Field(3, ge=0)
    text_loop_similarity: float = Field(0.8, gt=0, le=1)
    text_loop_streak: int = Field(5, ge=0)
    text_loop_streak_similarity: float = Field(0.4, gt=0, le=1)
    text_loop_action: Literal["none", "warn", "steer", "cancel"] = "steer"

    @field_validator("repeat_ratio", "similarity_threshold", "min_novelty", "text_loop_similarity",
                     "text_loop_streak_similarity", mode="before")
    @classmethod
    def _ratio_number(cls, value: Any) -> Any:
        # strict mode refuses ints for floats; 0 and 1 are natural ratios.
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value

    @field_validator("text_loop_repeats", "text_loop_streak")
    @classmethod
    def _streak_length(cls, value: int) -> int:
        if value == 1:
            raise ValueError("must be 0 (off) or at least 2: one answer is no streak")
        return value

    # Field validators (not a model one), so an error names its field; the fields they compare with
    # come earlier in the class, so they are validated already (absent from info.data when invalid).
    @field_validator("max_long_cycle_chars")
    @classmethod
    def _above_the_short_cycles(cls, value: int, info: ValidationInfo) -> int:
        floor = info.data.get("max_repeated_cycle_chars", 64) or LONG_CYCLE_FLOOR  # (64: the field's default)
        if value and value <= floor:
            raise ValueError(f"must be 0 (off) or above max_repeated_cycle_chars ({floor}), got {value}")
        return value

    @field_validator("max_structured_repeat_chars")
    @classmethod
    def _past_the_cycle_span(cls, value: int, info: ValidationInfo) -> int:
        span = info.data.get("min_repeated_cycle_chars", 2)
        if value and value < span:
            raise ValueError(f"must be 0 (off) or at least min_repeated_cycle_chars ({span}), got {value}")
        return value


_CONFIG_MODELS: dict[str, type[_Settings]] = {
    TIMEOUT_POLICY: TimeoutPolicyConfig,
    REPEAT_TOOL_REMINDER: RepeatToolReminderConfig,
    THINKING_LOOP_GUARD: ThinkingLoopGuardConfig,
    NO_PROGRESS: NoProgressConfig,
}


class GuardRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Literal["timeout-policy", "repeat-tool-reminder", "thinking-loop-guard", "no-progress"]
    name: str | None = None
    config: Union[TimeoutPolicyConfig, RepeatToolReminderConfig, ThinkingLoopGuardConfig, NoProgressConfig, None] = None

    @field_validator("config", mode="before")
    @classmethod
    def _typed_config(cls, raw: Any, info: ValidationInfo) -> Any:
        # A field validator (not a model one): errors inside the row's config are located under `config`.
        model = _CONFIG_MODELS.get(info.data.get("id", ""))
        if model is None or isinstance(raw, BaseModel):
            return raw
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ValueError(f"config must be a mapping, got {type(raw).__name__}")
        return model.model_validate(raw)

    @model_validator(mode="after")
    def _config_matches_id(self) -> "GuardRow":
        expected = _CONFIG_MODELS[self.id]
        if self.config is None:
            object.__setattr__(self, "config", expected())
        elif not isinstance(self.config, expected):
            raise ValueError(f"config for {self.id} must be {expected.__name__}")
        return self


class GuardConfig(BaseModel):
    """The whole guard config. `GuardConfig()` runs all four guards with their defaults."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    guards: tuple[GuardRow, ...] = Field(
        default_factory=lambda: tuple(GuardRow.model_validate({"id": guard_id}) for guard_id in GUARD_IDS)
    )

    @field_validator("guards")
    @classmethod
    def _unique_ids(cls, rows: tuple[GuardRow, ...]) -> tuple[GuardRow, ...]:
        seen: set[str] = set()
        for row in rows:
            if row.id in seen:
                raise ValueError(f"guard {row.id!r} is listed twice")
            seen.add(row.id)
        return rows

    def row(self, guard_id: str) -> GuardRow | None:
        return next((row for row in self.guards if row.id == guard_id), None)

    @classmethod
    def load(cls, source: "GuardConfig | dict[str, Any] | str | Path | None" = None) -> "GuardConfig":
        """Load from a GuardConfig, a dict, a YAML/JSON file path or None (defaults).

        Raises ConfigError naming the field on any invalid value.
        """
        if source is None:
            return cls()
        if isinstance(source, GuardConfig):
            return source
        if isinstance(source, (str, Path)):
            path = Path(source)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
            try:
                source = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
            except yaml.YAMLError as exc:
                raise ConfigError(f"config file {path} is not valid YAML: {printable(str(exc), 500)}") from exc
            if source is None:
                return cls()
        if not isinstance(source, dict):
            raise ConfigError(f"config must be a mapping with a 'guards' list, got {type(source).__name__}")
        try:
            return cls.model_validate(source)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, source)) from None


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without aliases: a config never needs one, and nested aliases ("billion laughs") make a
    few hundred bytes expand to gigabytes."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"an alias (*{printable(str(event.anchor), 40)}): "
                                              "aliases are not allowed in an otelguard config", event.start_mark)
        return super().compose_node(parent, index)


def _describe(exc: ValidationError, source: dict[str, Any]) -> str:
    problems = []
    for error in exc.errors():
        location = list(error["loc"])
        field = _field_path(location, source)
        value = error.get("input")
        message = error["msg"].removeprefix("Value error, ")
        problems.append(f"{field}: {printable(message, 200)} (got {short_repr(value)})")
    return "invalid otelguard config: " + "; ".join(problems)


def _field_path(location: list[Any], source: dict[str, Any]) -> str:
    """Readable field path, e.g. `guards[1] (repeat-tool-reminder).config.thresholds`."""
    parts: list[str] = []
    rows = source.get("guards") if isinstance(source, dict) else None
    index = 0
    while index < len(location):
        part = location[index]
        if isinstance(part, int):
            label = f"[{part}]"
            if parts == ["guards"] and isinstance(rows, list) and part < len(rows):
                row = rows[part]
                if isinstance(row, dict) and "id" in row:
                    label += f" ({printable(str(row['id']), 40)})"
            parts.append(label)
        elif part in ("TimeoutPolicyConfig", "RepeatToolReminderConfig", "ThinkingLoopGuardConfig", "NoProgressConfig"):
            pass  # union member name: noise to a reader
        else:
            parts.append(("." if parts else "") + printable(str(part), 80))
        index += 1
    return "".join(parts) or "config"
