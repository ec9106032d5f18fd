"""Guard configuration: `{"guards": [row, ...]}`, rows in composition order.

Each row mirrors an original profile row (`id`, optional `name`, `config`); a row's `config` is
validated into its guard's settings dataclass (`otelguard.guards.settings`). Anything invalid raises
`ConfigError` at load, naming the field and the value: nothing falls back silently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ..errors import ConfigError
from .settings import (  # noqa: F401  (each guard's settings: validated here, defined there)
    DEFAULT_TRANSPARENT_TOOLS,
    NO_PROGRESS_RULES,
    SETTINGS_TYPES,
    GuardSettings,
    NoProgressConfig,
    RepeatToolReminderConfig,
    ThinkingLoopGuardConfig,
    TimeoutPolicyConfig,
)
from ..runtime.terminal import printable, short_repr

_ADAPTERS = {guard_id: TypeAdapter(settings) for guard_id, settings in SETTINGS_TYPES.items()}
_SETTINGS = frozenset(SETTINGS_TYPES.values())
GUARD_IDS = tuple(SETTINGS_TYPES)  # the guards' ids, in their default composition order


class GuardRow(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Literal["timeout-policy", "repeat-tool-reminder", "thinking-loop-guard", "no-progress"]
    name: str | None = None
    config: GuardSettings | None = None  # None only until validated: then the guard's settings

    @field_validator("config", mode="before")
    @classmethod
    def _typed_config(cls, raw: Any, info: ValidationInfo) -> Any:
        # A field validator (not a model one): errors inside the row's config are located under `config`.
        adapter = _ADAPTERS.get(info.data.get("id", ""))
        if adapter is None or type(raw) in _SETTINGS:
            return raw
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise ValueError(f"config must be a mapping, got {type(raw).__name__}")
        return adapter.validate_python(raw)

    @model_validator(mode="after")
    def _config_matches_id(self) -> "GuardRow":
        expected = SETTINGS_TYPES[self.id]
        if self.config is None:
            object.__setattr__(self, "config", expected())
        elif not isinstance(self.config, expected):
            raise ValueError(f"config for {self.id} must be {expected.__name__}")
        return self

    @property
    def settings(self) -> GuardSettings:
        """The guard's settings (a validated row always has them)."""
        assert self.config is not None  # set by _config_matches_id
        return self.config


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

    @property
    def settings(self) -> tuple[GuardSettings, ...]:
        """Each row's guard settings, in composition order: what the engine builds its guards from."""
        return tuple(row.settings for row in self.guards)

    @classmethod
    def load(cls, source: "GuardConfig | dict[str, Any] | str | Path | None" = None) -> "GuardConfig":
        """Load from a GuardConfig, a dict, a YAML/JSON file path or None (defaults).

        Raises ConfigError naming the field on any invalid value.
        """
        if isinstance(source, GuardConfig):
            return source
        if isinstance(source, (str, Path)):
            source = read_file(source)
        if source is None:
            return cls()
        if not isinstance(source, dict):
            raise ConfigError(f"config must be a mapping with a 'guards' list, got {type(source).__name__}")
        try:
            return cls.model_validate(source)
        except ValidationError as exc:
            raise ConfigError(_describe(exc, source)) from None


def read_file(path: str | Path) -> Any:
    """What a YAML (or JSON) config file holds, not validated yet: None when it is empty. Raises
    ConfigError when it cannot be read."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    try:
        return yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader
    except yaml.YAMLError as exc:
        raise ConfigError(f"config file {path} is not valid YAML: {printable(str(exc), 500)}") from exc


MAX_CONFIG_DEPTH = 32  # a config's values nest a few levels; YAML nested deeper is refused as invalid


class _NoAliasLoader(yaml.SafeLoader):
    """YAML without aliases: a config never needs one, and nested aliases ("billion laughs") make a
    few hundred bytes expand to gigabytes. Nested at most MAX_CONFIG_DEPTH deep: the composer recurses
    once a level, and past Python's recursion limit a deep document would be an internal error, not
    the config error it is."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, f"an alias (*{printable(str(event.anchor), 40)}): "
                                              "aliases are not allowed in an otelguard config", event.start_mark)
        if self._depth >= MAX_CONFIG_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"values nested deeper than {MAX_CONFIG_DEPTH} levels",
                                              self.peek_event().start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


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
