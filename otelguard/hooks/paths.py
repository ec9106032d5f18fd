"""Where the hooks read their config and keep their state, from the environment.

- config: `OTELGUARD_CONFIG`, else `~/.config/otelguard/config.yaml` when it exists, else none (defaults);
- history: `OTELGUARD_HOOK_DB`, else `${XDG_STATE_HOME:-~/.local/state}/otelguard/hooks.sqlite3`;
- log: `hooks.log` beside the history;
- `OTELGUARD_DISABLE=1` (in the CLI's environment, which the hook inherits): every session of that CLI
  process is paused (judged and recorded, nothing said to the CLI).

Plain strings (no pathlib: a hook process imports only what it needs).
"""

from __future__ import annotations

import os

CONFIG_ENV = "OTELGUARD_CONFIG"
DB_ENV = "OTELGUARD_HOOK_DB"
LOG_NAME = "hooks.log"
DISABLE_ENV = "OTELGUARD_DISABLE"


def disabled() -> bool:
    """Whether the CLI was started with `OTELGUARD_DISABLE` set to anything but empty, 0, false or no."""
    return os.environ.get(DISABLE_ENV, "").strip().lower() not in ("", "0", "false", "no")


def config_path() -> str | None:
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return os.path.expanduser(explicit)  # named: a missing file is an error, not the defaults
    default = os.path.expanduser(os.path.join("~", ".config", "otelguard", "config.yaml"))
    return default if os.path.isfile(default) else None


def db_path() -> str:
    explicit = os.environ.get(DB_ENV)
    if explicit:
        return os.path.expanduser(explicit)
    state = os.environ.get("XDG_STATE_HOME") or os.path.expanduser(os.path.join("~", ".local", "state"))
    return os.path.join(state, "otelguard", "hooks.sqlite3")


def log_path() -> str:
    return os.path.join(os.path.dirname(db_path()), LOG_NAME)
