"""The no-progress corpus (tests/no_progress_corpus/corpus.jsonl) as GenAI spans through the engine."""

from __future__ import annotations

import json
from typing import Any, Iterator

from otelguard.engine import GuardEngine
from otelguard.model.records import SpanView, Status, Verdict
import paths

CORPUS = paths.NO_PROGRESS_CORPUS / "corpus.jsonl"


def corpus(split: str | None = None) -> list[dict[str, Any]]:
    """The labelled sequences, all or one split (`tune` / `held-out`)."""
    with CORPUS.open(encoding="utf-8") as lines:
        rows = [json.loads(line) for line in lines]
    return [row for row in rows if split is None or row["split"] == split]


def run_spans(calls: list[dict[str, Any]], trace_id: int = 1) -> Iterator[SpanView]:
    """An agent-run span, then one GenAI tool span per call (start order; each ends before the next)."""
    yield SpanView("invoke_agent coder", trace_id, 1, None, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "coder"})
    for number, call in enumerate(calls, start=2):
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call["tool"],
                      "gen_ai.tool.call.arguments": json.dumps(call["args"])}
        if call.get("result") is not None:
            attributes["gen_ai.tool.call.result"] = call["result"]
        error = call.get("error")
        yield SpanView(f"execute_tool {call['tool']}", trace_id, number, 1, attributes,
                       status=Status.ERROR if error else Status.UNSET, status_message=error)


def replay(engine: GuardEngine, calls: list[dict[str, Any]], trace_id: int = 1) -> list[list[Verdict]]:
    """Drive one agent run through the engine; the verdicts of each tool call (start blocks and end)."""
    spans = list(run_spans(calls, trace_id))
    run = spans[0]
    engine.start(run)
    out = []
    for span in spans[1:]:
        started = engine.start(span)
        verdicts = [started.tool.block] if started is not None and started.tool and started.tool.block else []
        judged = engine.end(span)
        out.append(verdicts + list(judged.verdicts if judged is not None else ()))
    engine.end(run)
    return out
