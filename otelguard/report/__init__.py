"""Reports a person reads: one self-contained HTML page of runs, their loops and the guard's verdicts.

Shared by the drivers: each fills a `ReportStore` with plain `model` values from its own records
(`otelguard.analyzer.html_report` for `otelguard analyze --html`), and `write_html` renders it. This
package imports no driver.
"""

from __future__ import annotations

from .html import json_for_html, write_html
from .model import CONTENT_CHARS, LOOKAHEAD_CALLS, LoopMark, Overview, Spend, Step, StepVerdict, Text
from .store import CONTINUED, STOPPED, ReportStore

__all__ = [
    "CONTENT_CHARS",
    "CONTINUED",
    "LOOKAHEAD_CALLS",
    "LoopMark",
    "Overview",
    "ReportStore",
    "STOPPED",
    "Spend",
    "Step",
    "StepVerdict",
    "Text",
    "json_for_html",
    "write_html",
]
