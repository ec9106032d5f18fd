"""The sessions' recent tool calls, in a local SQLite file shared by every hook process.

Each hook holds the database's write lock (`BEGIN IMMEDIATE`) from reading its session's history to
writing its own event, so the hooks of parallel tool calls take turns and each sees the calls before
it (WAL mode: readers never wait; a hook waits at most `BUSY_TIMEOUT_S` for the lock, then its call
is allowed and the wait logged).

The file also holds the paused sessions (`otelguard hook pause`): a paused session's calls are judged
and recorded, and nothing is said to the CLI.

Bounded: a session keeps its last `WINDOW` events (what a hook replays); the file keeps at most
`MAX_EVENTS` events in all, none older than `MAX_AGE_S` (a pause neither), pruned every `PRUNE_EVERY` events; values
are bounded on the way in (`payload.bounded`). Tool arguments and results are the user's data: the
file and its directory are private to the user. Writes are not synced (`synchronous = OFF`: a sync
costs a hook more than the rest of its work): an OS crash may lose the last calls or damage the file,
which the next hook then sets aside (`set_aside`) and starts anew.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from . import paths
from .payload import HookEvent

SCHEMA_VERSION = 2  # 2: the paused sessions
WINDOW = 256  # events of a session a hook replays (about 128 calls)
MAX_EVENTS = 20_000
MAX_AGE_S = 7 * 24 * 3600.0
PRUNE_EVERY = 64
MAX_CACHED_CONFIGS = 8
BUSY_TIMEOUT_S = 2.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    cli TEXT NOT NULL,
    run TEXT,
    call_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT,
    result TEXT,
    failed INTEGER NOT NULL DEFAULT 0,
    blocked INTEGER NOT NULL DEFAULT 0,
    duration_ms REAL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS events_by_session ON events (session, cli, seq);
CREATE INDEX IF NOT EXISTS events_by_age ON events (at);
CREATE TABLE IF NOT EXISTS config_cache (key TEXT PRIMARY KEY, dump TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS paused (cli TEXT NOT NULL, session TEXT NOT NULL, at REAL NOT NULL,
                                   PRIMARY KEY (cli, session));
"""


class HistoryError(Exception):
    """The history file is of a newer otelguard, or cannot be kept where it is named (the message says why)."""


def is_corrupt(error: sqlite3.DatabaseError) -> bool:
    """The file is damaged (writes are not synced: an OS crash may leave it so) or not a database."""
    text = str(error)
    return "malformed" in text or "not a database" in text


def set_aside(path: str) -> str:
    """Move a damaged history out of the way (the next hook starts a new one); returns where it went."""
    aside = f"{path}.corrupt"
    for suffix in ("-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except FileNotFoundError:
            pass
    os.replace(path, aside)
    return aside


@dataclass(slots=True)
class StoredEvent:
    """One event of a session's history, as the replay reads it (a row of `events`, in its order)."""

    run: str | None
    call_id: str
    phase: str
    tool: str
    arguments: str | None
    result: str | None
    failed: bool
    blocked: bool
    duration_ms: float | None
    at: float


class HookHistory:
    def __init__(self, path: str):
        self.path = path
        _make_private(path)
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            self._create(version)
        self._db.execute("PRAGMA synchronous = OFF")  # a crash may lose recent history, never the CLI's work

    def _create(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise HistoryError(f"{self.path} was written by a newer otelguard (schema {version})")
        self._db.execute("PRAGMA journal_mode = WAL")
        with self.locked():
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    self._db.execute(statement)
            self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def locked(self) -> Iterator[None]:
        """One transaction holding the write lock: a hook's read, judgement and write."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # --- a session's events ------------------------------------------------------------------------
    def events(self, cli: str, session: str) -> list[StoredEvent]:
        """The session's last WINDOW events, oldest first."""
        rows = self._db.execute(
            "SELECT run, call_id, phase, tool, arguments, result, failed, blocked, duration_ms, at FROM events"
            " WHERE session = ? AND cli = ? ORDER BY seq DESC LIMIT ?", (session, cli, WINDOW)).fetchall()
        rows.reverse()
        return [StoredEvent(run, call_id, phase, tool, arguments, result, bool(failed), bool(blocked), duration, at)
                for run, call_id, phase, tool, arguments, result, failed, blocked, duration, at in rows]

    def append(self, event: HookEvent, call_id: str, *, blocked: bool = False, phase: str | None = None) -> None:
        """Add one event (inside `locked`); every PRUNE_EVERY events, prune."""
        cursor = self._db.execute(
            "INSERT INTO events (session, cli, run, call_id, phase, tool, arguments, result, failed, blocked,"
            " duration_ms, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (event.session, event.cli, event.run, call_id, phase or event.phase, event.tool, event.arguments,
             event.result, int(event.failed), int(blocked), event.duration_ms, time.time()))
        if cursor.lastrowid is not None and cursor.lastrowid % PRUNE_EVERY == 0:
            self.prune(event.cli, event.session, newest=cursor.lastrowid)

    def prune(self, cli: str, session: str, *, newest: int) -> None:
        db = self._db
        db.execute("DELETE FROM events WHERE seq <= ?", (newest - MAX_EVENTS,))
        db.execute("DELETE FROM events WHERE at < ?", (time.time() - MAX_AGE_S,))
        db.execute("DELETE FROM paused WHERE at < ?", (time.time() - MAX_AGE_S,))
        db.execute("DELETE FROM events WHERE session = ? AND cli = ? AND seq < (SELECT seq FROM events"
                   " WHERE session = ? AND cli = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)",
                   (session, cli, session, cli, WINDOW - 1))

    def reset(self, session: str) -> int:
        """Forget one session (of any CLI), and its pause; returns the events removed."""
        with self.locked():
            self._db.execute("DELETE FROM paused WHERE session = ?", (session,))
            return self._db.execute("DELETE FROM events WHERE session = ?", (session,)).rowcount

    # --- paused sessions ---------------------------------------------------------------------------
    def latest_session(self, cli: str) -> str | None:
        """The CLI's session that called a tool last, if any."""
        row = self._db.execute("SELECT session FROM events WHERE cli = ? ORDER BY seq DESC LIMIT 1", (cli,)).fetchone()
        return None if row is None else row[0]

    def pause(self, cli: str, session: str) -> None:
        with self.locked():
            self._db.execute("INSERT OR REPLACE INTO paused (cli, session, at) VALUES (?, ?, ?)",
                             (cli, session, time.time()))

    def resume(self, cli: str | None = None, session: str | None = None) -> list[tuple[str, str]]:
        """End the pauses of one session, of every session of `cli`, or (neither given) of all;
        returns the (cli, session) resumed."""
        where, values = [], []
        for column, value in (("cli", cli), ("session", session)):
            if value is not None:
                where.append(f"{column} = ?")
                values.append(value)
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        with self.locked():
            resumed = self._db.execute(f"SELECT cli, session FROM paused{condition} ORDER BY at", values).fetchall()
            self._db.execute(f"DELETE FROM paused{condition}", values)
        return [(row[0], row[1]) for row in resumed]

    def is_paused(self, cli: str, session: str) -> bool:
        return self._db.execute("SELECT 1 FROM paused WHERE cli = ? AND session = ?", (cli, session)).fetchone() \
            is not None

    def count(self) -> int:
        return self._db.execute("SELECT count(*) FROM events").fetchone()[0]

    # --- the validated config ----------------------------------------------------------------------
    def cached_config(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT dump FROM config_cache WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            dump = json.loads(row[0])
        except ValueError:
            return None
        return dump if isinstance(dump, dict) else None

    def cache_config(self, key: str, dump: dict[str, Any]) -> None:
        self._db.execute("INSERT OR REPLACE INTO config_cache (key, dump, at) VALUES (?, ?, ?)",
                         (key, json.dumps(dump), time.time()))
        self._db.execute("DELETE FROM config_cache WHERE key NOT IN"
                         " (SELECT key FROM config_cache ORDER BY at DESC LIMIT ?)", (MAX_CACHED_CONFIGS,))


def _make_private(path: str) -> None:
    """The directory (made if missing) and the file the user's alone: raises HistoryError when the
    directory is not private (`paths.private_directory`) or the file is a link or not the user's
    (a link would make SQLite write, or create, the file it leads to)."""
    try:
        paths.private_directory(os.path.dirname(path))
        descriptor = os.open(path, os.O_CREAT | os.O_WRONLY | paths.NO_FOLLOW, 0o600)
    except OSError as error:
        raise HistoryError(f"{path}: {'it is a link' if os.path.islink(path) else error}; "
                           "the hooks keep no history there") from None
    try:
        paths.own_file(descriptor, path)
    except paths.UnsafeState as error:
        raise HistoryError(str(error)) from None
    finally:
        os.close(descriptor)
