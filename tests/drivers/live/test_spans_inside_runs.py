"""Spans of the application inside agent runs: every span at any depth below a run finds its agent.

Every span started inside an open agent run is noted under its parent's agent when it starts and
dropped when it ends, so a tool or model call below any number of the application's own spans (HTTP
requests, planning steps), in other threads or tasks, or started with an explicit parent, is judged as
its run's agent's; and nothing stays noted once the spans have ended.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from otel_support import Guarded, RecordingProcessor, metric_points, tool_span

import otelguard


def agent_attributes(name: str = "a") -> dict:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


def tool(name: str = "f") -> dict:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}


def span_id(span) -> int:
    return span.get_span_context().span_id


class Watched(Guarded):
    """A guarded provider that also records every span, to check none stays noted once all ended."""

    def __init__(self, *args, **kwargs):
        self.recorded = RecordingProcessor()
        super().__init__(*args, export=False, siblings=[self.recorded], **kwargs)

    def run_of(self, span):
        """The agent-run span id of `span`'s agent, or None outside any run."""
        agent = self.processor.agent_of(span)
        return None if agent is None else agent.run_span_id

    def assert_nothing_noted(self) -> None:
        spans = [span for event, span, _ in self.recorded.calls if event == "start"]
        assert spans and all(self.processor.agent_of(span) is None for span in spans)


def test_a_plain_span_under_a_run_belongs_to_the_run_while_it_is_open():
    """An HTTP span directly under a run is the run's from its start, and a tool below it too."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("GET", attributes={"http.request.method": "GET"}) as http:
                assert g.run_of(http) == span_id(agent)
                with tracer.start_as_current_span("execute_tool f", attributes=tool()) as called:
                    assert g.run_of(called) == span_id(agent)
            assert g.run_of(http) is None  # ended: no longer noted
        g.assert_nothing_noted()


def test_spans_outside_any_run_belong_to_no_run():
    with Watched() as g:
        with g.tracer.start_as_current_span("GET") as outer, g.tracer.start_as_current_span("GET") as inner:
            with g.tracer.start_as_current_span("execute_tool f", attributes=tool()) as called:
                assert g.run_of(outer) is None and g.run_of(inner) is None and g.run_of(called) is None
        g.assert_nothing_noted()


def test_spans_at_any_depth_under_plain_spans_find_the_run():
    """A tool three plain spans deep is the run's; an agent run that deep is nested in it."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("plan"), tracer.start_as_current_span("step"), \
                    tracer.start_as_current_span("GET"):
                with tracer.start_as_current_span("execute_tool f", attributes=tool()) as called:
                    assert g.run_of(called) == span_id(agent)
                with tracer.start_as_current_span("invoke_agent b", attributes=agent_attributes("b")) as nested:
                    assert g.processor.agent_of(nested).scope_run_id == span_id(agent)  # ends with a's run
                    with tracer.start_as_current_span("GET"), tracer.start_as_current_span(
                            "execute_tool g", attributes=tool("g")) as nested_call:
                        assert g.run_of(nested_call) == span_id(nested)
        g.assert_nothing_noted()


def test_tool_calls_under_plain_spans_are_judged_as_their_runs_agents():
    """One trace, two runs one after the other, each calling the same tool under plain spans: the repeat
    guard compares a call with its own agent's calls only."""
    with Guarded() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("POST /chat"):
            for agent, calls in (("a", 1), ("b", 2)):
                with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=agent_attributes(agent)):
                    for step in range(calls):
                        with tracer.start_as_current_span(f"step {step}"), tracer.start_as_current_span("GET"):
                            tool_span(tracer, "search", '{"q": "same"}')
        verdicts = [s.attributes.get("otelguard.verdict") for s in g.exporter.get_finished_spans()
                    if s.name == "execute_tool search"]
        assert verdicts == [None, None, "repeated_tool_call"]


def test_runs_beside_each_other_under_a_plain_span_are_not_nested():
    """Two runs started under the same request span: the second is not taken into the first, and a
    tool beside them is in neither."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("POST /chat") as request:
            first = tracer.start_span("invoke_agent a", attributes=agent_attributes())
            second = tracer.start_span("invoke_agent b", attributes=agent_attributes("b"))
            assert g.processor.agent_of(second).scope_run_id == span_id(second)  # its own run
            with tracer.start_as_current_span("GET"):
                with tracer.start_as_current_span("execute_tool f", attributes=tool()) as beside:
                    assert g.run_of(beside) is None
            second.end()
            first.end()
            assert g.run_of(request) is None
        g.assert_nothing_noted()


def test_a_span_started_with_an_explicit_parent_context_finds_the_run():
    """A tool started under the run's HTTP span explicitly, while another span is current, is the run's."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            http = tracer.start_span("GET")
            parent = trace.set_span_in_context(http)
            with tracer.start_as_current_span("unrelated"):
                called = tracer.start_span("execute_tool f", context=parent, attributes=tool())
                assert g.run_of(called) == span_id(agent)
                called.end()
            http.end()
        g.assert_nothing_noted()


def test_a_parent_known_only_by_its_propagated_context_still_leads_to_the_run():
    """A span started under a context injected and extracted within the process (a NonRecordingSpan
    holding the HTTP span's ids) finds the run through the HTTP span, noted at its start."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("GET") as http:
                remote = trace.set_span_in_context(trace.NonRecordingSpan(http.get_span_context()))
                called = tracer.start_span("execute_tool f", context=remote, attributes=tool())
                assert g.run_of(called) == span_id(agent)
                called.end()
        g.assert_nothing_noted()


def test_spans_in_other_threads_and_tasks_find_the_run_through_their_copied_context():
    with Watched() as g:
        tracer = g.tracer
        found: dict[str, object] = {}

        def in_thread() -> None:
            with tracer.start_as_current_span("execute_tool threaded", attributes=tool("threaded")) as called:
                found["thread"] = g.run_of(called)

        async def in_task(name: str) -> None:
            with tracer.start_as_current_span("GET"):
                await asyncio.sleep(0)
                with tracer.start_as_current_span(f"execute_tool {name}", attributes=tool(name)) as called:
                    found[name] = g.run_of(called)

        async def tasks() -> None:
            await asyncio.gather(in_task("x"), in_task("y"))

        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("GET"):
                worker = threading.Thread(target=contextvars.copy_context().run, args=(in_thread,))
                worker.start()
                worker.join()
            asyncio.run(tasks())
        assert found == dict.fromkeys(("thread", "x", "y"), span_id(agent))
        g.assert_nothing_noted()


def test_a_request_outliving_the_tool_that_made_it_still_leads_to_the_run():
    """A tool's HTTP request still open after the tool ended: a span started under it is the run's."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("execute_tool f", attributes=tool()):
                request = tracer.start_span("GET")
            called = tracer.start_span("execute_tool g", context=trace.set_span_in_context(request),
                                       attributes=tool("g"))
            assert g.run_of(called) == span_id(agent)
            called.end()
            request.end()
        g.assert_nothing_noted()


def test_a_task_outliving_the_span_it_started_in_still_finds_the_run():
    """`step` starts under `plan`, which ends while `step` is still open: a tool under `step` is the run's."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            plan = tracer.start_span("plan")
            step = tracer.start_span("step", context=trace.set_span_in_context(plan))
            plan.end()
            called = tracer.start_span("execute_tool f", context=trace.set_span_in_context(step), attributes=tool())
            assert g.run_of(called) == span_id(agent)
            called.end()
            step.end()
        g.assert_nothing_noted()


def test_a_span_started_under_an_ended_span_is_outside_the_run():
    """A span whose parent already ended cannot be traced to the run (its parent is no longer noted)."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with tracer.start_as_current_span("GET") as http:
                outlived = trace.set_span_in_context(http)
            called = tracer.start_span("execute_tool f", context=outlived, attributes=tool())
            assert g.run_of(called) is None
            called.end()
        g.assert_nothing_noted()


def test_a_context_not_holding_the_parent_is_not_taken_for_it():
    """`on_start` handed a context whose span is not the new span's parent (only a caller outside the
    SDK can do that): the span's own parent decides, and it is outside any run."""
    with Watched() as g:
        tracer, processor = g.tracer, g.processor
        outside = tracer.start_span("GET")
        child = tracer.start_span("step", context=trace.set_span_in_context(outside))
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with tracer.start_as_current_span("plan") as plan:
                processor.on_start(child, parent_context=trace.set_span_in_context(plan))
                assert processor.agent_of(child) is None
        child.end()
        outside.end()
        g.assert_nothing_noted()


def test_a_span_of_another_provider_between_the_run_and_a_tool_cuts_the_tool_off():
    """The guard sees nothing of another provider's spans: a tool under one is outside the run."""
    with Watched() as g:
        other = TracerProvider().get_tracer("unguarded")
        with g.tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with other.start_as_current_span("GET"), g.tracer.start_as_current_span(
                    "execute_tool f", attributes=tool()) as called:
                assert g.run_of(called) is None
        g.assert_nothing_noted()


def test_a_stream_cut_under_a_span_of_the_application_is_counted_for_the_run_agent():
    """`watch_stream` consumed while a plain span under the run is current reports as the run's agent."""
    config = {"guards": [{"id": "thinking-loop-guard", "config": {"max_repeated_text": 5}}]}
    with Guarded(config) as g:
        with g.tracer.start_as_current_span("invoke_agent writer", attributes=agent_attributes("writer")):
            with g.tracer.start_as_current_span("respond"):
                with pytest.raises(otelguard.RepetitiveOutputError):
                    for _ in otelguard.watch_stream(iter(["tick"] * 20)):
                        pass
        verdicts = metric_points(g.metric_reader, "otelguard.verdicts")
        assert [(labels.get("gen_ai.agent.name"), value) for labels, value in verdicts] == [("writer", 1)]


def test_no_state_is_made_for_a_run_scoped_agent_after_its_run_ended():
    """A run with no durable identity keeps its state only while open: a tool under a span of the run
    that outlived it makes no state that stays after every span ended."""
    with Watched() as g:
        tracer = g.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            http = tracer.start_span("GET")
        called = tracer.start_span("execute_tool f", context=trace.set_span_in_context(http), attributes={
            **tool(), "gen_ai.tool.call.arguments": "{}"})
        called.end()
        http.end()
        assert g.processor.engine.tracked_agents == 0
