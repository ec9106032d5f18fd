"""Copied or replayed test data reuses span ids under other trace ids: `otelguard analyze` keeps each
trace's run apart (the engine keys open spans by trace and span id), so two copies of one run are two
agents of one trace each, and neither copy's calls count towards the other's repeats."""

from __future__ import annotations

import json
from pathlib import Path

from otelguard.cli import main

TRACES = ("5b8efff798038103d269b633813fc60c", "0af7651916cd43dd8448eb211c80319c")
T0 = 1_790_000_000_000_000_000
MS = 1_000_000


def _span(trace: str, span_id: str, parent: str | None, name: str, start: int, end: int,
          attributes: dict[str, str]) -> dict:
    span = {"traceId": trace, "spanId": span_id, "name": name, "kind": 1,
            "startTimeUnixNano": str(T0 + start * MS), "endTimeUnixNano": str(T0 + end * MS),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()]}
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def _run(trace: str) -> dict:
    """One agent run calling get_weather twice with the same arguments: the same span ids in any trace."""
    run_id = "a1a1a1a1a1a1a1a1"
    spans = [_span(trace, run_id, None, "invoke_agent weather", 0, 300,
                   {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"})]
    for index in range(2):
        spans.append(_span(trace, f"{index + 1:016x}", run_id, "execute_tool get_weather", 100 * index,
                           100 * index + 50, {"gen_ai.operation.name": "execute_tool",
                                              "gen_ai.tool.name": "get_weather",
                                              "gen_ai.tool.call.arguments": '{"city":"Paris"}',
                                              "gen_ai.tool.call.result": "sunny"}))
    return {"resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "t"}, "spans": spans}]}]}


def test_two_copies_of_a_run_under_other_trace_ids_stay_two_runs(tmp_path: Path, capsys) -> None:
    path = tmp_path / "copied.jsonl"
    path.write_text("".join(json.dumps(_run(trace)) + "\n" for trace in TRACES), encoding="utf-8")
    assert main(["analyze", "--json", str(path)]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [(agent["name"], agent["traces"], agent["runs"]) for agent in document["agents"]] == [
        ("weather", 1, 1), ("weather", 1, 1)]
    # Two identical calls a run: a repeat counted, below the first reminder (3), in each copy alike.
    assert [(verdict["action"], verdict["count"]) for verdict in document["verdicts"]] == [
        ("none", 2), ("none", 2)]
