"""The engine's span lifecycle, driven through `SpanView` sources: `start` and `end` of each span.

Which agent each span belongs to, what state lives how long, and what comes back at each step.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from otel_support import Guarded, metric_points, output_messages, tool_span

from otelguard.detectors.stream import Trip
from otelguard.engine import GuardEngine, Judged, Started
from otelguard.model.records import SpanKind, SpanView, Verdict

TRACE = 0xABC


def run(span_id: int, name: str = "a", parent: int | None = None, **identity: str) -> SpanView:
    """An agent run span; `identity`: gen_ai.agent.id / gen_ai.conversation.id, as `agent_id=` / `conversation=`."""
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}
    if "agent_id" in identity:
        attributes["gen_ai.agent.id"] = identity["agent_id"]
    if "conversation" in identity:
        attributes["gen_ai.conversation.id"] = identity["conversation"]
    return SpanView(f"invoke_agent {name}", TRACE, span_id, parent, attributes)


def call(span_id: int, parent: int | None, arguments: str = '{"q":1}', **extra) -> SpanView:
    return SpanView("execute_tool f", TRACE, span_id, parent, {
        "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f", "gen_ai.tool.call.arguments": arguments,
        **extra})


def model(span_id: int, parent: int | None, text: str = "ok") -> SpanView:
    return SpanView("chat m", TRACE, span_id, parent, {
        "gen_ai.operation.name": "chat", "gen_ai.output.messages": output_messages(text=text)})


def plain(span_id: int, parent: int | None) -> SpanView:
    return SpanView("GET", TRACE, span_id, parent, {"http.request.method": "GET"})


def judged(engine: GuardEngine, span: SpanView) -> Judged:
    engine.start(span)
    found = engine.end(span)
    assert found is not None
    return found


def repeats(engine: GuardEngine, span_ids: range, parent: int) -> list[int | None]:
    """The repeat count each identical tool call in `span_ids` was judged with (None: no verdict)."""
    counts = []
    for span_id in span_ids:
        verdicts = judged(engine, call(span_id, parent)).verdicts
        counts.append(next((v.repeat_count for v in verdicts if v.verdict == "repeated_tool_call"), None))
    return counts


def test_agent_model_and_tool_spans_are_started_and_judged_others_let_through():
    """`start` returns a `Started` for agent and tool spans (what a driver acts on) and `end` a
    `Judged` for agent, model and tool spans; None for any other."""
    engine = GuardEngine()
    for span, kind in ((run(1), SpanKind.AGENT), (call(3, 1), SpanKind.TOOL)):
        started = engine.start(span)
        assert isinstance(started, Started) and started.classification.kind is kind
        assert started.agent.name == "a"
    assert engine.start(model(2, 1)) is None  # judged only when it ends
    assert engine.start(plain(4, 1)) is None and engine.end(plain(4, 1)) is None
    for span, kind in ((call(3, 1), SpanKind.TOOL), (model(2, 1), SpanKind.MODEL), (run(1), SpanKind.AGENT)):
        ended = engine.end(span)
        assert isinstance(ended, Judged) and ended.classification.kind is kind and ended.agent.name == "a"


@pytest.mark.parametrize(("span", "enclosing", "key"), [
    (run(2, agent_id="agent-7"), None, "id:agent-7"),  # a durable id
    (run(2, "writer", conversation="c-1"), None, "conv:c-1:writer"),  # a conversation and a name
    (run(2, "writer", parent=1), run(1, "boss", conversation="c"), "conv:c:boss/writer"),  # nested, by name
    (run(2, "writer"), None, f"span:{TRACE:032x}:{2:016x}"),  # neither: its own run
])
def test_each_agent_run_gets_the_key_its_identity_gives(span, enclosing, key):
    engine = GuardEngine()
    if enclosing is not None:
        engine.start(enclosing)
    assert engine.start(span).agent.key == key


def test_spans_outside_any_run_belong_to_their_trace():
    engine = GuardEngine()
    ended = judged(engine, call(5, None))
    assert ended.agent.key == f"trace:{TRACE:032x}" and ended.agent.name is None
    assert engine.agent_of(TRACE, 5) is None


def test_a_run_scoped_agents_state_and_its_nested_agents_go_when_the_run_ends():
    """A run with no durable identity keeps its state, and its nested agents', only while it is open:
    dropped at its end, not evicted."""
    evicted: list[tuple] = []
    engine = GuardEngine(on_evict=lambda *report: evicted.append(report))
    engine.start(run(1, "boss"))
    judged(engine, call(2, 1))
    engine.start(run(3, "helper", parent=1))
    judged(engine, call(4, 3))
    assert engine.tracked_agents == 2
    engine.end(run(3, "helper", parent=1))
    assert engine.tracked_agents == 2  # the nested agent's state lives as long as the enclosing run
    engine.end(run(1, "boss"))
    assert engine.tracked_agents == 0 and evicted == []


def test_a_durable_agent_keeps_its_state_across_runs_and_a_new_run_restarts_its_repeat_chain():
    engine = GuardEngine()
    engine.start(run(1, conversation="c"))
    assert repeats(engine, range(10, 13), 1) == [None, 2, 3]
    engine.end(run(1, conversation="c"))
    assert engine.tracked_agents == 1  # kept for the next prompt of the conversation
    engine.start(run(2, conversation="c"))
    assert repeats(engine, range(20, 22), 2) == [None, 2]  # the chain starts again
    assert engine.tracked_agents == 1


def test_an_agent_evicted_by_the_bound_is_made_anew_and_the_eviction_counted():
    """With room for one agent, a second evicts the first (reported); the first, back, starts afresh."""
    evicted: list[tuple] = []
    engine = GuardEngine(max_agents=1, on_evict=lambda *report: evicted.append(report))
    engine.start(run(1, agent_id="first"))
    assert repeats(engine, range(10, 12), 1) == [None, 2]
    engine.start(run(2, agent_id="second"))
    assert evicted == [("agent", "capacity", 1)] and engine.tracked_agents == 1
    assert repeats(engine, range(13, 14), 1) == [None]  # the first agent's chain was lost with its state


def test_state_evictions_are_counted_in_the_metric():
    with Guarded(max_agents=1) as g:
        for agent_id in ("first", "second", "third"):
            with g.tracer.start_as_current_span(f"invoke_agent {agent_id}", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent_id,
                    "gen_ai.agent.id": agent_id}):
                tool_span(g.tracer)
        points = metric_points(g.metric_reader, "otelguard.state.evictions")
    assert points == [({"otelguard.state": "agent", "reason": "capacity"}, 2)]


def test_the_open_span_bound_trims_the_oldest_and_counts_them():
    """Spans that never end (a leak upstream): past the bound the oldest are forgotten, each counted."""
    evicted: list[tuple] = []
    engine = GuardEngine(max_open_spans=3, on_evict=lambda what, reason, n: evicted.append((what, reason, n)))
    engine.start(run(1))
    for span_id in range(2, 8):
        engine.start(model(span_id, span_id - 1))  # each inside the last, none ended
    assert sum(n for what, reason, n in evicted if what == "span" and reason == "capacity") == 4
    assert [span_id for span_id in range(1, 8) if engine.agent_of(TRACE, span_id) is not None] == [5, 6, 7]


def test_a_live_stream_trip_is_shown_once_on_its_span():
    """A trip reported for an open model span comes back with that span's end, its evidence the call it
    cut (numbered only then), and with no other span's end."""
    engine = GuardEngine({"guards": [{"id": "thinking-loop-guard"}]})
    verdict = Verdict("thinking-loop-guard", "repetitive_output", "cycle", "none", stream_chars=5)
    engine.report_stream_trip(TRACE, 42, verdict)
    shown = judged(engine, model(42, None)).stream_verdict
    assert replace(shown, evidence=()) == verdict and [(e.step, e.span_id) for e in shown.evidence] == [(1, 42)]
    assert judged(engine, model(42, None)).stream_verdict is None  # shown once
    assert judged(engine, model(43, None)).stream_verdict is None


def test_a_stream_trip_is_not_judged_again_as_a_thinking_step():
    engine = GuardEngine()
    trip = engine.stream_guard.break_verdict(Trip("identical-chunks", 240, run=60), cut=True)
    engine.report_stream_trip(TRACE, 2, trip)
    ended = judged(engine, model(2, None, text="tick" * 80))
    assert replace(ended.stream_verdict, evidence=()) == trip
    assert all(verdict.rule != trip.rule for verdict in ended.verdicts)


def test_a_tool_start_gets_its_budget_and_its_agent():
    """A tool's start arms the budget its span declares, with or without a pre-emptive block
    (stop_after), and its agent (the trace, outside any run) is tracked from then on."""
    tool = call(2, None, arguments="{}", **{"otelguard.tool.timeout_ms": 250})
    for stop_after in (None, 3):
        engine = GuardEngine({"guards": [{"id": "timeout-policy"},
                                         {"id": "repeat-tool-reminder", "config": {"stop_after": stop_after}}]})
        started = engine.start(tool)
        assert started.tool.budget_ms == 250.0 and started.tool.block is None
        assert engine.tracked_agents == 1


def test_every_model_call_is_read_whole_and_judged():
    """A short answer outside any run is read whole (its record holds its text) and judged on its
    trace's agent, as a tool call is."""
    engine = GuardEngine({"guards": [{"id": "thinking-loop-guard", "config": {"textLoopRepeats": 0, "textLoopStreak": 0}}]})
    ended = judged(engine, model(2, None))
    assert ended.verdicts == () and ended.record.text == "ok"
    assert engine.tracked_agents == 1
    judged(engine, call(3, None))
    assert engine.tracked_agents == 1


def test_a_tool_whose_deadline_fired_is_judged_timed_out():
    engine = GuardEngine()
    engine.start(call(2, None))
    ended = engine.end(call(2, None), timed_out_ms=50)
    assert [(v.guard, v.action, v.error_code) for v in ended.verdicts] == [("timeout-policy", "abort", "TOOL_TIMEOUT")]


def test_a_span_view_is_a_source_with_no_parent_at_hand():
    span = call(2, 1)
    assert span.view() is span and span.parent_view() is None and span.events == ()


def test_a_span_is_judged_as_the_kind_it_started_as():
    """A span is classified once, at its start: the tool call whose budget a driver armed is ended as
    a tool call even when its marker is gone by its end; a span handed over at its end alone, or marked
    only after its start, is classified then."""
    engine = GuardEngine()
    engine.start(run(1))
    started = call(2, 1)
    assert engine.start(started).classification.kind is SpanKind.TOOL
    unmarked_at_end = SpanView(started.name, TRACE, 2, 1, {"gen_ai.tool.name": "f"})
    ended = engine.end(unmarked_at_end)
    assert ended is not None and ended.classification.kind is SpanKind.TOOL

    end_only = engine.end(call(3, 1))
    assert end_only is not None and end_only.classification.kind is SpanKind.TOOL
    engine.start(plain(4, 1))
    late_marker = engine.end(model(4, 1))
    assert late_marker is not None and late_marker.classification.kind is SpanKind.MODEL
