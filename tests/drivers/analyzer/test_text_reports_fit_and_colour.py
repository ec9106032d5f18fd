"""The text report of `otelguard analyze` fits 100 columns (at COLUMNS=100 and through a pipe), is
coloured on a terminal only and never with NO_COLOR, writes every count with one thousands separator,
and says what it means in plain words. (The demo's lines: tests/e2e/test_demo.py.)"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

TRACE = "5b8efff798038103d269b633813fc60c"
ESC = "\x1b"


def _span(span_id: int, parent: int | None, name: str, attributes: dict[str, str], status: int = 0) -> dict:
    span = {"traceId": TRACE, "spanId": f"{span_id:016x}", "name": name, "kind": 1,
            "startTimeUnixNano": str(1_000_000 + 10 * span_id), "endTimeUnixNano": str(1_000_005 + 10 * span_id),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
    if status:
        span["status"] = {"code": status}
    if parent is not None:
        span["parentSpanId"] = f"{parent:016x}"
    return span


def _tool(span_id: int, arguments: str) -> dict:
    return _span(span_id, 1, "execute_tool search_the_knowledge_base_for_answers", {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_the_knowledge_base_for_answers",
        "gen_ai.tool.call.arguments": arguments, "gen_ai.tool.call.result": "nothing found " * 20})


def _write(path: Path, spans: list[dict], *extra_lines: str) -> Path:
    request = {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}
    path.write_text(json.dumps(request) + "\n" + "".join(line + "\n" for line in extra_lines), encoding="utf-8")
    return path


@pytest.fixture
def looping_file(tmp_path: Path) -> Path:
    """A run whose identical calls (long arguments) are reminded, and lines that cannot be read."""
    run = _span(1, None, "invoke_agent research_assistant_with_a_rather_long_name", {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "research_assistant_with_a_rather_long_name"})
    arguments = json.dumps({"query": "why does the nightly build of the payments service fail " * 3})
    deep = tmp_path / ("a-directory-with-a-long-name-" * 3)
    deep.mkdir()
    return _write(deep / "loop.jsonl", [run, *(_tool(2 + index, arguments) for index in range(6))],
                  "{not json", '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}')


def _analyze(path: Path, **env: str) -> str:
    done = subprocess.run([sys.executable, "-m", "otelguard", "analyze", str(path)], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _widest(text: str) -> int:
    return max(len(line) for line in text.splitlines())


@pytest.mark.parametrize("columns", ["100", None], ids=["COLUMNS=100", "pipe"])
def test_analyze_fits_100_columns_without_colour_through_a_pipe(looping_file: Path, columns: str | None) -> None:
    env = {"COLUMNS": columns} if columns else {}
    if not columns:
        env["COLUMNS"] = ""  # (unset: the width of a pipe)
    text = _analyze(looping_file, **env)
    assert _widest(text) <= 100, text
    assert ESC not in text
    assert "↳ remind" in text and "count 3" in text  # the verdict, under its step


def test_the_report_is_coloured_on_a_terminal_but_not_with_no_color(looping_file: Path) -> None:
    def on_a_terminal(**env: str) -> str:
        leader, follower = pty.openpty()
        with subprocess.Popen([sys.executable, "-m", "otelguard", "analyze", str(looping_file)], stdout=follower,
                              stderr=subprocess.DEVNULL, env={**os.environ, "TERM": "xterm", **env}) as process:
            os.close(follower)
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the terminal closed with the process
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            assert process.wait(60) == 0
        os.close(leader)
        return b"".join(chunks).decode()

    coloured = on_a_terminal(COLUMNS="100")
    assert f"{ESC}[33m" in coloured and f"{ESC}[1m" in coloured  # a reminder, a heading
    plain = re.sub(r"\x1b\[[0-9;]*m", "", coloured)
    assert _widest(plain) <= 100
    assert ESC not in on_a_terminal(COLUMNS="100", NO_COLOR="1")


def test_counts_have_one_thousands_separator_and_plain_words(tmp_path: Path) -> None:
    run = _span(1, None, "invoke_agent indexer", {"gen_ai.operation.name": "invoke_agent",
                                                   "gen_ai.agent.name": "indexer"})
    calls = [_tool(2 + index, json.dumps({"page": index})) for index in range(1_200)]
    text = _analyze(_write(tmp_path / "many.jsonl", [run, *calls], "{not json"), COLUMNS="100")
    summary = text[text.index("\nsummary\n"):]
    assert "judged: 1,200 steps (0 model, 1,200 tool)" in summary
    assert "1,201 read" in summary
    assert not re.search(r"(?<![\d,.])\d{4,}", summary), summary  # no count of 1,000 or more without its comma
    assert "(s)" not in text
    assert "thinking: 0 of 0 model calls stalled" in summary

