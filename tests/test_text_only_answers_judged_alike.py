"""Text-only answers cost the live guard less, and are judged exactly as before.

Two shortcuts, each held to the slower path it replaces, over generated input (everything in a span is
untrusted, so the generators spell things adversarially: a tool-call part type written with a JSON
escape, lone surrogates, answers just around the sketch's size):
- the live engine goes straight to reading output whose text spells no tool call, instead of first
  parsing it to tell whether it could be left unread: its verdicts equal the analyzer's, which reads
  every record whole, and what it leaves unread could not have been judged;
- the text-loop rule keeps a streak's short first answer as text and sketches it only when the next
  answer is compared with it: its judgements equal those of sketching every answer on arrival (the
  oracle below, written from the rule's description in `detectors/text_loop.py`), and the window
  hashes it computes in C are the documented crc32 values.
"""

from __future__ import annotations

import heapq
import json
from array import array
from typing import Any
from zlib import crc32

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from json_strategies import messages

from otelguard.conventions import OutputFloor, classify, output_unread, read
from otelguard.detectors.text import gram_hashes, grams
from otelguard.detectors.text_loop import MAX_ANSWER_CHARS, SKETCH_SIZE, TextLoopDetector, TextLoopState
from otelguard.detectors.thinking import HASH_TYPECODE, estimated_containment
from otelguard.engine import GuardEngine
from otelguard.records import Content, SpanEvent, SpanView

TOOL_CALL, NEW_RUN = "tool call", "new run"

# Answers that restate each other (a few words drawn again and again), windowless ones, and any text;
# their lengths straddle SKETCH_SIZE, where the detector stops keeping an answer as text.
_WORDS = st.sampled_from(["ok", "the", "file", "again", "Let me", "check", "I'll", "retry", "Done.", "é", "東京",
                          "\ud800", "  ", "\n", "tool_call", "x" * (SKETCH_SIZE - 3)])
answers = st.one_of(
    st.lists(_WORDS, max_size=30).map(" ".join),
    st.text(max_size=6),
    st.text(st.characters(), max_size=200),
)
_VARIATIONS = {
    "same": lambda text: text,
    "louder": str.upper,
    "spaced": lambda text: "  " + text.replace(" ", "\t ") + "\n",
    "longer": lambda text: text + " Retrying now.",
    "shorter": lambda text: text[: len(text) // 2],
}


@st.composite
def answer_runs(draw: Any) -> list[Any]:
    """Text-only answers drawn from a small pool with variations, between tool calls and new runs."""
    pool = draw(st.lists(answers, min_size=1, max_size=4))
    answer = st.builds(lambda index, variation: _VARIATIONS[variation](pool[index % len(pool)]),
                       st.integers(0, 3), st.sampled_from(sorted(_VARIATIONS)))
    return draw(st.lists(st.one_of(answer, answer, answer, st.sampled_from([TOOL_CALL, NEW_RUN])), max_size=24))


detectors = st.builds(
    TextLoopDetector,
    repeats=st.sampled_from([2, 3, 10**9]), similarity=st.floats(0.01, 1),
    streak=st.sampled_from([2, 5, 10**9]), streak_similarity=st.floats(0.01, 1), max_fires=st.integers(1, 3),
)


class SketchOnArrival:
    """The text-loop rule with every answer sketched when it arrives (a windowless answer kept as text)."""

    def __init__(self, detector: TextLoopDetector):
        self.detector = detector
        self.fires = 0
        self.tool_called()

    def tool_called(self) -> None:
        self.previous: tuple[array, int] | str | None = None
        self.near = self.restating = 0

    def observe(self, text: str) -> tuple[int, bool] | None:
        normal = " ".join(text[:MAX_ANSWER_CHARS].lower().split())
        windows = grams(normal)
        if not windows:
            similar = 1.0 if self.previous == normal else 0.0
            self.previous = normal
        else:
            hashes = gram_hashes(windows)
            previous = self.previous
            similar = estimated_containment(*previous, hashes, len(windows)) if type(previous) is tuple else 0.0
            self.previous = (array(HASH_TYPECODE, heapq.nsmallest(SKETCH_SIZE, hashes)), len(windows))
        rule = self.detector
        self.near = self.near + 1 if similar >= rule.similarity else 1
        self.restating = self.restating + 1 if similar >= rule.streak_similarity else 1
        answers = self.near if self.near >= rule.repeats else self.restating if self.restating >= rule.streak else 0
        if not answers:
            return None
        self.near = self.restating = 0
        fire = self.fires < rule.max_fires
        self.fires += fire
        return answers, fire


@settings(max_examples=examples(3000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(detectors, answer_runs())
def test_the_text_loop_rule_judges_as_if_it_sketched_every_answer_on_arrival(detector, events):
    state, oracle = TextLoopState(), SketchOnArrival(detector)
    for event in events:
        if event == TOOL_CALL:
            state.tool_called()
            oracle.tool_called()
        elif event == NEW_RUN:
            state.reset()
            oracle = SketchOnArrival(detector)
        else:
            judgement = detector.observe(state, event)
            got = None if judgement is None else (judgement.answers, judgement.fire)
            assert got == oracle.observe(event), event


@settings(max_examples=examples(1000), deadline=None)
@given(st.one_of(answers, st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=12)))
def test_window_hashes_are_the_crc32_of_each_windows_utf8_lone_surrogates_too(text):
    """The hashes the sketches sample, whichever way they are computed (stable across processes)."""
    windows = grams(text)
    assert gram_hashes(windows) == {crc32(window.encode("utf-8", "surrogatepass")) for window in windows}


def test_window_hashes_are_stable():
    assert gram_hashes(grams("abcde")) == {crc32(b"abcd"), crc32(b"bcde")} == {0xED82CD11, 0xC6B3AE99}


def test_the_oracle_is_not_vacuous():
    """The property above compares judgements that do come: restated answers trip the rule."""
    detector, state = TextLoopDetector(repeats=3, similarity=0.8), TextLoopState()
    judgements = [detector.observe(state, answer) for answer in ["Let me check the file.", "let me  check the file.",
                                                                  "LET ME CHECK THE FILE."]]
    assert judgements[:2] == [None, None] and judgements[2] is not None and judgements[2].answers == 3


# --- output the live engine reads or leaves unread ---------------------------------------------------------
def _spelled(raw: str, escaped: bool) -> str:
    """`raw` with the tool-call part type written as a JSON escape: the same JSON, no `tool_call` in the text."""
    return raw.replace("tool_call", "tool\\u005fcall") if escaped else raw


@st.composite
def model_outputs(draw: Any, asking_for_a_tool: bool = False) -> str:
    """A `gen_ai.output.messages` text: pydantic-ai-shaped parts, or any messages; maybe escaped.
    `asking_for_a_tool`: pydantic-ai-shaped parts with a tool call, always."""
    if not asking_for_a_tool and draw(st.integers(0, 4)) == 0:
        decoded = draw(messages)
    else:
        parts: list[dict[str, Any]] = []
        reasoning = draw(st.sampled_from(["", "Short thought.", "thinking " * 260]))
        if reasoning:
            parts.append({"type": "thinking", "content": reasoning})
        text = draw(st.one_of(st.just(""), answers, st.just("abc, " * 60)))
        if text or draw(st.booleans()):
            parts.append({"type": "text", "content": text})
        if asking_for_a_tool or draw(st.booleans()):
            parts.append({"type": "tool_call", "id": "c1", "name": "probe", "arguments": {"q": draw(st.text(max_size=8))}})
        decoded = [{"role": "assistant", "parts": parts, "finish_reason": "stop"}]
    return _spelled(json.dumps(decoded, ensure_ascii=draw(st.booleans())), draw(st.booleans()))


TEXT_ONLY_FLOOR = OutputFloor(text_chars=256, reasoning_chars=2048, text_only=True)  # the default guards'


@settings(max_examples=examples(1500), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model_outputs())
def test_output_told_unread_under_the_text_only_floor_holds_no_text_only_answer(raw):
    """Told unread from the attributes: reading says so too, and the whole record is under both floors and
    has a tool call (what the live engine tells the guards judging text-only answers, for no rule to judge)."""
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": raw}
    classification = classify("chat m", attributes)
    view = SpanView("chat m", 1, 2, None, attributes)
    whole = read(view, classification)
    if output_unread(attributes, classification, TEXT_ONLY_FLOOR):
        assert read(view, classification, output_floor=TEXT_ONLY_FLOOR).output_content is Content.UNREAD
    live = read(view, classification, output_floor=TEXT_ONLY_FLOOR)
    if live.output_content is Content.UNREAD:
        assert len(whole.text) < TEXT_ONLY_FLOOR.text_chars and len(whole.reasoning) < TEXT_ONLY_FLOOR.reasoning_chars
        assert whole.tool_calls, raw
    else:
        assert live == whole


def test_a_tool_call_spelled_with_an_escape_is_read_and_left_unread_as_one_spelled_plainly():
    raw = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Checking."},
                                                      {"type": "tool_call", "id": "c", "name": "f", "arguments": {}}]}])
    for spelled in (raw, _spelled(raw, True)):
        view = SpanView("chat m", 1, 2, None, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": spelled})
        assert read(view, classify(view.name, view.attributes), output_floor=TEXT_ONLY_FLOOR).output_content \
            is Content.UNREAD
        assert read(view, classify(view.name, view.attributes)).tool_calls[0].name == "f"


# --- the engine: live as whole ------------------------------------------------------------------------------
CONFIGS = {
    "default": None,
    "eager text loop": {"guards": [{"id": "thinking-loop-guard", "config": {
        "textLoopRepeats": 2, "textLoopSimilarity": 0.5, "textLoopStreak": 3, "textLoopStreakSimilarity": 0.2,
        "minReasoningChars": 256, "maxThinkingSteps": 2}}]},
}


@st.composite
def agent_steps(draw: Any) -> list[Any]:
    """Model outputs (text-only answers often restating each other), tool calls and new runs of one agent.
    A model output comes with whether the agent runs the tool calls it asks for: a framework may reject
    the call (an unknown tool, arguments that fail validation), and then no tool span follows."""
    text_only = answers.map(lambda text: json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}]))
    pool = draw(st.lists(st.one_of(model_outputs(), text_only, text_only), min_size=1, max_size=3))
    output = st.sampled_from(range(len(pool))).map(pool.__getitem__)
    answer = st.tuples(st.one_of(output, output, output, model_outputs()), st.booleans())
    rejected_call = st.tuples(model_outputs(asking_for_a_tool=True), st.just(False))
    return draw(st.lists(st.one_of(answer, answer, answer, rejected_call, rejected_call,
                                   st.sampled_from([TOOL_CALL, NEW_RUN])),
                         min_size=1, max_size=16))


def _run_span(span_id: int) -> SpanView:
    return SpanView("invoke_agent a", 1, span_id, None, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": "c"})


def _judged(engine: GuardEngine, span: SpanView):
    engine.start(span)
    return engine.end(span)


@settings(max_examples=examples(600), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(CONFIGS)), agent_steps())
def test_the_live_engine_reaches_the_analyzers_verdicts_on_any_agent_steps(config, steps):
    """Live (reading only what a rule may judge) and whole (the analyzer's engine): span by span, the
    same verdicts, for one agent's model calls, tool calls and runs."""
    live, whole = GuardEngine(CONFIGS[config], full_records=False), GuardEngine(CONFIGS[config])
    span_ids = iter(range(10, 10_000))
    run = _run_span(next(span_ids))
    for engine in (live, whole):
        engine.start(run)
    for step in steps:
        if step == NEW_RUN:
            for engine in (live, whole):
                engine.end(run)
            run = _run_span(next(span_ids))
            for engine in (live, whole):
                engine.start(run)
            continue
        if step != TOOL_CALL:
            output, runs_the_tool = step
            span = SpanView("chat m", 1, next(span_ids), run.span_id,
                            {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output})
            judged = _judged(whole, span)
            assert _judged(live, span).verdicts == judged.verdicts, output
            if not judged.record.tool_calls or not runs_the_tool:
                continue
            # The agent runs the call the model asked for (an answer with a tool call is left unread live).
        span = SpanView("execute_tool probe", 1, next(span_ids), run.span_id, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "probe",
            "gen_ai.tool.call.arguments": '{"q": 1}', "gen_ai.tool.call.result": "ok"})
        assert _judged(live, span).verdicts == _judged(whole, span).verdicts


def test_the_engine_property_sees_text_loop_verdicts():
    """Restated text-only answers give text-loop verdicts live, as whole: the property above is not vacuous."""
    live, whole = GuardEngine(CONFIGS["eager text loop"], full_records=False), GuardEngine(CONFIGS["eager text loop"])
    run = _run_span(10)
    rules = []
    for engine in (live, whole):
        engine.start(run)
    for span_id in (11, 12):
        answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Let me check the file."}]}])
        span = SpanView("chat m", 1, span_id, 10, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": answer})
        verdicts = _judged(live, span).verdicts
        assert verdicts == _judged(whole, span).verdicts
        rules += [verdict.rule for verdict in verdicts]
    assert rules == ["text-loop"]


def _chat(span_id: int, run: SpanView, *parts: dict) -> SpanView:
    return SpanView("chat m", 1, span_id, run.span_id, {"gen_ai.operation.name": "chat", "gen_ai.output.messages":
                                                       json.dumps([{"role": "assistant", "parts": list(parts)}])})


def _text_loop_rules_over(answers: list[tuple[dict, ...]]) -> dict[str, list[list[str]]]:
    """The rules of each answer's verdicts, live and whole, for one run of the eager config's answers."""
    rules: dict[str, list[list[str]]] = {}
    for name, engine in (("live", GuardEngine(CONFIGS["eager text loop"], full_records=False)),
                         ("whole", GuardEngine(CONFIGS["eager text loop"]))):
        run = _run_span(10)
        engine.start(run)
        rules[name] = [[verdict.rule for verdict in _judged(engine, _chat(11 + i, run, *parts)).verdicts]
                       for i, parts in enumerate(answers)]
    return rules


_RESTATED = {"type": "text", "content": "I will check the weather in Paris, then answer."}
_TOOL_CALL_PART = {"type": "tool_call", "id": "c1", "name": "probe", "arguments": {"q": ""}}


def test_an_answer_asking_for_a_tool_that_never_runs_ends_the_text_loop_streak_live_as_in_the_analyzer():
    """Text answer, an answer asking for a tool call that the framework rejects (no tool span follows), the
    same text answer: the call asked for ends the streak, live as whole (`textLoopRepeats: 2`)."""
    for asking in ((_TOOL_CALL_PART,), ({"type": "text", "content": "Checking."}, _TOOL_CALL_PART)):
        assert _text_loop_rules_over([(_RESTATED,), asking, (_RESTATED,)]) == {"live": [[], [], []],
                                                                               "whole": [[], [], []]}


def test_an_answer_with_neither_text_nor_a_tool_call_leaves_the_text_loop_streak_as_it_is_live_as_whole():
    """An empty answer (no part, an empty text part, short reasoning alone) neither ends nor extends the streak:
    the same text answer after it completes the streak, live as whole."""
    for empty in ((), ({"type": "text", "content": ""},), ({"type": "thinking", "content": "Hm."},)):
        assert _text_loop_rules_over([(_RESTATED,), empty, (_RESTATED,)]) == {
            "live": [[], [], ["text-loop"]], "whole": [[], [], ["text-loop"]]}


def test_an_answer_asking_for_a_tool_with_recorded_chunks_ends_the_streak_live_as_in_the_analyzer():
    """The same, with the asking answer's stream recorded (`otelguard.chunk` events): live judges it, its output
    left unread, and the streak ends there too."""
    rules = {}
    for name, engine in (("live", GuardEngine(CONFIGS["eager text loop"], full_records=False)),
                         ("whole", GuardEngine(CONFIGS["eager text loop"]))):
        run = _run_span(10)
        engine.start(run)
        asking = _chat(12, run, {"type": "text", "content": "Checking."}, _TOOL_CALL_PART)
        asking = SpanView(asking.name, 1, 12, 10, asking.attributes,
                          events=(SpanEvent("otelguard.chunk", {"otelguard.chunk.text": "Checking."}),))
        rules[name] = [[verdict.rule for verdict in _judged(engine, span).verdicts]
                       for span in (_chat(11, run, _RESTATED), asking, _chat(13, run, _RESTATED))]
    assert rules == {"live": [[], [], []], "whole": [[], [], []]}
