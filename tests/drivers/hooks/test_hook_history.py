"""The hooks' SQLite history: bounded whatever a session does, private, recovered when damaged."""

from __future__ import annotations

import io
import os
import stat

import pytest
from hook_support import CliSession, hook

from otelguard.hooks.command import run
from otelguard.hooks.history import PRUNE_EVERY, WINDOW, HookHistory
from otelguard.hooks.payload import MAX_ARGUMENTS_CHARS, MAX_RESULT_CHARS, POST, HookEvent


@pytest.fixture
def db(tmp_path, monkeypatch):
    path = tmp_path / "state" / "hooks.sqlite3"
    monkeypatch.setenv("OTELGUARD_HOOK_DB", str(path))
    monkeypatch.delenv("OTELGUARD_CONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return path


def event(session: str, n: int) -> HookEvent:
    return HookEvent("claude-code", POST, session, "Bash", f'{{"command":"echo {n}"}}', "prompt", f"call-{n}", "ok")


def test_a_session_keeps_its_last_window_of_events(db):
    history = HookHistory(str(db))
    try:
        for n in range(3 * WINDOW):
            with history.locked():
                history.append(event("long", n), f"call-{n}")
        kept = history.events("claude-code", "long")
        assert len(kept) == WINDOW and kept[-1].call_id == f"call-{3 * WINDOW - 1}"
        assert history.count() < WINDOW + PRUNE_EVERY
    finally:
        history.close()


def test_long_arguments_and_results_are_kept_bounded_yet_told_apart(db):
    session = CliSession("claude-code")
    long_input = {"content": "x" * (3 * MAX_ARGUMENTS_CHARS)}
    other_input = {"content": "x" * (3 * MAX_ARGUMENTS_CHARS - 1) + "y"}  # the same first characters
    answers = [session.call("Write", long_input, "r" * (2 * MAX_RESULT_CHARS))[1].context for _ in range(2)]
    answers.append(session.call("Write", other_input)[1].context)
    answers.append(session.call("Write", other_input)[1].context)
    assert answers == [None, None, None, None]  # the long call repeated twice, then another one twice
    assert session.call("Write", other_input)[1].context is not None
    history = HookHistory(str(db))
    try:
        stored = history.events("claude-code", session.session)
        assert all(len(e.arguments or "") < MAX_ARGUMENTS_CHARS + 100 for e in stored)
        assert all(len(e.result or "") < MAX_RESULT_CHARS + 100 for e in stored)
    finally:
        history.close()


def test_a_long_result_keeps_its_tail_as_it_came(db):
    """A long failing output (a test run's log, its summary at the end) is kept as its head and its
    tail: the part an outcome is judged by besides the head."""
    session = CliSession("claude-code")
    log = "".join(f"test_{n} ... ok\n" for n in range(2000)) + "FAILED (failures=3)\n"
    hook("claude-code", session.post("Bash", {"command": "make test"}, f"Exit code 1\n{log}", failed=True))
    history = HookHistory(str(db))
    try:
        (stored,) = history.events("claude-code", session.session)
    finally:
        history.close()
    assert len(stored.result) < MAX_RESULT_CHARS + 100
    assert stored.result.startswith("Exit code 1\ntest_0 ... ok") and stored.result.endswith(log[-2000:])


def test_the_history_and_its_log_are_private_to_the_user(db):
    hook("claude-code", CliSession("claude-code").post("Bash", {"command": "ls"}))
    run("claude-code", io.BytesIO(b"not json"), io.StringIO())  # something to log
    assert stat.S_IMODE(os.stat(db.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(db).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(db.parent / "hooks.log").st_mode) == 0o600


def test_a_damaged_history_is_set_aside_and_the_next_hook_starts_anew(db):
    db.parent.mkdir(parents=True)
    db.write_bytes(b"this is not a database" * 100)
    session = CliSession("codex")
    before, after = session.call("Bash", {"command": "ls"})
    assert (before.denied, after.context) == (None, None)  # allowed
    assert (db.parent / "hooks.sqlite3.corrupt").exists()
    assert "the history was damaged" in (db.parent / "hooks.log").read_text()
    for _ in range(2):
        session.call("Bash", {"command": "pwd"})
    assert session.call("Bash", {"command": "pwd"})[1].context is not None
