"""The repeat-tool reminder's vectors (vectors.md 1-7, 9, 10, 12) under the four-guard default: the
reminder's verdicts are the ones it gives alone, and no-progress gives none (calls inside the
reminder's own back-to-back run are never its to judge). Vector 8 (a sub-agent) runs with four guards
in test_vectors_processor.py's default configuration."""

from __future__ import annotations

from typing import Any

import pytest

from otelguard.guards.config import GuardConfig
from otelguard.engine import GuardEngine

from no_progress_support import replay


def probe(args: Any = None, tool: str = "probe", **fields: Any) -> dict[str, Any]:
    return {"tool": tool, "args": {} if args is None else args, **fields}


Q1, OTHER = probe({"q": "q1"}), probe({"q": "q1"}, "other")
VECTORS = {
    "1": ({}, [probe({"q": "same"})] * 5),
    "2": ({"thresholds": [4, 2]}, [probe()] * 4),
    "3": ({"thresholds": [2, 3], "arguments_preview_chars": 24}, [probe({"body": "x" * 400})] * 3),
    "4": ({}, [Q1, Q1, OTHER, Q1, Q1, Q1]),
    "5": ({"exclude": ["other"]}, [probe({"q": 1}), probe({"q": 1}, "other")] * 2 + [probe({"q": 1})]),
    "6-include": ({"include": ["pro*"]}, [probe(tool="other")] * 3 + [probe()] * 3),
    "6-exclude": ({"exclude": ["pr.be"]}, [probe()] * 3),
    "7": ({}, [probe({"a": 1, "nested": {"x": [1, 2], "y": None}}), probe({"nested": {"y": None, "x": [1, 2]}, "a": 1}),
               probe({"a": 1, "nested": {"x": [1, 2], "y": None}})]),
    "10-denied": ({"thresholds": [2]}, [probe(), probe(error="denied by the user")]),
    "12-stop-8": ({"stop_after": 8}, [probe()] * 9),
    "12-stop-4": ({"stop_after": 4, "thresholds": [3, 5]}, [probe()] * 6),
}


def four_guards(repeat: dict[str, Any]) -> GuardConfig:
    return GuardConfig.load({"guards": [{"id": "timeout-policy"}, {"id": "repeat-tool-reminder", "config": repeat},
                                        {"id": "thinking-loop-guard"}, {"id": "no-progress"}]})


@pytest.mark.parametrize("result", [None, "ok"], ids=["no-result", "with-result"])
@pytest.mark.parametrize("vector", VECTORS)
def test_the_reminders_vector_holds_under_four_guards_and_no_progress_stays_silent(vector, result):
    repeat, calls = VECTORS[vector]
    calls = [dict(c, result=result) for c in calls]
    alone = replay(GuardEngine({"guards": [{"id": "repeat-tool-reminder", "config": repeat}]}), calls)
    together = replay(GuardEngine(four_guards(repeat)), calls)
    assert [[v for v in per if v.guard == "repeat-tool-reminder"] for per in together] == alone
    assert any(alone)  # each vector makes the reminder say something
    assert [v for per in together for v in per if v.guard == "no-progress"] == []


def test_vector_9_a_new_prompt_restarts_both_guards():
    engine = GuardEngine(four_guards({}))
    first = replay(engine, [probe()] * 2, trace_id=9)
    second = replay(engine, [probe()], trace_id=9)
    assert [v for per in first + second for v in per if v.action != "none"] == []
    assert [v for per in first + second for v in per if v.guard == "no-progress"] == []
