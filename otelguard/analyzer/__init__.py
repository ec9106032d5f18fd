"""The offline analyzer: replay stored OTLP JSON traces through the same guards as the live processor.

    from otelguard.analyzer import analyze
    analysis = analyze(["traces.otlp.jsonl"])
    for row in analysis.verdicts: ...

`otelguard analyze FILE...` (see `otelguard.cli`) is the command-line front end.
"""

from __future__ import annotations

from ..otlp.inputs import InputError
from ..replay.spans import ReplayLimits
from ..model.actions import ACTION_ORDER
from ..model.actions import reaches as action_reaches
from ..model.records import is_counting
from .results import FAIL_ON_CHOICES
from .run import Analysis, AnalyzerOptions, analyze

__all__ = [
    "ACTION_ORDER",
    "FAIL_ON_CHOICES",
    "Analysis",
    "AnalyzerOptions",
    "InputError",
    "ReplayLimits",
    "action_reaches",
    "analyze",
    "is_counting",
]
