"""The text-loop rule: restated text-only answers trip it; how an answer ends or extends a streak; the
window hashes it samples.

- Restated answers trip the rule (the detector, then through the engine).
- An answer asking for a tool call ends the streak (whether or not the tool then runs); an answer with
  neither text nor a tool call leaves it as it is.
- The window hashes are the documented crc32 values (everything in a span is untrusted: lone
  surrogates too).
"""

from __future__ import annotations

import json
from zlib import crc32

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from otelguard.detectors.text import gram_hashes, grams
from otelguard.detectors.text_loop import TextLoopDetector, TextLoopState
from otelguard.engine import GuardEngine
from otelguard.model.records import SpanEvent, SpanView

answers = st.one_of(
    st.lists(st.sampled_from(["ok", "the", "file", "again", "Let me", "check", "I'll", "retry", "Done.", "é", "東京",
                              "\ud800", "  ", "\n", "tool_call", "x" * 61]), max_size=30).map(" ".join),
    st.text(max_size=6),
    st.text(st.characters(), max_size=200),
)


def test_restated_answers_trip_the_rule():
    detector, state = TextLoopDetector(repeats=3, similarity=0.8), TextLoopState()
    judgements = [detector.observe(state, answer) for answer in ["Let me check the file.", "let me  check the file.",
                                                                  "LET ME CHECK THE FILE."]]
    assert judgements[:2] == [None, None] and judgements[2] is not None and judgements[2].answers == 3


@settings(max_examples=examples(1000), deadline=None)
@given(st.one_of(answers, st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010), max_size=12)))
def test_window_hashes_are_the_crc32_of_each_windows_utf8_lone_surrogates_too(text):
    """The hashes the sketches sample, whichever way they are computed (stable across processes)."""
    windows = grams(text)
    assert gram_hashes(windows) == {crc32(window.encode("utf-8", "surrogatepass")) for window in windows}


def test_window_hashes_are_stable():
    assert gram_hashes(grams("abcde")) == {crc32(b"abcd"), crc32(b"bcde")} == {0xED82CD11, 0xC6B3AE99}


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
