"""A judged span as the HTML report's plain values (`otelguard.report.model.Step`): what the page shows
of a model or tool call and its verdicts, read from the engine's `Judged` (its record, verdicts and
loop spend). Shared by the drivers that fill a report: `analyze --html` (`html_report`) and the live
page of `otelguard serve` (`service.page`).
"""

from __future__ import annotations

from ..conventions import model_name
from ..engine import Judged
from ..engine.loop_spend import LoopSpend, LoopStep
from ..model.records import ModelCall, SpanKind, SpanView, Status, ToolCall, Verdict
from ..report.model import CONTENT_CHARS, LoopMark, Spend, Step, StepVerdict, Text
from ..model.records import is_counting
from .results import describe, summarize, verdict_counts


def report_step(span: SpanView, judged: Judged, kind: SpanKind, *, content: bool = True) -> Step:
    """A judged model or tool span as a report's step. `content` False leaves out arguments, results,
    model output and the guard's messages (they quote them)."""
    record = judged.record
    arguments = output = None
    name: str | None = None
    if isinstance(record, ToolCall):
        name = record.name
        if content:
            what = describe(summarize(record))[0]
            arguments = Text.of(record.arguments) if record.arguments is not None else None
            result = record.result if record.result is not None else record.error_message
            output = Text.of(result) if result is not None else None
        else:  # (the text report's line quotes the arguments)
            what = (name or "(unnamed tool)") + (" · error" if record.status == Status.ERROR else "")
    else:
        name = model_name(span, judged.classification)
        what = describe(summarize(record, name))[0]
        if content and isinstance(record, ModelCall) and record.has_output is not None:
            output = model_output(record)
    error = getattr(record, "status", None) == Status.ERROR
    verdicts = tuple(step_verdict(verdict, judged.loop_steps, content=content) for verdict in judged.shown)
    return Step(judged.step, kind.value, span.name, name, what, span.start_ns, span.end_ns, error,
                arguments, output, verdicts)


def step_verdict(verdict: Verdict, loop_steps: tuple[LoopStep, ...], *, content: bool = True) -> StepVerdict:
    loop = next((each for each in loop_steps if each.verdict is verdict), None)
    mark = None if loop is None else LoopMark(loop.key, loop.started, loop.acted, report_spend(loop.spend))
    action = str(verdict.action)
    return StepVerdict(verdict.guard, verdict.verdict, verdict.rule, action, action != "none",
                       is_counting(verdict), verdict.message if content else None,
                       tuple(entry.step for entry in verdict.evidence), verdict_counts(verdict), mark)


def report_spend(spend: LoopSpend) -> Spend:
    return Spend(spend.input_tokens, spend.output_tokens, spend.cost_usd, spend.unpriced)


def model_output(record: ModelCall) -> Text:
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
