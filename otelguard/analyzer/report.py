"""Rendering an `Analysis`: a table per agent, a summary and the coverage block; or one JSON document.

The JSON shape is the contract of design §6: `{"files", "config", "coverage", "agents", "verdicts"}`
(plus `evaluations`, `disagreements` and `summary`). Ids are lowercase hex, as in OTLP/JSON.
"""

from __future__ import annotations

import heapq
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import IO, Any, NamedTuple

from ..detectors.evidence import steps_text
from ..model.records import Verdict
from ..runtime.terminal import printable, printable_json
from ..report.text import BOLD, RED, YELLOW, TextReport, action_style, counted, number
from .evaluations import RecordedEvaluations
from ..model.records import is_counting
from ..report.steps import verdict_counts
from .results import AgentSummary, Step
from .run import Analysis

_SPAN_WIDTH = 22
_VERDICT_WIDTH = 18
_RULE_WIDTH = 17
_ACTION_WIDTH = 6
_NAME_CHARS = 200  # an agent's name or key shown, at most
_EVALUATION_WIDTH = 47  # otelguard.<guard>.<rule>, the longest of them
_LABEL_WIDTH = 10
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
        "loops": loop_totals(findings.agents()),
        "evaluations": analysis.evaluations.summary_json(),
    }


def loop_totals(agents: Iterable[Any]) -> dict[str, Any]:
    """The loops the guard acted on over `agents` (of model calls and of tool calls): how many, their
    tokens and their price where known; those without a price, by why (`loop_spend`). Read as the
    agents go by: every agent of a large input may have one."""
    count = tool_call_loops = input_tokens = output_tokens = 0
    priced: list[float] = []
    unpriced: Counter[str | None] = Counter()
    for agent in agents:
        for loop in agent.acted_loops:
            count += 1
            tool_call_loops += loop.of_tool_calls
            input_tokens += loop.spend.input_tokens or 0
            output_tokens += loop.spend.output_tokens or 0
            if loop.spend.cost_usd is None:
                unpriced[loop.spend.unpriced] += 1
            else:
                priced.append(loop.spend.cost_usd)
    return {
        "count": count,
        "model_call_loops": count - tool_call_loops,
        "tool_call_loops": tool_call_loops,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost_usd": round(sum(priced), 6) if priced else None,
        "unpriced": count - len(priced),
        "unpriced_by_reason": dict(sorted(unpriced.items(), key=lambda item: str(item[0]))),
    }


# --- text --------------------------------------------------------------------------------------
#
# Every line fits the report's width (`terminal.TextReport`): a table's rows are cut, other lines
# wrapped. A step's verdicts go on lines of their own under it, coloured by their action on a terminal.


class _Line(NamedTuple):
    text: str
    style: str | None = None
    cut: bool = False  # a table's row: cut to the width, not wrapped


def to_text(analysis: Analysis, *, fail_on: str | None = None, width: int = 100) -> str:
    out = io.StringIO()
    write_text(analysis, out, fail_on=fail_on, width=width)
    return out.getvalue()


def write_text(analysis: Analysis, out: IO[str], *, fail_on: str | None = None, width: int | None = None,
               colour: bool | None = None) -> None:
    """The tables, summary and coverage block, written a line at a time. Names, paths and problems
    quoted from the input are shown, never obeyed by the terminal (`printable`). `width` and
    `colour`: the terminal's (`terminal.TextReport`) unless given."""
    report = TextReport(out, width=width, colour=colour)
    for line in _text_lines(analysis, fail_on, report.width):
        if isinstance(line, str):
            report.line(line)
        else:
            report.line(line.text, line.style, cut=line.cut)


def _text_lines(analysis: Analysis, fail_on: str | None, width: int) -> Iterator[str | _Line]:
    coverage = analysis.coverage
    findings = analysis.findings
    agents = findings.agents_listed + findings.quiet_agents_not_listed
    traces = coverage.buffer.traces_seen if coverage.buffer else 0
    yield _Line(f"otelguard analyze: {counted(len(analysis.files), 'file')}, {counted(coverage.spans_read, 'span')} "
                f"in {counted(traces, 'trace')}, {counted(coverage.steps, 'step')} judged for "
                f"{counted(agents, 'agent')}", BOLD)
    for agent in findings.agents():
        if agent.steps_total:
            yield ""
            yield from _agent_table(agent, findings.steps(agent.key), width)
    if findings.quiet_agents_not_listed:
        yield ""
        yield (f"… {counted(findings.quiet_agents_not_listed, 'more agent')} without any verdict not listed "
               f"({counted(findings.quiet_agents_not_listed_steps, 'step')}; --max-agents)")
    if analysis.evaluations.read:
        yield ""
        yield from _evaluation_lines(analysis.evaluations)
    yield ""
    yield from summary_lines(analysis, fail_on)
    yield ""
    yield from coverage_lines(analysis)


def _evaluation_lines(evaluations: RecordedEvaluations) -> Iterator[str | _Line]:
    """The recorded evaluation events, each beside the replayed verdict it matches, then the
    disagreements (each list cut at `_EVALUATIONS_LISTED`)."""
    summary = evaluations.summary_json()
    disagreeing = summary["disagreements"]
    yield _Line(f"recorded evaluations (gen_ai.evaluation.result): {counted(summary['read'], 'event')}: "
                f"{number(summary['otelguard'])} by otelguard ({number(summary['agreeing'])} agree with the replay), "
                f"{number(summary['other'])} by other evaluators (listed, not compared); "
                f"{counted(disagreeing, 'disagreement')}", BOLD)
    # (each event's span id is in --json)
    yield _Line(f"  {'evaluation':<{_EVALUATION_WIDTH}}  {'recorded':<{_LABEL_WIDTH}}  {'replayed':<{_LABEL_WIDTH}}  "
                "agent, step", cut=True)
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
        mark = "" if entry.agrees is not False else "⚠ "
        yield _Line(f"  {_cut(recorded.name, _EVALUATION_WIDTH):<{_EVALUATION_WIDTH}}  "
                    f"{_cut(label, _LABEL_WIDTH):<{_LABEL_WIDTH}}  {_cut(shown, _LABEL_WIDTH):<{_LABEL_WIDTH}}  "
                    f"{mark}{_cut(where, _NAME_CHARS)}".rstrip(), YELLOW if mark else None, cut=True)
    if len(evaluations.entries) > _EVALUATIONS_LISTED:
        yield f"  … {counted(len(evaluations.entries) - _EVALUATIONS_LISTED, 'more event')} (--json lists them all)"
    for item in evaluations.disagreements[:_EVALUATIONS_LISTED]:
        yield _Line(f"  ⚠ disagreement: {_cut(item.describe(), _NAME_CHARS * 2)}", YELLOW)
    if disagreeing > _EVALUATIONS_LISTED:
        yield f"  … {counted(disagreeing - _EVALUATIONS_LISTED, 'more disagreement')} (--json lists them)"


def _agent_table(agent: AgentSummary, steps: Iterator[Step], width: int) -> Iterator[str | _Line]:
    head = f"agent {printable(agent.label, _NAME_CHARS)}"
    details = [counted(agent.traces, "trace"),
               f"{counted(agent.model_calls, 'model call')}, {counted(agent.tool_calls, 'tool call')}"]
    if agent.runs:
        details.insert(0, counted(agent.runs, "run"))
    if agent.name and not agent.key.startswith("span:"):
        details.insert(0, f"key {printable(agent.key, _NAME_CHARS)}")
    yield _Line(f"{head} · {' · '.join(details)}", BOLD)
    number_width = max(1, len(str(agent.steps_total)))
    yield _Line(f"  {'#':>{number_width}}  {'kind':<5}  {'span':<{_SPAN_WIDTH}}  what", cut=True)
    for step in steps:
        yield from _step_rows(step, number_width)
    if agent.quiet_steps_not_listed:
        yield (f"  {'':>{number_width}}  … {counted(agent.quiet_steps_not_listed, 'more step')} without a verdict "
               "not listed (--max-rows)")


def _step_rows(step: Step, number_width: int) -> Iterator[_Line]:
    """The step's row, then a line for each of its verdicts under its span column (a finding's next
    line says which steps made it)."""
    yield _Line(f"  {step.number:>{number_width}}  {step.kind:<5}  {_cut(step.span_name, _SPAN_WIDTH):<{_SPAN_WIDTH}}  "
                f"{_cut(step.what, 1000)}", cut=True)
    indent = " " * (2 + number_width + 2 + 5 + 2)
    for verdict in step.verdicts:
        yield _Line(f"{indent}↳ {_verdict_cells(verdict)}".rstrip(), action_style(verdict.action))
        if verdict.evidence and not is_counting(verdict):
            yield _Line(f"{indent}  evidence: steps {steps_text(verdict.evidence)}")


def _verdict_cells(verdict: Verdict) -> str:
    return (f"{verdict.action:<{_ACTION_WIDTH}}  {_cut(verdict.verdict, _VERDICT_WIDTH):<{_VERDICT_WIDTH}}  "
            f"{_cut(verdict.rule, _RULE_WIDTH):<{_RULE_WIDTH}}  {verdict_counts(verdict)}")


def summary_lines(analysis: Analysis, fail_on: str | None) -> list[str | _Line]:
    coverage = analysis.coverage
    findings = analysis.findings
    lines: list[str | _Line] = [_Line("summary", BOLD)]
    steps = coverage.steps
    nothing = coverage.nothing_judged()
    if nothing is not None:
        lines.append(_Line(f"  nothing was judged: {nothing}", YELLOW))
        lines.append("  (no verdict here means the analyzer had nothing to judge, not that the agent was healthy)")
    else:
        model = coverage.kind_total("model")
        tool = coverage.kind_total("tool")
        acting = {action: n for action, n in findings.findings_by_action.items() if action != "none"}
        flags = findings.flags
        counting = findings.counting
        lines.append(f"  judged: {counted(steps, 'step')} ({number(model)} model, {number(tool)} tool)")
        if acting:
            lines.append(_Line(f"  verdicts with an action: {number(sum(acting.values()))} ({_breakdown(acting)})",
                               YELLOW))
        else:
            lines.append(f"  verdicts with an action: none, over the {counted(steps, 'step')} judged (see coverage)")
        if flags:
            lines.append(f"  flagged without an action: {number(sum(flags.values()))} ({_breakdown(flags)})")
        if counting:
            lines.append(f"  recorded without an action: {number(counting)} (a repeat not yet at a reminder, or a "
                         "stall not yet at the limit)")
        stalls, reactions, cuts = findings.thinking_stalls, findings.thinking_reactions, findings.cuts
        lines.append(f"  thinking: {number(stalls)} of {counted(model, 'model call')} stalled, "
                     f"{counted(reactions, 'reaction')}, {counted(cuts, 'stream')} cut mid-way")
        lines.extend(_loop_lines(findings))
    if fail_on is not None:
        reached = analysis.reached(fail_on)
        if reached:
            verb = "reaches" if reached == 1 else "reach"
            lines.append(_Line(f"  --fail-on {fail_on}: {counted(reached, 'verdict')} {verb} it: FAIL (exit 1)", RED))
        else:
            lines.append(f"  --fail-on {fail_on}: no verdict reaches it: pass")
    return lines


_LOOP_AGENTS_LISTED = 10  # the costliest agents' loops named in the summary; the rest are counted


def _loop_lines(findings: Any) -> list[str | _Line]:
    """What the loops the guard acted on cost, in total and for the agents whose loops cost most (from
    their first repeated step up to the step that broke them or the end of the input)."""
    totals = loop_totals(findings.agents())
    if not totals["count"]:
        return []
    def cost(value: float | None) -> str:
        return "cost unknown" if value is None else f"${value:,.2f}"
    line = (f"  loops: {_loop_kinds(totals)}, {number(totals['input_tokens'])} tokens in, "
            f"{number(totals['output_tokens'])} out, {cost(totals['cost_usd'])}")
    reasons = totals["unpriced_by_reason"]
    if reasons:
        why = next(iter(reasons)) if len(reasons) == 1 else ", ".join(f"{number(n)} {reason}" for reason, n in reasons.items())
        line += f" ({number(totals['unpriced'])} not priced: {why})"
    lines: list[str | _Line] = [line]
    costliest: list[tuple[float, int, int, dict[str, Any], str]] = []  # a heap of the costliest: (price, tokens, n, ...)
    agents = 0
    for agent in findings.agents():
        if agent.acted_loops:
            mine = loop_totals([agent])
            entry = (mine["cost_usd"] or 0.0, mine["input_tokens"] + mine["output_tokens"], agents, mine, agent.label)
            agents += 1
            if len(costliest) < _LOOP_AGENTS_LISTED:
                heapq.heappush(costliest, entry)
            else:
                heapq.heappushpop(costliest, entry)
    for _, _, _, mine, label in sorted(costliest, reverse=True):
        lines.append(f"    {label}: {counted(mine['count'], 'loop')}, {number(mine['input_tokens'])} in, "
                     f"{number(mine['output_tokens'])} out, {cost(mine['cost_usd'])}")
    if agents > len(costliest):
        lines.append(f"    and {counted(agents - len(costliest), 'more agent')} with loops (--json lists every one)")
    return lines


def _loop_kinds(totals: dict[str, Any]) -> str:
    """"2 loops of model calls", "3 loops of tool calls", or "5 loops (2 of model calls, 3 of tool calls)"."""
    model, tool = totals["model_call_loops"], totals["tool_call_loops"]
    if not tool:
        return f"{counted(model, 'loop')} of model calls"
    if not model:
        return f"{counted(tool, 'loop')} of tool calls"
    return f"{counted(totals['count'], 'loop')} ({number(model)} of model calls, {number(tool)} of tool calls)"


def coverage_lines(analysis: Analysis) -> list[str | _Line]:
    coverage = analysis.coverage
    files = coverage.files
    lines: list[str | _Line] = [_Line("coverage", BOLD)]
    records = sum(f.otlp_records for f in files)
    span_records = sum(f.span_records for f in files)
    log_lines = sum(f.log_lines for f in files)
    logs = sum(f.log_records for f in files)
    metrics = sum(f.metrics_lines for f in files)
    blank = sum(f.blank_lines for f in files)
    unparsable = coverage.unparsable_total()
    parts = [f"{counted(span_records, 'record')} with spans"]
    if log_lines:
        cli, events = sum(f.cli_tool_records for f in files), sum(f.genai_event_records for f in files)
        cli_models = sum(f.cli_model_records for f in files)
        evaluations = sum(f.evaluation_records for f in files)
        read = ([f"{number(cli)} read as CLI tool calls"] * bool(cli)
                + [f"{number(cli_models)} as CLI model calls"] * bool(cli_models)
                + [f"{number(events)} as GenAI events"] * bool(events)
                + [f"{number(evaluations)} as evaluation events"] * bool(evaluations))
        how = ", ".join([*read, f"{number(logs - cli - cli_models - events - evaluations)} not read"]) if read else "not read"
        parts.append(f"{number(log_lines)} of OTLP logs ({counted(logs, 'log record')}, {how})")
    if metrics:
        parts.append(f"{number(metrics)} of OTLP metrics (not read)")
    other = records - span_records - log_lines - metrics
    if other:
        parts.append(f"{number(other)} empty")
    parts.append(f"{number(blank)} blank")
    parts.append(f"{number(unparsable)} unparsable")
    lines.append(f"  input:   {counted(len(files), 'file')}, {counted(coverage.lines, 'line')}, "
                 f"{counted(records, 'OTLP record')}: {', '.join(parts)}")
    for file in files:
        notes = []
        if file.compressed:
            notes.append("gzip")
        if file.named_gz_not_gzip:
            notes.append("named .gz but not gzip: read as text")
        if len(files) > 1 or notes:
            extra = f" ({', '.join(notes)})" if notes else ""
            lines.append(f"           {file.path}: {counted(file.lines, 'line')}, {counted(file.spans, 'span')}{extra}")
    judged = sum(coverage.judged.values())
    by_kind = ", ".join(f"{kind} {number(coverage.kind_total(kind))}" for kind in ("agent", "model", "tool")
                        if coverage.kind_total(kind))
    conventions: Counter[str] = Counter()
    for (_, convention), count in coverage.judged.items():
        conventions[convention] += count
    judged_text = f"{number(judged)} judged"
    if judged:
        judged_text += f" ({by_kind}; by convention: {_breakdown(conventions)})"
    traces = coverage.buffer.traces_seen if coverage.buffer else 0
    lines.append(f"  spans:   {number(coverage.spans_read)} read in {counted(traces, 'trace')}: {judged_text}")
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
                     f"peak {counted(buffer.peak_buffered, 'span')} buffered")
    warnings = coverage.warnings()
    for warning in warnings:
        if warning.incomplete:
            lines.append(_Line(f"  ⚠ {warning.message}", YELLOW))
        else:
            lines.append(f"  note: {warning.message}")
    if any(w.incomplete for w in warnings):
        lines.append(_Line("  verdict scope: INCOMPLETE: the verdicts above cover only what was read (see ⚠)", YELLOW))
    elif coverage.steps:
        lines.append("  verdict scope: complete: every model and tool span in the input was judged")
    return lines


def _breakdown(counts: dict[str, int] | Counter) -> str:
    return ", ".join(f"{key} {number(value)}" for key, value in counts.items())


def _cut(text: str, width: int) -> str:
    text = printable(text.replace("\n", " "))
    return text if len(text) <= width else text[: width - 1] + "…"
