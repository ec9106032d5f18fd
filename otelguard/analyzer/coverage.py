"""What the analyzer read, what it skipped and why, and whether the verdict covers everything.

The seed analyzer's lesson: a silent skip and an absent event print the same zero. So every line and
every span is accounted for here, and `verdict_scope_incomplete` is set whenever something that
looks like model or tool content was not judged. Counters only: bounded, whatever the input size.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..otlp.json_spans import BAD_SPAN, BLANK, DUPLICATE_KEY, LOG_RECORDS, METRICS, NOT_A_REQUEST, ReadProblem
from ..conventions import READ_LIMITS
from ..otlp.logs import LogsRead
from ..model.records import Content, ModelCall, SpanKind, SpanView, ToolCall
from ..report.text import counted, number
from ..replay.cli_calls import CliCalls, missing_arguments_hint
from .evaluations import RecordedEvaluations
from ..replay.event_outputs import EventOutputs
from ..replay.spans import IDLE, MEMORY, TraceBuffer

NOT_OURS = "not an agent/model/tool span"
DUPLICATE = "duplicate span (same trace and span id)"
UNREADABLE_SPAN = "unreadable span (no valid ids, wrong field types)"
DUPLICATED_KEY = "record with a key given twice (earlier copies not read)"
_EXAMPLES_PER_REASON = 3


@dataclass(slots=True)
class FileCoverage:
    """One input file, as read."""

    path: str
    compressed: bool = False
    named_gz_not_gzip: bool = False
    lines: int = 0
    blank_lines: int = 0
    span_records: int = 0  # lines (or documents) that held spans
    log_lines: int = 0
    log_records: int = 0
    log_records_genai_not_read: int = 0  # log records not read that carry gen_ai content (in log_records)
    cli_tool_records: int = 0  # log records read as a coding-agent CLI's tool call (in log_records)
    cli_model_records: int = 0  # log records read as what a coding-agent CLI's model call spent (in log_records)
    genai_event_records: int = 0  # log records read as GenAI events (in log_records)
    evaluation_records: int = 0  # log records read as gen_ai.evaluation.result events (in log_records)
    metrics_lines: int = 0
    other_records: int = 0  # JSON lines that hold no spans: `{}`, empty requests
    unparsable: Counter = field(default_factory=Counter)  # reason -> lines
    bad_spans: int = 0  # spans on readable lines that could not be read (no ids, wrong types)
    duplicate_keys: int = 0  # records with a key given twice in one object (the earlier copies not read)
    spans: int = 0

    @property
    def log_records_read(self) -> int:
        return self.cli_tool_records + self.cli_model_records + self.genai_event_records + self.evaluation_records

    @property
    def otlp_records(self) -> int:
        return self.span_records + self.log_lines + self.metrics_lines + self.other_records

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "compressed": self.compressed,
            "lines": self.lines,
            "blank_lines": self.blank_lines,
            "records": self.otlp_records,
            "records_with_spans": self.span_records,
            "log_record_lines": self.log_lines,
            "log_records": self.log_records,
            "metrics_lines": self.metrics_lines,
            "unparsable": dict(self.unparsable),
            "bad_spans": self.bad_spans,
            "duplicate_keys": self.duplicate_keys,
            "spans": self.spans,
        }


@dataclass(frozen=True, slots=True)
class Warning_:
    code: str
    message: str
    incomplete: bool  # the verdict does not cover something that looks like model or tool content


class Coverage:
    """Counters filled while reading and replaying; `warnings()` and `to_json()` read them."""

    def __init__(self) -> None:
        self.files: list[FileCoverage] = []
        self.examples: dict[str, list[ReadProblem]] = {}
        self.spans_read = 0
        self.judged: Counter = Counter()  # (kind, convention) -> spans
        self.not_ours = 0
        self.model_output_not_captured = 0
        self.model_output_unreadable = 0
        self.oversized_spans = 0  # model output or tool arguments longer than the guard decodes
        self.judged_in_part = 0  # model calls whose reasoning or text was judged by its last characters
        self.tool_arguments_not_captured = 0
        self.dropped_events_spans = 0
        self.dropped_events = 0
        self.dropped_events_textless = 0  # spans whose kept events are all textless chunk events
        self.dropped_attributes_spans = 0
        self.late_judged = 0  # agent/model/tool spans judged without their trace's earlier spans
        self.internal_errors: Counter = Counter()  # where -> count (a bug in otelguard, contained)
        self.verdicts_from_live_record = 0  # tool deadlines, uncaptured stream cuts: read from the span
        self.buffer: TraceBuffer | None = None
        # The engine's evictions: (what, reason) -> count; what is "agent", "span" or "stream".
        self.evictions: Counter = Counter()
        self.cli_calls: CliCalls | None = None
        self.event_outputs: EventOutputs | None = None
        self.evaluations: RecordedEvaluations | None = None

    # --- reading ---------------------------------------------------------------------------------
    def problem(self, file: FileCoverage, problem: ReadProblem) -> None:
        reason = problem.reason
        if reason == BLANK:
            file.blank_lines += problem.lines
            return
        if reason == LOG_RECORDS:  # (its records are counted by `logs_read`)
            file.log_lines += 1
            return
        if reason == METRICS:
            file.metrics_lines += 1
            return
        if reason == BAD_SPAN:
            file.bad_spans += 1
        elif reason == DUPLICATE_KEY:
            file.duplicate_keys += 1
        else:
            if reason == NOT_A_REQUEST and problem.detail.startswith("malformed"):
                reason = "malformed request"
            file.unparsable[reason] += problem.lines
        examples = self.examples.setdefault(reason, [])
        if len(examples) < _EXAMPLES_PER_REASON and not any(
            p.file == problem.file and p.line == problem.line for p in examples
        ):
            examples.append(problem)

    def logs_read(self, file: FileCoverage, logs: LogsRead) -> None:
        """What one logs request held."""
        file.log_records += logs.records
        model_calls = logs.model_calls
        file.cli_tool_records += len(logs.calls) - model_calls
        file.cli_model_records += model_calls
        file.genai_event_records += len(logs.events)
        file.evaluation_records += len(logs.evaluations)
        file.log_records_genai_not_read += logs.genai_not_read

    def internal_error(self, where: str) -> None:
        self.internal_errors[where] += 1

    def evicted(self, what: str, reason: str, count: int) -> None:
        """The engine's `on_evict`: state it dropped to stay within its bounds."""
        self.evictions[(what, reason)] += count

    def agents_evicted(self) -> dict[str, int]:
        """Agents whose guard state the engine dropped, by reason ("capacity", "idle")."""
        return {reason: n for (what, reason), n in sorted(self.evictions.items()) if what == "agent"}

    # --- judging ---------------------------------------------------------------------------------
    def judged_span(self, span: SpanView, kind: SpanKind, convention: str, record: Any, late: bool) -> None:
        """An agent, model or tool span was judged (the others are counted in `not_ours` by the replay)."""
        self.judged[(kind.value, convention)] += 1
        if kind is SpanKind.AGENT:
            return
        if late:
            self.late_judged += 1
        if span.dropped_events:
            self.dropped_events_spans += 1
            self.dropped_events += span.dropped_events
            if isinstance(record, ModelCall) and record.chunk_events and not record.chunks \
                    and record.chunk_events >= len(span.events):
                self.dropped_events_textless += 1
        if span.dropped_attributes:
            self.dropped_attributes_spans += 1
        if isinstance(record, ModelCall):
            if record.unjudged_chars:
                self.judged_in_part += 1
            if record.output_content is Content.OVERSIZED:
                self.oversized_spans += 1
            elif record.has_output is None:
                self.model_output_not_captured += 1
            elif record.output_content is Content.MALFORMED:
                self.model_output_unreadable += 1
        elif isinstance(record, ToolCall):
            if record.arguments is None:
                self.tool_arguments_not_captured += 1
            elif record.arguments_content is Content.OVERSIZED:
                self.oversized_spans += 1

    # --- totals ----------------------------------------------------------------------------------
    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def steps(self) -> int:
        return sum(n for (kind, _), n in self.judged.items() if kind != SpanKind.AGENT.value)

    def kind_total(self, kind: str) -> int:
        return sum(n for (k, _), n in self.judged.items() if k == kind)

    def unparsable_total(self) -> int:
        return sum(sum(f.unparsable.values()) for f in self.files)

    def bad_spans(self) -> int:
        return sum(f.bad_spans for f in self.files)

    def duplicate_keys(self) -> int:
        return sum(f.duplicate_keys for f in self.files)

    def skipped(self) -> dict[str, int]:
        """Spans read but not judged, by reason (plus lines that held none)."""
        skipped: Counter = Counter()
        if self.not_ours:
            skipped[NOT_OURS] = self.not_ours
        if self.buffer is not None and self.buffer.duplicates:
            skipped[DUPLICATE] = self.buffer.duplicates
        if self.bad_spans():
            skipped[UNREADABLE_SPAN] = self.bad_spans()
        for file in self.files:
            for reason, count in file.unparsable.items():
                skipped[f"line: {reason}"] += count
            if file.blank_lines:
                skipped["line: blank"] += file.blank_lines
            if file.duplicate_keys:
                skipped[DUPLICATED_KEY] += file.duplicate_keys
            if file.log_lines and file.log_records > file.log_records_read:
                skipped["line: OTLP log records (not read)"] += file.log_lines
            if file.metrics_lines:
                skipped["line: OTLP metrics (not read)"] += file.metrics_lines
        return dict(skipped)

    def _cli_tool_calls(self) -> dict[str, dict[str, int]]:
        """Per coding-agent CLI: tool calls judged, those without arguments, and the model calls whose
        usage its telemetry told."""
        calls = self.cli_calls
        if calls is None:
            return {}
        return {cli: {"calls": calls.by_cli[cli], "without_arguments": calls.without_arguments[cli],
                      "model_calls_with_usage": calls.usage_by_cli[cli]}
                for cli in sorted(calls.by_cli.keys() | calls.usage_by_cli.keys())}

    def nothing_judged(self) -> str | None:
        """Why no model or tool step was judged; None when at least one was."""
        if self.steps:
            return None
        files = len(self.files)
        if self.lines == 0:
            return f"the input is empty: 0 lines in {counted(files, 'file')}"
        logs = sum(f.log_records for f in self.files)
        log_lines = sum(f.log_lines for f in self.files)
        metrics = sum(f.metrics_lines for f in self.files)
        if self.spans_read == 0:
            bad = self.bad_spans()
            if bad:  # the warning below names the first reason
                return f"{counted(bad, 'span')} read, none readable"
            held = []
            if log_lines:
                held.append(f"{counted(logs, 'OTLP log record')} on {counted(log_lines, 'line')}, which the analyzer does not read")
            if metrics:
                held.append(f"{counted(metrics, 'line')} of OTLP metrics")
            unparsable = self.unparsable_total()
            if unparsable:
                held.append(f"{counted(unparsable, 'unparsable line')}")
            blank = sum(f.blank_lines for f in self.files)
            if blank:
                held.append(f"{counted(blank, 'blank line')}")
            return "no spans in the input" + (": only " + ", ".join(held) if held else " (only empty requests)")
        agents = self.kind_total(SpanKind.AGENT.value)
        reason = (f"{counted(self.spans_read, 'span')} read, none of them a model or tool span of a known convention "
                  "(OTel GenAI gen_ai.operation.name, OpenInference openinference.span.kind, OpenLLMetry)")
        if agents:
            reason += f"; {counted(agents, 'agent span')} but no model or tool call under them"
        return reason

    def warnings(self) -> list[Warning_]:
        found: list[Warning_] = []
        unparsable = self.unparsable_total()
        if unparsable:
            found.append(Warning_(
                "unparsable-lines",
                f"{counted(unparsable, 'line')} could not be read as OTLP spans "
                f"({self._where(exclude=(BAD_SPAN, DUPLICATE_KEY))}): any "
                "spans on them are NOT in the verdict",
                True,
            ))
        bad = self.bad_spans()
        if bad:
            found.append(Warning_(
                "unreadable-spans",
                f"{counted(bad, 'span')} could not be read ({self._where(only=BAD_SPAN)}): they are NOT in the verdict",
                True,
            ))
        duplicated = self.duplicate_keys()
        if duplicated:
            found.append(Warning_(
                "duplicate-keys",
                f"{counted(duplicated, 'record')} give{'s' if duplicated == 1 else ''} a key twice in one object ({self._where(only=DUPLICATE_KEY)}): JSON "
                "keeps the last copy, so the spans of the earlier copies are NOT in the verdict",
                True,
            ))
        agents = self.agents_evicted()
        if agents.get("capacity"):
            found.append(Warning_(
                "agents-evicted",
                f"{counted(agents['capacity'], 'agent')} lost their guard state because more agents than "
                "--max-tracked-agents were open at once (the live guard's bound): their later steps were judged "
                "without their earlier ones, so verdicts may be missing; raise --max-tracked-agents",
                True,
            ))
        if agents.get("idle"):
            found.append(Warning_(
                "agents-idle",
                f"{counted(agents['idle'], 'agent')} idle for an hour of trace time lost their guard state, as they would "
                "live: a later run of one starts afresh",
                False,
            ))
        spans = sum(n for (what, _), n in self.evictions.items() if what == "span")
        if spans:
            found.append(Warning_(
                "open-spans-evicted",
                f"{counted(spans, 'open span')} inside agent runs were forgotten past the engine's bound on open spans: "
                "spans under them were judged as their trace's, not their agent's",
                True,
            ))
        # (records read as GenAI events carry gen_ai content: the rest of such records was not read)
        genai_logs = sum(f.log_records_genai_not_read for f in self.files)
        logs = sum(f.log_records for f in self.files)
        calls = self.cli_calls
        by_cli = calls.by_cli if calls is not None else {}
        for cli, missing in sorted(calls.without_arguments.items()) if calls is not None else ():
            found.append(Warning_(
                "cli-tool-arguments-not-exported",
                f"{number(missing)} of {counted(by_cli[cli], f'{cli} tool call')} came without their arguments "
                f"({missing_arguments_hint(cli)}): repeated calls among them cannot be told apart",
                True,
            ))
        outputs = self.event_outputs
        if outputs is not None and (outputs.unmatched or outputs.evicted):
            found.append(Warning_(
                "genai-events-without-span",
                f"{counted(outputs.unmatched + outputs.evicted, 'span')} named by GenAI output events were not found "
                f"({number(outputs.evicted)} held past the bound of {outputs.max_spans:,}): that output is NOT in the verdict",
                True,
            ))
        if genai_logs:
            names = ", ".join(_short(f.path) for f in self.files if f.log_records_genai_not_read)
            found.append(Warning_(
                "log-records-not-read",
                f"{number(genai_logs)} of {counted(logs, 'OTLP log record')} carry gen_ai content ({names}) and are NOT in the "
                "verdict: instrumentations that capture messages as log events (OpenLLMetry use_attributes=False, "
                "openai-v2 event_only and legacy events) put model output and tool calls there",
                True,
            ))
        evaluations = self.evaluations
        if evaluations is not None and evaluations.not_kept:
            found.append(Warning_(
                "evaluation-events-not-compared",
                f"{number(evaluations.not_kept)} of {counted(evaluations.read, 'evaluation event')} came past the bound of "
                f"{evaluations.max_events:,} kept: they are not compared with the replay",
                False,
            ))
        if self.model_output_not_captured:
            found.append(Warning_(
                "model-output-not-captured",
                f"{counted(self.model_output_not_captured, 'model span')} ha{'s' if self.model_output_not_captured == 1 else 've'} no captured output (content capture off?): "
                "they count as having output, so reasoning-only loops and repetitive text in them cannot be seen",
                True,
            ))
        if self.model_output_unreadable:
            found.append(Warning_(
                "model-output-unreadable",
                f"{counted(self.model_output_unreadable, 'model span')} ha{'s' if self.model_output_unreadable == 1 else 've'} output that could not be parsed: what it "
                "held is NOT in the verdict",
                True,
            ))
        if self.oversized_spans:
            limits = READ_LIMITS
            found.append(Warning_(
                "oversized-content",
                f"{counted(self.oversized_spans, 'span')} carr{'ies' if self.oversized_spans == 1 else 'y'} model output or tool arguments longer than the guard decodes "
                f"({limits.json_chars:,} characters of JSON, {limits.scanned_chars:,} of a Python repr or cut JSON): "
                "what they held is NOT in the verdict (their arguments are told apart by length and both ends)",
                True,
            ))
        if self.judged_in_part:
            found.append(Warning_(
                "judged-in-part",
                f"{counted(self.judged_in_part, 'model span')} ha{'s' if self.judged_in_part == 1 else 've'} reasoning or "
                f"text (whole, or in recorded chunks) longer than {READ_LIMITS.judged_chars:,} characters: each was "
                f"judged by its last {READ_LIMITS.judged_chars:,}",
                False,
            ))
        if self.tool_arguments_not_captured:
            found.append(Warning_(
                "tool-arguments-not-captured",
                f"{counted(self.tool_arguments_not_captured, 'tool span')} carr{'ies' if self.tool_arguments_not_captured == 1 else 'y'} no arguments (content capture off?): "
                "repeat-tool-reminder cannot tell their calls apart",
                True,
            ))
        if self.dropped_events_spans:
            textless = self.dropped_events_textless
            note = ""
            if textless:
                note = (f"; on {number(textless)} of them every kept event is a textless chunk event, so the lost ones most "
                        "likely carried no text either")
            found.append(Warning_(
                "dropped-span-events",
                f"{counted(self.dropped_events_spans, 'model or tool span')} lost {counted(self.dropped_events, 'span event')} to the "
                f"SDK's event limit (droppedEventsCount): what they held is NOT in the verdict{note}",
                textless < self.dropped_events_spans,
            ))
        if self.dropped_attributes_spans:
            found.append(Warning_(
                "dropped-attributes",
                f"{counted(self.dropped_attributes_spans, 'model or tool span')} lost attributes (droppedAttributesCount or "
                "unreadable values): what they held is NOT in the verdict",
                True,
            ))
        if self.internal_errors:
            total = sum(self.internal_errors.values())
            found.append(Warning_(
                "internal-errors",
                f"{counted(total, 'span event')} could not be judged because of an internal error in otelguard "
                f"({', '.join(f'{w} {n}' for w, n in self.internal_errors.items())}; logged once each): please "
                "report it",
                True,
            ))
        if self.verdicts_from_live_record:
            found.append(Warning_(
                "from-live-record",
                f"{counted(self.verdicts_from_live_record, 'span')} carr{'ies' if self.verdicts_from_live_record == 1 else 'y'} a fact only the live guard knew (its own tool "
                "deadline fired, or it cut a stream whose chunks were not recorded): replayed from the span's "
                "otelguard verdict",
                False,
            ))
        buffer = self.buffer
        if buffer is not None and buffer.late_spans:
            found.append(Warning_(
                "late-spans",
                f"{counted(buffer.late_spans, 'span')} of {counted(buffer.late_traces, 'trace')} arrived after their trace had been "
                f"replayed ({counted(buffer.flushed[IDLE], 'trace')} replayed after --flush-after records without a span, "
                f"{number(buffer.flushed[MEMORY])} at --max-buffered-spans): {counted(self.late_judged, 'model or tool span')} among "
                "them were judged without their trace's earlier spans; raise those limits",
                self.late_judged > 0,
            ))
        return found

    def _where(self, *, only: str | None = None, exclude: tuple[str, ...] = ()) -> str:
        return "; ".join(
            f"{reason}: {', '.join(f'{_short(p.file)} line {p.line}' for p in problems)}"
            + (f" ({problems[0].detail})" if reason in (BAD_SPAN, DUPLICATE_KEY) and problems[0].detail else "")
            for reason, problems in self.examples.items()
            if (only is None or reason == only) and reason not in exclude
        )

    def incomplete(self) -> bool:
        return any(w.incomplete for w in self.warnings())

    def to_json(self) -> dict[str, Any]:
        by_kind: dict[str, dict[str, int]] = {}
        for (kind, convention), count in sorted(self.judged.items()):
            by_kind.setdefault(kind, {})[convention] = count
        warnings = self.warnings()
        buffer = self.buffer
        return {
            "files": [f.to_json() for f in self.files],
            "lines_read": self.lines,
            "records_read": sum(f.otlp_records for f in self.files),
            "spans_read": self.spans_read,
            "traces": buffer.traces_seen if buffer else 0,
            "spans_by_kind": by_kind,
            "spans_judged": sum(self.judged.values()),
            "steps_judged": self.steps,
            "unparsable_lines": self.unparsable_total(),
            "unreadable_spans": self.bad_spans(),
            "unparsable_examples": [
                {"file": p.file, "line": p.line, "reason": reason, "detail": p.detail}
                for reason, problems in self.examples.items() for p in problems
            ],
            "skipped": self.skipped(),
            "log_records_not_read": sum(f.log_records - f.log_records_read for f in self.files),
            "genai_event_records": sum(f.genai_event_records for f in self.files),
            "spans_given_output_from_events": self.event_outputs.merged if self.event_outputs is not None else 0,
            "cli_tool_calls": self._cli_tool_calls(),
            "evaluation_event_records": sum(f.evaluation_records for f in self.files),
            "log_records_with_genai_content": sum(f.log_records_genai_not_read for f in self.files),
            "model_output_not_captured": self.model_output_not_captured,
            "oversized_spans": self.oversized_spans,
            "judged_in_part": self.judged_in_part,
            "tool_arguments_not_captured": self.tool_arguments_not_captured,
            "dropped_span_events": {"spans": self.dropped_events_spans, "events": self.dropped_events},
            "dropped_attributes_spans": self.dropped_attributes_spans,
            "internal_errors": sum(self.internal_errors.values()),
            "agents_evicted": sum(self.agents_evicted().values()),
            "agents_evicted_by_reason": self.agents_evicted(),
            "duplicate_keys": self.duplicate_keys(),
            "verdicts_from_live_record": self.verdicts_from_live_record,
            "replay": {
                "traces_replayed": dict(buffer.flushed) if buffer else {},
                "late_spans": buffer.late_spans if buffer else 0,
                "peak_buffered_spans": buffer.peak_buffered if buffer else 0,
            },
            "warnings": [{"code": w.code, "message": w.message, "incomplete": w.incomplete} for w in warnings],
            "nothing_judged": self.nothing_judged(),
            "verdict_scope_incomplete": any(w.incomplete for w in warnings),
        }


def _short(path: str) -> str:
    return path.rsplit("/", 1)[-1]


__all__ = ["Coverage", "FileCoverage", "NOT_OURS"]
