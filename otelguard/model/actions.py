"""What a verdict asks for, and the one order of strength every part of otelguard uses.

From weakest to strongest: advisory messages (remind, warn), a correction (steer), interventions on
one tool call (block refuses it, abort stops it when its own deadline fires), on one model call
(break cuts the stream) and on the whole turn (cancel). The span a verdict is written on, the
analyzer's `--fail-on` and the metrics all rank actions by this order.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Protocol, TypeVar


class _Judged(Protocol):
    @property
    def action(self) -> str: ...


V = TypeVar("V", bound=_Judged)


class Action(StrEnum):
    NONE = "none"
    REMIND = "remind"
    WARN = "warn"
    STEER = "steer"
    BLOCK = "block"
    ABORT = "abort"
    BREAK = "break"
    CANCEL = "cancel"

    @property
    def rank(self) -> int:
        return _RANK[self]

    @classmethod
    def parse(cls, value: object) -> Action:
        """The action named `value`; NONE for anything that names none (a recorded span's junk)."""
        if not isinstance(value, str):
            return cls.NONE
        try:
            return cls(value)
        except ValueError:
            return cls.NONE


ACTION_ORDER: tuple[Action, ...] = tuple(Action)  # weakest first: the members in definition order
_RANK = {action: rank for rank, action in enumerate(ACTION_ORDER)}


def reaches(action: object, threshold: str) -> bool:
    """True when `action` is at least as strong as `threshold` (an action that names none never is)."""
    parsed = Action.parse(action)
    return parsed is not Action.NONE and parsed.rank >= Action(threshold).rank


def strongest(verdicts: Iterable[V]) -> V:
    """The verdict with the strongest action (the first of equals): the one a span's attributes show."""
    return max(verdicts, key=lambda verdict: Action.parse(verdict.action).rank)
