"""`thinking-loop-guard`: thinking loops across calls, and the mid-stream breaker within one call."""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

from ..actions import Action
from ..detectors.stream import StreamBreaker, Trip, judge_final_text
from ..detectors.thinking import DETAILS, Step, ThinkingLoopDetector
from ..guard_ids import THINKING_LOOP_GUARD
from ..records import ModelCall, SpanView, Verdict
from .base import Guard, ModelFacts

if TYPE_CHECKING:  # the config classes need pydantic: guards are built from validated values
    from ..config import ThinkingLoopGuardConfig

THINKING_LOOP = "thinking_loop"
REPETITIVE_OUTPUT = "repetitive_output"


def break_correction_text(chars: int) -> str:
    return (
        f"Your output had repeated itself for {chars} characters without progressing, so the response "
        "was cut off mid-stream. Do not resume the repetition: state the conclusion once, briefly, and "
        "then either call a tool or finish the answer."
    )


class ThinkingLoopGuard(Guard):
    id = THINKING_LOOP_GUARD

    def __init__(self, config: ThinkingLoopGuardConfig):
        self.config = config
        # Shorter final text cannot hold the cycle rule's span; shorter reasoning is not judged.
        self.judged_text_chars = config.min_repeated_cycle_chars if config.max_repeated_cycle_chars else math.inf
        self.judged_reasoning_chars = config.min_reasoning_chars
        # The detector's settings read from the config once: every new agent makes a detector.
        self._new_detector = functools.partial(
            ThinkingLoopDetector, max_thinking_steps=config.max_thinking_steps,
            min_reasoning_chars=config.min_reasoning_chars, repeat_ratio=config.repeat_ratio,
            similarity_threshold=config.similarity_threshold, max_fires=config.max_fires,
        )

    def new_state(self) -> ThinkingLoopDetector:
        return self._new_detector()

    # --- mid-stream breaker -------------------------------------------------------------------
    def new_breaker(self) -> StreamBreaker:
        c = self.config
        return StreamBreaker(
            max_repeated_text=c.max_repeated_text, max_repeated_cycle_chars=c.max_repeated_cycle_chars,
            min_repeated_cycle_chars=c.min_repeated_cycle_chars,
        )

    def break_verdict(self, trip: Trip, *, cut: bool) -> Verdict:
        """The verdict of a tripped breaker; `cut` when the stream is (or was) ended by it."""
        message = break_correction_text(trip.chars) if cut and self.config.break_correction else None
        return Verdict(
            self.id, REPETITIVE_OUTPUT, trip.rule, Action.BREAK if cut else Action.NONE, message,
            stream_chars=trip.chars, error_code=self.config.break_code if cut else None,
        )

    # --- after the call ----------------------------------------------------------------------
    def on_model_end(self, state: ThinkingLoopDetector, call: ModelCall, span: SpanView,
                     facts: ModelFacts) -> list[Verdict]:
        verdicts: list[Verdict] = []
        if facts.live_trip is not None:
            # Already reported when it tripped; the engine shows it on the span.
            if facts.live_trip.action == Action.BREAK:
                return verdicts  # a cut call is not judged as a thinking step
        else:
            stream_verdict = self._judge_recorded_output(call)
            if stream_verdict is not None:
                verdicts.append(stream_verdict)
                if stream_verdict.action == Action.BREAK:
                    return verdicts
        has_output = call.has_output
        # Output not captured: do not claim "no output" without evidence.
        judgement = state.observe(True if has_output is None else has_output, call.reasoning)
        if judgement is None:
            return verdicts
        if judgement.step is Step.PROGRESS:
            return verdicts
        action, message = Action.NONE, None
        if judgement.fire:
            action, message = self._reaction(judgement.step)
        verdicts.append(Verdict(self.id, THINKING_LOOP, judgement.step.value, action, message,
                                thinking_stalled=judgement.stalled))
        return verdicts

    def _judge_recorded_output(self, call: ModelCall) -> Verdict | None:
        """Replay recorded chunk text delta by delta; without any, judge the final text once."""
        text_chunks = [chunk.text for chunk in call.chunks if chunk.kind == "text"]
        if text_chunks:
            breaker = self.new_breaker()
            for index, delta in enumerate(text_chunks):
                trip = breaker.push(delta)
                if trip is not None:
                    # Recorded chunks that stop right at the trip are a stream the breaker cut live.
                    return self.break_verdict(trip, cut=index == len(text_chunks) - 1)
            trip = breaker.finish()
            return self.break_verdict(trip, cut=False) if trip else None
        trip = judge_final_text(
            call.text, max_repeated_cycle_chars=self.config.max_repeated_cycle_chars,
            min_repeated_cycle_chars=self.config.min_repeated_cycle_chars,
        )
        return self.break_verdict(trip, cut=False) if trip else None

    def _reaction(self, step: Step) -> tuple[Action, str | None]:
        detail = DETAILS[step]
        escalate = self.config.escalate
        if escalate == "warn":
            return Action.WARN, f"The agent has produced {detail}. If this continues it will be interrupted."
        if escalate == "steer":
            return Action.STEER, (
                f"You are repeating the same reasoning without acting ({detail}). Stop deliberating and "
                "either call a tool or produce a concise answer now."
            )
        return Action.CANCEL, self.config.cancel_cause
