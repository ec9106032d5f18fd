"""OTLP JSON Lines written by hand for tests of `otelguard analyze`, shaped like the Collector's file
exporter (hex ids, integer enums, 64-bit integers as strings), and the command line run in-process."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from otelguard.cli import main
from otel_support import output_messages

TRACE = "5b8efff798038103d269b633813fc60c"
OTHER_TRACE = "0af7651916cd43dd8448eb211c80319c"
T0 = 1_790_000_000_000_000_000  # ns
MS = 1_000_000


# --- OTLP JSON builders ---------------------------------------------------------------------------


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": v}


def attributes(mapping: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": value(v)} for k, v in mapping.items()]


def hexid(short: str, size: int = 16) -> str:
    """A readable test id ("t2") as a valid hex span id, stable across calls."""
    if len(short) == size and all(c in "0123456789abcdef" for c in short):
        return short
    return hashlib.sha256(short.encode()).hexdigest()[:size]


def span(name: str, span_id: str, *, start: int, end: int, parent: str | None = None, trace: str = TRACE,
         attrs: dict[str, Any] | None = None, events: list[dict[str, Any]] | None = None,
         dropped_events: int = 0, status: int = 0) -> dict[str, Any]:
    """One span; `start`/`end` in milliseconds after T0; ids are short hex, padded."""
    out: dict[str, Any] = {
        "traceId": trace,
        "spanId": hexid(span_id),
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(T0 + start * MS),
        "endTimeUnixNano": str(T0 + end * MS),
        "attributes": attributes(attrs or {}),
        "status": {"code": status} if status else {},
        "flags": 256,
    }
    if parent:
        out["parentSpanId"] = hexid(parent)
    if events:
        out["events"] = events
    if dropped_events:
        out["droppedEventsCount"] = dropped_events
    return out


def agent(span_id: str, start: int, end: int, *, name: str = "weather", parent: str | None = None,
          trace: str = TRACE) -> dict[str, Any]:
    return span(f"invoke_agent {name}", span_id, start=start, end=end, parent=parent, trace=trace,
                attrs={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name})


def model(span_id: str, parent: str | None, start: int, end: int, *, text: str = "", reasoning: str = "",
          tool: str | None = None, trace: str = TRACE, events: list[dict[str, Any]] | None = None,
          **extra: Any) -> dict[str, Any]:
    messages = output_messages(text=text, reasoning=reasoning, tool=tool)
    return span("chat fake-model", span_id, start=start, end=end, parent=parent, trace=trace, events=events,
                attrs={"gen_ai.operation.name": "chat", "gen_ai.request.model": "fake-model",
                       "gen_ai.output.messages": messages}, **extra)


def tool(span_id: str, parent: str | None, start: int, end: int, *, name: str = "get_weather",
         args: str = '{"city":"Paris"}', result: str = "sunny", trace: str = TRACE,
         extra_attrs: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
             "gen_ai.tool.call.arguments": args, "gen_ai.tool.call.result": result, **(extra_attrs or {})}
    return span(f"execute_tool {name}", span_id, start=start, end=end, parent=parent, trace=trace,
                attrs=attrs, **extra)


def filler(span_id: str, parent: str | None, start: int, end: int, name: str = "turn",
           trace: str = TRACE) -> dict[str, Any]:
    return span(name, span_id, start=start, end=end, parent=parent, trace=trace, attrs={"custom.kind": "CHAIN"})


def request(*spans: dict[str, Any], scope: str = "tests") -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": attributes({"service.name": "t"})},
                               "scopeSpans": [{"scope": {"name": scope}, "spans": list(spans)}]}]}


def write(path: Path, *lines: dict[str, Any] | str) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
                    encoding="utf-8")
    return path


def tool_loop(calls: int = 3, *, trace: str = TRACE, agent_id: str = "a1", prefix: str = "") -> list[dict[str, Any]]:
    """An agent calling get_weather with the same arguments `calls` times, a model call before each."""
    spans = [agent(agent_id, 0, 100 * calls + 10, trace=trace)]
    for i in range(calls):
        spans.append(model(f"{prefix}m{i}", agent_id, 100 * i, 100 * i + 40, tool="get_weather", trace=trace))
        spans.append(tool(f"{prefix}t{i}", agent_id, 100 * i + 50, 100 * i + 90, trace=trace))
    return spans


def end_time(span: dict[str, Any]) -> int:
    return int(span["endTimeUnixNano"])


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys, *argv: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run(capsys, "analyze", "--json", *argv)
    assert out, err
    return code, json.loads(out)


def findings(document: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(v["guard"], v["rule"], v["action"], v["span_id"]) for v in document["verdicts"] if not v["counting"]]


def sid(short: str) -> str:
    return hexid(short)
