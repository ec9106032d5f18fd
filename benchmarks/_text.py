"""Deterministic prose for the benchmarks: English-like, never an exact short cycle, seeded."""

from __future__ import annotations

import random

_WORDS = (
    "the a an this that model agent tool call result error test file line function value state "
    "check run build parse read write compare retry wait think consider maybe perhaps because so "
    "then next first second finally however although while if when should could would must "
    "output input argument return branch loop cache index query table column row key map list "
    "weather city paris london tokyo temperature forecast rain sunny wind degrees metric report "
    "user request answer question summary detail step plan approach option alternative reason "
    "is are was were be been has have had do does did not no yes all some any each every more less"
).split()
_PUNCT = (".", ",", ";", ":", "?", "!")


def prose(chars: int, seed: int = 0) -> str:
    """`chars` characters of word-salad prose from a seeded RNG (different seeds, different text)."""
    rng = random.Random(seed)
    words = _WORDS
    out: list[str] = []
    length = 0
    sentence = 0
    while length < chars:
        word = rng.choice(words)
        if sentence == 0:
            word = word.capitalize()
        sentence += 1
        if sentence > rng.randint(6, 18):
            word += rng.choice(_PUNCT) + ("\n" if rng.random() < 0.1 else "")
            sentence = 0
        out.append(word)
        length += len(word) + 1
    return " ".join(out)[:chars]


def deltas(text: str, size: int) -> list[str]:
    """The text cut into `size`-character deltas, as a stream would deliver it."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def random_letters(chars: int, seed: int = 0) -> str:
    """Uniform random lowercase letters and spaces: nearly every 4-character window is distinct."""
    rng = random.Random(seed)
    return "".join(rng.choices("abcdefghijklmnopqrstuvwxyz ", k=chars))
