"""GuardSpanProcessor contracts: export enrichment, sibling mode, containment, metrics, bounds."""

from __future__ import annotations

import json
import threading
import time

from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otel_support import Guarded, PublicOnly, RecordingProcessor, metric_points, output_messages, tool_span

import otelguard
from otelguard.model.records import SpanView

REPEAT_ONLY = {"guards": [{"id": "repeat-tool-reminder", "config": {"thresholds": [2]}}]}


def _agent(tracer, name="agent-a", **attributes):
    return tracer.start_as_current_span(
        f"invoke_agent {name}", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name,
                                            **attributes})


def test_exported_tool_span_carries_verdict_attributes(guard_factory, span_exporter):
    """The downstream exporter receives the judged span with the otelguard.* attributes and a verdict event."""
    tracer, _ = guard_factory(REPEAT_ONLY)
    with _agent(tracer):
        tool_span(tracer)
        tool_span(tracer)
    second = [s for s in span_exporter.get_finished_spans() if s.name == "execute_tool probe"][1]
    assert second.attributes["otelguard.verdict"] == "repeated_tool_call"
    assert second.attributes["otelguard.rule"] == "repeat-threshold"
    assert second.attributes["otelguard.action"] == "remind"
    assert second.attributes["otelguard.repeat.count"] == 2
    assert second.attributes["gen_ai.tool.name"] == "probe"  # the original attributes stay
    assert [e.name for e in second.events] == ["otelguard.verdict"]


def test_first_call_and_unrelated_spans_pass_through_unchanged(guard_factory, span_exporter):
    """Spans no guard judged reach the exporter without verdict attributes."""
    tracer, _ = guard_factory(REPEAT_ONLY)
    with _agent(tracer):
        with tracer.start_as_current_span("http GET", attributes={"http.method": "GET"}):
            pass
        tool_span(tracer)
    spans = {s.name: s for s in span_exporter.get_finished_spans()}
    assert "otelguard.verdict" not in spans["http GET"].attributes
    assert "otelguard.verdict" not in spans["execute_tool probe"].attributes


def test_sibling_mode_adds_verdict_event_to_open_agent_run(span_exporter, meter_provider, mailbox):
    """Without a downstream, the verdict becomes an event on the still-open agent-run span."""
    provider = TracerProvider()
    provider.add_span_processor(otelguard.GuardSpanProcessor(REPEAT_ONLY, control=mailbox,
                                                             meter_provider=meter_provider))
    provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    tracer = provider.get_tracer("tests")
    try:
        with _agent(tracer):
            tool_span(tracer)
            tool_span(tracer)
    finally:
        provider.shutdown()
    spans = span_exporter.get_finished_spans()
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    second_tool = [s for s in spans if s.name == "execute_tool probe"][1]
    events = [e for e in agent.events if e.name == "otelguard.verdict"]
    assert len(events) == 1 and events[0].attributes["otelguard.action"] == "remind"
    assert events[0].attributes["otelguard.span_id"] == f"{second_tool.context.span_id:016x}"
    assert [m.rule for m in mailbox.drain()] == ["repeat-threshold"]


def test_reminder_reaches_bound_control_with_plugin_source(guard_factory):
    """A control bound around the agent run gets the reminder, attributed to the guard as a plugin."""
    tracer, _ = guard_factory(REPEAT_ONLY, control=None)
    bound = otelguard.Mailbox()
    with otelguard.bind_control(bound):
        with _agent(tracer):
            tool_span(tracer)
            tool_span(tracer)
    (message,) = bound.drain()
    assert message.source == {"kind": "plugin", "plugin": "repeat-tool-reminder"}
    assert message.text.startswith("You are repeating the exact same tool call")


def test_verdict_metrics_are_recorded(guard_factory, metric_reader):
    """Verdicts and judged spans are counted with their documented attributes."""
    tracer, _ = guard_factory(REPEAT_ONLY)
    with _agent(tracer, name="metered"):
        tool_span(tracer)
        tool_span(tracer)
    verdicts = metric_points(metric_reader, "otelguard.verdicts")
    assert verdicts == [({"otelguard.guard": "repeat-tool-reminder", "otelguard.rule": "repeat-threshold",
                          "otelguard.action": "remind", "gen_ai.agent.name": "metered",
                          "gen_ai.tool.name": "probe"}, 1)]
    spans = dict((tuple(sorted(a.items())), v) for a, v in metric_points(metric_reader, "otelguard.spans"))
    assert spans[(("otelguard.convention", "genai"), ("otelguard.span.kind", "tool"))] == 2
    assert spans[(("otelguard.convention", "genai"), ("otelguard.span.kind", "agent"))] == 1
    outcomes = metric_points(metric_reader, "otelguard.control.calls")
    assert outcomes == [({"otelguard.action": "remind", "outcome": "ok"}, 1)]


class _RaisingControl:
    def inject(self, message):
        raise RuntimeError("hook is broken")

    steer = inject

    def cancel(self, cause, verdict):
        raise RuntimeError("hook is broken")


def test_failure_counters_are_published_at_zero(guard_factory, metric_reader):
    """Internal errors, failed hook calls and evictions exist at 0 before anything went wrong."""
    guard_factory(REPEAT_ONLY)
    errors = metric_points(metric_reader, "otelguard.internal.errors", include_zero=True)
    assert ({"where": "on_end"}, 0) in errors
    evictions = metric_points(metric_reader, "otelguard.state.evictions", include_zero=True)
    assert ({"otelguard.state": "agent", "reason": "capacity"}, 0) in evictions


def test_raising_control_hook_is_contained_and_counted(guard_factory, metric_reader, span_exporter):
    """A hook that raises never reaches the agent; the failure is counted as an error outcome."""
    tracer, processor = guard_factory(REPEAT_ONLY, control=_RaisingControl())
    with _agent(tracer):
        tool_span(tracer)
        tool_span(tracer)
    processor.force_flush()
    outcomes = metric_points(metric_reader, "otelguard.control.calls")
    assert outcomes == [({"otelguard.action": "remind", "outcome": "error"}, 1)]
    errors = metric_points(metric_reader, "otelguard.internal.errors")
    assert errors == [({"where": "control_hook"}, 1)]
    assert len(span_exporter.get_finished_spans()) == 3


class _BlockingControl:
    def __init__(self):
        self.release = threading.Event()
        self.called = threading.Event()

    def inject(self, message):
        self.called.set()
        self.release.wait(10)

    steer = inject

    def cancel(self, cause, verdict):
        self.inject(None)


def test_blocking_control_hook_does_not_hold_the_span_thread(guard_factory, metric_reader):
    """A hook that blocks for seconds delays ending the span by the hook wait only, then runs on."""
    control = _BlockingControl()
    tracer, processor = guard_factory(REPEAT_ONLY, control=control)
    with _agent(tracer):
        tool_span(tracer)
        started = time.perf_counter()
        tool_span(tracer)
        elapsed = time.perf_counter() - started
    assert control.called.wait(5)
    control.release.set()
    assert processor.force_flush(5000)
    assert elapsed < 1.0, elapsed  # the hook blocks for 10 s; the span thread waited ~50 ms
    outcomes = {a["outcome"]: v for a, v in metric_points(metric_reader, "otelguard.control.calls")}
    assert outcomes["slow"] == 1 and outcomes["ok"] == 1


def test_agent_state_is_bounded_and_evictions_counted(guard_factory, metric_reader):
    """With room for two agents, a third evicts the least recently used, and the eviction is counted."""
    tracer, processor = guard_factory(REPEAT_ONLY, max_agents=2)
    for index in range(3):
        with _agent(tracer, name=f"agent-{index}", **{"gen_ai.agent.id": f"id-{index}"}):
            tool_span(tracer)
    assert processor.engine.tracked_agents == 2
    evictions = metric_points(metric_reader, "otelguard.state.evictions")
    assert ({"otelguard.state": "agent", "reason": "capacity"}, 1) in evictions


def test_state_of_a_run_without_identity_goes_with_the_run(guard_factory, metric_reader, span_exporter):
    """An agent run with no durable identity is keyed by its own span: its state serves the run (the
    repeat is seen inside it), then goes when the run ends, neither kept nor counted as an eviction.
    A durable agent's state stays for its next run."""
    tracer, processor = guard_factory(REPEAT_ONLY, max_agents=2)
    for index in range(5):
        with _agent(tracer, name=f"agent-{index}"):
            tool_span(tracer)
            tool_span(tracer)
            assert processor.engine.tracked_agents == 1  # while the run is open
    assert processor.engine.tracked_agents == 0
    assert metric_points(metric_reader, "otelguard.state.evictions") == []
    counts = [s.attributes.get("otelguard.repeat.count") for s in span_exporter.get_finished_spans()
              if s.name == "execute_tool probe"]
    assert counts == [None, 2] * 5
    with _agent(tracer, name="kept", **{"gen_ai.agent.id": "kept-1"}):
        tool_span(tracer)
    assert processor.engine.tracked_agents == 1


def test_agents_nested_in_a_run_without_identity_go_with_that_run(guard_factory, metric_reader):
    """A sub-agent keyed under such a run (the run's key plus its name: its repeated runs share one
    state) cannot be reached once the enclosing run ends either: its state goes then, not evicted."""
    tracer, processor = guard_factory(REPEAT_ONLY, max_agents=3)
    for _ in range(5):
        with _agent(tracer, name="graph"):
            for _ in range(2):  # the graph runs its `agent` node twice: one sub-agent, one state
                with _agent(tracer, name="agent"):
                    with _agent(tracer, name="planner"):  # nested deeper still
                        tool_span(tracer)
            assert processor.engine.tracked_agents == 3  # the run's own, `agent`'s and `planner`'s
    assert processor.engine.tracked_agents == 0
    assert metric_points(metric_reader, "otelguard.state.evictions") == []


def test_open_runs_without_identity_are_bounded_too(guard_factory, metric_reader, span_exporter):
    """Their states count against max_agents while the runs are open: a third open run evicts the
    oldest run's state (counted); that run goes on with a fresh state, and nothing is kept after."""
    tracer, processor = guard_factory(REPEAT_ONLY, max_agents=2)
    runs = [tracer.start_span(f"invoke_agent agent-{index}", attributes={
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"agent-{index}"}) for index in range(3)]
    assert processor.engine.tracked_agents == 2
    evictions = metric_points(metric_reader, "otelguard.state.evictions")
    assert ({"otelguard.state": "agent", "reason": "capacity"}, 1) in evictions
    for run in runs:
        with trace_api.use_span(run, end_on_exit=True):
            tool_span(tracer)
            tool_span(tracer)
    counts = [s.attributes.get("otelguard.repeat.count") for s in span_exporter.get_finished_spans()
              if s.name == "execute_tool probe"]
    assert counts == [None, 2] * 3  # the evicted run's repeat is still seen, on its fresh state
    assert processor.engine.tracked_agents == 0


def test_malformed_arguments_still_make_a_chain(guard_factory, span_exporter):
    """Arguments that are not JSON are compared verbatim rather than dropped."""
    tracer, _ = guard_factory(REPEAT_ONLY)
    with _agent(tracer):
        tool_span(tracer, arguments="{not json")
        tool_span(tracer, arguments="{not json")
    second = [s for s in span_exporter.get_finished_spans() if s.name == "execute_tool probe"][1]
    assert second.attributes["otelguard.repeat.count"] == 2


def test_thinking_loop_steer_reaches_control(guard_factory, mailbox, metric_reader):
    """Three long reasoning-only model calls make the guard steer, and their tokens count as loop tokens."""
    tracer, _ = guard_factory({"guards": [{"id": "thinking-loop-guard"}]})
    with _agent(tracer):
        for index in range(3):
            reasoning = " ".join(f"angle {index} thought {i} about the bug" for i in range(120))
            with tracer.start_as_current_span("chat model", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted",
                "gen_ai.output.messages": output_messages(reasoning=reasoning),
                "gen_ai.usage.output_tokens": 700,
            }):
                pass
    (message,) = mailbox.drain()
    assert message.rule == "reasoning-only"
    assert "several long reasoning-only calls with no output" in message.text
    tokens = metric_points(metric_reader, "otelguard.loop.tokens")
    assert tokens == [({"otelguard.guard": "thinking-loop-guard", "gen_ai.request.model": "scripted"}, 2100)]


def test_processor_survives_shutdown_and_force_flush(guard_factory):
    """shutdown stops the watchdog thread and returns promptly."""
    tracer, processor = guard_factory({"guards": [{"id": "timeout-policy"}]})

    @otelguard.budget(timeout_ms=10_000)
    def slow_enough():
        return "done"

    with _agent(tracer):
        assert slow_enough() == "done"
    started = time.perf_counter()
    processor.shutdown()
    assert time.perf_counter() - started < 5
    assert not any(t.name == "otelguard-watchdog" and t.is_alive() for t in threading.enumerate())


def test_json_arguments_with_other_spacing_are_one_key(guard_factory, span_exporter):
    """The same arguments as differently spaced JSON strings count as one repeated call."""
    tracer, _ = guard_factory(REPEAT_ONLY)
    with _agent(tracer):
        tool_span(tracer, arguments=json.dumps({"b": 1, "a": [1, 2]}))
        tool_span(tracer, arguments='{ "a" : [1,2],  "b":1 }')
    second = [s for s in span_exporter.get_finished_spans() if s.name == "execute_tool probe"][1]
    assert second.attributes["otelguard.repeat.count"] == 2


def test_spans_inside_a_model_span_belong_to_its_agent(guard_factory, metric_reader):
    """A model span joins its agent's run when it starts (the processor does that without building its
    view), so tool spans a framework nests inside it are that agent's steps, not the trace's."""
    tracer, _ = guard_factory(REPEAT_ONLY)
    with _agent(tracer, "weather"):
        with tracer.start_as_current_span("chat m", attributes={"gen_ai.operation.name": "chat"}):
            with tracer.start_as_current_span("POST", attributes={"http.request.method": "POST"}):
                for _ in range(2):
                    tool_span(tracer, "probe")
    (point,) = metric_points(metric_reader, "otelguard.verdicts")
    assert point[0]["gen_ai.agent.name"] == "weather" and point[0]["otelguard.rule"] == "repeat-threshold"


def test_agent_keys_name_the_run_the_enclosing_agent_or_the_durable_identity():
    """A run-scoped agent's key names its trace and run span; a nested agent's is its enclosing run's
    plus its name; a durable one is its identity."""
    engine = otelguard.GuardSpanProcessor().engine
    trace_id, run_id = 0xABC, 0x1234
    run = engine.start(SpanView("invoke_agent graph", trace_id, run_id, None, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "graph"})).agent
    nested = engine.start(SpanView("invoke_agent planner", trace_id, 0x99, run_id, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"})).agent
    durable = engine.start(SpanView("invoke_agent a", trace_id, 0x77, None, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.agent.id": "agent-7"})).agent
    assert run.key == f"span:{'0' * 29}abc:{'0' * 12}1234"
    assert nested.key == f"{run.key}/planner" and nested.scope_run_id == run_id
    assert durable.key == "id:agent-7" and durable.scope_run_id is None


def test_downstream_gets_every_start_with_its_parent_context_and_every_end():
    """A downstream is handed each span's start, with the context it started in, and each end."""
    from otel_support import Guarded, RecordingProcessor

    recording = RecordingProcessor()
    with Guarded(downstream=[recording]) as g:
        parent = trace_api.set_span_in_context(trace_api.NonRecordingSpan(trace_api.INVALID_SPAN_CONTEXT))
        with g.tracer.start_as_current_span("outer"):
            g.tracer.start_span("inner", context=parent).end()
        assert [(event, span.name, context) for event, span, context in recording.calls] == [
            ("start", "outer", None), ("start", "inner", parent), ("end", "inner", None), ("end", "outer", None)]


def test_a_downstream_gets_each_span_as_it_is_ending():
    """The SDK's `_on_ending` hook (a span ending, before its end is passed on) reaches a downstream
    that has one, for the application's spans and the guard's alike, before their ends."""
    from opentelemetry.sdk.trace import SpanProcessor
    from otel_support import Guarded

    calls: list[tuple[str, str]] = []

    class Ending(SpanProcessor):
        def _on_ending(self, span) -> None:
            calls.append(("ending", span.name))

        def on_end(self, span) -> None:
            calls.append(("end", span.name))

    with Guarded(downstream=[Ending()]) as g:
        with g.tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}):
            g.tracer.start_span("GET").end()
    assert calls == [("ending", "GET"), ("end", "GET"), ("ending", "invoke_agent a"), ("end", "invoke_agent a")]


# --- spans of any object showing the public ReadableSpan API (moved from test_sdk_adapter.py) ----------
def _recorded_repeat_loop() -> RecordingProcessor:
    recording = RecordingProcessor()
    provider = TracerProvider()
    provider.add_span_processor(recording)
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent",
                                                                    "gen_ai.agent.name": "a"}):
        for _ in range(3):
            with tracer.start_as_current_span("execute_tool f", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f",
                    "gen_ai.tool.call.arguments": '{"q": 1}'}):
                pass
    return recording


def _fed(recording: RecordingProcessor, wrap) -> tuple[list[tuple], list]:
    """The exported spans' verdicts, and the internal errors, of a guard fed the recorded spans."""
    with Guarded() as g:
        for event, span, _ in recording.calls:
            if event == "start":
                g.processor.on_start(wrap(span), None)
            else:
                g.processor.on_end(wrap(span))
        verdicts = [(span.name, span.attributes.get("otelguard.verdict"), span.attributes.get("otelguard.repeat.count"))
                    for span in g.exporter.get_finished_spans()]
        return verdicts, metric_points(g.metric_reader, "otelguard.internal.errors")


def test_the_processor_judges_spans_showing_only_public_properties_as_sdk_spans():
    recording = _recorded_repeat_loop()
    sdk, public = _fed(recording, lambda span: span), _fed(recording, PublicOnly)
    assert sdk == public
    assert [count for _, verdict, count in sdk[0] if verdict == "repeated_tool_call"] == [2, 3]
