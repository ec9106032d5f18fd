"""Language-agnostic text measures over fixed 4-character windows (CJK needs no whitespace)."""

from __future__ import annotations

GRAM = 4


def grams(text: str) -> frozenset[str]:
    """The set of distinct 4-character windows of `text`."""
    return frozenset(text[i : i + GRAM] for i in range(len(text) - GRAM + 1))


def containment(a: frozenset[str], b: frozenset[str]) -> float:
    """|small ∩ large| / |small|: how much of the smaller set reappears in the larger one."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if not small:
        return 0.0
    return len(small & large) / len(small)


def repeat_ratio(text: str) -> float:
    """Share of 4-character windows already seen earlier in the same text; 0 under 16 chars."""
    total = len(text) - GRAM + 1
    if len(text) < 16 or total <= 0:
        return 0.0
    distinct = len(grams(text))
    return (total - distinct) / total
