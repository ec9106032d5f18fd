"""`text-loop`: an agent run whose text-only answers keep restating each other while no tool is called.

The thinking-loop rule judges reasoning of at least `min_reasoning_chars`; an agent whose every
action its own parser rejects answers in short text instead, call after call, and never reaches
that floor. Within one agent run, each text-only answer (visible text, no tool call) is compared
with the one before: a tool call or a new run ends the streak. Two shapes trip it:
- near-identical: `repeats` answers in a row, each at least `similarity` similar to the one before;
- restating: `streak` answers in a row, each at least `streak_similarity` similar to the one before.
Similarity is the seed's containment of 4-character windows (of the lowercased text with its spacing
collapsed), exact up to SKETCH_SIZE distinct windows and sampled beyond; answers too short to have
a window are similar only when equal.

State per run: one bounded sketch of the previous answer (its text, when it is too short to have a
window), two counters and the steps of the streak's last answers (its evidence); its own: the
thinking rule's `stalled`, `fires` and gram state are never touched.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from .evidence import StepTrail
from .text import gram_hashes, grams
from .thinking import estimated_containment, sketch

TEXT_LOOP = "text-loop"
SKETCH_SIZE = 64
MAX_ANSWER_CHARS = 4096  # an answer is compared on its first this many characters


@dataclass(slots=True, frozen=True)
class TextLoopJudgement:
    answers: int  # answers in the streak that tripped (counting this one)
    fire: bool  # react now (false once max_fires reactions were sent)
    before: tuple[tuple[int, int], ...] = ()  # (step, span id) of the streak's earlier answers, oldest first


class TextLoopState:
    """One agent run's text-only answers. Not thread-safe: the caller serialises calls per agent."""

    __slots__ = ("_previous", "_previous_size", "near", "restating", "fires", "trail")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        # The previous answer (normalised): its sketch, or its text when it has no 4-character window.
        self._previous: array | str | None = None
        self._previous_size = 0  # the sketched answer's count of distinct windows
        self.near = self.restating = 0  # the streaks ending at the previous answer (answers in them)
        self.fires = 0
        self.trail: StepTrail | None = None  # the streaks' last answers, made with the first answer

    def tool_called(self) -> None:
        self._previous = None
        self.near = self.restating = 0
        self.trail = None


class TextLoopDetector:
    __slots__ = ("repeats", "similarity", "streak", "streak_similarity", "max_fires")

    def __init__(self, *, repeats: int = 3, similarity: float = 0.8, streak: int = 5,
                 streak_similarity: float = 0.4, max_fires: int = 4):
        self.repeats, self.similarity = repeats, similarity
        self.streak, self.streak_similarity = streak, streak_similarity
        self.max_fires = max_fires

    def observe(self, state: TextLoopState, text: str, *, step: int = 0, span_id: int = 0) -> TextLoopJudgement | None:
        """A text-only answer of the run (step `step`, in span `span_id`); a judgement when it completes
        a streak."""
        normal = " ".join(text[:MAX_ANSWER_CHARS].lower().split())
        previous = state._previous
        windows = grams(normal)
        if not windows:  # similar only to an equal answer (kept as text: it is that short)
            similar = 1.0 if previous == normal else 0.0
            state._previous = normal
        else:
            hashes = gram_hashes(windows)
            similar = estimated_containment(previous, state._previous_size, hashes, len(windows)) \
                if isinstance(previous, array) else 0.0
            state._previous, state._previous_size = sketch(hashes, SKETCH_SIZE), len(windows)
        state.near = state.near + 1 if similar >= self.similarity else 1
        state.restating = state.restating + 1 if similar >= self.streak_similarity else 1
        trail = state.trail
        if trail is None:
            trail = state.trail = StepTrail()
        if max(state.near, state.restating) == 1:
            trail.restart(step, span_id)
        else:
            trail.add(step, span_id)
        answers = 0
        if state.near >= self.repeats:
            answers = state.near
        elif state.restating >= self.streak:
            answers = state.restating
        if not answers:
            return None
        before = tuple(trail.pairs(answers)[:-1])
        state.near = state.restating = 0  # a further reaction takes another full streak
        state.trail = None
        fire = state.fires < self.max_fires
        state.fires += fire
        return TextLoopJudgement(answers, fire, before)

