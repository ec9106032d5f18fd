"""`otelguard analyze --html FILE`: the analyzer's judged spans as a report's plain values
(`otelguard.report`), and the page written from them.

`HtmlReport.observe` is handed to `analyze(..., observe=...)` and sees every judged span as the
findings do; the page's summary and coverage lines are the text report's.
"""

from __future__ import annotations

import os
from typing import Any

from ..engine import Judged
from ..model.records import SpanKind, SpanView
from ..report.html import write_html
from ..report.model import Overview
from ..report.store import ReportStore
from ..report.text import YELLOW
from .report import coverage_lines, summary_lines
from ..report.steps import report_step
from .run import Analysis


class HtmlReport:
    """Collects what the page shows while the analysis runs (on disk: `ReportStore`). `content`
    False leaves out arguments, results, model output and the guard's messages (they quote them)."""

    def __init__(self, *, content: bool = True) -> None:
        self.content = content
        self.store = ReportStore()

    def observe(self, span: SpanView, judged: Judged) -> None:
        kind = judged.classification.kind
        agent = judged.agent
        if kind is SpanKind.AGENT:
            self.store.run_ended(agent.key, agent.name)
        elif kind in (SpanKind.MODEL, SpanKind.TOOL):
            self.store.add_step(agent.key, agent.name, report_step(span, judged, kind, content=self.content))

    def write(self, analysis: Analysis, path: str | os.PathLike[str], *, fail_on: str | None = None) -> None:
        """The page, to `path` (replaced)."""
        counts = analysis.coverage
        findings = analysis.findings
        coverage = [_text(line) for line in coverage_lines(analysis)]
        overview = Overview(
            title="otelguard analyze",
            files=list(analysis.files),
            summary_lines=[_text(line)[0] for line in summary_lines(analysis, fail_on)],
            coverage_lines=[text for text, _ in coverage],
            warnings=[warn for _, warn in coverage],
            counts={"runs": counts.kind_total("agent"),
                    "agents": findings.agents_listed + findings.quiet_agents_not_listed,
                    "steps": counts.steps, "verdicts": findings.verdict_count},
            incomplete=counts.incomplete(),
        )
        with open(path, "w", encoding="utf-8", newline="\n") as out:
            write_html(out, overview, self.store, content=self.content)

    def close(self) -> None:
        self.store.close()


def _text(line: Any) -> tuple[str, bool]:
    """A text report line's words, and whether it is a warning (yellow)."""
    if isinstance(line, str):
        return line, False
    return line.text, line.style == YELLOW
