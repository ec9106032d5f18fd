"""Hostile and huge inputs for `otelguard analyze`, written fast (string templates, not json.dumps per
span) at any scale: the tests write them small, `benchmarks/analyzer_hostile.py` full size.

Each writer takes a path and a size, writes the file and returns what a correct analysis finds in
it (`Expect`). A "looping run" is an agent run (no durable id, so its state lives as long as the run)
calling one tool three times with the same arguments: repeat-tool-reminder's first threshold, so
exactly one reminder per run.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

T0 = 1_790_000_000_000_000_000
CALLS_PER_RUN = 3  # repeat-tool-reminder's first threshold: one reminder per looping run


@dataclass(frozen=True)
class Expect:
    reminders: int = 0
    lines: int = 0


def _span(trace: int, span: int, parent: int | None, name: str, start: int, end: int, attributes: str) -> str:
    parent_field = f'"parentSpanId":"{parent:016x}",' if parent is not None else ""
    return (f'{{"traceId":"{trace:032x}","spanId":"{span:016x}",{parent_field}"name":{json.dumps(name)},'
            f'"kind":1,"startTimeUnixNano":"{T0 + start}","endTimeUnixNano":"{T0 + end}",'
            f'"attributes":[{attributes}],"status":{{}}}}')


def _attribute(key: str, value: str) -> str:
    return f'{{"key":"{key}","value":{{"stringValue":{json.dumps(value)}}}}}'


def agent_span(trace: int, span: int, parent: int | None, start: int, end: int, name: str = "looper") -> str:
    return _span(trace, span, parent, f"invoke_agent {name}", start, end,
                 _attribute("gen_ai.operation.name", "invoke_agent") + "," + _attribute("gen_ai.agent.name", name))


def tool_span(trace: int, span: int, parent: int, start: int, end: int, name: str = "get_weather") -> str:
    return _span(trace, span, parent, f"execute_tool {name}", start, end,
                 ",".join((_attribute("gen_ai.operation.name", "execute_tool"), _attribute("gen_ai.tool.name", name),
                           _attribute("gen_ai.tool.call.arguments", '{"city":"Paris"}'))))


def request(spans: list[str]) -> str:
    return '{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{"name":"hostile"},"spans":[' + ",".join(spans) \
        + "]}]}]}"


def looping_run(trace: int, start: int = 0, stride: int = 100, tool_name: str = "get_weather",
                ) -> tuple[str, list[str]]:
    """(the run's agent span, its tool spans): the run starts at `start` and calls the tool every
    `stride` ns after. Span ids are unique across traces."""
    base = trace << 8
    tools = [tool_span(trace, base + 1 + i, base, start + stride * (i + 1), start + stride * (i + 1) + 1, tool_name)
             for i in range(CALLS_PER_RUN)]
    return agent_span(trace, base, None, start, start + stride * (CALLS_PER_RUN + 1)), tools


def concurrent_looping_runs(path: Path, runs: int, per_line: int = 500) -> Expect:
    """`runs` looping runs (one trace each) open at once, each run's calls interleaved with the
    others' (every run starts, then every run makes its first call, ...), written as a batch exporter
    writes them: the tool spans first, many runs to a line, then every run span on the last line."""
    roots, lines, batch = [], [], []
    for trace in range(1, runs + 1):
        root, tools = looping_run(trace, start=trace, stride=runs + 1)
        roots.append(root)
        batch.extend(tools)
        if len(batch) >= per_line:
            lines.append(request(batch))
            batch = []
    if batch:
        lines.append(request(batch))
    lines.append(request(roots))
    path.write_text("\n".join(lines) + "\n")
    return Expect(reminders=runs, lines=len(lines))


def one_run_per_line(runs: int, first_trace: int = 1) -> list[str]:
    """`runs` lines, each a whole looping run."""
    lines = []
    for trace in range(first_trace, first_trace + runs):
        root, tools = looping_run(trace)
        lines.append(request([*tools, root]))
    return lines


def cut_off_first_record(path: Path, runs: int) -> Expect:
    """A first record cut off mid-line, then `runs` whole records, one looping run each."""
    lines = one_run_per_line(runs + 1)
    path.write_text("\n".join([lines[0][: len(lines[0]) // 2], *lines[1:]]) + "\n")
    return Expect(reminders=runs, lines=runs + 1)


def open_brace_then_records(path: Path, runs: int) -> Expect:
    """A first line `{` (a document that never comes), then `runs` whole records."""
    path.write_text("\n".join(["{", *one_run_per_line(runs)]) + "\n")
    return Expect(reminders=runs, lines=runs + 1)


def open_brace_then_short_lines(path: Path, lines: int) -> Expect:
    """A first line `{`, then `lines` short lines that are no JSON: a document with no end."""
    with path.open("w") as out:
        out.write("{\n")
        for _ in range(lines // 1000):
            out.write('"k": 1,\n' * 1000)
    return Expect(lines=1 + lines // 1000 * 1000)


def duplicated_resource_spans(path: Path) -> Expect:
    """`resourceSpans` twice in one record, a looping run in each copy: JSON keeps the second."""
    first = one_run_per_line(1, first_trace=1)[0]
    second = one_run_per_line(1, first_trace=2)[0]
    path.write_text(first[:-1] + "," + second[1:] + "\n")
    return Expect(reminders=1, lines=1)


def _repeated(out: Any, unit: Any, size: int) -> None:
    """`size` copies of the one-character `unit` written to `out` in 1 MiB blocks (memory stays flat)."""
    block = unit * 2**20
    for _ in range(size // len(block)):
        out.write(block)
    out.write(unit * (size % len(block)))


def spaces_without_newline(path: Path, size: int) -> Expect:
    """`size` bytes of spaces and no newline, gzipped (a few KB on disk)."""
    with gzip.open(path, "wb", compresslevel=1) as out:
        _repeated(out, b" ", size)
    return Expect(lines=1)


def long_line(path: Path, size: int) -> Expect:
    """A record that opens a string of `size` bytes and never ends, gzipped (a few KB on disk)."""
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(b'{"resourceSpans": "')
        _repeated(out, b"x", size)
    return Expect(lines=1)


def newlines(path: Path, size: int) -> Expect:
    """`size` newlines, then one looping run (so that there is something to judge)."""
    with path.open("w") as out:
        _repeated(out, "\n", size)
        out.write(one_run_per_line(1)[0] + "\n")
    return Expect(reminders=1, lines=size + 1)


def nested_runs(path: Path, depth: int, name_chars: int = 300) -> Expect:
    """One trace of `depth` agent runs, each inside the one before, each named with `name_chars`
    characters; a looping run's tools at the bottom."""
    spans = []
    for level in range(depth):
        name = f"{level:06d}" + "n" * max(0, name_chars - 6)
        spans.append(agent_span(1, level + 1, level or None, level, 10_000_000 - level, name))
    bottom = depth
    spans.extend(tool_span(1, depth + 1 + i, bottom, depth + 100 * i, depth + 100 * i + 50)
                 for i in range(CALLS_PER_RUN))
    path.write_text(request(spans) + "\n")
    return Expect(reminders=1, lines=1)


def traces_with_a_verdict(path: Path, traces: int) -> Expect:
    """`traces` traces, one looping run each, one per line."""
    with path.open("w") as out:
        for start in range(1, traces + 1, 1000):
            out.write("\n".join(one_run_per_line(min(1000, traces + 1 - start), first_trace=start)) + "\n")
    return Expect(reminders=traces, lines=traces)


def ansi_tool_name(path: Path) -> Expect:
    """A looping run whose tool name clears the screen, draws a green ALL CLEAR, and ends in a C1
    control sequence introducer and a right-to-left override."""
    root, tools = looping_run(1, tool_name="get_weather\x1b[2J\x1b[H\x1b[32mALL CLEAR\x1b[0m\x07\u009b31m\u202e")
    path.write_text(request([*tools, root]) + "\n")
    return Expect(reminders=1, lines=1)


BILLION_LAUGHS_YAML = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8)
)
