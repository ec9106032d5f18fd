"""End to end: the real coding-agent CLIs (npm, pinned in agent_clis.json), guarded by `otelguard hook`.

Each CLI runs offline against a scripted fake model (tests/support/fake_llm.py: the only fake part)
with the hook installed by `otelguard install-hook` into a temporary home. The script is a loop a model falls
into: the same call ten times, then an A/B alternation three times, then a final answer. The test
reads what the model was shown (the requests it got) and the hook log: the reminders at the 3rd and
5th identical call reach the model as context, the 8th, 9th and 10th are denied before they run with
the guard's message, the alternation's reminder names its steps, and the session still ends normally
with the final answer. Claude Code also runs paused (`otelguard hook pause`: the model is told nothing,
the verdicts are logged) and with its looping tool exempt (`exempt_tools`: never reminded).

Tier `agent_cli`: skipped without the CLIs (with the command that installs them), failed under CI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
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


CLIS = {
    "claude-code": Cli(
        "claude-code", "claude",
        lambda work: ("Bash", {"command": "ls -la", "description": "List files in current directory"}),
        lambda work: [("Read", {"file_path": str(work / "notes.txt")}),
                      ("Bash", {"command": "wc -l notes.txt", "description": "Count lines in notes.txt"})]),
    "gemini-cli": Cli(
        "gemini-cli", "gemini",
        lambda work: ("run_shell_command", {"command": "ls -la", "description": "List files in current directory"}),
        lambda work: [("read_file", {"file_path": str(work / "notes.txt")}),
                      ("run_shell_command", {"command": "wc -l notes.txt", "description": "Count lines"})]),
    "codex": Cli(
        "codex", "codex",
        lambda work: ("exec_command", {"cmd": "ls -la"}),
        lambda work: [("exec_command", {"cmd": "cat notes.txt"}), ("exec_command", {"cmd": "wc -l notes.txt"})]),
    "opencode": Cli(
        "opencode", "opencode",
        lambda work: ("bash", {"command": "ls -la", "description": "List files"}),
        lambda work: [("read", {"filePath": str(work / "notes.txt")}),
                      ("bash", {"command": "wc -l notes.txt", "description": "Count lines"})]),
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
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OTELGUARD_CONFIG", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.chdir(work)
    return home, work, state, env


def run(command: list[str], env: dict[str, str], work: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)


def run_claude_code(cli_path: str, llm: FakeLLM, env: dict[str, str], home: Path, work: Path):
    env = {**env, "ANTHROPIC_BASE_URL": llm.url, "ANTHROPIC_API_KEY": "sk-test",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1"}
    return run([cli_path, "-p", "list the files", "--output-format", "stream-json", "--verbose",
                "--allowedTools", "Bash,Read"], env, work)


def run_gemini_cli(cli_path: str, llm: FakeLLM, env: dict[str, str], home: Path, work: Path):
    settings = home / ".gemini" / "settings.json"
    # Gemini CLI's own loop detector would end the run at the 5th identical call: otelguard's test turns it off.
    write_json(settings, {
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "model": {"disableLoopDetection": True},
        "hooks": json.loads(settings.read_text())["hooks"],
    })
    env = {**env, "GEMINI_API_KEY": "sk-test", "GOOGLE_GEMINI_BASE_URL": llm.url, "GEMINI_CLI_TRUST_WORKSPACE": "true",
           "NO_BROWSER": "1"}
    return run([cli_path, "-p", "list the files", "-m", "gemini-2.5-pro", "--output-format", "stream-json",
                "--approval-mode", "yolo"], env, work)


def run_codex(cli_path: str, llm: FakeLLM, env: dict[str, str], home: Path, work: Path):
    config = home / ".codex" / "config.toml"
    config.write_text(
        'model = "fake-model"\nmodel_provider = "fake"\napproval_policy = "never"\n'
        'sandbox_mode = "danger-full-access"\n\n' + config.read_text() + "\n[model_providers.fake]\n"
        f'name = "Fake"\nbase_url = "{llm.url}/v1"\nenv_key = "FAKE_API_KEY"\nwire_api = "responses"\n')
    env = {**env, "FAKE_API_KEY": "sk-test"}
    return run([cli_path, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-hook-trust",
                "list the files"], env, work)


def run_opencode(cli_path: str, llm: FakeLLM, env: dict[str, str], home: Path, work: Path):
    write_json(work / "opencode.json", {
        "$schema": "https://opencode.ai/config.json",
        "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                              "options": {"baseURL": f"{llm.url}/v1", "apiKey": "sk-test"},
                              "models": {"fake-model": {"name": "Fake Model", "tool_call": True}}}},
        "model": "fake/fake-model", "small_model": "fake/fake-model", "autoupdate": False, "share": "disabled",
        "permission": {"bash": "allow", "read": "allow", "edit": "allow"},
    })
    env = {**env, "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
    return run([cli_path, "run", "--print-logs", "--format", "json", "list the files"], env, work)


RUNNERS = {"claude-code": run_claude_code, "gemini-cli": run_gemini_cli, "codex": run_codex, "opencode": run_opencode}


def write_json(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2))


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
        done = RUNNERS[name](cli_path, llm, env, home, work)
    finally:
        llm.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert FINAL in done.stdout  # the session ended with the model's final answer

    log = hook_log_lines(state)
    acted = [line for line in log if " INFO " in line]
    assert not [line for line in log if " ERROR " in line or " WARNING " in line], log
    # The identical-call loop: repeat-tool-reminder's ladder, then its block (the hooks' stop_after 8).
    ladder = [line for line in acted if "repeat-tool-reminder/" in line]
    assert [re.search(r"repeat-tool-reminder/\S+ (remind|block) at call (\d+)", line).groups() for line in ladder] == [
        ("remind", "3"), ("remind", "5"), ("block", "8"), ("block", "9"), ("block", "10")]
    # The A/B alternation after it: no-progress may remind on it (a cycle, or the same file read with the
    # same result), never block (no stop_after by default).
    assert all(re.search(r"no-progress/\S+ remind", line) for line in acted if line not in ladder), acted

    steps = [step for step, _ in llm.requests]
    assert max(steps) == IDENTICAL_CALLS + 6  # every scripted call made (or denied), then the final turn
    assert llm.first_step_showing(SHORT_TEXT) == 3  # the reminder reached the model right after the 3rd call
    assert llm.first_step_showing("- consecutive_calls: 5") == 5
    assert llm.first_step_showing("Repeated tool call blocked:") == 8  # the 8th call denied, its reason shown
    # Codex shows a hook's context as a developer message: no model-controlled arguments in it, nor
    # the tool's name
    assert llm.first_step_showing("- arguments: ") == (None if name == "codex" else 5)
    assert llm.first_step_showing("- tool: ") == (None if name == "codex" else 5)
    # The alternation's reminder (a rule beyond the seed's) names the steps that made it: the six calls
    # after the ten identical ones (for Codex, whose hook context is a system-level message, nothing
    # else of them). (Claude Code answers a second Read of an unchanged file with another text: its
    # alternation makes no cycle.)
    # (The exact numbers are asserted by the hook tests; here, under a loaded machine, a CLI may retry
    # a request, so only where the reminder first shows is held.)
    cycle = "- steps: 11, 12, 13, 14, 15, 16"
    if name == "claude-code":
        assert llm.first_step_showing(cycle) is None
    else:
        shown = llm.first_step_showing("- steps: ")
        assert shown is not None and shown >= IDENTICAL_CALLS + 6, shown


def run_claude_code_loop(sandbox, *extra: str) -> tuple[FakeLLM, subprocess.CompletedProcess]:
    """Claude Code through the scripted loop (`extra`: more command-line arguments), its hook installed."""
    home, work, state, env = sandbox
    assert otelguard_main(["install-hook", "claude-code"]) == 0
    cli = CLIS["claude-code"]
    llm = FakeLLM(Script(calls=[cli.loop_call(work)] * IDENTICAL_CALLS + cli.a_b(work) * 3, final=FINAL))
    try:
        done = run([binary("agent_cli", cli.binary), "-p", "list the files", "--output-format", "stream-json",
                    "--verbose", "--allowedTools", "Bash,Read", *extra],
                   {**env, "ANTHROPIC_BASE_URL": llm.url, "ANTHROPIC_API_KEY": "sk-test",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
                    "DISABLE_TELEMETRY": "1"}, work)
    finally:
        llm.close()
    assert done.returncode == 0, done.stderr[-3000:]
    assert FINAL in done.stdout
    return llm, done


GUARD_TEXTS = (SHORT_TEXT, "Repeated tool call", "No progress:")


def test_a_paused_claude_code_session_is_told_nothing_and_its_verdicts_are_recorded(sandbox):
    """`otelguard hook pause claude-code SESSION` before the run: every scripted call runs (none denied), no
    guard text reaches the model, and the hook log records the ladder, each verdict marked paused."""
    session = str(uuid.uuid4())
    assert otelguard_main(["hook", "pause", "claude-code", session]) == 0
    llm, _ = run_claude_code_loop(sandbox, "--session-id", session)
    assert max(step for step, _ in llm.requests) == IDENTICAL_CALLS + 6
    assert all(llm.first_step_showing(text) is None for text in GUARD_TEXTS)
    acted = [line for line in hook_log_lines(sandbox[2]) if " INFO " in line]
    ladder = [re.search(r"repeat-tool-reminder/\S+ (remind|block) at call (\d+) \(paused: not delivered\)", line)
              for line in acted if "repeat-tool-reminder/" in line]
    assert [match.groups() for match in ladder if match] == [
        ("remind", "3"), ("remind", "5"), ("block", "8"), ("block", "9"), ("block", "10")]
    assert all(session in line and "(paused: not delivered)" in line for line in acted)


def test_claude_codes_exempt_tool_is_never_reminded(sandbox):
    """`exempt_tools: [Bash]` on repeat-tool-reminder: ten identical `ls -la` calls all run, and no reminder
    or denial of that guard reaches the model or the log."""
    config = sandbox[1] / "otelguard.yaml"
    config.write_text("guards:\n  - id: repeat-tool-reminder\n    config: {exempt_tools: [Bash]}\n")
    sandbox[3]["OTELGUARD_CONFIG"] = str(config)
    llm, _ = run_claude_code_loop(sandbox)
    assert max(step for step, _ in llm.requests) == IDENTICAL_CALLS + 6
    assert llm.first_step_showing(SHORT_TEXT) is None and llm.first_step_showing("Repeated tool call") is None
    assert not [line for line in hook_log_lines(sandbox[2]) if "repeat-tool-reminder/" in line or " ERROR " in line]
