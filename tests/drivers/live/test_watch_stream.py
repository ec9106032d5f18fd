"""`watch_stream` hands items through untouched and cuts exactly where the breaker trips.

Each item is judged as it passes (the same helper for sync and async streams); these tests pin
that the consumer sees exactly the deltas up to the tripping one, for text, for framework chunk
objects, for a mix, and for async streams.
"""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from openai.types.chat import ChatCompletionChunk
from otel_support import Guarded, metric_points, output_messages
from stream_support import ending_in_a_chant, reference_identical_trip, trip_at_finish_only

import otelguard
from otelguard import RepetitiveOutputError

PIECES = ["tick", " tick", "tick ", "\n", "", "tock", "x", "the plan is ", "to read the file. "]


def guard(limit: int) -> otelguard.GuardSpanProcessor:
    """A processor whose thinking-loop guard cuts at `limit` identical deltas (cycle rule off)."""
    config = {"guards": [{"id": "thinking-loop-guard",
                          "config": {"max_repeated_text": limit, "max_repeated_cycle_chars": 0}}]}
    return otelguard.GuardSpanProcessor(config)


def received_until_cut(stream, **kwargs) -> tuple[list, RepetitiveOutputError | None]:
    received: list = []
    try:
        received.extend(otelguard.watch_stream(stream, **kwargs))  # keeps what arrived before a raise
    except RepetitiveOutputError as error:
        return received, error
    return received, None


async def received_until_cut_async(stream, **kwargs) -> tuple[list, RepetitiveOutputError | None]:
    received = []
    try:
        async for item in otelguard.watch_stream(stream, **kwargs):
            received.append(item)
    except RepetitiveOutputError as error:
        return received, error
    return received, None


def chat_chunk(text: str) -> ChatCompletionChunk:
    return ChatCompletionChunk.model_validate({
        "id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}],
    })


@settings(max_examples=examples(150), deadline=None)
@given(limit=st.integers(2, 40), pieces=st.lists(st.sampled_from(PIECES), max_size=300))
def test_the_consumer_gets_exactly_the_deltas_up_to_the_trip(limit, pieces):
    """Every delta before the trip and the tripping one arrive, in order, then the error; none after."""
    expected = reference_identical_trip(pieces, limit)
    received, error = received_until_cut(iter(pieces), processor=guard(limit))
    if expected is None:
        assert (received, error) == (pieces, None)
    else:
        assert received == pieces[: expected + 1]
        assert error is not None and error.rule == "identical-chunks"
        assert error.chars == sum(map(len, pieces[: expected + 1]))


def test_framework_chunk_objects_are_judged_by_their_text():
    """OpenAI chat chunks pass through as the same objects; the chant in their deltas is cut."""
    chunks = [chat_chunk("Let me check. ")] + [chat_chunk("Checking again. ") for _ in range(20)]
    received, error = received_until_cut(iter(chunks), processor=guard(5))
    assert received == chunks[:6] and all(a is b for a, b in zip(received, chunks))
    assert error is not None and error.chars == len("Let me check. ") + 5 * len("Checking again. ")


def test_text_then_objects_switches_to_judging_item_by_item():
    """A stream that starts as text and goes on as chunk objects is still judged, and still cut."""
    items = ["Plan: ", "read the file. "] + [chat_chunk("again ") for _ in range(30)]
    received, error = received_until_cut(iter(items), processor=guard(4))
    assert error is not None and error.rule == "identical-chunks"
    # Cut on the 4th identical chunk, the text before it counted: every item was judged, none skipped.
    assert received[:2] == items[:2] and len(received) == 6
    assert all(item is items[index] for index, item in enumerate(received))
    assert error.chars == len("Plan: ") + len("read the file. ") + 4 * len("again ") == 45


def test_the_upstream_stream_is_closed_on_the_cut():
    """Cutting the stream closes the generator it came from (the model call stops producing)."""
    closed = []

    def chanting():
        try:
            while True:
                yield "tick"
        finally:
            closed.append(True)

    received, error = received_until_cut(chanting(), processor=guard(3))
    assert received == ["tick"] * 3 and error is not None
    assert closed == [True]


def test_a_consumer_may_stop_early():
    """Breaking out of the loop before any trip raises nothing and leaves the stream usable by gc."""
    stream = iter(["a ", "b ", "c "] * 100)
    for index, _ in enumerate(otelguard.watch_stream(stream, processor=guard(10))):
        if index == 5:
            break
    assert next(stream) == "a "  # the 7th item: nothing was read ahead of what the consumer took


def test_nothing_is_read_ahead_of_the_consumer():
    """Each delta is pulled from upstream only when the consumer asks for it (streaming latency)."""
    pulled = []

    def upstream():
        for index in range(200):
            pulled.append(index)
            yield f"word{index} "

    for index, _ in enumerate(otelguard.watch_stream(upstream(), processor=guard(60))):
        assert pulled[-1] == index


@settings(max_examples=examples(60), deadline=None)
@given(limit=st.integers(2, 30), pieces=st.lists(st.sampled_from(PIECES), max_size=200))
def test_async_streams_are_cut_on_the_same_delta(limit, pieces):
    expected = reference_identical_trip(pieces, limit)
    received, error = asyncio.run(received_until_cut_async(async_items(pieces), processor=guard(limit)))
    assert received == (pieces if expected is None else pieces[: expected + 1])
    assert (error is None) == (expected is None)


@pytest.mark.parametrize("size", [1, 4, 7])
def test_a_cycle_of_short_lines_is_cut_within_the_cadence(size):
    """The default guard cuts a chant of short lines by the cycle rule, before 400 characters."""
    text = "Emitting.\n好。\n发。\n好。\n好。\n" * 40
    deltas = [text[i : i + size] for i in range(0, len(text), size)]
    received, error = received_until_cut(iter(deltas), processor=otelguard.GuardSpanProcessor())
    assert error is not None and error.rule == "repeating-cycle"
    assert len("".join(received)) == error.chars < 400


# --- the end of the stream ----------------------------------------------------------------------
def test_the_chant_completes_after_the_last_evaluation():
    """The premise of the tests below: fed delta by delta, the breaker trips only at `finish`."""
    deltas = ending_in_a_chant()
    trip = trip_at_finish_only(deltas)
    assert trip is not None and trip.rule == "repeating-cycle" and trip.chars == sum(map(len, deltas))


async def async_items(items: list):
    for item in items:
        yield item


def take(mode: str, items: list, count: int | None = None) -> list:
    """Consume `items` through watch_stream (async with mode "async"); leave after `count` of them."""
    received: list = []

    async def consume_async() -> None:
        async for item in otelguard.watch_stream(async_items(items)):
            received.append(item)
            if len(received) == count:
                break

    if mode == "async":
        asyncio.run(consume_async())
        return received
    for item in otelguard.watch_stream(iter(items)):
        received.append(item)
        if len(received) == count:
            break
    return received


@pytest.mark.parametrize("mode", ["text", "chunk objects", "async"])
def test_a_repetition_completed_in_the_last_deltas_is_flagged_when_the_stream_runs_out(mode):
    """Nothing is left to cut: every delta reaches the consumer and nothing is raised, but the model
    span says the output repeated itself (action none), though it records no output of its own."""
    deltas = ending_in_a_chant()
    items = [chat_chunk(delta) for delta in deltas] if mode == "chunk objects" else deltas
    with Guarded() as g:
        with g.tracer.start_as_current_span(
            "chat scripted-model", attributes={"gen_ai.operation.name": "chat"}):
            received = take(mode, items)
        (span,) = g.exporter.get_finished_spans()
        assert received == items
        attributes = span.attributes or {}
        assert (attributes["otelguard.verdict"], attributes["otelguard.rule"], attributes["otelguard.action"]) \
            == ("repetitive_output", "repeating-cycle", "none")
        assert attributes["otelguard.stream.chars"] == sum(map(len, deltas))
        assert "otelguard.error.code" not in attributes
        verdicts = metric_points(g.metric_reader, "otelguard.verdicts")
        assert [(point["otelguard.rule"], point["otelguard.action"], value) for point, value in verdicts] \
            == [("repeating-cycle", "none", 1)]


@pytest.mark.parametrize("mode", ["text", "chunk objects", "async"])
def test_a_stream_the_consumer_leaves_early_is_not_judged_at_its_end(mode):
    """Only a stream that ran out is judged at its end: one left after the delta that completes the
    chant, but before the last, is not. (The text path judges a batch only when the consumer asks
    for the delta after it; the others have pushed every delta handed out, so judging them on
    leaving would flag this stream.)"""
    deltas = ending_in_a_chant()
    received = deltas[:-1]  # the chant is complete in these: judged at their end, they would trip
    assert trip_at_finish_only(received) is not None
    items = [chat_chunk(delta) for delta in deltas] if mode == "chunk objects" else deltas
    with Guarded() as g:
        with g.tracer.start_as_current_span(
            "chat scripted-model", attributes={"gen_ai.operation.name": "chat"}):
            take(mode, items, len(received))
        (span,) = g.exporter.get_finished_spans()
        assert "otelguard.verdict" not in (span.attributes or {})


def test_a_model_span_that_is_not_current_judges_its_own_output_once():
    """Client instrumentations start the model span without making it current and end it as their
    stream runs out: the span's own end judges its recorded output, and the watch (on the agent's
    span) adds no second verdict."""
    deltas = ending_in_a_chant()
    with Guarded() as g:
        with g.tracer.start_as_current_span(
                "invoke_agent writer", attributes={"gen_ai.operation.name": "invoke_agent",
                                                   "gen_ai.agent.name": "writer"}):
            model_span = g.tracer.start_span("chat scripted-model", attributes={"gen_ai.operation.name": "chat"})

            def instrumented_stream():
                yield from deltas
                model_span.set_attribute("gen_ai.output.messages", output_messages(text="".join(deltas)))
                model_span.end()

            assert list(otelguard.watch_stream(instrumented_stream())) == deltas
        spans = {span.name: span for span in g.exporter.get_finished_spans()}
        assert spans["chat scripted-model"].attributes["otelguard.rule"] == "repeating-cycle"
        assert "otelguard.verdict" not in spans["invoke_agent writer"].attributes
        verdicts = metric_points(g.metric_reader, "otelguard.verdicts")
        assert [value for _, value in verdicts] == [1]


def test_a_stream_verdict_is_shown_on_a_model_span_whose_recorded_output_is_too_short_to_read():
    """The guard skips reading model output too short for any rule, but not the verdict a watched
    stream left waiting for that span: the span shows it."""
    deltas = ending_in_a_chant()
    with Guarded() as g:
        with g.tracer.start_as_current_span("chat scripted-model",
                                            attributes={"gen_ai.operation.name": "chat"}) as model_span:
            assert take("text", deltas) == deltas
            model_span.set_attribute("gen_ai.output.messages", output_messages(text="short"))
        (span,) = g.exporter.get_finished_spans()
        assert (span.attributes["otelguard.rule"], span.attributes["otelguard.action"]) == ("repeating-cycle", "none")


def test_recorded_deltas_are_judged_on_a_model_span_whose_output_is_too_short_to_read():
    """Output too short for any rule is skipped unread only on a span without events: recorded
    deltas (`otelguard.chunk`) are still judged, and their repetition found."""
    with Guarded() as g:
        with g.tracer.start_as_current_span("chat scripted-model",
                                            attributes={"gen_ai.operation.name": "chat"}) as model_span:
            for _ in range(40):
                model_span.add_event("otelguard.chunk", {"otelguard.chunk.text": "same words again. "})
            model_span.set_attribute("gen_ai.output.messages", output_messages(text="ok"))
        (span,) = g.exporter.get_finished_spans()
        assert (span.attributes["otelguard.verdict"], span.attributes["otelguard.rule"]) \
            == ("repetitive_output", "repeating-cycle")
