"""Driving `otelguard hook <cli>` as each coding-agent CLI does: its documented stdin, one process (or
one `run` call) per hook, the answer read back from stdout.

`CliSession` makes the hook inputs of one CLI session in that CLI's own shape (the shapes of the real
records in tests/fixtures/agent_cli_hooks/), `answer` reads what the hook told the CLI.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otelguard.hooks.command import run
import paths

FIXTURES = paths.AGENT_CLI_HOOKS
CLIS = ("claude-code", "gemini-cli", "codex", "opencode")


def hook(cli: str, payload: dict[str, Any]) -> dict[str, Any] | None:
    """Run one hook in this process; the parsed answer, or None when the hook printed nothing."""
    out = io.StringIO()
    assert run(cli, io.BytesIO(json.dumps(payload).encode()), out) == 0
    return json.loads(out.getvalue()) if out.getvalue() else None


def hook_process(cli: str, payload: dict[str, Any] | bytes, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run one hook as the CLI does: the installed `otelguard` command, stdin in, stdout out."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run([otelguard_command(), "hook", cli], input=data, capture_output=True, timeout=60,
                          env=env if env is not None else dict(os.environ))


def hook_imports(cli: str, payload: dict[str, Any], watched: set[str]) -> tuple[list[str], str]:
    """Run one hook in a fresh interpreter: (the modules or top-level packages of `watched` it
    imported, what it printed)."""
    # The hook ends its process itself (no teardown, no code after it): each import is told as it
    # happens, by an audit hook writing to the file descriptor (the hook redirects `sys.stderr`).
    probe = (
        "import io, os, sys\n"
        "sys.addaudithook(lambda event, args: event == 'import' and os.write(2, f'IMPORTED {args[0]}\\n'.encode()))\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))\n"
        f"sys.argv = ['otelguard', 'hook', {cli!r}]\n"
        "from otelguard.entry import main\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(payload)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    imported = {line.split()[1] for line in done.stderr.splitlines() if line.startswith("IMPORTED ")}
    assert "otelguard.hooks.command" in imported, done.stderr
    loaded = imported | {name.split(".")[0] for name in imported}
    return sorted(loaded & watched), done.stdout


def otelguard_command() -> str:
    return str(Path(sys.executable).with_name("otelguard"))


@dataclass
class Answer:
    """What the hook told the CLI, in neutral terms."""

    denied: str | None = None
    context: str | None = None
    stopped: str | None = None


def answer(cli: str, printed: dict[str, Any] | None) -> Answer:
    if printed is None:
        return Answer()
    if cli == "opencode":
        return Answer(denied=printed.get("block"), context=printed.get("context"))
    stopped = printed.get("stopReason") if printed.get("continue") is False else None
    if cli == "gemini-cli":
        specific = printed.get("hookSpecificOutput") or {}
        denied = printed.get("reason") if printed.get("decision") in ("deny", "block") else None
        return Answer(denied=denied, context=specific.get("additionalContext"), stopped=stopped)
    specific = printed.get("hookSpecificOutput") or {}
    denied = specific.get("permissionDecisionReason") if specific.get("permissionDecision") == "deny" else None
    return Answer(denied=denied, context=specific.get("additionalContext"), stopped=stopped)


_ids = itertools.count(1)


@dataclass
class CliSession:
    """Hook inputs of one session of `cli`, in its documented shape."""

    cli: str
    session: str = field(default_factory=lambda: f"session-{next(_ids)}")
    prompt: str = "prompt-1"  # Claude Code's prompt_id / Codex's turn_id

    def pre(self, tool: str, tool_input: Any, call_id: str | None = None) -> dict[str, Any]:
        call_id = call_id or f"call-{next(_ids)}"
        if self.cli == "opencode":
            return {"event": "before", "input": {"tool": tool, "sessionID": self.session, "callID": call_id},
                    "output": {"args": tool_input}}
        payload = {"session_id": self.session, "cwd": "/work", "hook_event_name": self._event("pre"),
                   "tool_name": tool, "tool_input": tool_input}
        self._add_ids(payload, call_id)
        return payload

    def post(self, tool: str, tool_input: Any, result: Any = "ok", call_id: str | None = None,
             failed: bool = False) -> dict[str, Any]:
        call_id = call_id or f"call-{next(_ids)}"
        if self.cli == "opencode":
            return {"event": "after", "input": {"tool": tool, "sessionID": self.session, "callID": call_id,
                                                "args": tool_input},
                    "output": {"title": tool, "output": result, "metadata": {"exit": 1 if failed else 0}}}
        event = "PostToolUseFailure" if failed and self.cli == "claude-code" else self._event("post")
        payload = {"session_id": self.session, "cwd": "/work", "hook_event_name": event, "tool_name": tool,
                   "tool_input": tool_input, "duration_ms": 12}
        if self.cli == "gemini-cli":
            payload["tool_response"] = {"llmContent": result, "returnDisplay": result,
                                        **({"error": "failed"} if failed else {})}
        elif event == "PostToolUseFailure":
            payload["error"] = result
        else:
            payload["tool_response"] = result
        self._add_ids(payload, call_id)
        return payload

    def call(self, tool: str, tool_input: Any, result: Any = "ok") -> tuple[Answer, Answer]:
        """One tool call through both hooks (the call runs only when the first does not deny it)."""
        call_id = f"call-{next(_ids)}"
        before = answer(self.cli, hook(self.cli, self.pre(tool, tool_input, call_id)))
        if before.denied:
            return before, Answer()
        return before, answer(self.cli, hook(self.cli, self.post(tool, tool_input, result, call_id)))

    def _event(self, phase: str) -> str:
        if self.cli == "gemini-cli":
            return "BeforeTool" if phase == "pre" else "AfterTool"
        return "PreToolUse" if phase == "pre" else "PostToolUse"

    def _add_ids(self, payload: dict[str, Any], call_id: str) -> None:
        if self.cli == "gemini-cli":
            return  # Gemini CLI sends no call id, and names no prompt
        payload["tool_use_id"] = call_id
        payload["prompt_id" if self.cli == "claude-code" else "turn_id"] = self.prompt


def recorded(cli: str) -> list[dict[str, Any]]:
    """The hook inputs a real run of `cli` sent, in the order they arrived (see the fixtures' README)."""
    with open(FIXTURES / f"{cli}.jsonl", encoding="utf-8") as lines:
        return [json.loads(line)["stdin"] for line in lines]
