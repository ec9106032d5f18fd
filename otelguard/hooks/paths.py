"""Where the hooks read their config and keep their state, from the environment.

- config: `OTELGUARD_CONFIG`, else `~/.config/otelguard/config.yaml` when it exists, else none (defaults);
- history: `OTELGUARD_HOOK_DB`, else `${XDG_STATE_HOME:-~/.local/state}/otelguard/hooks.sqlite3`;
- log: `hooks.log` beside the history.
"""

from __future__ import annotations

import os
from pathlib import Path

CONFIG_ENV = "OTELGUARD_CONFIG"
DB_ENV = "OTELGUARD_HOOK_DB"
LOG_NAME = "hooks.log"


def config_path() -> Path | None:
    explicit = os.environ.get(CONFIG_ENV)
    if explicit:
        return Path(explicit).expanduser()  # named: a missing file is an error, not the defaults
    default = Path.home() / ".config" / "otelguard" / "config.yaml"
    return default if default.is_file() else None


def db_path() -> Path:
    explicit = os.environ.get(DB_ENV)
    if explicit:
        return Path(explicit).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "otelguard" / "hooks.sqlite3"


def log_path() -> Path:
    return db_path().with_name(LOG_NAME)
