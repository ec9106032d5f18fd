"""Where the hooks read their config and keep their state, from the environment.

- config: `OTELGUARD_CONFIG`, else `~/.config/otelguard/config.yaml` when it exists, else none (defaults);
- history: `OTELGUARD_HOOK_DB`, else `${XDG_STATE_HOME:-~/.local/state}/otelguard/hooks.sqlite3`;
- log: `hooks.log` beside the history;
- `OTELGUARD_DISABLE=1` (in the CLI's environment, which the hook inherits): every session of that CLI
  process is paused (judged and recorded, nothing said to the CLI).

The directory is the user's own and private (`private_directory`): the hooks keep their state only
where no one else can put a file or a link of their own. Plain strings (no pathlib: a hook process
imports only what it needs).
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


class UnsafeState(OSError):
    """Where the hooks would keep their state, someone else could put a file or a link of their own."""


def private_directory(path: str) -> None:
    """Make the state directory `path` (private to the user) when missing. Raises UnsafeState when it
    is someone else's, or others may write in it: otelguard does not change such a directory's
    mode (it may be one the user shares on purpose), it keeps no state there."""
    os.makedirs(path or ".", mode=0o700, exist_ok=True)
    info = os.stat(path or ".")
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise UnsafeState(f"{path} is not yours (owner uid {info.st_uid}): the hooks keep no state there")
    if info.st_mode & 0o022:
        raise UnsafeState(f"{path} is writable by others (mode {info.st_mode & 0o777:o}): the hooks keep no state "
                          f"there; make it yours alone (chmod go-w) or name another ({DB_ENV})")


def own_file(descriptor: int, path: str) -> None:
    """Raise UnsafeState unless the file open at `descriptor` is a regular file of the user's."""
    import stat

    info = os.fstat(descriptor)
    if not stat.S_ISREG(info.st_mode) or (hasattr(os, "geteuid") and info.st_uid != os.geteuid()):
        raise UnsafeState(f"{path} is not a file of yours: the hooks do not write to it")


# Opening a state file never follows a link at its name (ELOOP instead): a link there could lead the
# hooks' writes to any file of the user's.
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
