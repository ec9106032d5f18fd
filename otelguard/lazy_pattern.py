"""Regular expressions compiled on first use.

A pattern compiled at import costs every process that imports its module, whether it is used or not.
A coding-agent CLI starts `otelguard hook` once per tool call, and a hook uses few of the engine's
patterns: the CJK word pattern of `detectors.novelty` alone takes ~19 M instructions to compile, about
5 % of a hook (Python's compiler walks a character range code point by code point).

`lazy_pattern(...)` stands for a module-level `re.compile(...)`: the pattern is compiled when one of
its attributes is first looked up, and keeps that attribute, so later lookups cost what they cost on
the compiled pattern.
"""

from __future__ import annotations

import re
from typing import Any


class _LazyPattern:
    def __init__(self, source: str, flags: int):
        self._source, self._flags = source, flags

    def __getattr__(self, name: str) -> object:  # called only for names not kept yet
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(re.compile(self._source, self._flags), name)
        self.__dict__[name] = value
        return value

    def __repr__(self) -> str:
        return f"lazy_pattern({self._source!r}, {self._flags!r})"


def lazy_pattern(source: str, flags: int = 0) -> Any:
    """`re.compile(source, flags)`, compiled when first used. (Typed `Any`, not `re.Pattern`: it is
    not one, and a compiled module's runtime type checks (mypyc) would refuse it as one.)"""
    return _LazyPattern(source, flags)
