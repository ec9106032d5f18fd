"""The hooks' guard config: the user's (or the defaults) with the hooks' own default, validated once
and cached.

The CLIs declare no budgets, and a loop that ignores the reminders should end: for hooks,
`repeat-tool-reminder` gets `stop_after: 8` unless the user's row sets `stop_after` itself (null
turns the block off). Codex CLI hands a hook's added context to the model as a `developer` message (a
system-level role), where text the model or a tool wrote must not go: for Codex the guard's messages
quote no tool names, arguments or error text (`quote_untrusted: false`, whatever the config says).
Validation is `GuardConfig.load`'s,
run only when the config file, otelguard or its config modules changed since the last hook; every
other hook rebuilds each guard's settings (`otelguard.guards.settings`) from the cache without importing
pydantic. An invalid config is cached as its error, so each hook reports it at once (and allows the
call) instead of validating again.
"""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING, Any, Protocol

from .._version import __version__
from ..guards.settings import SETTINGS_TYPES, GuardSettings, NoProgressConfig, RepeatToolReminderConfig

if TYPE_CHECKING:
    from ..guards.config import GuardConfig

HOOK_STOP_AFTER = 8
CONTEXT_AS_DEVELOPER_MESSAGE = frozenset({"codex"})  # CLIs that show a hook's context in a system-level role
DUMP_FORMAT = 3  # bumped when the cached dump's shape changes
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_CONFIG_MODULES = tuple(os.path.join(_PACKAGE, name) for name in ("config.py", "settings.py"))  # the defaults


class HookConfigError(Exception):
    """The config is invalid or unreadable (the message says which and where)."""


class ConfigCache(Protocol):
    def cached_config(self, key: str) -> dict[str, Any] | None: ...

    def cache_config(self, key: str, dump: dict[str, Any]) -> None: ...


def load(cache: ConfigCache, path: str | None, cli: str) -> tuple[GuardSettings, ...]:
    """Each guard's validated settings, for `cli` and the config at `path` (None: the defaults), in
    composition order. Raises HookConfigError."""
    key = cache_key(path, cli)
    dump = cache.cached_config(key)
    if dump is None:
        dump = _validate(path, cli)
        cache.cache_config(key, dump)
    if "error" in dump:
        raise HookConfigError(str(dump["error"]))
    return _settings(dump)


def cache_key(path: str | None, cli: str) -> str:
    source = "defaults" if path is None else f"{os.path.realpath(path)}@{_stamp(path)}"
    modules = "|".join(_stamp(module) for module in _CONFIG_MODULES)
    return f"{__version__}|{modules}|{_stamp(__file__)}|{cli}|{source}"


def _stamp(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "missing"
    return f"{stat.st_mtime_ns}:{stat.st_size}"


def _validate(path: str | None, cli: str) -> dict[str, Any]:
    from ..guards.config import GuardConfig, read_file  # pydantic: only when the config changed
    from ..errors import ConfigError

    try:
        source = read_file(path) if path is not None else None
        config = GuardConfig.load(with_hook_defaults(source, cli))
    except ConfigError as error:
        return {"error": f"{path}: {error}"}
    return {"format": DUMP_FORMAT,
            "guards": [{"id": type(settings).guard_id, "config": dataclasses.asdict(settings)}
                       for settings in for_cli(config, cli)]}


def with_hook_defaults(source: Any, cli: str) -> Any:
    """A config source (as read, not validated: None for the defaults) with the hooks' `stop_after`
    for repeat-tool-reminder where the user's row does not set it (see the module doc)."""
    if source is None:
        source = {"guards": [{"id": guard_id} for guard_id in SETTINGS_TYPES]}
    if not (isinstance(source, dict) and isinstance(source.get("guards"), list)):
        return source  # invalid: validation says how
    rows = []
    for row in source["guards"]:
        if isinstance(row, dict) and row.get("id") == RepeatToolReminderConfig.guard_id:
            settings = row.get("config") or {}
            if isinstance(settings, dict) and "stop_after" not in settings and "stopAfter" not in settings:
                row = {**row, "config": {**settings, "stop_after": HOOK_STOP_AFTER}}
        rows.append(row)
    return {**source, "guards": rows}


def for_cli(config: GuardConfig, cli: str) -> tuple[GuardSettings, ...]:
    """The validated settings, with `quote_untrusted` off for a CLI that shows a hook's context in a
    system-level role: in every guard whose messages can quote what the model or a tool wrote."""
    if cli not in CONTEXT_AS_DEVELOPER_MESSAGE:
        return config.settings
    return tuple(dataclasses.replace(settings, quote_untrusted=False)
                 if isinstance(settings, (RepeatToolReminderConfig, NoProgressConfig)) else settings
                 for settings in config.settings)


def _as_tuples(value: Any) -> Any:
    """A dumped value with its lists made tuples again, also as the values of a mapping (rule -> patterns)."""
    if isinstance(value, list):
        return tuple(value)
    if isinstance(value, dict):
        return {key: _as_tuples(item) for key, item in value.items()}
    return value


def _settings(dump: dict[str, Any]) -> tuple[GuardSettings, ...]:
    """The settings `_validate` dumped (JSON turned their tuples into lists)."""
    if dump.get("format") != DUMP_FORMAT or not isinstance(dump.get("guards"), list):
        raise ValueError("not a validated config dump of this version")
    rows = []
    for row in dump["guards"]:
        settings_type = SETTINGS_TYPES.get(row.get("id", "")) if isinstance(row, dict) else None
        values = row.get("config") if settings_type is not None else None
        if settings_type is None or not isinstance(values, dict):
            raise ValueError(f"not a validated config row: {row!r}")
        fields: dict[str, Any] = {name: _as_tuples(value) for name, value in values.items()}
        rows.append(settings_type(**fields))
    return tuple(rows)
