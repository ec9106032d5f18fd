"""The stream and reasoning rules of issue 19: structure-aware cycles, long cycles, low novelty, text loops.

The corpus (tests/support/loop_corpus.py) is judged as the guard judges it, on both halves: no legitimate
sample is cut, every loop is caught by its rule. The rest pins each rule's edges, its config, and
that the analyzer's replay of a live run gives the live verdicts.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from loop_corpus import LEGIT, LOOP, corpus, drift_loop, judge, prose
from otel_support import Guarded, metric_points, output_messages
from live_export_support import CHAT, analyzer_verdicts, export_one_run, live_verdicts, model_call

import otelguard
from otelguard import ConfigError, GuardConfig
from otelguard.guards.config import ThinkingLoopGuardConfig
from otelguard.detectors.novelty import NoveltyMeter
from otelguard.detectors.stream import LONG_CYCLE, REPEATING_CYCLE, SLOW_CHECK_EVERY, StreamBreaker
from otelguard.detectors.structure import is_structured
from otelguard.guards import ThinkingLoopGuard
from otelguard.guards.base import ModelFacts
from otelguard.model.records import Content, ModelCall, RequestedToolCall, SpanView

DEFAULT = ThinkingLoopGuard(ThinkingLoopGuardConfig())
CORPUS = corpus()
EXPECTED_RULES = {"repeating-cycle": {"repeating-cycle", "identical-chunks"}, "long-cycle": {"long-cycle"},
                  # a drifting loop may fall into an exact repetition on the way: the cycle rules take it
                  "low-novelty": {"low-novelty", "long-cycle", "repeating-cycle"}, "text-loop": {"text-loop"}}
SPAN = SpanView(name="chat m", trace_id=1, span_id=2)


def feed(breaker: StreamBreaker, deltas):
    for delta in deltas:
        trip = breaker.push(delta)
        if trip is not None:
            return trip
    return breaker.finish()


# --- the corpus -------------------------------------------------------------------------------------------
def test_the_corpus_has_thirty_loops_and_thirty_legitimate_samples_per_rule_in_two_halves():
    for rule in EXPECTED_RULES:
        for label in (LOOP, LEGIT):
            samples = [s for s in CORPUS if s.rule == rule and s.label == label]
            assert len(samples) >= 30, (rule, label)
            assert {s.split for s in samples} == {"tune", "held-out"}


# The character rules share their legitimate samples: each text is judged once, by the whole guard.
UNIQUE_LEGIT = list({(s.name, s.calls): s for s in CORPUS if s.label == LEGIT}.values())


@pytest.mark.parametrize("sample", UNIQUE_LEGIT, ids=lambda s: f"{s.rule}:{s.name}")
def test_no_legitimate_sample_is_cut_or_steered(sample):
    """Legitimate output is never cut; only the flag-only low-novelty rule may mark it (all-zero tables)."""
    outcome = judge(sample, DEFAULT, seed=3)
    assert not outcome.cut
    assert outcome.rule in (None, "low-novelty")


@pytest.mark.parametrize("sample", [s for s in CORPUS if s.label == LOOP], ids=lambda s: f"{s.rule}:{s.name}")
def test_every_loop_is_caught_by_its_rule(sample):
    outcome = judge(sample, DEFAULT, seed=5)
    assert outcome.rule in EXPECTED_RULES[sample.rule]
    if sample.rule in ("repeating-cycle", "long-cycle"):
        assert outcome.cut


@pytest.mark.parametrize("sample", [s for s in CORPUS if s.rule == "long-cycle" and s.label == LOOP][::4],
                         ids=lambda s: s.name)
def test_a_long_cycle_in_the_reasoning_channel_is_cut(sample):
    outcome = judge(sample, DEFAULT, reasoning=True)
    assert (outcome.rule, outcome.cut) == (LONG_CYCLE, True)


# --- structure ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("span", "period", "in_fence", "structured"), [
    ("0, " * 100, 3, False, True),  # letterless
    ("| a | b |\n" * 30, 10, False, True),  # table rows
    ("ab,cd,ef\n" * 30, 9, False, True),  # CSV rows
    ("x\ty\n" * 60, 4, False, True),  # TSV rows
    ('{"k": null}, ' * 30, 13, False, True),  # JSON array elements
    ("│ ok │\n" * 40, 7, False, True),  # box drawing
    ("I need to check the file again.\n" * 10, 32, True, True),  # anything inside an open fence
    ("I need to check the file again.\n" * 10, 32, False, False),
    ("Wait, no, stop.\n" * 20, 16, False, False),  # prose puts a space after its commas
    ("好。\n发。\n好。\n好。\n" * 30, 12, False, False),
])
def test_what_counts_as_structure(span, period, in_fence, structured):
    assert is_structured(span, period, in_fence) is structured


def test_an_endless_fence_is_cut_past_the_structured_allowance_and_not_before():
    opening = "Here is the table:\n```\n"
    text = opening + "0, " * 6000
    for allowance in (1024, 8192):
        trip = feed(StreamBreaker(max_structured_repeat_chars=allowance), [text[i:i + 5] for i in range(0, len(text), 5)])
        assert trip is not None and trip.rule == REPEATING_CYCLE and trip.structured
        assert allowance <= trip.chars - len(opening) <= allowance + 64


def test_structure_awareness_off_cuts_a_zero_table_like_prose():
    text = "a,b\n" + "0,0,0,0\n" * 100
    assert feed(StreamBreaker(max_structured_repeat_chars=0), [text[i:i + 3] for i in range(0, len(text), 3)]).chars <= 300
    assert feed(StreamBreaker(), [text[i:i + 3] for i in range(0, len(text), 3)]) is None


# --- long cycles ---------------------------------------------------------------------------------------------
PARAGRAPH = ("Let me think about this again. The test fails because the fixture is created after the client, "
             "so the client never sees the mocked endpoint and calls the real one instead. ")  # 173 chars


@pytest.mark.parametrize("size", [1, 4, 9])
def test_a_restated_paragraph_is_cut_within_the_slow_lanes_cadence(size):
    text = prose(random.Random(1), 700) + PARAGRAPH * 8
    trip = feed(StreamBreaker(), [text[i:i + size] for i in range(0, len(text), size)])
    onset = len(text) - 8 * len(PARAGRAPH)
    assert trip.rule == LONG_CYCLE and trip.period == len(PARAGRAPH)
    assert 3 * len(PARAGRAPH) <= trip.chars - onset <= 3 * len(PARAGRAPH) + SLOW_CHECK_EVERY + size


def test_two_restatements_or_a_disabled_rule_do_not_trip():
    assert feed(StreamBreaker(), [prose(random.Random(2), 400) + PARAGRAPH * 2 + prose(random.Random(3), 900)]) is None
    assert feed(StreamBreaker(max_long_cycle_chars=0), [PARAGRAPH * 8]) is None
    # a unit repeating a cycle of 64 characters or fewer is the seed rule's, not a long cycle
    assert feed(StreamBreaker(max_repeated_text=0, max_repeated_cycle_chars=0), ["tick"] * 500) is None


# --- low novelty --------------------------------------------------------------------------------------------
@settings(max_examples=examples(40), deadline=None)
@given(seed=st.integers(0, 1000), cuts=st.lists(st.integers(1, 40), min_size=1, max_size=200))
def test_novelty_read_in_pieces_equals_novelty_read_whole(seed, cuts):
    """The meter keeps a word cut between two pieces whole: any split gives the same dip and minimum."""
    text = prose(random.Random(seed), 1500) + drift_loop("jitter", random.Random(seed), 2500)
    whole = NoveltyMeter(window=512, n=3, min_novelty=0.2)
    expected = whole.feed(text) or whole.finish()
    pieces, at = NoveltyMeter(window=512, n=3, min_novelty=0.2), 0
    got = None
    for size in cuts * 100:
        if at >= len(text) or got is not None:
            break
        got = pieces.feed(text[at:at + size])
        at += size
    got = got or (pieces.feed(text[at:]) if at < len(text) else None) or pieces.finish()
    assert got == expected and expected is not None


def test_low_novelty_flags_by_default_and_cuts_when_configured():
    text = prose(random.Random(4), 800) + drift_loop("shuffle", random.Random(4), 5000)
    verdicts = DEFAULT.on_model_end(DEFAULT.new_state(), ModelCall(text=text, output_content=Content.OK), SPAN, ModelFacts())
    assert [(v.rule, v.action.value) for v in verdicts] == [("low-novelty", "none")]
    cutting = ThinkingLoopGuard(ThinkingLoopGuardConfig(low_novelty_action="break"))
    trip = feed(cutting.new_breaker(), [text[i:i + 4] for i in range(0, len(text), 4)])
    assert trip.rule == "low-novelty" and trip.chars < len(text)
    assert cutting.break_verdict(trip, cut=True).action.value == "break"


# --- text loops ---------------------------------------------------------------------------------------------
def answer(text: str, tool: bool = False, reasoning: str = "") -> ModelCall:
    return ModelCall(text=text, reasoning=reasoning, output_content=Content.OK,
                     tool_calls=(RequestedToolCall("search", "{}"),) if tool else ())


def rules_of(guard: ThinkingLoopGuard, state, calls) -> list[list[tuple[str, str]]]:
    return [[(v.rule, v.action.value) for v in guard.on_model_end(state, call, SPAN, ModelFacts())] for call in calls]


def test_three_identical_text_only_answers_steer_on_the_third():
    state = DEFAULT.new_state()
    got = rules_of(DEFAULT, state, [answer("I'll search for it now.")] * 3)
    assert got == [[], [], [("text-loop", "steer")]]
    assert (state.detector.stalled, state.detector.fires) == (0, 0)  # the seed rule's state untouched


def test_a_tool_call_or_a_new_run_ends_the_streak():
    state = DEFAULT.new_state()
    assert rules_of(DEFAULT, state, [answer("OK."), answer("OK."), answer("x", tool=True), answer("OK."), answer("OK.")]) \
        == [[]] * 5
    DEFAULT.on_agent_run(state)
    assert rules_of(DEFAULT, state, [answer("OK.")]) == [[]]


def test_long_reasoning_belongs_to_the_seed_rule():
    """Answers whose reasoning reaches min_reasoning_chars are the seed rule's: the text-loop rule leaves them."""
    config = ThinkingLoopGuardConfig(min_reasoning_chars=256)
    guard = ThinkingLoopGuard(config)
    state = guard.new_state()
    got = rules_of(guard, state, [answer("Same answer.", reasoning=f"thought {i} " * 40) for i in range(3)])
    assert all(rule != "text-loop" for verdicts in got for rule, _ in verdicts)


def test_a_rewording_streak_without_tools_steers_and_fires_are_capped():
    guard = ThinkingLoopGuard(ThinkingLoopGuardConfig(max_fires=1))
    state = guard.new_state()
    calls = [answer(f"Action: search[q{i}] — I need to check the file again before answering.") for i in range(10)]
    fired = [verdicts for verdicts in rules_of(guard, state, calls) if verdicts]
    assert fired[0] == [("text-loop", "steer")] and all(v == [("text-loop", "none")] for v in fired[1:])


# --- config -----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [
    {"max_long_cycle_chars": 64}, {"max_long_cycle_chars": 5000}, {"long_cycle_repeats": 1},
    {"max_structured_repeat_chars": 100}, {"novelty_window": 64}, {"novelty_ngram": 0}, {"min_novelty": 1.5},
    {"low_novelty_action": "steer"}, {"text_loop_repeats": 1}, {"text_loop_streak": -1},
    {"text_loop_similarity": 0}, {"text_loop_action": "break"},
])
def test_invalid_structure_long_cycle_novelty_and_text_loop_settings_fail_at_load_naming_the_field(bad):
    with pytest.raises(ConfigError) as raised:
        GuardConfig.load({"guards": [{"id": "thinking-loop-guard", "config": bad}]})
    assert next(iter(bad)) in str(raised.value)


def test_camel_case_aliases_load():
    config = GuardConfig.load({"guards": [{"id": "thinking-loop-guard", "config": {
        "maxLongCycleChars": 256, "minNovelty": 0, "textLoopAction": "warn", "maxStructuredRepeatChars": 0}}]})
    row = config.row("thinking-loop-guard").config
    assert (row.max_long_cycle_chars, row.min_novelty, row.text_loop_action, row.max_structured_repeat_chars) \
        == (256, 0.0, "warn", 0)


# --- live and replayed ---------------------------------------------------------------------------------------
def reasoning_of(item):
    return item, "reasoning"


def long_cycle_novelty_and_text_loop_run(tracer) -> None:
    with tracer.start_as_current_span("chat scripted", attributes=CHAT):  # a long cycle, cut mid-stream
        with pytest.raises(otelguard.RepetitiveOutputError) as raised:
            # deltas of 43 characters: the chunks recorded up to the cut stay within the SDK's 128 events a span
            for _ in otelguard.watch_stream(iter([PARAGRAPH[i:i + 43] for i in range(0, len(PARAGRAPH), 43)] * 20),
                                            record_chunks=True):
                pass
        assert raised.value.rule == "long-cycle"
    with tracer.start_as_current_span("chat scripted", attributes=CHAT):  # the same, in the reasoning channel
        with pytest.raises(otelguard.RepetitiveOutputError):
            for _ in otelguard.watch_stream(iter([PARAGRAPH] * 20), record_chunks=True, text_of=reasoning_of):
                pass
    # structure: not cut, although its deltas (two rows each) are identical 100 times over
    zeros = "Here it is:\n```\n" + "0, 0, 0, 0,\n" * 200 + "```\n"
    with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
        for _ in otelguard.watch_stream(iter([zeros[i:i + 24] for i in range(0, len(zeros), 24)]), record_chunks=True):
            pass
        span.set_attribute("gen_ai.output.messages", output_messages(text=zeros))
    model_call(tracer, text=drift_loop("reword", random.Random(9), 4000))  # drift: flagged at the end
    for _ in range(3):  # the same short text-only answer three times: steered
        model_call(tracer, text="I will call the search tool now.")


def test_the_analyzer_replays_long_cycle_novelty_and_text_loop_verdicts_as_live(tmp_path: Path) -> None:
    path = tmp_path / "new-rules.otlp.jsonl"
    export_one_run(path, long_cycle_novelty_and_text_loop_run)
    live = live_verdicts(path)
    # The fenced zero table is neither cut nor measured for novelty (code); the flag-only low-novelty
    # rule marks the drift.
    assert sorted((rule, action) for _, _, _, rule, action, *_ in live) == [
        ("long-cycle", "break"), ("long-cycle", "break"), ("low-novelty", "none"), ("text-loop", "steer")]
    assert live == analyzer_verdicts(path)


def test_long_cycle_novelty_and_text_loop_verdicts_are_counted_by_rule():
    with Guarded() as g:
        export_one_run_on(g.tracer)
        g.processor.force_flush()
        counted = {(p["otelguard.rule"], p["otelguard.action"]): value
                   for p, value in metric_points(g.metric_reader, "otelguard.verdicts")}
    assert counted[("long-cycle", "break")] == 2 and counted[("text-loop", "steer")] == 1
    assert counted[("low-novelty", "none")] == 1  # the drift; the fenced table is code, not measured


def export_one_run_on(tracer) -> None:
    with tracer.start_as_current_span("invoke_agent writer", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer", "gen_ai.conversation.id": "c"}):
        long_cycle_novelty_and_text_loop_run(tracer)


def test_live_short_text_only_answers_are_read_and_a_tool_call_between_them_ends_the_streak():
    """The live guard reads every answer, however short (the text-loop rule judges the text-only ones);
    an answer that calls a tool ends the streak, as its tool span does. Three identical short answers in
    a row are steered; the same answers with a tool call between the first and the others are not."""
    CHAT = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "scripted"}

    def answer(tracer, **output) -> None:
        with tracer.start_as_current_span("chat scripted", attributes=CHAT) as span:
            span.set_attribute("gen_ai.output.messages", output_messages(**output))

    def steers(with_a_tool_call_between: bool) -> int:
        with Guarded() as g:
            with g.tracer.start_as_current_span("invoke_agent a", attributes={
                    "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"}):
                answer(g.tracer, text="I cannot parse that action.")
                if with_a_tool_call_between:
                    answer(g.tracer, text="Let me look.", tool="get_weather")
                    with g.tracer.start_as_current_span("execute_tool get_weather", attributes={
                            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                            "gen_ai.tool.call.arguments": '{"city": "Paris"}'}):
                        pass
                for _ in range(2):
                    answer(g.tracer, text="I cannot parse that action.")
            return sum(value for labels, value in metric_points(g.metric_reader, "otelguard.verdicts")
                       if labels["otelguard.rule"] == "text-loop" and labels["otelguard.action"] == "steer")

    assert steers(with_a_tool_call_between=False) == 1
    assert steers(with_a_tool_call_between=True) == 0
