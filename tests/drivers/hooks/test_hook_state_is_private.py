"""The hooks keep their state (history, log) only where no one else can put a file or a link: a link at
the history's or the log's name is never followed (it could lead the hooks' writes to any file of the
user's, or create one), and a directory others may write in is refused, not used as it is. The call is
allowed all the same, and the reason is told (in the log, or on stderr when the log itself is refused).
"""

from __future__ import annotations

import os
import sqlite3
import stat

import pytest
from hook_support import CliSession, hook_process

LS = {"command": "ls"}


@pytest.fixture
def state(tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    return state


def run_hook(state, payload=None):
    env = {**os.environ, "OTELGUARD_HOOK_DB": str(state / "hooks.sqlite3")}
    env.pop("OTELGUARD_RAISE_INTERNAL_ERRORS", None)  # as a user runs it
    return hook_process("claude-code", payload or CliSession("claude-code").pre("Bash", LS), env=env)


def test_a_link_to_nothing_at_the_historys_name_creates_nothing(state, tmp_path):
    target = tmp_path / "elsewhere" / "made-by-the-hook.sqlite3"
    target.parent.mkdir()
    (state / "hooks.sqlite3").symlink_to(target)
    done = run_hook(state)
    assert (done.returncode, done.stdout) == (0, b"")
    assert not target.exists()
    assert "hooks.sqlite3: it is a link; the hooks keep no history there" in (state / "hooks.log").read_text()


def test_a_link_to_a_database_at_the_historys_name_is_not_written(state, tmp_path):
    target = tmp_path / "precious.sqlite3"  # another application's database
    with sqlite3.connect(target) as db:
        db.execute("CREATE TABLE notes (text TEXT)")
    before = target.read_bytes()
    (state / "hooks.sqlite3").symlink_to(target)
    assert run_hook(state).returncode == 0
    assert target.read_bytes() == before


def test_a_link_at_the_logs_name_is_not_appended_to(state, tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("my notes\n")
    (state / "hooks.log").symlink_to(target)
    done = run_hook(state, payload=b"{not json")  # something to log
    assert (done.returncode, done.stdout) == (0, b"")
    assert target.read_text() == "my notes\n"
    assert b"unreadable hook input, call allowed" in done.stderr and b"not in " in done.stderr


@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770])
def test_a_directory_others_may_write_in_is_left_as_it_is_and_holds_no_state(state, mode):
    state.chmod(mode)
    done = run_hook(state)
    assert (done.returncode, done.stdout) == (0, b"")
    assert sorted(os.listdir(state)) == []  # neither a history nor a log
    assert stat.S_IMODE(state.stat().st_mode) == mode
    assert b"is writable by others" in done.stderr and b"no history" in done.stderr
