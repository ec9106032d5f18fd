"""End to end: the real coding-agent CLIs (npm, pinned in agent_clis.json), guarded by `otelguard hook`.

Each CLI runs offline against a scripted fake model (tests/fake_llm.py: the only fake part) with the
hook installed by `otelguard install-hook` into a temporary home. The script is a loop a model falls
into: the same call ten times, then an A/B alternation three times, then a final answer. The test
reads what the model was shown (the requests it got) and the hook log: the reminders at the 3rd and
5th identical call reach the model as context, the 8th, 9th and 10th are denied before they run with
the guard's message, and the session still ends normally with the final answer.

Tier `agent_cli`: skipped without the CLIs (with the command that installs them), failed under CI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
from external_support import binary
from fake_llm import FakeLLM, Script

from otelguard.cli import main as otelguard_main
from otelguard.guards.repeat_tool_reminder import SHORT_TEXT

pytestmark = pytest.mark.agent_cli

FINAL = "The directory holds notes.txt, with 3 lines."
IDENTICAL_CALLS = 10
RUN_TIMEOUT_S = 240


@dataclass
class Cli:
    name: str  # as `otelguard hook` names it
    binary: str
    loop_call: Callable[[Path], tuple[str, dict[str, Any]]]  # what the model repeats
    a_b: Callable[[Path], list[tuple[str, dict[str, Any]]]]  # the alternation
    hook_tool: str  # the tool name the hook sees for the repeated call


CLIS = {
    "claude-code": Cli(
        "claude-code", "claude",
        lambda work: ("Bash", {"command": "ls -la", "description": "List files in current directory"}),
        lambda work: [("Read", {"file_path": str(work / "notes.txt")}),
                      ("Bash", {"command": "wc -l notes.txt", "description": "Count lines in notes.txt"})],
        "Bash"),
}


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A home, a project and a hook history of the test's own; the real `otelguard` on PATH."""
    home, work, state = tmp_path / "home", tmp_path / "work", tmp_path / "state"
    for folder in (home, work, state):
        folder.mkdir()
    (work / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", os.defpath)]),
        "OTELGUARD_HOOK_DB": str(state / "hooks.sqlite3"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OTELGUARD_CONFIG", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.chdir(work)
    return home, work, state, env


def run_claude_code(cli_path: str, llm: FakeLLM, env: dict[str, str], work: Path) -> subprocess.CompletedProcess:
    env = {**env, "ANTHROPIC_BASE_URL": llm.url, "ANTHROPIC_API_KEY": "sk-test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
    return subprocess.run([cli_path, "-p", "list the files", "--output-format", "stream-json", "--verbose",
                           "--allowedTools", "Bash,Read"],
                          cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, stdin=subprocess.DEVNULL)


RUNNERS = {"claude-code": run_claude_code}


def hook_log_lines(state: Path) -> list[str]:
    path = state / "hooks.log"
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


@pytest.mark.parametrize("name", list(CLIS))
def test_a_looping_cli_is_reminded_then_blocked_and_its_session_ends_normally(sandbox, name):
    home, work, state, env = sandbox
    cli = CLIS[name]
    cli_path = binary("agent_cli", cli.binary)
    assert otelguard_main(["install-hook", name]) == 0
    loop_call = cli.loop_call(work)
    llm = FakeLLM(Script(calls=[loop_call] * IDENTICAL_CALLS + cli.a_b(work) * 3, final=FINAL))
    try:
        done = RUNNERS[name](cli_path, llm, env, work)
    finally:
        llm.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert FINAL in done.stdout  # the session ended with the model's final answer

    log = hook_log_lines(state)
    acted = [line for line in log if " INFO " in line]
    assert not [line for line in log if " ERROR " in line or " WARNING " in line], log
    assert [re.search(r"(remind|block) at call (\d+)", line).groups() for line in acted] == [
        ("remind", "3"), ("remind", "5"), ("block", "8"), ("block", "9"), ("block", "10")]

    requests = llm.requests
    assert len(requests) == IDENTICAL_CALLS + 6 + 1  # one model turn per call, and the final one
    shown = [json.dumps(body, ensure_ascii=False) for body in requests]
    first_reminded = next(i for i, text in enumerate(shown) if json.dumps(SHORT_TEXT)[1:-1] in text)
    assert first_reminded == 3  # the turn after the third call: the reminder reached the model
    assert any("Repeated tool call detected:" in text and "consecutive_calls: 5" in text for text in shown[5:])
    blocked = next(i for i, text in enumerate(shown) if "Repeated tool call blocked:" in text)
    assert blocked == 8 and "consecutive_calls: 8" in shown[8]
