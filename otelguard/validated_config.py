"""A guard config that `GuardConfig.load` has validated, carried as its JSON dump and rebuilt without
pydantic.

A process that must start in a few milliseconds (a CLI hook runs once per tool call) cannot afford
pydantic's import and schema build. Such a driver validates a config once with `GuardConfig.load`, keeps
`to_dump(config)`, and later hands the engine `ValidatedConfig.from_dump(dump)`: the same rows and
values, read by the guards as attributes, with no validation of their own (there is one validation,
`GuardConfig`'s). A dump that does not have the shape `to_dump` writes raises `ValueError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import GuardConfig

DUMP_FORMAT = 1  # bumped when the dump's shape changes: a cached dump of another format is made again


def to_dump(config: GuardConfig) -> dict[str, Any]:
    """The validated config as plain JSON values (field names, not aliases)."""
    return {"format": DUMP_FORMAT, "guards": config.model_dump(mode="json")["guards"]}


class GuardSettings:
    """One guard's validated settings, read as attributes (`settings.stop_after`). Read-only. The
    values live in the instance's own dict, so a read is a plain attribute lookup: guards read
    settings at every span, and a `__getattr__` made each read a failed lookup and a Python call."""

    def __init__(self, values: Mapping[str, Any]):
        self.__dict__.update(
            {key: tuple(value) if isinstance(value, list) else value for key, value in values.items()})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("validated settings are read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("validated settings are read-only")

    def __repr__(self) -> str:
        return f"GuardSettings({self.__dict__!r})"


class ValidatedRow:
    __slots__ = ("id", "name", "config")

    def __init__(self, guard_id: str, name: str | None, config: GuardSettings):
        self.id, self.name, self.config = guard_id, name, config


class ValidatedConfig:
    """The rows of a validated config, in composition order, shaped as `GuardConfig`'s."""

    __slots__ = ("guards",)

    def __init__(self, rows: tuple[ValidatedRow, ...]):
        self.guards = rows

    @classmethod
    def from_dump(cls, dump: Any) -> ValidatedConfig:
        if not isinstance(dump, dict) or dump.get("format") != DUMP_FORMAT or not isinstance(dump.get("guards"), list):
            raise ValueError("not a validated config dump of this version")
        rows = []
        for row in dump["guards"]:
            if not (isinstance(row, dict) and isinstance(row.get("id"), str) and isinstance(row.get("config"), dict)):
                raise ValueError(f"not a validated config row: {row!r}")
            rows.append(ValidatedRow(row["id"], row.get("name"), GuardSettings(row["config"])))
        return cls(tuple(rows))

    def row(self, guard_id: str) -> ValidatedRow | None:
        return next((row for row in self.guards if row.id == guard_id), None)
