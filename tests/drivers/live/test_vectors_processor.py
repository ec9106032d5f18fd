"""Conformance vectors through the live processor: real SDK spans with GenAI semconv attributes.

Covers repeat-tool reminder 8 and 9, the tool-timeout vectors (including the caller cancelling first)
and the `watch_stream` identical-chunks vector; the last section holds the same contracts with other
guarded providers alive, or with no tool span around a budgeted call. Control hooks run on
otelguard's workers, so every test flushes the provider (which waits for them) before reading a Mailbox.
"""

from __future__ import annotations

import asyncio
import threading
import time
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator

import pytest
from opentelemetry import trace as trace_api
from opentelemetry.sdk.trace import ReadableSpan

import otelguard
from otelguard import GuardMessage, Mailbox, RepetitiveOutputError
from otelguard.live.processor import active_processors

import otel_support
from vectors_support import SHORT_REMINDER, break_correction, timeout_error

PROBE_ARGS = '{"q": "same"}'
REPEAT_ONLY = {"guards": [{"id": "repeat-tool-reminder"}]}
TIMEOUT_ONLY = {"guards": [{"id": "timeout-policy"}]}
REPEATED_DELTA = "The `register` API matches. "
STREAM = ["block-start"] + [REPEATED_DELTA] * 50


class KindMailbox(Mailbox):
    """A Mailbox that also remembers which control method delivered each message."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[tuple[str, GuardMessage]] = []

    def inject(self, message: GuardMessage) -> None:
        self.kinds.append(("inject", message))
        super().inject(message)

    def steer(self, message: GuardMessage) -> None:
        self.kinds.append(("steer", message))
        super().steer(message)


class Guarded(otel_support.Guarded):
    """A guarded provider exporting to memory (otel_support.Guarded), with its control and span helpers."""

    def __init__(self, config: Any, control: Mailbox):
        super().__init__(config, control=control)
        self.control = control

    def spans(self, name: str) -> list[ReadableSpan]:
        """Exported spans with this name, in end order."""
        return [span for span in self.exporter.get_finished_spans() if span.name == name]

    def settle(self) -> None:
        """Wait until every control-hook call has finished."""
        assert self.provider.force_flush(5000)

    @contextmanager
    def agent_run(self, name: str, **attributes: Any) -> Iterator[trace_api.Span]:
        with self.tracer.start_as_current_span(
            f"invoke_agent {name}",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": name, **attributes},
        ) as span:
            yield span

    @contextmanager
    def tool_span(self, tool: str, args: str = "{}") -> Iterator[trace_api.Span]:
        with self.tracer.start_as_current_span(
            f"execute_tool {tool}",
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool,
                        "gen_ai.tool.call.arguments": args},
        ) as span:
            yield span

    @contextmanager
    def chat_span(self) -> Iterator[trace_api.Span]:
        with self.tracer.start_as_current_span(
            "chat scripted-model",
            attributes={"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted-model"},
        ) as span:
            yield span

    def probe(self, parent: trace_api.Span) -> int:
        """One probe{q:'same'} call under `parent`, started and ended at once; returns its span id."""
        span = self.tracer.start_span(
            "execute_tool probe", context=trace_api.set_span_in_context(parent),
            attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe",
                        "gen_ai.tool.call.arguments": PROBE_ARGS},
        )
        span.set_attribute("gen_ai.tool.call.result", "nothing new")
        span.end()
        return span.get_span_context().span_id


def _otelguard_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate()
            if t.name.startswith(("otelguard-watchdog", "otelguard-control-")) and not t.name.endswith("flush")}


@pytest.fixture
def guarded() -> Iterator[Callable[..., Guarded]]:
    """Builds guarded providers; shuts each down afterwards and checks that its threads stopped."""
    before = _otelguard_threads()
    with ExitStack() as built:
        def build(config: Any = None, control: Mailbox | None = None) -> Guarded:
            return built.enter_context(Guarded(config, control if control is not None else Mailbox()))

        yield build
    assert _otelguard_threads() - before == set()


def otelguard_attributes(span: ReadableSpan) -> dict[str, Any]:
    return {k: v for k, v in (span.attributes or {}).items() if k.startswith("otelguard.")
            and k != "otelguard.tool.timeout_ms"}


# --- repeat-tool reminder 8: a sub-agent has its own chain ----------------------------------------
def run_interleaved_sub_agents(g: Guarded) -> dict[str, list[int]]:
    """A probes twice and sub-agent B three times, interleaved in one trace; span ids by agent."""
    ids: dict[str, list[int]] = {"A": [], "B": []}
    with g.agent_run("A") as a:
        with g.tool_span("ask_b"):
            with g.agent_run("B") as b:
                for who, parent in [("A", a), ("B", b), ("A", a), ("B", b), ("B", b)]:
                    ids[who].append(g.probe(parent))
    return ids


def test_v8_sub_agent_reminded_and_parent_not(guarded):
    """Interleaved in one trace: A's probes carry no reminder, B's third probe carries the one reminder."""
    g = guarded(REPEAT_ONLY)
    ids = run_interleaved_sub_agents(g)
    reminded = {span.context.span_id for span in g.spans("execute_tool probe")
                if (span.attributes or {}).get("otelguard.action") == "remind"}
    assert reminded == {ids["B"][2]}


def test_v8_sub_agent_reminder_reaches_the_mailbox_once(guarded):
    """The interleaved run delivers exactly one message: the short reminder, from repeat-tool-reminder."""
    g = guarded(REPEAT_ONLY)
    run_interleaved_sub_agents(g)
    g.settle()
    (message,) = g.control.drain()
    assert message.text == SHORT_REMINDER
    assert message.source == {"kind": "plugin", "plugin": "repeat-tool-reminder"}


def test_v9_new_user_prompt_resets_the_chain(guarded):
    """One agent (same conversation) probes twice, gets a new prompt, probes once: no reminder."""
    g = guarded(REPEAT_ONLY)
    for probes in (2, 1):
        with g.agent_run("A", **{"gen_ai.conversation.id": "conv-1"}) as run:
            for _ in range(probes):
                g.probe(run)
    g.settle()
    assert g.control.drain() == []
    assert all((s.attributes or {}).get("otelguard.action") != "remind" for s in g.spans("execute_tool probe"))


def test_v9_control_same_conversation_reminds_within_one_run(guarded):
    """The same agent probing three times in one run is reminded once (so the reset is what silences v9)."""
    g = guarded(REPEAT_ONLY)
    with g.agent_run("A", **{"gen_ai.conversation.id": "conv-2"}) as run:
        for _ in range(3):
            g.probe(run)
    g.settle()
    assert [m.text for m in g.control.drain()] == [SHORT_REMINDER]


# --- tool timeout ----------------------------------------------------------------------------------
def call_in_tool_span(g: Guarded, tool: Callable[[], Any]) -> tuple[Any, float, ReadableSpan]:
    """Call `tool` inside an execute_tool span; returns its result, seconds taken and the exported span."""
    with g.tool_span("probe", PROBE_ARGS):
        started = time.monotonic()
        result = tool()
        elapsed = time.monotonic() - started
    (span,) = g.spans("execute_tool probe")
    return result, elapsed, span


def test_tool_without_budget_has_an_inert_signal(guarded):
    """A tool without a budget sees a signal that is not aborted, has no reason and never raises."""
    g = guarded(TIMEOUT_ONLY)
    seen = {}

    def plain_tool() -> str:
        signal = otelguard.tool_signal()
        seen.update(aborted=signal.aborted, reason=signal.reason, waited=signal.wait(0))
        signal.raise_if_aborted()
        return "plain result"

    call_in_tool_span(g, plain_tool)
    assert seen == {"aborted": False, "reason": None, "waited": False}


def test_tool_without_budget_is_untouched(guarded):
    """A tool without a budget returns its own result and its span carries no verdict."""
    g = guarded(TIMEOUT_ONLY)
    result, _, span = call_in_tool_span(g, lambda: "plain result")
    assert result == "plain result"
    assert otelguard_attributes(span) == {}


def test_fast_tool_within_budget_is_untouched(guarded):
    """A fast tool with a 10 s budget returns its own result and its span carries no verdict."""
    g = guarded(TIMEOUT_ONLY)

    @otelguard.budget(timeout_ms=10_000)
    def fast_tool() -> str:
        return "fast result"

    result, _, span = call_in_tool_span(g, fast_tool)
    assert result == "fast result"
    assert otelguard_attributes(span) == {}


@otelguard.budget(timeout_ms=100)
def cooperative_tool() -> str:
    """Waits on its signal (up to 10 s), as a cooperative tool forwards it."""
    otelguard.tool_signal().wait(10)
    return "late result"


def test_cooperative_tool_is_aborted_near_its_budget(guarded):
    """A cooperative tool with a 100 ms budget is released at about 100 ms, not at its own 10 s."""
    g = guarded(TIMEOUT_ONLY)
    _, elapsed, _ = call_in_tool_span(g, cooperative_tool)
    assert 0.09 <= elapsed < 2.0


def test_timed_out_tool_result_is_the_structured_error(guarded):
    """The timed-out tool's result is replaced by the structured TOOL_TIMEOUT error naming 100ms."""
    g = guarded(TIMEOUT_ONLY)
    result, _, _ = call_in_tool_span(g, cooperative_tool)
    assert result == timeout_error(100)


def test_timed_out_tool_span_carries_the_tool_timeout_verdict(guarded):
    """The timed-out tool's exported span carries verdict tool_timeout, rule tool-timeout."""
    g = guarded(TIMEOUT_ONLY)
    _, _, span = call_in_tool_span(g, cooperative_tool)
    attributes = otelguard_attributes(span)
    assert (attributes.get("otelguard.verdict"), attributes.get("otelguard.rule")) == ("tool_timeout", "tool-timeout")
    assert attributes.get("otelguard.guard") == "timeout-policy"


@pytest.mark.parametrize("raise_on_abort", ["own-error", "raise_if_aborted"])
def test_tool_raising_on_abort_still_gets_the_structured_error(guarded, raise_on_abort):
    """A tool that raises once aborted still returns the structured TOOL_TIMEOUT error to its caller."""
    g = guarded(TIMEOUT_ONLY)

    @otelguard.budget(timeout_ms=100)
    def raising_tool() -> str:
        signal = otelguard.tool_signal()
        signal.wait(10)
        if raise_on_abort == "own-error":
            raise RuntimeError("the tool gave up: " + str(signal.reason))
        signal.raise_if_aborted()
        return "not reached"

    result, _, span = call_in_tool_span(g, raising_tool)
    assert result == timeout_error(100)
    assert otelguard_attributes(span).get("otelguard.rule") == "tool-timeout"


def test_caller_cancellation_stands_and_is_no_timeout(guarded):
    """A caller cancelling a budgeted tool before its deadline gets its CancelledError, and no timeout verdict."""
    g = guarded(TIMEOUT_ONLY)

    async def scenario() -> None:
        waiting = asyncio.Event()

        @otelguard.budget(timeout_ms=1_000)
        async def slow_async_tool() -> str:
            waiting.set()
            await otelguard.tool_signal()
            return "late result"

        async def caller() -> str:
            with g.tool_span("probe", PROBE_ARGS):
                return await slow_async_tool()

        task = asyncio.create_task(caller())
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(scenario())
    assert time.monotonic() - started < 1.0, "the caller cancelled before the 1 s budget"
    (span,) = g.spans("execute_tool probe")
    assert otelguard_attributes(span).get("otelguard.verdict") != "tool_timeout"


# --- watch_stream: identical chunks ----------------------------------------------------------------
def stream_config(**overrides: Any) -> dict:
    return {"guards": [{"id": "thinking-loop-guard", "config": {"max_repeated_text": 4, **overrides}}]}


def consume_watched_stream(g: Guarded, bound: Mailbox) -> tuple[list[str], RepetitiveOutputError]:
    """Consume STREAM through watch_stream in a chat span of an agent run bound to `bound`."""
    received: list[str] = []
    with otelguard.bind_control(bound):
        with g.agent_run("writer"):
            with pytest.raises(RepetitiveOutputError) as caught:
                with g.chat_span():
                    for delta in otelguard.watch_stream(iter(STREAM)):
                        received.append(delta)
    g.settle()
    return received, caught.value


def test_watch_stream_delivers_exactly_the_tripping_run_then_raises(guarded):
    """With max_repeated_text 4, the consumer gets 'block-start' and exactly 4 repeated deltas, then the error."""
    g = guarded(stream_config())
    received, error = consume_watched_stream(g, Mailbox())
    assert received == ["block-start"] + [REPEATED_DELTA] * 4
    assert error.code == "REPETITIVE_OUTPUT"
    assert error.rule == "identical-chunks"


def test_watch_stream_trip_steers_once_through_the_bound_mailbox(guarded):
    """The trip sends one steer, through the bound Mailbox, naming the characters emitted."""
    g = guarded(stream_config(), control=KindMailbox())
    bound = KindMailbox()
    _, error = consume_watched_stream(g, bound)
    emitted = len("block-start") + 4 * len(REPEATED_DELTA)
    assert error.chars == emitted
    assert [(kind, m.text) for kind, m in bound.kinds] == [("steer", break_correction(emitted))]
    assert g.control.kinds == []


def test_watch_stream_without_break_correction_sends_no_steer(guarded):
    """With break_correction false, the stream is still cut but nothing is sent to the agent."""
    g = guarded(stream_config(break_correction=False))
    bound = Mailbox()
    received, _ = consume_watched_stream(g, bound)
    assert received == ["block-start"] + [REPEATED_DELTA] * 4
    assert bound.drain() == [] and g.control.drain() == []


def test_watch_stream_trip_marks_the_model_span(guarded):
    """The cut model span is exported with verdict repetitive_output, rule identical-chunks, action break."""
    g = guarded(stream_config())
    consume_watched_stream(g, Mailbox())
    (span,) = g.spans("chat scripted-model")
    attributes = otelguard_attributes(span)
    assert attributes["otelguard.verdict"] == "repetitive_output"
    assert attributes["otelguard.rule"] == "identical-chunks"
    assert attributes["otelguard.action"] == "break"
    assert attributes["otelguard.error.code"] == "REPETITIVE_OUTPUT"


# --- beyond the vectors: the same contracts with other guarded providers alive or no tool span -------
def between_other_processors(build: Callable[..., Guarded], config: Any) -> Guarded:
    """A guarded provider registered after one other guarded provider and before another."""
    build(config)
    g = build(config)
    build(config)
    order = active_processors()
    assert order[0] is not g.processor and order[-1] is not g.processor
    return g


def test_budget_verdict_lands_on_its_own_provider_among_several(guarded):
    """With other guarded providers alive, a timed-out tool's span still carries the tool-timeout verdict."""
    g = between_other_processors(guarded, TIMEOUT_ONLY)
    result, _, span = call_in_tool_span(g, cooperative_tool)
    assert result == timeout_error(100)
    assert otelguard_attributes(span).get("otelguard.rule") == "tool-timeout"


def test_watch_stream_trip_lands_on_its_own_provider_among_several(guarded):
    """With other guarded providers alive, the cut model span still carries the repetitive_output verdict."""
    g = between_other_processors(guarded, stream_config())
    consume_watched_stream(g, Mailbox())
    (span,) = g.spans("chat scripted-model")
    assert otelguard_attributes(span).get("otelguard.verdict") == "repetitive_output"


def test_budgeted_calls_outside_a_tool_span_do_not_share_a_signal(guarded):
    """Called with no tool span around it, a fast budgeted tool after a timed-out one returns its own result."""
    guarded(TIMEOUT_ONLY)

    @otelguard.budget(timeout_ms=100)
    def fast_tool() -> str:
        return "fast result"

    assert cooperative_tool() == timeout_error(100)
    assert fast_tool() == "fast result"
