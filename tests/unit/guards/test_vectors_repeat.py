"""Conformance vectors: the repeat-tool reminder (vectors.md, "Repeat-tool reminder" 1-12).

Vector 11 (validation) lives in test_vectors_config.py. Vectors 8 and 9 run through the engine here,
and through the live processor in test_vectors_processor.py.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from otelguard.model.canonical import canonical_arguments
from otelguard.guards.config import RepeatToolReminderConfig
from otelguard.engine import GuardEngine
from otelguard.guards.base import ToolStart
from otelguard.guards.repeat_tool_reminder import RepeatToolReminder
from otelguard.model.records import SpanView, Status, ToolCall, Verdict

from vectors_support import BLOCK_ADVICE, BLOCK_HEADER, SHORT_REMINDER, detailed_reminder, load_row

SPAN = SpanView(name="execute_tool", trace_id=1, span_id=1)


def call(name: str, args: Any = None, **fields: Any) -> ToolCall:
    """A tool call as a convention reads it: arguments canonicalised (a raw JSON string stays raw input)."""
    arguments, content = canonical_arguments({} if args is None else args)
    return ToolCall(name=name, arguments=arguments, arguments_content=content, **fields)


def run(calls: list[ToolCall], **config: Any) -> list[list[Verdict]]:
    """Drive one agent's tool calls through the guard (start, then end); one verdict list per call."""
    guard = RepeatToolReminder(load_row("repeat-tool-reminder", config).settings[0])  # validated
    state = guard.new_state()
    out = []
    for tool_call in calls:
        guard.on_tool_start(state, tool_call, SPAN, ToolStart())
        out.append(guard.on_tool_end(state, tool_call, SPAN, None))
    return out


def sent(verdicts: list[list[Verdict]], action: str = "remind") -> list[tuple[int, Verdict]]:
    """(1-based call position, verdict) of every verdict with `action`."""
    return [(i, v) for i, per_call in enumerate(verdicts, start=1) for v in per_call if v.action == action]


# --- 1 -------------------------------------------------------------------------------------------
def test_v1_defaults_remind_at_three_and_five():
    """With defaults, five identical calls remind twice: at call 3 and call 5."""
    assert [i for i, _ in sent(run([call("probe", {"q": "same"})] * 5))] == [3, 5]


def test_v1_first_reminder_is_the_short_text():
    """The reminder at the smallest threshold is the verbatim short text."""
    (_, first), _ = sent(run([call("probe", {"q": "same"})] * 5))
    assert first.message == SHORT_REMINDER


def test_v1_later_reminder_is_the_detailed_text():
    """The reminder at call 5 is the detailed text naming the tool, the count and the arguments."""
    _, (_, second) = sent(run([call("probe", {"q": "same"})] * 5))
    assert "- tool: probe" in second.message
    assert "- consecutive_calls: 5" in second.message
    assert '{"q":"same"}' in second.message
    assert second.message == detailed_reminder("probe", 5, '{"q":"same"}')


def test_v1_reminders_carry_rule_and_count():
    """Reminders are repeated_tool_call verdicts with rule repeat-threshold and the run position."""
    reminders = sent(run([call("probe", {"q": "same"})] * 5))
    assert [(v.verdict, v.rule, v.repeat_count, v.tool) for _, v in reminders] == [
        ("repeated_tool_call", "repeat-threshold", 3, "probe"),
        ("repeated_tool_call", "repeat-threshold", 5, "probe"),
    ]


# --- 2 -------------------------------------------------------------------------------------------
def test_v2_thresholds_are_sorted():
    """Thresholds [4, 2]: four identical calls get the short text at 2 and the detailed text at 4."""
    reminders = sent(run([call("probe", {})] * 4, thresholds=[4, 2]))
    assert [(i, v.message) for i, v in reminders] == [
        (2, SHORT_REMINDER),
        (4, detailed_reminder("probe", 4, "{}")),
    ]


# --- 3 -------------------------------------------------------------------------------------------
def test_v3_detailed_preview_is_cut_at_the_preview_length():
    """With preview 24, the detailed text shows the first 24 canonical characters and the rest's size."""
    body = {"body": "x" * 400}
    canonical = json.dumps(body, separators=(",", ":"))
    reminders = sent(run([call("probe", body)] * 3, thresholds=[2, 3], arguments_preview_chars=24))
    assert [i for i, _ in reminders] == [2, 3]
    preview = canonical[:24] + "… (+387 more chars)"
    assert f"- arguments: {preview}\n" in reminders[1][1].message
    assert reminders[1][1].message == detailed_reminder("probe", 3, preview)


# --- 4 -------------------------------------------------------------------------------------------
def test_v4_a_different_tool_restarts_the_run():
    """probe q1, probe q1, other, probe q1 x3: exactly one reminder, at the last call."""
    q1 = call("probe", {"q": "q1"})
    reminders = sent(run([q1, q1, call("other", {"q": "q1"}), q1, q1, q1]))
    assert [(i, v.repeat_count) for i, v in reminders] == [(6, 3)]


# --- 5 -------------------------------------------------------------------------------------------
def test_v5_excluded_tools_are_transparent():
    """With exclude ['other'], probe/other/probe/other/probe sends one short reminder, on the last call."""
    probe, other = call("probe", {"q": 1}), call("other", {"q": 1})
    reminders = sent(run([probe, other, probe, other, probe], exclude=["other"]))
    assert [(i, v.message) for i, v in reminders] == [(5, SHORT_REMINDER)]


def test_v5_excluded_calls_get_no_verdict():
    """A call to an excluded tool yields no verdict at all."""
    other = call("other", {"q": 1})
    assert run([other] * 4, exclude=["other"]) == [[], [], [], []]


# --- 6 -------------------------------------------------------------------------------------------
def test_v6_include_star_pattern_selects_tools():
    """With include ['pro*'], other x3 then probe x3: one reminder, for probe."""
    reminders = sent(run([call("other")] * 3 + [call("probe")] * 3, include=["pro*"]))
    assert [(i, v.tool) for i, v in reminders] == [(6, "probe")]


def test_v6_only_star_is_special_in_patterns():
    """With exclude ['pr.be'], the dot is literal: probe x3 is still tracked and reminded once."""
    reminders = sent(run([call("probe")] * 3, exclude=["pr.be"]))
    assert [i for i, _ in reminders] == [3]


# --- 7 -------------------------------------------------------------------------------------------
def test_v7_key_order_and_spacing_do_not_break_the_run():
    """The same arguments with other key order and spacing are one key: three calls remind once."""
    first = '{"a": 1, "nested": {"x": [1, 2], "y": null}}'
    reordered = '{"nested":{"y":null,"x":[1,2]},"a":1}'
    reminders = sent(run([call("probe", first), call("probe", reordered), call("probe", first)]))
    assert [i for i, _ in reminders] == [3]


# --- 9 (guard level) -----------------------------------------------------------------------------
def test_v9_a_new_user_prompt_resets_the_chain():
    """probe x2, a new agent run, probe x1: no reminder."""
    guard = RepeatToolReminder(RepeatToolReminderConfig())
    state = guard.new_state()
    probe = call("probe", {"q": "same"})
    verdicts = [guard.on_tool_end(state, probe, SPAN, None) for _ in range(2)]
    guard.on_agent_run(state)
    verdicts.append(guard.on_tool_end(state, probe, SPAN, None))
    assert sent(verdicts) == []
    assert verdicts[2] == []


# --- 10 ------------------------------------------------------------------------------------------
def test_v10_a_denied_call_counts():
    """Thresholds [2]: a second identical call that was denied still reminds."""
    probe = call("probe", {"q": "same"})
    denied = call("probe", {"q": "same"}, denied=True)
    assert [i for i, _ in sent(run([probe, denied], thresholds=[2]))] == [2]


def test_v10_a_failed_call_counts():
    """Thresholds [2]: a second identical call that failed still reminds."""
    probe = call("probe", {"q": "same"})
    failed = call("probe", {"q": "same"}, status=Status.ERROR, error_message="boom")
    assert [i for i, _ in sent(run([probe, failed], thresholds=[2]))] == [2]


# --- 12 ------------------------------------------------------------------------------------------
def test_v12_stop_after_blocks_from_its_count_on():
    """stop_after 8, nine identical calls: short at 3, detailed at 5, blocked at 8 and 9."""
    verdicts = run([call("probe", {"q": "same"})] * 9, stop_after=8)
    messages = [(i, v.action) for i, per_call in enumerate(verdicts, start=1) for v in per_call
                if v.action != "none"]
    assert messages == [(3, "remind"), (5, "remind"), (8, "block"), (9, "block")]
    assert sent(verdicts)[0][1].message == SHORT_REMINDER
    assert sent(verdicts)[1][1].message == detailed_reminder("probe", 5, '{"q":"same"}')


def test_v12_block_carries_the_stop_text():
    """A blocked call's message starts with the block header and ends with the stop advice."""
    blocks = sent(run([call("probe", {"q": "same"})] * 9, stop_after=8), action="block")
    for count, (_, verdict) in zip((8, 9), blocks):
        assert verdict.rule == "repeat-stop"
        assert verdict.repeat_count == count
        lines = verdict.message.split("\n")
        assert lines[0] == BLOCK_HEADER
        assert lines[-1] == BLOCK_ADVICE
        assert f"- consecutive_calls: {count}" in lines


def test_v12_block_is_known_at_tool_start():
    """With arguments known at start, the tool-start decision blocks calls 8 and 9 only."""
    guard = RepeatToolReminder(RepeatToolReminderConfig(stop_after=8))
    state = guard.new_state()
    probe = call("probe", {"q": "same"})
    blocked_at = []
    for position in range(1, 10):
        decision = ToolStart()
        guard.on_tool_start(state, probe, SPAN, decision)
        if decision.block is not None:
            blocked_at.append(position)
        guard.on_tool_end(state, probe, SPAN, None)
    assert blocked_at == [8, 9]


def test_v12_thresholds_at_or_past_stop_after_send_no_reminder():
    """stop_after 4: short at 3, block at 4, and no detailed text ever."""
    verdicts = run([call("probe", {"q": "same"})] * 6, stop_after=4)
    acted = [(i, v.action) for i, per_call in enumerate(verdicts, start=1) for v in per_call
             if v.action != "none"]
    assert acted == [(3, "remind"), (4, "block"), (5, "block"), (6, "block")]
    assert all("Repeated tool call detected:" not in (v.message or "") for per in verdicts for v in per)


# --- 8 and 9 through the engine ------------------------------------------------------------------
_ids = itertools.count(1)
TRACE = 0xABC


def agent_span(name: str, parent: SpanView | None = None, **attributes: Any) -> SpanView:
    return SpanView(
        name=f"invoke_agent {name}", trace_id=TRACE, span_id=next(_ids),
        parent_span_id=parent.span_id if parent else None,
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attributes},
    )


def tool_span(parent: SpanView, name: str = "probe", args: str = '{"q":"same"}') -> SpanView:
    return SpanView(
        name=f"execute_tool {name}", trace_id=TRACE, span_id=next(_ids), parent_span_id=parent.span_id,
        attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                    "gen_ai.tool.call.arguments": args, "gen_ai.tool.call.result": "nothing new"},
        status=Status.OK,
    )


def tool_round(engine: GuardEngine, parent: SpanView) -> list[Verdict]:
    span = tool_span(parent)
    engine.start(span)
    judged = engine.end(span)
    assert judged is not None, "an execute_tool span must be judged"
    return judged.verdicts


def reminders_of(verdicts: list[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if v.guard == "repeat-tool-reminder" and v.action == "remind"]


def test_v8_a_sub_agent_has_its_own_chain():
    """A probes twice, sub-agent B three times, interleaved in one trace: A no reminder, B one."""
    engine = GuardEngine({"guards": [{"id": "repeat-tool-reminder"}]})
    a = agent_span("A")
    engine.start(a)
    handoff = tool_span(a, name="ask_b", args="{}")
    engine.start(handoff)
    b = agent_span("B", parent=handoff)
    engine.start(b)
    seen = {"A": [], "B": []}
    for who, parent in [("A", a), ("B", b), ("A", a), ("B", b), ("B", b)]:
        seen[who] += reminders_of(tool_round(engine, parent))
    assert seen["A"] == []
    assert [v.repeat_count for v in seen["B"]] == [3]


def test_v9_a_new_user_prompt_resets_the_chain_of_a_durable_agent():
    """One agent (same conversation) probes twice, gets a new prompt, probes once: no reminder."""
    engine = GuardEngine({"guards": [{"id": "repeat-tool-reminder"}]})
    verdicts: list[Verdict] = []
    first = agent_span("A", **{"gen_ai.conversation.id": "conv-1"})
    engine.start(first)
    verdicts += tool_round(engine, first) + tool_round(engine, first)
    engine.end(first)
    second = agent_span("A", **{"gen_ai.conversation.id": "conv-1"})
    engine.start(second)
    verdicts += tool_round(engine, second)
    assert reminders_of(verdicts) == []


def test_v9_control_a_durable_agent_keeps_its_chain_within_a_run():
    """Without a new prompt, the same agent's third identical call is reminded (the reset is what matters)."""
    engine = GuardEngine({"guards": [{"id": "repeat-tool-reminder"}]})
    run_span = agent_span("A", **{"gen_ai.conversation.id": "conv-2"})
    engine.start(run_span)
    verdicts = tool_round(engine, run_span) + tool_round(engine, run_span) + tool_round(engine, run_span)
    assert [v.repeat_count for v in reminders_of(verdicts)] == [3]
