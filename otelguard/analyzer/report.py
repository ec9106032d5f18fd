"""Rendering an `Analysis`: a table per agent, a summary and the coverage block; or one JSON document.

The JSON shape is the contract of design §6: `{"files", "config", "coverage", "agents", "verdicts"}`
(plus `summary`). Ids are lowercase hex, as in OTLP/JSON.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..records import Verdict
from .results import AgentSummary, Step, is_counting
from .run import Analysis

_SPAN_WIDTH = 28
_WHAT_WIDTH = 60
_VERDICT_WIDTH = 18
_RULE_WIDTH = 17
_ACTION_WIDTH = 7


def to_json(analysis: Analysis, *, fail_on: str | None = None) -> dict[str, Any]:
    findings = analysis.findings
    return {
        "files": analysis.files,
        "config": analysis.config.model_dump(mode="json"),
        "coverage": analysis.coverage.to_json(),
        "agents": [agent.to_json() for agent in findings.agents.values()],
        "verdicts": [row.to_json() for row in findings.verdicts],
        "summary": summary_json(analysis, fail_on),
    }


def summary_json(analysis: Analysis, fail_on: str | None) -> dict[str, Any]:
    findings = analysis.findings
    by_action = Counter(row.verdict.action for row in findings.verdicts if not is_counting(row.verdict))
    return {
        "agents": len(findings.agents) + findings.quiet_agents_not_listed,
        "agents_not_listed": findings.quiet_agents_not_listed,
        "steps_judged": analysis.coverage.steps,
        "verdicts": len(findings.verdicts),
        "findings": sum(by_action.values()),
        "findings_by_action": dict(sorted(by_action.items())),
        "fail_on": fail_on,
        "failed": bool(fail_on and analysis.reaching(fail_on)),
        "loops": loop_totals(findings.agents.values()),
    }


def loop_totals(agents: Any) -> dict[str, Any]:
    """The loops of model calls over `agents`: how many, their tokens, and their price where known."""
    loops = [loop for agent in agents for loop in agent.loops]
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
    out: list[str] = []
    coverage = analysis.coverage
    findings = analysis.findings
    agents = len(findings.agents) + findings.quiet_agents_not_listed
    traces = coverage.buffer.traces_seen if coverage.buffer else 0
    out.append(
        f"otelguard analyze: {_n(len(analysis.files), 'file')}, {_n(coverage.spans_read, 'span')} in "
        f"{_n(traces, 'trace')}, {_n(coverage.steps, 'step')} judged for {_n(agents, 'agent')}"
    )
    for agent in findings.agents.values():
        if agent.steps_total:
            out.append("")
            out.extend(_agent_table(agent))
    if findings.quiet_agents_not_listed:
        out.append("")
        out.append(f"… {_n(findings.quiet_agents_not_listed, 'more agent')} without any verdict not listed "
                   f"({_n(findings.quiet_agents_not_listed_steps, 'step')}; --max-agents)")
    out.append("")
    out.extend(_summary(analysis, fail_on))
    out.append("")
    out.extend(_coverage(analysis))
    return "\n".join(out) + "\n"


def _agent_table(agent: AgentSummary) -> list[str]:
    head = f"agent {agent.label}"
    details = [_n(agent.traces, "trace"), f"{_n(agent.model_calls, 'model call')}, {_n(agent.tool_calls, 'tool call')}"]
    if agent.runs:
        details.insert(0, _n(agent.runs, "run"))
    if agent.name and not agent.key.startswith("span:"):
        details.insert(0, f"key {agent.key}")
    lines = [f"{head} · {' · '.join(details)}"]
    number_width = max(1, len(str(agent.steps_total)))
    header = (f"  {'#':>{number_width}}  {'kind':<5}  {'span':<{_SPAN_WIDTH}}  {'what':<{_WHAT_WIDTH}}  "
              f"{'verdict':<{_VERDICT_WIDTH}}  {'rule':<{_RULE_WIDTH}}  {'action':<{_ACTION_WIDTH}}  counts")
    lines.append(header.rstrip())
    for step in agent.steps:
        lines.extend(_step_rows(step, number_width))
    if agent.quiet_steps_not_listed:
        lines.append(f"  {'':>{number_width}}  … {_n(agent.quiet_steps_not_listed, 'more step')} without a verdict "
                     "not listed (--max-rows)")
    return lines


def _step_rows(step: Step, number_width: int) -> list[str]:
    left = (f"  {step.number:>{number_width}}  {step.kind:<5}  {_cut(step.span_name, _SPAN_WIDTH):<{_SPAN_WIDTH}}  "
            f"{_cut(step.what, _WHAT_WIDTH):<{_WHAT_WIDTH}}  ")
    if not step.verdicts:
        return [left.rstrip()]
    blank = " " * len(left)
    return [((left if index == 0 else blank) + _verdict_cells(verdict)).rstrip()
            for index, verdict in enumerate(step.verdicts)]


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
        acting = Counter(row.verdict.action for row in findings.verdicts
                         if not is_counting(row.verdict) and row.verdict.action != "none")
        flags = Counter(row.verdict.rule for row in findings.verdicts
                        if not is_counting(row.verdict) and row.verdict.action == "none")
        counting = sum(1 for row in findings.verdicts if is_counting(row.verdict))
        lines.append(f"  judged: {_n(steps, 'step')} ({model} model, {tool} tool)")
        if acting:
            lines.append(f"  verdicts with an action: {sum(acting.values())} ({_breakdown(acting)})")
        else:
            lines.append(f"  verdicts with an action: none, over the {_n(steps, 'step')} judged (see coverage)")
        if flags:
            lines.append(f"  flagged without an action: {sum(flags.values())} ({_breakdown(flags)})")
        if counting:
            lines.append(f"  counting verdicts (a repeat between thresholds, a stall below the limit): {counting}")
        stalls = sum(1 for row in findings.verdicts if row.verdict.verdict == "thinking_loop")
        reactions = sum(1 for row in findings.verdicts
                        if row.verdict.verdict == "thinking_loop" and row.verdict.action != "none")
        cuts = sum(1 for row in findings.verdicts if row.verdict.action == "break")
        lines.append(f"  thinking: {stalls}/{model} model call(s) stalled, {_n(reactions, 'reaction')} "
                     f"(over the {model} model call(s) read; see coverage); {cuts} cut mid-stream")
        lines.extend(_loop_lines(findings.agents.values()))
    if fail_on is not None:
        reached = analysis.reaching(fail_on)
        if reached:
            verb = "reaches" if len(reached) == 1 else "reach"
            lines.append(f"  --fail-on {fail_on}: {_n(len(reached), 'verdict')} {verb} it: FAIL (exit 1)")
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
        if agent.loops:
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
        parts.append(f"{log_lines} of OTLP logs ({_n(logs, 'log record')}, not read)")
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
    conventions = Counter()
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
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"
