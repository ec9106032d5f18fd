"""What the guard reads of one span is bounded (`conventions.READ_LIMITS`), so that judging a span on the
agent's thread takes bounded time whatever it carries; what it leaves unread, it says.

- model output or tool arguments longer than the decoding limits are not decoded: `Content.OVERSIZED`,
  and the call's output counts as unknown (never as "no output");
- reasoning and text longer than the judging limit are judged by their last characters, the rest counted;
- the analyzer says both in its coverage block, so live and offline agree and nothing goes unsaid.
"""

from __future__ import annotations

import json
import random
import time

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from otel_support import Guarded, metric_points, output_messages
from live_export_support import OtlpJsonLinesExporter, analyzer_verdicts, export_one_run, live_verdicts
from vectors_support import R

import otelguard
from otelguard.model import semconv as sc
from otelguard.cli import main
from otelguard.conventions import READ_LIMITS, read
from otelguard.model.records import Classification, Content, SpanEvent, SpanKind, SpanView

GENAI_MODEL = Classification(SpanKind.MODEL, "genai")
GENAI_TOOL = Classification(SpanKind.TOOL, "genai")
OLLM_MODEL = Classification(SpanKind.MODEL, "openllmetry")
CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted"}


def model_span(attributes: dict) -> SpanView:
    return SpanView("chat m", 1, 2, None, attributes)


def test_reasoning_longer_than_the_judging_limit_is_judged_by_its_end():
    judged = READ_LIMITS.judged_chars
    reasoning = "a" * judged + "the end of the reasoning " * 10
    call = read(model_span({sc.GEN_AI_OUTPUT_MESSAGES: output_messages(reasoning=reasoning)}), GENAI_MODEL)
    assert call.reasoning == reasoning[-judged:]
    assert call.unjudged_chars == len(reasoning) - judged
    assert call.output_content is Content.OK
    assert call.has_output is False  # read whole: a reasoning-only call is known to be one


def test_output_longer_than_the_decoding_limit_is_not_read_and_counts_as_unknown():
    huge = output_messages(reasoning="x" * READ_LIMITS.json_chars, text="a visible answer")
    call = read(model_span({sc.GEN_AI_OUTPUT_MESSAGES: huge}), GENAI_MODEL)
    assert call.output_content is Content.OVERSIZED
    assert (call.reasoning, call.text, call.has_output) == ("", "", None)


def test_a_python_repr_longer_than_the_scanning_limit_is_not_read():
    body = "thinking. " * (READ_LIMITS.scanned_chars // 10 + 1)
    attributes = {**CHAT, "traceloop.span.kind": "llm", "gen_ai.completion.0.content": "ok",
                  "gen_ai.completion.0.reasoning": f"[Content(text={body!r}, type='reasoning_text')]"}
    call = read(model_span(attributes), OLLM_MODEL)
    assert call.output_content is Content.OVERSIZED and call.reasoning == ""
    short = {**attributes, "gen_ai.completion.0.reasoning": "[Content(text='short', type='reasoning_text')]"}
    assert read(model_span(short), OLLM_MODEL).reasoning == "short"


def test_tool_arguments_longer_than_the_decoding_limit_keep_an_identity():
    def arguments(query: str) -> str:
        return read(SpanView("execute_tool search", 1, 3, None, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search",
            "gen_ai.tool.call.arguments": json.dumps({"q": query})}), GENAI_TOOL)

    size = READ_LIMITS.json_chars
    first, again, other = arguments("a" * size), arguments("a" * size), arguments("a" * (size + 1))
    assert first.arguments_content is Content.OVERSIZED
    assert first.arguments == again.arguments != other.arguments
    assert len(first.arguments) < 2_000


def test_live_a_reasoning_only_loop_of_long_calls_is_still_caught_and_huge_output_never_counts_as_one():
    with Guarded() as guarded:
        tracer = guarded.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
            for _ in range(4):  # past every limit: not read, so not "reasoning only"
                with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
                    span.set_attribute("gen_ai.output.messages",
                                       output_messages(reasoning="y" * READ_LIMITS.json_chars, text="done"))
            for seed in ("one", "two", "three"):  # longer than the judging limit, reasoning only
                with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
                    span.set_attribute("gen_ai.output.messages",
                                       output_messages(reasoning=R(seed, 2 * READ_LIMITS.judged_chars)))
        verdicts = metric_points(guarded.metric_reader, "otelguard.verdicts")
    # stalled 1 and 2 (no action), then the steer at 3: the oversized calls counted as no stall at all
    assert {(labels["otelguard.rule"], labels["otelguard.action"]): count for labels, count in verdicts} == {
        ("reasoning-only", "none"): 2, ("reasoning-only", "steer"): 1}


def test_the_analyzer_says_what_it_did_not_read(tmp_path, capsys):
    path = tmp_path / "spans.jsonl"
    with Guarded(downstream=[SimpleSpanProcessor(OtlpJsonLinesExporter(path))]) as guarded:
        tracer = guarded.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
            with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
                span.set_attribute("gen_ai.output.messages", output_messages(text="z" * READ_LIMITS.json_chars))
            with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
                span.set_attribute("gen_ai.output.messages",
                                   output_messages(reasoning=R("long", 2 * READ_LIMITS.judged_chars), text="ok"))
    main(["analyze", "--json", str(path)])
    coverage = json.loads(capsys.readouterr().out)["coverage"]
    assert (coverage["oversized_spans"], coverage["judged_in_part"]) == (1, 1)
    codes = {warning["code"] for warning in coverage["warnings"]}
    assert {"oversized-content", "judged-in-part"} <= codes
    assert coverage["verdict_scope_incomplete"] is True


# --- recorded chunks (`watch_stream(record_chunks=True)`, or any `otelguard.chunk` events) -----------------

def chunked(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


def test_recorded_chunks_are_replayed_by_the_last_characters_of_the_stream():
    """Replaying a stream's recorded deltas is judging its text, delta by delta: bounded by the same
    limit. What is not replayed is counted, and a verdict's characters count from the stream's start."""
    prose = R("a long answer", 40_000)
    deltas = chunked(prose, 1000) + ["tick"] * 60  # a chant at the end: 60 identical deltas (100 events: within the SDK's 128)
    span = SpanView("chat m", 1, 2, None, {sc.GEN_AI_OPERATION_NAME: "chat"}, events=tuple(
        SpanEvent(sc.OTELGUARD_CHUNK_EVENT, {sc.OTELGUARD_CHUNK_TEXT: delta, sc.OTELGUARD_CHUNK_KIND: "text"})
        for delta in deltas))
    call = read(span, GENAI_MODEL)
    assert sum(len(chunk.text) for chunk in call.chunks) == READ_LIMITS.judged_chars
    assert "".join(chunk.text for chunk in call.chunks) == "".join(deltas)[-READ_LIMITS.judged_chars:]
    assert call.chunks[0].skipped == call.unjudged_chars == len("".join(deltas)) - READ_LIMITS.judged_chars
    with Guarded() as guarded:
        tracer = guarded.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
            with tracer.start_as_current_span("chat scripted", attributes=CHAT) as model:
                for delta in deltas:
                    model.add_event(sc.OTELGUARD_CHUNK_EVENT, {sc.OTELGUARD_CHUNK_TEXT: delta})
        ended = next(s for s in guarded.exporter.get_finished_spans() if s.name == "chat scripted")
    assert (ended.attributes["otelguard.rule"], ended.attributes["otelguard.stream.chars"]) \
        == ("identical-chunks", len("".join(deltas)))


def test_ending_a_span_that_recorded_a_long_stream_takes_bounded_time():
    """The SDK keeps a span's last 128 events: 128 recorded deltas of 32 KiB each (4 MiB of text) cost
    span.end() what 4,096 characters do (it took seconds: every character went through the breaker)."""
    vocabulary = [R(f"word {n}", 2 + n % 8) for n in range(2000)]
    words = random.Random(7).choices(vocabulary, k=128 * 6000)
    deltas = [" ".join(words[n * 6000:(n + 1) * 6000])[:32 * 1024] for n in range(128)]  # text that never repeats
    with Guarded() as guarded:
        tracer = guarded.tracer
        with tracer.start_as_current_span("invoke_agent a", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
            model = tracer.start_span("chat scripted", attributes=CHAT)
            for delta in deltas:
                model.add_event(sc.OTELGUARD_CHUNK_EVENT, {sc.OTELGUARD_CHUNK_TEXT: delta})
            began = time.perf_counter()
            model.end()
            took = time.perf_counter() - began
    assert took < 0.5  # ~5 ms; before, about 4 s


def test_a_stream_cut_live_past_the_read_limit_replays_as_it_was_cut(tmp_path):
    """Identical deltas of 600 characters (a period only identical-chunks sees) cut live at the 60th:
    36,000 characters recorded, of which the replay reads the last 4,096, where the run is too short
    to see. The analyzer takes the live watch's verdict, which saw the whole stream."""
    line = R("a paragraph", 600)
    path = tmp_path / "cut.otlp.jsonl"

    def body(tracer) -> None:
        with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
            with pytest.raises(otelguard.RepetitiveOutputError):
                for _ in otelguard.watch_stream(iter([line] * 100), record_chunks=True):
                    pass
            span.set_attribute("gen_ai.output.messages", output_messages(text=line * 60))

    export_one_run(path, body)
    live = live_verdicts(path)
    assert [(rule, action, chars) for _, _, _, rule, action, _, _, chars, _ in live] \
        == [("identical-chunks", "break", 60 * len(line))]
    assert analyzer_verdicts(path) == live
