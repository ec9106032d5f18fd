"""Conformance vectors: the thinking loop (vectors.md, "Thinking loop" 1-10).

Vector defaults: max_thinking_steps 3, min_reasoning_chars 64, repeat_ratio 0.5, similarity_threshold
0.8, escalate steer, max_fires 4. 64 is below the load-time minimum, so the detector is built directly;
the guard-level vectors use R texts (400 characters) and the smallest valid minimum, 256.
"""

from __future__ import annotations

from otelguard.guards.config import ThinkingLoopGuardConfig
from otelguard.detectors.thinking import Step, ThinkingJudgement, ThinkingLoopDetector
from otelguard.guards.base import ModelFacts
from otelguard.guards.thinking_loop_guard import ThinkingLoopGuard
from otelguard.model.records import Content, ModelCall, SpanView, Verdict

from vectors_support import R

T, F = True, False
VECTOR_DEFAULTS = dict(
    max_thinking_steps=3, min_reasoning_chars=64, repeat_ratio=0.5, similarity_threshold=0.8, max_fires=4
)


def observe_all(observations, **overrides) -> list[ThinkingJudgement | None]:
    detector = ThinkingLoopDetector(**{**VECTOR_DEFAULTS, **overrides})
    return [detector.observe(has_output, reasoning) for has_output, reasoning in observations]


def steps(judgements) -> list[Step | None]:
    return [j.step if j is not None else None for j in judgements]


def fired_at(judgements) -> list[int]:
    """1-based positions of the calls that fired a reaction."""
    return [i for i, j in enumerate(judgements, start=1) if j is not None and j.fire]


def guard_verdicts(config: ThinkingLoopGuardConfig, observations) -> list[list[Verdict]]:
    """Run model calls through the guard; one verdict list per call."""
    guard = ThinkingLoopGuard(config)
    state = guard.new_state()
    out = []
    for index, (has_output, reasoning) in enumerate(observations, start=1):
        call = ModelCall(text="Here is my answer." if has_output else "", reasoning=reasoning,
                         output_content=Content.OK)
        span = SpanView(name="chat model", trace_id=1, span_id=index)
        out.append(guard.on_model_end(state, call, span, ModelFacts()))
    return out


# --- 1 -------------------------------------------------------------------------------------------
SAME = [(T, R("the same subject"))] * 4


def test_v1_restated_reasoning_is_repeated_material_from_the_second_call():
    """Four calls with the same reasoning: the first is progress, calls 2-4 are repeated-material."""
    assert steps(observe_all(SAME)) == [Step.PROGRESS] + [Step.REPEATED_MATERIAL] * 3


def test_v1_restated_reasoning_fires_on_the_fourth_call():
    """Four calls with the same reasoning fire exactly once, on call 4."""
    assert fired_at(observe_all(SAME)) == [4]


def test_v1_the_reaction_is_the_steer_text():
    """With escalate steer, call 4 steers with the repeated-material text and calls 1-3 send nothing."""
    verdicts = guard_verdicts(ThinkingLoopGuardConfig(min_reasoning_chars=256, escalate="steer"), SAME)
    assert [[v.action for v in call] for call in verdicts] == [[], ["none"], ["none"], ["steer"]]
    (fired,) = verdicts[3]
    assert fired.rule == "repeated-material"
    assert fired.message == (
        "You are repeating the same reasoning without acting (several calls that restate the same "
        "reasoning without adding anything). Stop deliberating and either call a tool or produce a "
        "concise answer now."
    )


# --- 2 -------------------------------------------------------------------------------------------
def test_v2_different_reasoning_with_output_is_progress():
    """Three calls with different reasoning and output are all progress and nothing fires."""
    judgements = observe_all([(T, R("first seed")), (T, R("second seed")), (T, R("third seed"))])
    assert steps(judgements) == [Step.PROGRESS] * 3
    assert fired_at(judgements) == []


# --- 3 -------------------------------------------------------------------------------------------
def test_v3_a_new_line_of_enquiry_breaks_the_stall():
    """Two identical calls then a different one: one stall, then progress, and no fire."""
    judgements = observe_all([
        (T, R("stuck subject")), (T, R("stuck subject")),
        (T, R("a completely different line of enquiry entirely")),
    ])
    assert steps(judgements) == [Step.PROGRESS, Step.REPEATED_MATERIAL, Step.PROGRESS]
    assert fired_at(judgements) == []


# --- 4 -------------------------------------------------------------------------------------------
def test_v4_three_reasoning_only_calls_fire_reasoning_only():
    """Three calls with reasoning but no output are reasoning-only and fire on the third."""
    judgements = observe_all([(F, R("angle one")), (F, R("angle two")), (F, R("angle three"))])
    assert steps(judgements) == [Step.REASONING_ONLY] * 3
    assert fired_at(judgements) == [3]


# --- 5 -------------------------------------------------------------------------------------------
def test_v5_self_repeating_reasoning_is_low_entropy():
    """A single call whose reasoning repeats itself ('Wait. ' + '好。执行。'*40) is low-entropy."""
    (judgement,) = observe_all([(T, "Wait. " + "好。执行。" * 40)])
    assert judgement.step is Step.LOW_ENTROPY


# --- 6 -------------------------------------------------------------------------------------------
def test_v6_a_short_call_changes_nothing():
    """A call with short reasoning between stalls is not judged and leaves the stall count alone."""
    judgements = observe_all([(T, R("stuck subject"))] * 3 + [(T, "ok, continuing")])
    assert steps(judgements) == [Step.PROGRESS, Step.REPEATED_MATERIAL, Step.REPEATED_MATERIAL, None]
    assert fired_at(judgements) == []


def test_v6_the_stall_resumes_after_a_short_call_and_fires():
    """After the short call, one more identical call is repeated-material and fires (third stall)."""
    judgements = observe_all([(T, R("stuck subject"))] * 3 + [(T, "ok, continuing"), (T, R("stuck subject"))])
    assert judgements[4].step is Step.REPEATED_MATERIAL
    assert fired_at(judgements) == [5]


# --- 7 -------------------------------------------------------------------------------------------
def test_v7_a_reaction_resets_the_stall_and_can_fire_again():
    """Four identical calls fire once; three more fire a second time."""
    judgements = observe_all([(T, R("stuck"))] * 7)
    assert fired_at(judgements) == [4, 7]


# --- 8 -------------------------------------------------------------------------------------------
def test_v8_max_fires_caps_the_reactions():
    """With max_fires 2, four rounds of three identical calls fire in rounds 2 and 3 only."""
    judgements = observe_all([(T, R("stuck"))] * 12, max_fires=2)
    rounds_that_fired = sorted({(i - 1) // 3 + 1 for i in fired_at(judgements)})
    assert rounds_that_fired == [2, 3]
    assert len(fired_at(judgements)) == 2


def test_v8_capped_stalls_are_still_judged():
    """Once capped, identical calls are still judged repeated-material, marked capped, and never fire."""
    judgements = observe_all([(T, R("stuck"))] * 12, max_fires=2)
    for judgement in judgements[9:]:
        assert judgement.step is Step.REPEATED_MATERIAL
        assert judgement.capped and not judgement.fire


# --- 9 -------------------------------------------------------------------------------------------
def test_v9_similarity_zero_disables_repeated_material():
    """With similarity_threshold 0, three identical calls with output are all progress."""
    judgements = observe_all([(T, R("same text each time"))] * 3, similarity_threshold=0)
    assert steps(judgements) == [Step.PROGRESS] * 3
    assert fired_at(judgements) == []


def test_v9_similarity_zero_still_fires_reasoning_only():
    """With similarity_threshold 0, three reasoning-only calls after them fire reasoning-only."""
    judgements = observe_all([(T, R("same text each time"))] * 3 + [(F, R("x"))] * 3, similarity_threshold=0)
    assert steps(judgements)[3:] == [Step.REASONING_ONLY] * 3
    assert fired_at(judgements) == [6]


# --- 10 ------------------------------------------------------------------------------------------
def test_v10_warn_injects_once_on_the_third_reasoning_only_call():
    """With escalate warn, three reasoning-only calls send exactly one warning, on the third call."""
    config = ThinkingLoopGuardConfig(min_reasoning_chars=256, escalate="warn")
    verdicts = guard_verdicts(config, [(F, R("angle one")), (F, R("angle two")), (F, R("angle three"))])
    sent = [(i, v) for i, call in enumerate(verdicts, start=1) for v in call if v.message is not None]
    assert [(i, v.action, v.rule) for i, v in sent] == [(3, "warn", "reasoning-only")]
    assert sent[0][1].message == (
        "The agent has produced several long reasoning-only calls with no output. If this continues it "
        "will be interrupted."
    )


def test_v10_warn_at_the_vector_minimum_of_64_characters():
    """The warn vector holds at min_reasoning_chars 64 too (config built past validation)."""
    config = ThinkingLoopGuardConfig(min_reasoning_chars=64, escalate="warn")
    verdicts = guard_verdicts(config, [(F, R("angle one", 100)), (F, R("angle two", 100)),
                                       (F, R("angle three", 100))])
    assert [[v.action for v in call] for call in verdicts] == [["none"], ["none"], ["warn"]]
