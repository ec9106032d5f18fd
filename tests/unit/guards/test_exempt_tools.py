"""`exempt_tools` (every guard) and `exempt_tools_by_rule` (no-progress): an exempt tool never triggers
the guard or rule it is exempt from; its calls are still calls (unlike `exclude` and `transparent`)."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from no_progress_support import replay
from vectors_support import R
from otel_support import Guarded, output_messages

import otelguard
from otelguard.engine import GuardEngine


def call(tool: str, args: dict[str, Any], result: str = "ok") -> dict[str, Any]:
    return {"tool": tool, "args": args, "result": result}


def acting(config: dict, calls: list[dict[str, Any]]) -> list[tuple[int, str, str, str]]:
    """(call number, guard, rule, tool) of every verdict that asks for something."""
    return [(number, v.guard, v.rule, v.tool) for number, per in enumerate(replay(GuardEngine(config), calls), start=1)
            for v in per if v.action != "none"]


def repeat(config: dict) -> dict:
    return {"guards": [{"id": "repeat-tool-reminder", "config": config}]}


def no_progress(config: dict) -> dict:
    return {"guards": [{"id": "no-progress", "config": config}]}


STATUS = call("status", {"job": 7}, "queued")


def test_an_exempt_tools_identical_calls_are_never_reminded_or_blocked():
    """Ten identical `status` calls: neither reminded nor blocked when exempt; `ls` still is."""
    config = repeat({"exempt_tools": ["stat*"], "stop_after": 6})
    assert acting(config, [STATUS] * 10) == []
    assert sorted({n for n, *_ in acting(config, [call("ls", {})] * 6)}) == [3, 5, 6]


def test_an_exempt_call_breaks_another_tools_run_where_an_excluded_one_does_not():
    """`ls, status, ls, ls`: an exempt `status` is a call between (the run of `ls` restarts), an excluded one is
    transparent (the run goes on to 3)."""
    calls = [call("ls", {}), STATUS, call("ls", {}), call("ls", {})]
    assert acting(repeat({"exempt_tools": ["status"]}), calls) == []
    assert acting(repeat({"exclude": ["status"]}), calls) == [(4, "repeat-tool-reminder", "repeat-threshold", "ls")]


def test_a_rule_exempts_only_its_own_tools():
    """`status` polled with the same answer: exempt from same-result, it is not reminded; exempt from
    error-loop only, it is; exempt guard-wide, no rule reminds."""
    polls = [STATUS, call("sleep", {"s": 1}), STATUS, call("sleep", {"s": 2}), STATUS]
    assert acting(no_progress({"exempt_tools_by_rule": {"same-result": ["status"]}}), polls) == []
    assert acting(no_progress({"exempt_tools_by_rule": {"error-loop": ["status"]}}), polls) == [
        (5, "no-progress", "same-result", "status")]
    assert acting(no_progress({"exempt_tools": ["status"]}), polls) == []


def test_a_cycle_with_an_exempt_call_is_not_reported():
    """`status, read` three times: a cycle, unless either tool is exempt from the cycle rule."""
    loop = [STATUS, call("read", {"path": "log.txt"}, "line 1")] * 3
    assert [rule for _, _, rule, _ in acting(no_progress({}), loop)] == ["cycle"]
    assert [rule for _, _, rule, _ in acting(no_progress({"exempt_tools_by_rule": {"cycle": ["status"]}}), loop)
            if rule == "cycle"] == []


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["poll", "read", "edit"]), st.integers(0, 2), st.integers(0, 1)),
                max_size=40))
def test_an_exempt_tool_never_triggers_the_rules_it_is_exempt_from(steps):
    """Any sequence of calls: no verdict of the repeat guard or of no-progress names `poll`, nor a cycle holding it."""
    config = {"guards": [{"id": "repeat-tool-reminder", "config": {"exempt_tools": ["poll"], "stop_after": 4}},
                         {"id": "no-progress", "config": {"exempt_tools": ["poll"], "stop_after": 4}}]}
    calls = [call(tool, {"n": n}, f"result {r}") for tool, n, r in steps]
    for per in replay(GuardEngine(config), calls):
        for verdict in per:
            assert verdict.tool != "poll", verdict
            assert not any(entry.tool == "poll" for entry in verdict.evidence if verdict.rule == "cycle"), verdict


@otelguard.budget(timeout_ms=50)
def slow_lookup() -> str:
    otelguard.tool_signal().wait(0.3)
    return "finished"


def test_an_exempt_tools_declared_budget_is_never_armed():
    """A tool exempt from timeout-policy runs past the budget it declares: not aborted, no verdict."""
    with Guarded({"guards": [{"id": "timeout-policy", "config": {"exempt_tools": ["slow_*"]}}]}) as g:
        began = time.monotonic()
        with g.tracer.start_as_current_span("execute_tool slow_lookup", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "slow_lookup"}):
            result = slow_lookup()
        assert result == "finished" and time.monotonic() - began >= 0.3
        (span,) = g.exporter.get_finished_spans()
    assert "otelguard.verdict" not in span.attributes


REASONING = R("weather in paris", 2400)  # over min_reasoning_chars (2,048), and no cycle of its own


def test_model_calls_asking_for_an_exempt_tool_are_no_thinking_steps():
    """Calls that restate their long reasoning and call `think`: a stall, unless `think` is exempt."""
    def verdicts(config: dict) -> list[str]:
        with Guarded({"guards": [{"id": "thinking-loop-guard", "config": config}]}) as g:
            with g.tracer.start_as_current_span("invoke_agent helper", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "helper"}):
                for _ in range(3):
                    with g.tracer.start_as_current_span("chat m", attributes={
                            "gen_ai.operation.name": "chat",
                            "gen_ai.output.messages": output_messages(reasoning=REASONING, tool="think")}):
                        pass
            return [span.attributes["otelguard.rule"] for span in g.exporter.get_finished_spans()
                    if "otelguard.rule" in span.attributes]

    assert verdicts({}) == ["repeated-material", "repeated-material"]
    assert verdicts({"exempt_tools": ["think"]}) == []
