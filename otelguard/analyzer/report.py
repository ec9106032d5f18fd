"""Rendering an `Analysis`: a table per agent, a summary and the coverage block; or one JSON document.

The JSON shape is the contract of design §6: `{"files", "config", "coverage", "agents", "verdicts"}`
(plus `evaluations`, `disagreements` and `summary`). Ids are lowercase hex, as in OTLP/JSON.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Iterator
from typing import IO, Any

from ..detectors.evidence import steps_text
from ..records import Verdict
from ..terminal import printable, printable_json
from .evaluations import RecordedEvaluations
from .results import AgentSummary, Step, is_counting
from .run import Analysis

_SPAN_WIDTH = 28
_WHAT_WIDTH = 60
_VERDICT_WIDTH = 18
_RULE_WIDTH = 17
_ACTION_WIDTH = 7
_NAME_CHARS = 200  # an agent's name or key shown, at most
_SPAN_ID_WIDTH = 16
_EVALUATION_WIDTH = 48
_LABEL_WIDTH = 14
_EVALUATIONS_LISTED = 50  # recorded evaluation events (and disagreements) shown in the text report


def to_json(analysis: Analysis, *, fail_on: str | None = None) -> dict[str, Any]:
    return {key: list(value) if isinstance(value, Iterator) else value
            for key, value in _sections(analysis, fail_on)}


def write_json(analysis: Analysis, out: IO[str], *, fail_on: str | None = None) -> None:
    """`to_json`'s document written to `out` one agent and one verdict at a time: never held whole
    (one agent's listed steps are, while that agent is written)."""
    out.write("{")
    separator = "\n"
    for key, value in _sections(analysis, fail_on):
        out.write(f'{separator}  "{key}": ')
        if isinstance(value, Iterator):
            _write_array(out, value)
        else:
            out.write(printable_json(json.dumps(value, ensure_ascii=False, indent=2)).replace("\n", "\n  "))
        separator = ",\n"
    out.write("\n}\n")


def _sections(analysis: Analysis, fail_on: str | None) -> Iterator[tuple[str, Any]]:
    """The document's keys and values; the long lists as iterators. (The summary is made last.)"""
    findings = analysis.findings
    yield "files", analysis.files
    yield "config", analysis.config.model_dump(mode="json")
    yield "coverage", analysis.coverage.to_json()
    yield "agents", (agent.to_json(findings.steps(agent.key)) for agent in findings.agents())
    yield "verdicts", (row.to_json() for row in findings.verdicts())
    yield "evaluations", (entry.to_json() for entry in analysis.evaluations.entries)
    yield "disagreements", (item.to_json() for item in analysis.evaluations.disagreements)
    yield "summary", summary_json(analysis, fail_on)


def _write_array(out: IO[str], items: Iterator[Any]) -> None:
    out.write("[")
    separator = "\n    "
    for item in items:
        out.write(separator + printable_json(json.dumps(item, ensure_ascii=False)))
        separator = ",\n    "
    out.write("]" if separator == "\n    " else "\n  ]")


def summary_json(analysis: Analysis, fail_on: str | None) -> dict[str, Any]:
    findings = analysis.findings
    by_action = findings.findings_by_action
    return {
        "agents": findings.agents_listed + findings.quiet_agents_not_listed,
        "agents_not_listed": findings.quiet_agents_not_listed,
        "steps_judged": analysis.coverage.steps,
        "verdicts": findings.verdict_count,
        "findings": sum(by_action.values()),
        "findings_by_action": dict(sorted(by_action.items())),
        "fail_on": fail_on,
        "failed": bool(fail_on and analysis.reached(fail_on)),
        "loops": loop_totals(_looping(findings)),
        "evaluations": analysis.evaluations.summary_json(),
    }


def _looping(findings: Any) -> list[Any]:
    """The agents with a loop of model calls (few: each loop is a step with a verdict)."""
    return [agent for agent in findings.agents() if agent.acted_loops]


def loop_totals(agents: Any) -> dict[str, Any]:
    """The loops of model calls the guard acted on over `agents`: how many, their tokens, and their
    price where known."""
    loops = [loop for agent in agents for loop in agent.acted_loops]
    priced = [loop.spend.cost_usd for loop in loops if loop.spend.cost_usd is not None]
    return {
        "count": len(loops),
        "input_tokens": sum(loop.spend.input_tokens for loop in loops),
        "output_tokens": sum(loop.spend.output_tokens for loop in loops),
        "cost_usd": round(sum(priced), 6) if priced else None,
        "unpriced": len(loops) - len(priced),  # model not in genai-prices' table (or it is not installed)
    }


# --- text --------------------------------------------------------------------------------------


def to_text(analysis: Analysis, *, fail_on: str | None = None) -> str:
    out = io.StringIO()
    write_text(analysis, out, fail_on=fail_on)
    return out.getvalue()


def write_text(analysis: Analysis, out: IO[str], *, fail_on: str | None = None) -> None:
    """The tables, summary and coverage block, written a line at a time. Names, paths and problems
    quoted from the input are shown, never obeyed by the terminal (`printable`)."""
    for line in _text_lines(analysis, fail_on):
        out.write(printable(line) + "\n")


def _text_lines(analysis: Analysis, fail_on: str | None) -> Iterator[str]:
    coverage = analysis.coverage
    findings = analysis.findings
    agents = findings.agents_listed + findings.quiet_agents_not_listed
    traces = coverage.buffer.traces_seen if coverage.buffer else 0
    yield (f"otelguard analyze: {_n(len(analysis.files), 'file')}, {_n(coverage.spans_read, 'span')} in "
           f"{_n(traces, 'trace')}, {_n(coverage.steps, 'step')} judged for {_n(agents, 'agent')}")
    for agent in findings.agents():
        if agent.steps_total:
            yield ""
            yield from _agent_table(agent, findings.steps(agent.key))
    if findings.quiet_agents_not_listed:
        yield ""
        yield (f"… {_n(findings.quiet_agents_not_listed, 'more agent')} without any verdict not listed "
               f"({_n(findings.quiet_agents_not_listed_steps, 'step')}; --max-agents)")
    if analysis.evaluations.read:
        yield ""
        yield from _evaluation_lines(analysis.evaluations)
    yield ""
    yield from _summary(analysis, fail_on)
    yield ""
    yield from _coverage(analysis)


def _evaluation_lines(evaluations: RecordedEvaluations) -> Iterator[str]:
    """The recorded evaluation events, each beside the replayed verdict it matches, then the
    disagreements (each list cut at `_EVALUATIONS_LISTED`)."""
    summary = evaluations.summary_json()
    disagreeing = summary["disagreements"]
    yield (f"recorded evaluations (gen_ai.evaluation.result): {_n(summary['read'], 'event')}: {summary['otelguard']} "
           f"by otelguard ({summary['agreeing']} agree with the replay), {summary['other']} by other evaluators "
           f"(listed, not compared); {_n(disagreeing, 'disagreement')}")
    yield (f"  {'span':<{_SPAN_ID_WIDTH}}  {'evaluation':<{_EVALUATION_WIDTH}}  {'recorded':<{_LABEL_WIDTH}}  "
           f"{'replayed':<{_LABEL_WIDTH}}  agent, step")
    for entry in evaluations.entries[:_EVALUATIONS_LISTED]:
        recorded, replayed = entry.recorded, entry.replayed
        label = recorded.label or "-"
        if recorded.value is not None:
            label += f" {recorded.value:g}"
        if not recorded.ours:
            shown = "(not compared)"
        else:
            shown = replayed.action if replayed is not None else "(none)"
        where = f"{replayed.agent}, #{replayed.step}" if replayed is not None else ""
        mark = "" if entry.agrees is not False else "  ⚠"
        yield (f"  {recorded.span_id:0{_SPAN_ID_WIDTH}x}  {_cut(recorded.name, _EVALUATION_WIDTH):<{_EVALUATION_WIDTH}}  "
               f"{_cut(label, _LABEL_WIDTH):<{_LABEL_WIDTH}}  {shown:<{_LABEL_WIDTH}}  {_cut(where, _NAME_CHARS)}"
               f"{mark}").rstrip()
    if len(evaluations.entries) > _EVALUATIONS_LISTED:
        yield f"  … {_n(len(evaluations.entries) - _EVALUATIONS_LISTED, 'more event')} (--json lists them all)"
    for item in evaluations.disagreements[:_EVALUATIONS_LISTED]:
        yield f"  ⚠ disagreement: {_cut(item.describe(), _NAME_CHARS * 2)}"
    if disagreeing > _EVALUATIONS_LISTED:
        yield f"  … {_n(disagreeing - _EVALUATIONS_LISTED, 'more disagreement')} (--json lists them)"


def _agent_table(agent: AgentSummary, steps: Iterator[Step]) -> Iterator[str]:
    head = f"agent {printable(agent.label, _NAME_CHARS)}"
    details = [_n(agent.traces, "trace"), f"{_n(agent.model_calls, 'model call')}, {_n(agent.tool_calls, 'tool call')}"]
    if agent.runs:
        details.insert(0, _n(agent.runs, "run"))
    if agent.name and not agent.key.startswith("span:"):
        details.insert(0, f"key {printable(agent.key, _NAME_CHARS)}")
    yield f"{head} · {' · '.join(details)}"
    number_width = max(1, len(str(agent.steps_total)))
    header = (f"  {'#':>{number_width}}  {'kind':<5}  {'span':<{_SPAN_WIDTH}}  {'what':<{_WHAT_WIDTH}}  "
              f"{'verdict':<{_VERDICT_WIDTH}}  {'rule':<{_RULE_WIDTH}}  {'action':<{_ACTION_WIDTH}}  counts")
    yield header.rstrip()
    for step in steps:
        yield from _step_rows(step, number_width)
    if agent.quiet_steps_not_listed:
        yield (f"  {'':>{number_width}}  … {_n(agent.quiet_steps_not_listed, 'more step')} without a verdict "
               "not listed (--max-rows)")


def _step_rows(step: Step, number_width: int) -> list[str]:
    left = (f"  {step.number:>{number_width}}  {step.kind:<5}  {_cut(step.span_name, _SPAN_WIDTH):<{_SPAN_WIDTH}}  "
            f"{_cut(step.what, _WHAT_WIDTH):<{_WHAT_WIDTH}}  ")
    if not step.verdicts:
        return [left.rstrip()]
    blank = " " * len(left)
    rows = []
    for index, verdict in enumerate(step.verdicts):
        rows.append(((left if index == 0 else blank) + _verdict_cells(verdict)).rstrip())
        if verdict.evidence and not is_counting(verdict):  # a finding says which steps made it
            rows.append(f"{blank}↳ evidence: steps {steps_text(verdict.evidence)}")
    return rows


def _verdict_cells(verdict: Verdict) -> str:
    return (f"{_cut(verdict.verdict, _VERDICT_WIDTH):<{_VERDICT_WIDTH}}  "
            f"{_cut(verdict.rule, _RULE_WIDTH):<{_RULE_WIDTH}}  {verdict.action:<{_ACTION_WIDTH}}  {_counts(verdict)}")


def _counts(verdict: Verdict) -> str:
    parts = []
    if verdict.repeat_count is not None:
        parts.append(f"count {verdict.repeat_count}")
    if verdict.thinking_stalled is not None:
        parts.append(f"stalled {verdict.thinking_stalled}")
    if verdict.stream_chars is not None:
        parts.append(f"chars {verdict.stream_chars}")
    if verdict.error_code is not None:
        parts.append(f"code {verdict.error_code}")
    return " · ".join(parts)


def _summary(analysis: Analysis, fail_on: str | None) -> list[str]:
    coverage = analysis.coverage
    findings = analysis.findings
    lines = ["summary"]
    steps = coverage.steps
    nothing = coverage.nothing_judged()
    if nothing is not None:
        lines.append(f"  nothing was judged: {nothing}")
        lines.append("  (no verdict here means the analyzer had nothing to judge, not that the agent was healthy)")
    else:
        model = coverage.kind_total("model")
        tool = coverage.kind_total("tool")
        acting = {action: n for action, n in findings.findings_by_action.items() if action != "none"}
        flags = findings.flags
        counting = findings.counting
        lines.append(f"  judged: {_n(steps, 'step')} ({model} model, {tool} tool)")
        if acting:
            lines.append(f"  verdicts with an action: {sum(acting.values())} ({_breakdown(acting)})")
        else:
            lines.append(f"  verdicts with an action: none, over the {_n(steps, 'step')} judged (see coverage)")
        if flags:
            lines.append(f"  flagged without an action: {sum(flags.values())} ({_breakdown(flags)})")
        if counting:
            lines.append(f"  counting verdicts (a repeat between thresholds, a stall below the limit): {counting}")
        stalls, reactions, cuts = findings.thinking_stalls, findings.thinking_reactions, findings.cuts
        lines.append(f"  thinking: {stalls}/{model} model call(s) stalled, {_n(reactions, 'reaction')} "
                     f"(over the {model} model call(s) read; see coverage); {cuts} cut mid-stream")
        lines.extend(_loop_lines(_looping(findings)))
    if fail_on is not None:
        reached = analysis.reached(fail_on)
        if reached:
            verb = "reaches" if reached == 1 else "reach"
            lines.append(f"  --fail-on {fail_on}: {_n(reached, 'verdict')} {verb} it: FAIL (exit 1)")
        else:
            lines.append(f"  --fail-on {fail_on}: no verdict reaches it: pass")
    return lines


def _loop_lines(agents: Any) -> list[str]:
    """What the loops of model calls cost, in total and per agent (from their first stalled step up to
    the step that broke them or the end of the input)."""
    totals = loop_totals(agents)
    if not totals["count"]:
        return []
    def cost(value: float | None) -> str:
        return "cost unknown" if value is None else f"${value:,.2f}"
    line = (f"  loops: {_n(totals['count'], 'loop')} of model calls, {totals['input_tokens']:,} tokens in, "
            f"{totals['output_tokens']:,} out, {cost(totals['cost_usd'])}")
    if totals["unpriced"]:
        line += f" ({totals['unpriced']} not priced: model not in genai-prices' table)"
    lines = [line]
    for agent in agents:
        if agent.acted_loops:
            mine = loop_totals([agent])
            lines.append(f"    {agent.label}: {_n(mine['count'], 'loop')}, {mine['input_tokens']:,} in, "
                         f"{mine['output_tokens']:,} out, {cost(mine['cost_usd'])}")
    return lines


def _coverage(analysis: Analysis) -> list[str]:
    coverage = analysis.coverage
    files = coverage.files
    lines = ["coverage"]
    records = sum(f.otlp_records for f in files)
    span_records = sum(f.span_records for f in files)
    log_lines = sum(f.log_lines for f in files)
    logs = sum(f.log_records for f in files)
    metrics = sum(f.metrics_lines for f in files)
    blank = sum(f.blank_lines for f in files)
    unparsable = coverage.unparsable_total()
    parts = [f"{_n(span_records, 'record')} with spans"]
    if log_lines:
        cli, events = sum(f.cli_tool_records for f in files), sum(f.genai_event_records for f in files)
        evaluations = sum(f.evaluation_records for f in files)
        read = ([f"{cli} read as CLI tool calls"] * bool(cli) + [f"{events} as GenAI events"] * bool(events)
                + [f"{evaluations} as evaluation events"] * bool(evaluations))
        how = ", ".join([*read, f"{logs - cli - events - evaluations} not read"]) if read else "not read"
        parts.append(f"{log_lines} of OTLP logs ({_n(logs, 'log record')}, {how})")
    if metrics:
        parts.append(f"{metrics} of OTLP metrics (not read)")
    other = records - span_records - log_lines - metrics
    if other:
        parts.append(f"{other} empty")
    parts.append(f"{blank} blank")
    parts.append(f"{unparsable} unparsable")
    lines.append(f"  input:   {_n(len(files), 'file')}, {_n(coverage.lines, 'line')}, "
                 f"{_n(records, 'OTLP record')}: {', '.join(parts)}")
    for file in files:
        notes = []
        if file.compressed:
            notes.append("gzip")
        if file.named_gz_not_gzip:
            notes.append("named .gz but not gzip: read as text")
        if len(files) > 1 or notes:
            extra = f" ({', '.join(notes)})" if notes else ""
            lines.append(f"           {file.path}: {_n(file.lines, 'line')}, {_n(file.spans, 'span')}{extra}")
    judged = sum(coverage.judged.values())
    by_kind = ", ".join(f"{kind} {coverage.kind_total(kind)}" for kind in ("agent", "model", "tool")
                        if coverage.kind_total(kind))
    conventions: Counter[str] = Counter()
    for (_, convention), count in coverage.judged.items():
        conventions[convention] += count
    judged_text = f"{judged} judged"
    if judged:
        judged_text += f" ({by_kind}; by convention: {_breakdown(conventions)})"
    traces = coverage.buffer.traces_seen if coverage.buffer else 0
    lines.append(f"  spans:   {coverage.spans_read} read in {_n(traces, 'trace')}: {judged_text}")
    skipped = coverage.skipped()
    span_skips = {k: v for k, v in skipped.items() if not k.startswith("line: ")}
    if span_skips:
        lines.append(f"  skipped: {_breakdown(span_skips)}")
    line_skips = {k[6:]: v for k, v in skipped.items() if k.startswith("line: ")}
    if line_skips:
        lines.append(f"  lines not read: {_breakdown(line_skips)}")
    buffer = coverage.buffer
    if buffer is not None and (buffer.flushed["idle"] or buffer.flushed["memory"] or buffer.late_spans):
        lines.append(f"  replay:  traces replayed {_breakdown({k: v for k, v in buffer.flushed.items() if v})}; "
                     f"peak {buffer.peak_buffered} spans buffered")
    warnings = coverage.warnings()
    for warning in warnings:
        lines.append(f"  {'⚠' if warning.incomplete else 'note:'} {warning.message}")
    if any(w.incomplete for w in warnings):
        lines.append("  verdict scope: INCOMPLETE: the verdicts above cover only what was read (see ⚠)")
    elif coverage.steps:
        lines.append("  verdict scope: complete: every model and tool span in the input was judged")
    return lines


def _breakdown(counts: dict[str, int] | Counter) -> str:
    return ", ".join(f"{key} {value}" for key, value in counts.items())


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _cut(text: str, width: int) -> str:
    text = printable(text.replace("\n", " "))
    return text if len(text) <= width else text[: width - 1] + "…"
