"""The hooks' guard config: the user's (or the defaults) with the hooks' own default, validated once
and cached.

The CLIs declare no budgets, and a loop that ignores the reminders should end: for hooks,
`repeat-tool-reminder` gets `stop_after: 8` unless the user's row sets `stop_after` itself (null
turns the block off). Codex CLI hands a hook's added context to the model as a `developer` message (a
system-level role), where model-controlled text must not go: for Codex the guard's messages quote no
arguments (`include_arguments: false`, whatever the config says). Validation is `GuardConfig.load`'s, run only when the config file, otelguard or
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
CONTEXT_AS_DEVELOPER_MESSAGE = frozenset({"codex"})  # CLIs that show a hook's context in a system-level role
_CONFIG_MODULE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "config.py")  # the defaults


class HookConfigError(Exception):
    """The config is invalid or unreadable (the message says which and where)."""


class ConfigCache(Protocol):
    def cached_config(self, key: str) -> dict[str, Any] | None: ...

    def cache_config(self, key: str, dump: dict[str, Any]) -> None: ...


def load(cache: ConfigCache, path: str | None, cli: str) -> ValidatedConfig:
    """The validated hooks config of `cli` for `path` (None: the defaults). Raises HookConfigError."""
    key = cache_key(path, cli)
    dump = cache.cached_config(key)
    if dump is None:
        dump = _validate(path, cli)
        cache.cache_config(key, dump)
    if "error" in dump:
        raise HookConfigError(str(dump["error"]))
    return ValidatedConfig.from_dump(dump)


def cache_key(path: str | None, cli: str) -> str:
    source = "defaults" if path is None else f"{os.path.realpath(path)}@{_stamp(path)}"
    return f"{__version__}|{_stamp(_CONFIG_MODULE)}|{_stamp(__file__)}|{cli}|{source}"


def _stamp(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    return f"{stat.st_mtime_ns}:{stat.st_size}"


def _validate(path: str | None, cli: str) -> dict[str, Any]:
    from ..config import GuardConfig  # pydantic: only when the config changed
    from ..errors import ConfigError
    from ..validated_config import to_dump

    try:
        config = GuardConfig.load(path)
    except ConfigError as error:
        return {"error": f"{path}: {error}"}
    return to_dump(with_hook_defaults(config, cli))


def with_hook_defaults(config: GuardConfig, cli: str) -> GuardConfig:
    """`config` with the hooks' own settings of repeat-tool-reminder (see the module doc)."""
    from ..guard_ids import REPEAT_TOOL_REMINDER

    rows = []
    for row in config.guards:
        settings = row.config
        assert settings is not None  # a validated row holds its guard's settings
        update: dict[str, Any] = {}
        if row.id == REPEAT_TOOL_REMINDER and "stop_after" not in settings.model_fields_set:
            update["stop_after"] = HOOK_STOP_AFTER
        # Every guard that can quote the model's arguments in its messages leaves them out there.
        if cli in CONTEXT_AS_DEVELOPER_MESSAGE and "include_arguments" in type(settings).model_fields:
            update["include_arguments"] = False
        if update:
            row = row.model_copy(update={"config": settings.model_copy(update=update)})
        rows.append(row)
    return config.model_copy(update={"guards": tuple(rows)})
