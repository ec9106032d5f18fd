"""Text-only answers: the text-loop rule's shortcut held to its slower twin, and how answers end or extend
a streak.

- The text-loop rule keeps a streak's short first answer as text and sketches it only when the next
  answer is compared with it: its judgements equal those of sketching every answer on arrival (the
  oracle below, written from the rule's description in `detectors/text_loop.py`), over generated input
  (everything in a span is untrusted: lone surrogates, answers just around the sketch's size), and the
  window hashes it computes in C are the documented crc32 values.
- Through the engine: restated answers trip the rule; an answer asking for a tool call ends the streak
  (whether or not the tool then runs); an answer with neither text nor a tool call leaves it as it is.
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

from otelguard.detectors.text import gram_hashes, grams
from otelguard.detectors.text_loop import MAX_ANSWER_CHARS, SKETCH_SIZE, TextLoopDetector, TextLoopState
from otelguard.detectors.thinking import HASH_TYPECODE, estimated_containment
from otelguard.engine import GuardEngine
from otelguard.records import SpanEvent, SpanView

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


# --- the engine ------------------------------------------------------------------------------------------
EAGER_TEXT_LOOP = {"guards": [{"id": "thinking-loop-guard", "config": {
    "textLoopRepeats": 2, "textLoopSimilarity": 0.5, "textLoopStreak": 3, "textLoopStreakSimilarity": 0.2,
    "minReasoningChars": 256, "maxThinkingSteps": 2}}]}


def _run_span(span_id: int) -> SpanView:
    return SpanView("invoke_agent a", 1, span_id, None, {
        "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a", "gen_ai.conversation.id": "c"})


def _judged(engine: GuardEngine, span: SpanView):
    engine.start(span)
    return engine.end(span)


def test_restated_text_only_answers_give_a_text_loop_verdict():
    engine = GuardEngine(EAGER_TEXT_LOOP)
    run = _run_span(10)
    rules = []
    engine.start(run)
    for span_id in (11, 12):
        answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Let me check the file."}]}])
        span = SpanView("chat m", 1, span_id, 10, {"gen_ai.operation.name": "chat", "gen_ai.output.messages": answer})
        rules += [verdict.rule for verdict in _judged(engine, span).verdicts]
    assert rules == ["text-loop"]


def _chat(span_id: int, run: SpanView, *parts: dict) -> SpanView:
    return SpanView("chat m", 1, span_id, run.span_id, {"gen_ai.operation.name": "chat", "gen_ai.output.messages":
                                                       json.dumps([{"role": "assistant", "parts": list(parts)}])})


def _text_loop_rules_over(answers: list[tuple[dict, ...]]) -> list[list[str]]:
    """The rules of each answer's verdicts, for one run of the eager config's answers."""
    engine = GuardEngine(EAGER_TEXT_LOOP)
    run = _run_span(10)
    engine.start(run)
    return [[verdict.rule for verdict in _judged(engine, _chat(11 + i, run, *parts)).verdicts]
            for i, parts in enumerate(answers)]


_RESTATED = {"type": "text", "content": "I will check the weather in Paris, then answer."}
_TOOL_CALL_PART = {"type": "tool_call", "id": "c1", "name": "probe", "arguments": {"q": ""}}


def test_an_answer_asking_for_a_tool_that_never_runs_ends_the_text_loop_streak():
    """Text answer, an answer asking for a tool call that the framework rejects (no tool span follows), the
    same text answer: the call asked for ends the streak (`textLoopRepeats: 2`)."""
    for asking in ((_TOOL_CALL_PART,), ({"type": "text", "content": "Checking."}, _TOOL_CALL_PART)):
        assert _text_loop_rules_over([(_RESTATED,), asking, (_RESTATED,)]) == [[], [], []]


def test_an_answer_with_neither_text_nor_a_tool_call_leaves_the_text_loop_streak_as_it_is():
    """An empty answer (no part, an empty text part, short reasoning alone) neither ends nor extends the streak:
    the same text answer after it completes the streak."""
    for empty in ((), ({"type": "text", "content": ""},), ({"type": "thinking", "content": "Hm."},)):
        assert _text_loop_rules_over([(_RESTATED,), empty, (_RESTATED,)]) == [[], [], ["text-loop"]]


def test_an_answer_asking_for_a_tool_with_recorded_chunks_ends_the_streak():
    """The same, with the asking answer's stream recorded (`otelguard.chunk` events): the streak ends there too."""
    engine = GuardEngine(EAGER_TEXT_LOOP)
    run = _run_span(10)
    engine.start(run)
    asking = _chat(12, run, {"type": "text", "content": "Checking."}, _TOOL_CALL_PART)
    asking = SpanView(asking.name, 1, 12, 10, asking.attributes,
                      events=(SpanEvent("otelguard.chunk", {"otelguard.chunk.text": "Checking."}),))
    rules = [[verdict.rule for verdict in _judged(engine, span).verdicts]
             for span in (_chat(11, run, _RESTATED), asking, _chat(13, run, _RESTATED))]
    assert rules == [[], [], []]
