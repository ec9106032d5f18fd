"""What a judged model or tool call was, in words and as the reports' plain values: `summarize` keeps
what `describe` puts into words (the analyzer's text and JSON reports), `verdict_counts` a verdict's
counts, and `report_step` a judged span as the HTML report's `Step`. Shared by the drivers that report
steps: `otelguard analyze` (text, JSON and `--html`) and the live page of `otelguard serve`.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

from ..conventions import model_name
from ..engine import Judged
from ..engine.loop_spend import LoopSpend, LoopStep
from ..model.actions import Action
from ..model.canonical import arguments_preview
from ..model.records import Content, ModelCall, SpanKind, SpanView, Status, ToolCall, Verdict, is_counting
from .model import CONTENT_CHARS, LoopMark, Spend, Step, StepVerdict, Text
from .text import number

_PREVIEW_CHARS = 60
_FACT_PREVIEW_CHARS = 500  # arguments kept per listed step (the report is not an archive of the input)
_TOOL, _MODEL = "tool", "model"  # the first item of a step's summary
_NAME = attrgetter("name")


def verdict_counts(verdict: Verdict) -> str:
    """A verdict's counts as the reports write them: "count 3 · stalled 2"."""
    parts = []
    if verdict.repeat_count is not None:
        parts.append(f"count {number(verdict.repeat_count)}")
    if verdict.thinking_stalled is not None:
        parts.append(f"stalled {number(verdict.thinking_stalled)}")
    if verdict.stream_chars is not None:
        parts.append(f"chars {number(verdict.stream_chars)}")
    if verdict.error_code is not None:
        parts.append(f"code {verdict.error_code}")
    return " · ".join(parts)


def summarize(record: Any, model: str | None = None) -> tuple[Any, ...]:
    """What `describe` needs of a record (and, for a model call, the model's name), kept per listed
    step: lengths and bounded previews, not the text; plain values (enums as their strings), so that a
    step can be spooled. Put into words (`describe`) only when shown."""
    if isinstance(record, ToolCall):
        arguments, previews = record.arguments, None
        if arguments is not None:  # bounded previews, not the arguments (which may be long)
            is_json = record.arguments_content is Content.OK
            previews = (arguments_preview(arguments, _FACT_PREVIEW_CHARS, is_json) if arguments else None,
                        arguments_preview(arguments, _PREVIEW_CHARS, is_json))
        return (_TOOL, record.name, previews, record.arguments_content.value, record.status.value, record.denied)
    if isinstance(record, ModelCall):
        chunks = record.chunks
        return (_MODEL, model, len(record.reasoning), len(record.text),
                tuple(map(_NAME, record.tool_calls)), record.has_output, record.output_content.value,
                sum(1 for chunk in chunks if chunk.kind == "text") if chunks else 0, record.chunk_events,
                record.dropped_events, record.status.value)
    return ()


def describe(summary: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """What a step was (its `summarize`d record), as one short line and as JSON facts."""
    if not summary:
        return "", {}
    if summary[0] == _TOOL:
        _, name, arguments, arguments_content, status, denied = summary
        facts: dict[str, Any] = {
            "tool": name,
            "arguments": arguments[0] if arguments is not None else None,
            "arguments_content": arguments_content,
            "status": status,
        }
        name = name or "(unnamed tool)"
        if arguments is None:
            what = f"{name} (arguments not captured)"
        else:
            what = f"{name} {arguments[1]}"
        if denied:
            what += " · denied"
            facts["denied"] = True
        elif status == Status.ERROR:
            what += " · error"
        return what, facts
    (_, model, reasoning_chars, text_chars, tool_calls, has_output, output_content, text_chunks, chunk_events,
     dropped_events, status) = summary
    facts = {
        "model": model,
        "reasoning_chars": reasoning_chars,
        "text_chars": text_chars,
        "tool_calls_requested": list(tool_calls),
        "has_output": has_output,
        "output_content": output_content,
        "text_chunks": text_chunks,
        "chunk_events": chunk_events,
        "dropped_events": dropped_events,
        "status": status,
    }
    if has_output is None:
        what = "output not captured"
    else:
        what = f"text {text_chars:,} chars"
        if reasoning_chars:
            what = f"reasoning {reasoning_chars:,} chars · {what}"
        if tool_calls:
            what += f" · calls {', '.join(sorted({name or '?' for name in tool_calls}))}"
    if text_chunks:
        what += f" · {text_chunks} chunks"
    elif chunk_events:
        what += f" · {chunk_events} textless chunks"
    if dropped_events:
        what += f" · {dropped_events} dropped"
    if output_content == Content.MALFORMED:
        what += " · unreadable"
    if status == Status.ERROR:
        what += " · error"
    return what, facts


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
    return StepVerdict(verdict.guard, verdict.verdict, verdict.rule, str(verdict.action), verdict.action != Action.NONE,
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
