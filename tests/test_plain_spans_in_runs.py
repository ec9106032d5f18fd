"""Spans of the application inside agent runs: their descendants find the run, at any depth.

A span that is none of ours directly under a tracked span (a tool's or a model call's HTTP request)
is not tracked when it starts: nothing needs it unless a span starts under it, and it is the most
common span of an agent process. A span starting under an untracked parent finds that parent in the
context it starts in and tracks it then; a span of the application starting under a tracked one is
tracked at once. These tests hold the lazy tracking to what tracking every span at its start gave:
the same agent for every span, and nothing left behind; and pin the shapes it cannot follow.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from otel_support import Guarded, metric_points, tool_span

import otelguard


def agent_attributes(name: str = "a") -> dict:
    return {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name}


def tool(name: str = "f") -> dict:
    return {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}


def span_id(span) -> int:
    return span.get_span_context().span_id


def test_a_span_directly_under_a_run_is_tracked_only_once_a_span_starts_under_it():
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("GET", attributes={"http.request.method": "GET"}) as http:
                assert engine.agent_of(span_id(http)) is None  # not tracked at its start
                assert g.processor.agent_of(http).run_span_id == span_id(agent)  # its parent's agent
                with tracer.start_as_current_span("execute_tool f", attributes=tool()) as called:
                    assert engine.agent_of(span_id(called)).run_span_id == span_id(agent)
                    assert engine.agent_of(span_id(http)).run_span_id == span_id(agent)  # tracked for its child
            assert set(engine.open_span_ids) == {span_id(agent)}  # ended: dropped
        assert not engine.open_span_ids
        with tracer.start_as_current_span("GET"):  # no agent run open: nothing noted
            with tracer.start_as_current_span("GET"):
                assert not engine.open_span_ids


def test_spans_at_any_depth_under_plain_spans_find_the_run():
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("plan"), tracer.start_as_current_span("step"), \
                    tracer.start_as_current_span("GET"):
                with tracer.start_as_current_span("execute_tool f", attributes=tool()) as called:
                    assert engine.agent_of(span_id(called)).run_span_id == span_id(agent)
                with tracer.start_as_current_span("invoke_agent b", attributes=agent_attributes("b")) as nested:
                    assert engine.agent_of(span_id(nested)).scope_run_id == span_id(agent)  # nested in a's run
            assert set(engine.open_span_ids) == {span_id(agent)}
        assert not engine.open_span_ids


def test_tool_calls_under_plain_spans_are_judged_as_their_runs_agents():
    """Behaviour, not bookkeeping: one trace, two runs one after the other, each calling the same
    tool under plain spans. The repeat guard compares a call with its own agent's calls only: the
    call in the second run is not a repeat of the first run's; the second run's second call is."""
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


def test_agents_beside_each_other_under_a_plain_span_are_not_nested():
    """Two runs started under the same span of the application (a request running two agents at
    once): the second is not taken into the first, and a tool beside them is in neither."""
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("POST /chat") as request:
            first = tracer.start_span("invoke_agent a", attributes=agent_attributes())
            second = tracer.start_span("invoke_agent b", attributes=agent_attributes("b"))
            assert engine.agent_of(span_id(second)).scope_run_id == span_id(second)  # its own run
            with tracer.start_as_current_span("GET"):
                with tracer.start_as_current_span("execute_tool f", attributes=tool()) as beside:
                    assert engine.agent_of(span_id(beside)) is None
            second.end()
            first.end()
        assert engine.agent_of(span_id(request)) is None and not engine.open_span_ids


def test_a_span_started_with_an_explicit_parent_context_finds_the_run():
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            http = tracer.start_span("GET")
            parent = trace.set_span_in_context(http)
        # Started after the run's span left the current context, under the HTTP span explicitly.
        called = tracer.start_span("execute_tool f", context=parent, attributes=tool())
        assert engine.agent_of(span_id(called)) is None  # the run has ended: nothing to find
        called.end()
        http.end()

        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            http = tracer.start_span("GET")
            parent = trace.set_span_in_context(http)
            with tracer.start_as_current_span("unrelated"):  # the current span is another one
                called = tracer.start_span("execute_tool f", context=parent, attributes=tool())
                assert engine.agent_of(span_id(called)).run_span_id == span_id(agent)
                called.end()
            http.end()
        assert not engine.open_span_ids


def test_spans_in_other_threads_and_tasks_find_the_run_through_their_copied_context():
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        found: dict[str, object] = {}

        def in_thread() -> None:
            with tracer.start_as_current_span("execute_tool threaded", attributes=tool("threaded")) as called:
                found["thread"] = engine.agent_of(span_id(called))

        async def in_task(name: str) -> None:
            with tracer.start_as_current_span("GET"):
                await asyncio.sleep(0)
                with tracer.start_as_current_span(f"execute_tool {name}", attributes=tool(name)) as called:
                    found[name] = engine.agent_of(span_id(called))

        async def tasks() -> None:
            await asyncio.gather(in_task("x"), in_task("y"))

        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("GET"):
                worker = threading.Thread(target=contextvars.copy_context().run, args=(in_thread,))
                worker.start()
                worker.join()
            asyncio.run(tasks())
        assert {name: ref.run_span_id for name, ref in found.items()} == dict.fromkeys(
            ("thread", "x", "y"), span_id(agent))
        assert not engine.open_span_ids


def test_a_span_of_the_application_under_an_ended_span_of_ours_is_taken_as_outside_the_run():
    """The shape the lazy tracking gives up: a tool's HTTP request outliving the tool, with a span
    starting under it after the tool ended. (Tracked from its start, the request kept the run.)"""
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with tracer.start_as_current_span("execute_tool f", attributes=tool()):
                request = tracer.start_span("GET")
            called = tracer.start_span("execute_tool g", context=trace.set_span_in_context(request),
                                       attributes=tool("g"))
            assert engine.agent_of(span_id(called)) is None
            called.end()
            request.end()
        assert not engine.open_span_ids


def test_a_parent_seen_only_as_a_propagated_span_context_is_taken_as_outside_any_run():
    """The one shape the lazy tracking cannot follow: a span started under an untracked span known
    only by its context (injected and extracted within the process). Its agent is then its trace's."""
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with tracer.start_as_current_span("GET") as http:
                remote = trace.set_span_in_context(trace.NonRecordingSpan(http.get_span_context()))
                called = tracer.start_span("execute_tool f", context=remote, attributes=tool())
                assert engine.agent_of(span_id(called)) is None
                called.end()
        assert not engine.open_span_ids


def test_a_span_started_under_an_ended_span_is_outside_the_run_and_leaves_nothing_behind():
    """A task outliving the span it started in: its spans start under an ended parent. They are
    taken as outside the run (as when every span was tracked from its start and dropped at its end),
    and nothing is tracked for the ended parent."""
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            with tracer.start_as_current_span("GET") as http:
                outlived = trace.set_span_in_context(http)
            called = tracer.start_span("execute_tool f", context=outlived, attributes=tool())
            assert engine.agent_of(span_id(called)) is None
            assert set(engine.open_span_ids) == {span_id(agent)}
            called.end()
        assert not engine.open_span_ids


def test_a_parent_ending_while_a_child_tracks_it_leaves_nothing_behind():
    """The parent ends on another thread between the child's test that it is open and its tracking
    (forced here by ending it at the moment it is tracked): its end found nothing to drop, so the
    child's start drops it. Left tracked, it would stay in the open spans for good, and every span
    of the application would pay the open-run test."""
    with Guarded(export=False) as g:
        tracer, processor = g.tracer, g.processor
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            plan = tracer.start_span("plan")
            track = processor._track

            def ended_meanwhile(tracked_id: int, agent_ref) -> None:
                if tracked_id == span_id(plan):
                    plan.end()
                track(tracked_id, agent_ref)

            processor._track = ended_meanwhile
            try:
                tracer.start_span("step", context=trace.set_span_in_context(plan)).end()
            finally:
                processor._track = track
            assert set(processor.engine.open_span_ids) == {span_id(agent)}
        assert not processor.engine.open_span_ids


def test_a_context_not_holding_the_parent_tracks_nothing():
    """`on_start` given a context whose span is not the new span's parent (only a caller outside the
    SDK can do that) does not take that span's run for the parent's."""
    with Guarded(export=False) as g:
        tracer, processor = g.tracer, g.processor
        outside = tracer.start_span("GET")  # no run around it
        child = tracer.start_span("step", context=trace.set_span_in_context(outside))
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with tracer.start_as_current_span("plan") as plan:
                processor.on_start(child, parent_context=trace.set_span_in_context(plan))
                assert processor.agent_of(child) is None
        child.end()
        outside.end()
        assert not processor.engine.open_span_ids


def test_leaves_are_never_tracked_and_tracked_application_spans_go_when_they_end():
    with Guarded(export=False) as g:
        tracer, processor = g.tracer, g.processor
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with tracer.start_as_current_span("GET"):  # leaves under tracked spans: never tracked
                pass
            with tracer.start_as_current_span("execute_tool f", attributes=tool()), tracer.start_as_current_span("GET"):
                assert not processor._tracked_app_ids
            with tracer.start_as_current_span("plan") as plan:
                assert not processor._tracked_app_ids
                with tracer.start_as_current_span("step") as step:  # starts under plan: plan is tracked,
                    assert set(processor._tracked_app_ids) == {span_id(plan), span_id(step)}  # step at once
                    with tracer.start_as_current_span("GET") as leaf:
                        assert set(processor._tracked_app_ids) == {span_id(plan), span_id(step), span_id(leaf)}
                assert set(processor._tracked_app_ids) == {span_id(plan)}
            assert not processor._tracked_app_ids
        assert not processor.engine.open_span_ids


def test_a_task_outliving_the_span_it_started_in_still_finds_the_run():
    """`step` starts under `plan`, which ends while `step` is still open (a task it started runs on):
    a tool under `step` still belongs to the run, as when every span was tracked from its start."""
    with Guarded(export=False) as g:
        tracer, engine = g.tracer, g.processor.engine
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()) as agent:
            plan = tracer.start_span("plan")
            step = tracer.start_span("step", context=trace.set_span_in_context(plan))
            plan.end()
            called = tracer.start_span("execute_tool f", context=trace.set_span_in_context(step), attributes=tool())
            assert engine.agent_of(span_id(called)).run_span_id == span_id(agent)
            called.end()
            step.end()
        assert not engine.open_span_ids and not g.processor._tracked_app_ids


def test_a_stream_cut_under_a_span_of_the_application_is_counted_for_the_run_agent():
    """`watch_stream` consumed while a span of the application is current (not tracked: it sits
    directly under the run) reports its verdict as that run's agent's."""
    config = {"guards": [{"id": "thinking-loop-guard", "config": {"max_repeated_text": 5}}]}
    with Guarded(config) as g:
        with g.tracer.start_as_current_span("invoke_agent writer", attributes=agent_attributes("writer")):
            with g.tracer.start_as_current_span("respond"):
                with pytest.raises(otelguard.RepetitiveOutputError):
                    for _ in otelguard.watch_stream(iter(["tick"] * 20)):
                        pass
        verdicts = metric_points(g.metric_reader, "otelguard.verdicts")
        assert [(labels.get("gen_ai.agent.name"), value) for labels, value in verdicts] == [("writer", 1)]


def test_a_span_of_another_provider_between_the_run_and_a_tool_is_not_tracked():
    """The guard sees no end of another provider's spans, so it tracks none (it would never drop it):
    a tool under such a span is outside the run, as when that span was never seen at all."""
    with Guarded(export=False) as g:
        other = TracerProvider().get_tracer("unguarded")
        with g.tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with other.start_as_current_span("GET"), g.tracer.start_as_current_span(
                    "execute_tool f", attributes=tool()) as called:
                assert g.processor.engine.agent_of(span_id(called)) is None
        assert not g.processor._tracked_app_ids and not g.processor.engine.open_span_ids


def test_a_span_of_ours_out_of_the_engines_bound_is_not_tracked_as_the_applications():
    """A tool span the engine no longer tracks (its bound evicted it; simulated here) is not taken
    for a span of the application when a span starts under it: the engine, not the processor,
    drops its spans, so it would be left in the processor's set."""
    with Guarded(export=False) as g:
        tracer, processor = g.tracer, g.processor
        with tracer.start_as_current_span("invoke_agent a", attributes=agent_attributes()):
            with tracer.start_as_current_span("execute_tool f", attributes=tool()) as called:
                processor.engine.open_span_ids.pop(span_id(called))
                with tracer.start_as_current_span("GET"), tracer.start_as_current_span("GET"):
                    assert not processor._tracked_app_ids
        assert not processor._tracked_app_ids and not processor.engine.open_span_ids
