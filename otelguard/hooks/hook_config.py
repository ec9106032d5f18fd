"""The hooks' guard config: the user's (or the defaults) with the hooks' own default, validated once
and cached.

The CLIs declare no budgets, and a loop that ignores the reminders should end: for hooks,
`repeat-tool-reminder` gets `stop_after: 8` unless the user's row sets `stop_after` itself (null
turns the block off). Validation is `GuardConfig.load`'s, run only when the config file, otelguard or
its config module changed since the last hook; every other hook rebuilds the validated values from
the cache without importing pydantic (`ValidatedConfig`). An invalid config is cached as its error,
so each hook reports it at once (and allows the call) instead of validating again.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Protocol

from .._version import __version__
from ..validated_config import ValidatedConfig

if TYPE_CHECKING:
    from ..config import GuardConfig

HOOK_STOP_AFTER = 8
_CONFIG_MODULE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config.py")  # the defaults


class HookConfigError(Exception):
    """The config is invalid or unreadable (the message says which and where)."""


class ConfigCache(Protocol):
    def cached_config(self, key: str) -> dict[str, Any] | None: ...

    def cache_config(self, key: str, dump: dict[str, Any]) -> None: ...


def load(cache: ConfigCache, path: str | None) -> ValidatedConfig:
    """The validated hooks config for `path` (None: the defaults). Raises HookConfigError."""
    key = cache_key(path)
    dump = cache.cached_config(key)
    if dump is None:
        dump = _validate(path)
        cache.cache_config(key, dump)
    if "error" in dump:
        raise HookConfigError(str(dump["error"]))
    return ValidatedConfig.from_dump(dump)


def cache_key(path: str | None) -> str:
    source = "defaults" if path is None else f"{os.path.realpath(path)}@{_stamp(path)}"
    return f"{__version__}|{_stamp(_CONFIG_MODULE)}|{source}"


def _stamp(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    return f"{stat.st_mtime_ns}:{stat.st_size}"


def _validate(path: str | None) -> dict[str, Any]:
    from ..config import GuardConfig  # pydantic: only when the config changed
    from ..errors import ConfigError
    from ..validated_config import to_dump

    try:
        config = GuardConfig.load(path)
    except ConfigError as error:
        return {"error": f"{path}: {error}"}
    return to_dump(with_hook_defaults(config))


def with_hook_defaults(config: GuardConfig) -> GuardConfig:
    """`config` with `stop_after: 8` on a repeat-tool-reminder row that does not set stop_after."""
    from ..guard_ids import REPEAT_TOOL_REMINDER

    rows = []
    for row in config.guards:
        if row.id == REPEAT_TOOL_REMINDER and "stop_after" not in row.config.model_fields_set:
            row = row.model_copy(update={"config": row.config.model_copy(update={"stop_after": HOOK_STOP_AFTER})})
        rows.append(row)
    return config.model_copy(update={"guards": tuple(rows)})
