"""The analyzer's findings kept on disk, so that its memory does not grow with the verdicts.

A private temporary SQLite database (`sqlite3.connect("")`: on disk, deleted when closed; its page
cache is SQLite's default, about 2 MB) holds each agent's summary, its listed steps and the verdict
rows, as pickles of otelguard's own objects (written and read by this process only). Writes are
batched; reads come back in the order things were found.
"""

from __future__ import annotations

import pickle
import sqlite3
from collections.abc import Iterator
from typing import Any

_BATCH = 1000  # rows written at once
_PICKLE = pickle.HIGHEST_PROTOCOL


class Spool:
    """Agents by key; steps per agent; verdicts in the order found. Not thread-safe (one analysis)."""

    def __init__(self) -> None:
        self._db = sqlite3.connect("", isolation_level=None, check_same_thread=False)  # (never used at once)
        self._db.executescript(
            """
            PRAGMA journal_mode = OFF;
            PRAGMA synchronous = OFF;
            CREATE TABLE agents (key TEXT PRIMARY KEY, seq INTEGER, data BLOB);
            CREATE TABLE steps (agent TEXT, data BLOB);
            CREATE INDEX steps_by_agent ON steps (agent);
            CREATE TABLE verdicts (agent TEXT, data BLOB);
            """
        )
        self._steps: list[tuple[str, bytes]] = []
        self._verdicts: list[tuple[str, bytes]] = []

    # --- writing ---------------------------------------------------------------------------------
    def put_agent(self, key: str, seq: int, agent: Any) -> None:
        self._db.execute("INSERT OR REPLACE INTO agents VALUES (?, ?, ?)", (key, seq, pickle.dumps(agent, _PICKLE)))

    def add_step(self, key: str, step: Any) -> None:
        self._steps.append((key, pickle.dumps(step, _PICKLE)))
        if len(self._steps) >= _BATCH:
            self._flush()

    def add_verdict(self, key: str, row: Any) -> None:
        self._verdicts.append((key, pickle.dumps(row, _PICKLE)))
        if len(self._verdicts) >= _BATCH:
            self._flush()

    def drop_agent(self, key: str) -> None:
        """Forget an agent and its steps (it has no verdicts)."""
        self._flush()
        self._db.execute("DELETE FROM agents WHERE key = ?", (key,))
        self._db.execute("DELETE FROM steps WHERE agent = ?", (key,))

    def _flush(self) -> None:
        if self._steps or self._verdicts:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT INTO steps VALUES (?, ?)", self._steps)
            self._db.executemany("INSERT INTO verdicts VALUES (?, ?)", self._verdicts)
            self._db.execute("COMMIT")
            self._steps.clear()
            self._verdicts.clear()

    # --- reading ---------------------------------------------------------------------------------
    def agent(self, key: str) -> Any | None:
        row = self._db.execute("SELECT data FROM agents WHERE key = ?", (key,)).fetchone()
        return None if row is None else pickle.loads(row[0])

    def agents(self) -> Iterator[Any]:
        """Every agent, in the order first seen."""
        self._flush()
        for (data,) in self._db.execute("SELECT data FROM agents ORDER BY seq"):
            yield pickle.loads(data)

    def steps(self, key: str) -> Iterator[Any]:
        """An agent's listed steps, in the order found."""
        self._flush()
        for (data,) in self._db.execute("SELECT data FROM steps WHERE agent = ? ORDER BY rowid", (key,)):
            yield pickle.loads(data)

    def verdicts(self) -> Iterator[tuple[str, Any]]:
        """(agent key, row) of every verdict, in the order found."""
        self._flush()
        for key, data in self._db.execute("SELECT agent, data FROM verdicts ORDER BY rowid"):
            yield key, pickle.loads(data)

    def close(self) -> None:
        self._db.close()
