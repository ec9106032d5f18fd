"""Language-agnostic text measures over fixed 4-character windows (CJK needs no whitespace)."""

from __future__ import annotations

from zlib import crc32

GRAM = 4


def grams(text: str) -> frozenset[str]:
    """The set of distinct 4-character windows of `text`."""
    return frozenset(map("".join, zip(text, text[1:], text[2:], text[3:])))


def containment(a: frozenset[str], b: frozenset[str]) -> float:
    """|small ∩ large| / |small|: how much of the smaller set reappears in the larger one."""
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    if not small:
        return 0.0
    return len(small & large) / len(small)


def repeat_ratio(text: str) -> float:
    """Share of 4-character windows already seen earlier in the same text; 0 under 16 chars."""
    return repeat_ratio_of(len(text), len(grams(text)) if len(text) >= 16 else 0)


def repeat_ratio_of(length: int, distinct: int) -> float:
    """repeat_ratio from a text's length and its count of distinct 4-grams (when the set is at hand)."""
    total = length - GRAM + 1
    if length < 16 or total <= 0:
        return 0.0
    return (total - distinct) / total


def gram_hashes(windows: frozenset[str]) -> set[int]:
    """Stable 32-bit hashes of distinct 4-character windows.

    Stable across processes (unlike `hash`, which is salted per process), so the offline analyzer
    and the live guard sample the same windows and reach the same verdict.
    """
    try:  # in C: without surrogates, strict UTF-8 is the same bytes (and the fast default)
        return set(map(crc32, map(str.encode, windows)))
    except UnicodeEncodeError:  # a lone surrogate (from JSON text, say)
        return {crc32(window.encode("utf-8", "surrogatepass")) for window in windows}
