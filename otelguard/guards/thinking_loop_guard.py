"""`thinking-loop-guard`: thinking loops across calls, and the mid-stream breaker within one call."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import replace

from ..model.actions import Action
from ..detectors.evidence import StepTrail, of_model_call, pattern, steps_text
from ..detectors.novelty import NoveltyMeter
from ..detectors.repeat import any_of
from ..detectors.stream import StreamBreaker, Trip, judge_final_text
from ..detectors.text_loop import TEXT_LOOP, TextLoopDetector, TextLoopState
from ..detectors.thinking import DETAILS, Step, ThinkingLoopDetector, ThinkingRules
from ..model.records import Evidence, ModelCall, SpanView, ToolCall, Verdict
from .settings import ThinkingLoopGuardConfig
from .base import Guard, ModelFacts

THINKING_LOOP = "thinking_loop"
REPETITIVE_OUTPUT = "repetitive_output"


def break_correction_text(chars: int) -> str:
    return (
        f"Your output had repeated itself for {chars} characters without progressing, so the response "
        "was cut off mid-stream. Do not resume the repetition: state the conclusion once, briefly, and "
        "then either call a tool or finish the answer."
    )


def text_loop_text(answers: int, evidence: tuple[Evidence, ...] = ()) -> str:
    """The text-loop rule's message, naming the answers' steps (a rule beyond the seed's: its evidence
    is in its message; the answers themselves are not quoted back)."""
    steps = f" (steps {steps_text(evidence)})" if evidence else ""
    return (
        f"You have given {answers} text-only answers in a row that restate each other{steps}, and no tool "
        "was called. Do not repeat that answer: if you meant to act, call the tool in the required format; "
        "otherwise give one final answer that adds something new."
    )


class ThinkingState:
    """An agent's state: the seed rule's detector, kept for the agent's lifetime, with the steps of its
    current stall (while there is one), and the text-loop rule's own, reset with every run. Neither
    rule reads or writes the other's."""

    __slots__ = ("detector", "stalls", "text_loop")

    def __init__(self, detector: ThinkingLoopDetector, text_loop: TextLoopState | None):
        self.detector = detector
        self.stalls: StepTrail | None = None
        self.text_loop = text_loop


class ThinkingLoopGuard(Guard):
    id = ThinkingLoopGuardConfig.guard_id

    def __init__(self, config: ThinkingLoopGuardConfig):
        self.config = config
        c = config
        self._exempt = any_of(c.exempt_tools)
        self._novelty = c.min_novelty > 0
        self._text_loop = TextLoopDetector(
            repeats=c.text_loop_repeats or 10**9, similarity=c.text_loop_similarity,
            streak=c.text_loop_streak or 10**9, streak_similarity=c.text_loop_streak_similarity,
            max_fires=c.max_fires,
        ) if c.text_loop_repeats or c.text_loop_streak else None
        # The detector's settings read from the config once, shared by every new agent's detector.
        self._new_detector = functools.partial(ThinkingLoopDetector, ThinkingRules(
            max_thinking_steps=c.max_thinking_steps, min_reasoning_chars=c.min_reasoning_chars,
            repeat_ratio=c.repeat_ratio, similarity_threshold=c.similarity_threshold, max_fires=c.max_fires,
        ))

    def new_state(self) -> ThinkingState:
        return ThinkingState(self._new_detector(), TextLoopState() if self._text_loop is not None else None)

    def on_agent_run(self, state: ThinkingState) -> None:
        """A new run: the text-loop streak starts afresh (the seed rule's state outlives runs)."""
        if state.text_loop is not None:
            state.text_loop.reset()

    def on_tool_end(self, state: ThinkingState, call: ToolCall, span: SpanView,
                    timed_out_ms: float | None, *, step: int = 0) -> list[Verdict]:
        """A tool call ended: the text-loop streak ends with it."""
        if state.text_loop is not None:
            state.text_loop.tool_called()
        return []

    # --- mid-stream breaker -------------------------------------------------------------------
    def _character_rules(self, *, reasoning: bool) -> dict[str, int]:
        """The character rules' settings, as StreamBreaker and judge_final_text take them: a call's
        text gets them all; its reasoning long cycles only (the seed's rules judge reasoning after
        the call, as thinking steps)."""
        c = self.config
        return {"max_repeated_cycle_chars": 0 if reasoning else c.max_repeated_cycle_chars,
                "min_repeated_cycle_chars": c.min_repeated_cycle_chars,
                "max_structured_repeat_chars": c.max_structured_repeat_chars,
                "max_long_cycle_chars": c.max_long_cycle_chars, "long_cycle_repeats": c.long_cycle_repeats}

    def new_breaker(self) -> StreamBreaker:
        """The breaker of a call's visible text."""
        c = self.config
        return StreamBreaker(max_repeated_text=c.max_repeated_text, **self._character_rules(reasoning=False),
                             novelty=self._novelty_meter() if c.low_novelty_action == "break" else None)

    def new_reasoning_breaker(self) -> StreamBreaker | None:
        """The breaker of a call's reasoning: long cycles (and novelty, when it cuts) only. None when
        neither applies."""
        c = self.config
        cuts_on_novelty = c.low_novelty_action == "break" and self._novelty
        if not c.max_long_cycle_chars and not cuts_on_novelty:
            return None
        return StreamBreaker(max_repeated_text=0, **self._character_rules(reasoning=True),
                             novelty=self._novelty_meter() if cuts_on_novelty else None)

    def _novelty_meter(self) -> NoveltyMeter | None:
        c = self.config
        return NoveltyMeter(window=c.novelty_window, n=c.novelty_ngram, min_novelty=c.min_novelty) if self._novelty else None

    def break_verdict(self, trip: Trip, *, cut: bool) -> Verdict:
        """The verdict of a tripped breaker; `cut` when the stream is (or was) ended by it."""
        message = break_correction_text(trip.chars) if cut and self.config.break_correction else None
        return Verdict(
            self.id, REPETITIVE_OUTPUT, trip.rule, Action.BREAK if cut else Action.NONE, message,
            stream_chars=trip.chars, error_code=self.config.break_code if cut else None,
        )

    # --- after the call ----------------------------------------------------------------------
    def on_model_end(self, state: ThinkingState, call: ModelCall, span: SpanView,
                     facts: ModelFacts, *, step: int = 0) -> list[Verdict]:
        verdicts: list[Verdict] = []
        if facts.live_trip is not None:
            # Already reported when it tripped; the engine shows it on the span.
            if facts.live_trip.action == Action.BREAK:
                return verdicts  # a cut call is not judged as a thinking step
        else:
            stream_verdict = self._judge_recorded_output(call)
            if stream_verdict is not None:
                # Its evidence is the call whose output repeated itself.
                verdicts.append(replace(stream_verdict, evidence=(
                    of_model_call(step, span.span_id, call.text or call.reasoning),)))
                if stream_verdict.action == Action.BREAK:
                    return verdicts
        has_output = call.has_output
        if not self._asks_exempt_tool(call):
            stalled = self._judge_thinking_step(state, call, span, step)
            if stalled is not None:
                verdicts.append(stalled)
        if state.text_loop is not None and has_output:
            text_loop = self._judge_text_only_answer(state.text_loop, call, span, step)
            if text_loop is not None:
                verdicts.append(text_loop)
        return verdicts

    def _asks_exempt_tool(self, call: ModelCall) -> bool:
        exempt = self._exempt
        return any(requested.name is not None and exempt(requested.name) for requested in call.tool_calls)

    def _judge_thinking_step(self, state: ThinkingState, call: ModelCall, span: SpanView, step: int) -> Verdict | None:
        """The seed's thinking rules; a stall's evidence is the stalled calls (the last of a longer stall)."""
        has_output = call.has_output
        # Output not captured: do not claim "no output" without evidence.
        judgement = state.detector.observe(True if has_output is None else has_output, call.reasoning)
        if judgement is None:
            return None
        if judgement.step is Step.PROGRESS:
            state.stalls = None
            return None
        stalls = state.stalls
        if stalls is None or judgement.stalled == 1:  # (a reaction restarts the count of stalled calls)
            stalls = state.stalls = StepTrail()
        stalls.add(step, span.span_id)
        evidence = pattern(stalls.pairs()[:-1], of_model_call(step, span.span_id, call.reasoning))
        action, message = Action.NONE, None
        if judgement.fire:
            action, message = self._reaction(judgement.step)
        return Verdict(self.id, THINKING_LOOP, judgement.step.value, action, message,
                       thinking_stalled=judgement.stalled, evidence=evidence)

    def _judge_text_only_answer(self, state: TextLoopState, call: ModelCall, span: SpanView,
                                step: int) -> Verdict | None:
        """The text-loop rule: a tool call asked for ends the streak (whether or not the tool then runs:
        a framework may reject the call); a text-only answer whose reasoning is below the seed rule's
        floor (what the seed rule judges is its own) extends or starts one."""
        if call.tool_calls:
            state.tool_called()
            return None
        detector = self._text_loop
        if detector is None or len(call.reasoning) >= self.config.min_reasoning_chars:
            return None
        judgement = detector.observe(state, call.text, step=step, span_id=span.span_id)
        if judgement is None:
            return None
        evidence = pattern(judgement.before, of_model_call(step, span.span_id, call.text))
        action, message = Action.NONE, None
        if judgement.fire and self.config.text_loop_action != "none":
            action, message = self._reaction_to_text_loop(judgement.answers, evidence)
        return Verdict(self.id, THINKING_LOOP, TEXT_LOOP, action, message, evidence=evidence)

    def _judge_recorded_output(self, call: ModelCall) -> Verdict | None:
        """Replay recorded chunks delta by delta, as `watch_stream` fed them live (text to the text
        breaker, reasoning to the reasoning breaker); what no chunk was recorded of is judged once,
        whole: the final text, the final reasoning. Of a longer stream, the chunks read are its last
        (`conventions.READ_LIMITS`): a trip's characters still count from the stream's start."""
        chunks = call.chunks
        kinds = {chunk.kind for chunk in chunks}
        if kinds:
            breaker, reasoning_breaker = self.new_breaker(), None
            skipped = {"text": 0, "reasoning": 0}
            last = len(chunks) - 1
            for index, chunk in enumerate(chunks):
                if chunk.kind == "reasoning":
                    if reasoning_breaker is None:
                        reasoning_breaker = self.new_reasoning_breaker()
                    feed = reasoning_breaker
                else:
                    feed = breaker if chunk.kind == "text" else None
                skipped[chunk.kind] = skipped.get(chunk.kind, 0) + chunk.skipped
                trip = feed.push(chunk.text) if feed is not None else None
                if trip is not None:
                    # Recorded chunks that stop right at the trip are a stream the breaker cut live.
                    return self.break_verdict(_after(trip, skipped[chunk.kind]), cut=index == last)
            trip = breaker.finish()
            if trip is not None:
                return self.break_verdict(_after(trip, skipped["text"]), cut=False)
            trip = reasoning_breaker.finish() if reasoning_breaker is not None else None
            if trip is not None:
                return self.break_verdict(_after(trip, skipped["reasoning"]), cut=False)
        c = self.config
        for kind in ("text", "reasoning"):
            reasoning = kind == "reasoning"
            if kind in kinds:
                if not self._novelty or c.low_novelty_action == "break":
                    continue  # the replay judged it all
                # Novelty that does not cut is judged on the whole text, not mid-stream.
                text = "".join(chunk.text for chunk in chunks if chunk.kind == kind)
                rules = {}
            else:
                text = call.reasoning if reasoning else call.text
                rules = self._character_rules(reasoning=reasoning)
            trip = judge_final_text(text, novelty=self._novelty_meter(), **rules)
            if trip is not None:
                return self.break_verdict(trip, cut=False)
        return None

    def _reaction_to_text_loop(self, answers: int, evidence: tuple[Evidence, ...]) -> tuple[Action, str | None]:
        action = self.config.text_loop_action
        if action == "cancel":
            return Action.CANCEL, self.config.cancel_cause
        text = text_loop_text(answers, evidence)
        return (Action.WARN, text + " If this continues it will be interrupted.") if action == "warn" \
            else (Action.STEER, text)

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


def _after(trip: Trip, skipped: int) -> Trip:
    """`trip`, of a breaker fed a stream's chunks from after its first `skipped` characters, counted
    from the stream's start."""
    return dataclasses.replace(trip, chars=trip.chars + skipped) if skipped else trip
