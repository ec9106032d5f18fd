"""Tool-name patterns (only `*` is special) match like an fnmatch-style reference, in linear time."""

from __future__ import annotations

import fnmatch
import random
import time

from otelguard.detectors.repeat import ToolFilter


def test_patterns_answer_like_the_fnmatch_reference_on_random_inputs():
    """On 20 000 random patterns of a, b and * against random names of a and b, include matches
    exactly when fnmatchcase does (no other special characters in play)."""
    rng = random.Random(17)
    for _ in range(20_000):
        pattern = "".join(rng.choice("ab*") for _ in range(rng.randrange(1, 8)))
        name = "".join(rng.choice("ab") for _ in range(rng.randrange(0, 10)))
        assert ToolFilter(include=(pattern,)).tracks(name) is fnmatch.fnmatchcase(name, pattern), (pattern, name)


def test_exclude_wins_and_names_without_star_are_exact():
    """`search` matches only `search`; `web_*` its prefix; exclude beats include."""
    tools = ToolFilter(include=("search", "web_*"), exclude=("web_admin*",))
    assert [tools.tracks(n) for n in ("search", "search2", "web_get", "web_", "web_admin_x", "xweb_get")] == \
        [True, False, True, True, False, False]


def test_a_pathological_pattern_does_not_backtrack():
    """`*a*a*a*b` against 300 a's (no b: the worst case for a backtracking matcher, about 0.59 s a
    call) is decided a hundred times in a fraction of that one call (a generous bound: not a
    benchmark, a check that matching stays linear)."""
    tools = ToolFilter(include=("*a*a*a*b",))
    name = "a" * 300
    started = time.perf_counter()
    for _ in range(100):
        assert tools.tracks(name) is False
    assert time.perf_counter() - started < 0.25
