"""`otelguard analyze --html FILE`: the analyzer's judged spans as a report's plain values
(`otelguard.report`), and the page written from them.

`HtmlReport.observe` is handed to `analyze(..., observe=...)` and sees every judged span as the
findings do; the page's summary and coverage lines are the text report's.
"""

from __future__ import annotations

import os
from typing import Any

from ..conventions import model_name
from ..engine import Judged
from ..engine.loop_spend import LoopSpend, LoopStep
from ..model.records import ModelCall, SpanKind, SpanView, Status, ToolCall, Verdict
from ..report.html import write_html
from ..report.model import LoopMark, Overview, Spend, Step, StepVerdict, Text
from ..report.store import ReportStore
from ..report.model import CONTENT_CHARS
from ..report.text import YELLOW
from .report import coverage_lines, summary_lines, verdict_counts
from ..model.records import is_counting
from .results import describe, summarize
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
            self.store.add_step(agent.key, agent.name, self._step(span, judged, kind))

    def _step(self, span: SpanView, judged: Judged, kind: SpanKind) -> Step:
        record = judged.record
        arguments = output = None
        name: str | None = None
        if isinstance(record, ToolCall):
            name = record.name
            if self.content:
                what = describe(summarize(record))[0]
                arguments = Text.of(record.arguments) if record.arguments is not None else None
                result = record.result if record.result is not None else record.error_message
                output = Text.of(result) if result is not None else None
            else:  # (the text report's line quotes the arguments)
                what = (name or "(unnamed tool)") + (" · error" if record.status == Status.ERROR else "")
        else:
            name = model_name(span, judged.classification)
            what = describe(summarize(record, name))[0]
            if self.content and isinstance(record, ModelCall) and record.has_output is not None:
                output = _model_output(record)
        error = getattr(record, "status", None) == Status.ERROR
        verdicts = tuple(self._verdict(verdict, judged.loop_steps) for verdict in judged.shown)
        return Step(judged.step, kind.value, span.name, name, what, span.start_ns, span.end_ns, error,
                    arguments, output, verdicts)

    def _verdict(self, verdict: Verdict, loop_steps: tuple[LoopStep, ...]) -> StepVerdict:
        loop = next((each for each in loop_steps if each.verdict is verdict), None)
        mark = None if loop is None else LoopMark(loop.key, loop.started, loop.acted, _spend(loop.spend))
        action = str(verdict.action)
        return StepVerdict(verdict.guard, verdict.verdict, verdict.rule, action, action != "none",
                           is_counting(verdict), verdict.message if self.content else None,
                           tuple(entry.step for entry in verdict.evidence), verdict_counts(verdict), mark)

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


def _spend(spend: LoopSpend) -> Spend:
    return Spend(spend.input_tokens, spend.output_tokens, spend.cost_usd, spend.unpriced)


def _model_output(record: ModelCall) -> Text:
    """What the model wrote: its reasoning, its text and the tool calls it asked for, the first
    `CONTENT_CHARS` characters of them joined (each part cut first: a long reasoning is not copied)."""
    parts = []
    if record.reasoning:
        parts.append(("[reasoning]\n", record.reasoning))
    if record.text:
        parts.append(("", record.text))
    for call in record.tool_calls:
        parts.append((f"[tool call] {call.name or '?'} ", call.arguments or ""))
    length = 0
    head = []
    for at, (prefix, text) in enumerate(parts):
        separator = "\n\n" if at else ""
        length += len(separator) + len(prefix) + len(text)
        head.append(separator + prefix + text[:CONTENT_CHARS])
    return Text("".join(head)[:CONTENT_CHARS], length)
