"""`lazy_pattern` answers as the pattern `re.compile` makes (it compiles on first use)."""

from __future__ import annotations

import re

from otelguard.lazy_pattern import lazy_pattern


def test_a_lazy_pattern_matches_searches_and_substitutes_as_the_compiled_one():
    source, text = r"(?P<word>[^\W_]+)", "héllo, wörld_42 — 漢字"
    lazy, compiled = lazy_pattern(source, re.IGNORECASE), re.compile(source, re.IGNORECASE)
    assert [m.group("word") for m in lazy.finditer(text)] == [m.group("word") for m in compiled.finditer(text)]
    assert lazy.sub("<w>", text) == compiled.sub("<w>", text)
    assert lazy.search(text).span() == compiled.search(text).span()
    assert lazy.match(", x") is None and compiled.match(", x") is None
    assert (lazy.pattern, lazy.flags, lazy.groups, lazy.groupindex) == (
        compiled.pattern, compiled.flags, compiled.groups, compiled.groupindex)
