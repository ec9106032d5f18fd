"""`analyze(paths)`: read OTLP JSON files, replay their spans through one engine, collect the findings.

Streaming end to end: files are read line by line, each line bounded (`lines.LineReader`,
`otlp_json.iter_spans`), spans wait in the trace buffer only until their trace is complete
(`replay.TraceBuffer`), the engine keeps `max_tracked_agents` agents (evictions counted), and the
findings go to a spool on disk (`results.Findings`). Peak memory is about the largest set of traces
in flight at once, not the file nor the number of verdicts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from ..model.actions import reaches
from ..guards.config import GuardConfig
from ..runtime.containment import Containment
from ..engine import DEFAULT_MAX_AGENTS, GuardEngine, Judged
from ..otlp.logs import read_records
from ..model.records import SpanView
from ..replay.cli_calls import CliCalls
from .evaluations import RecordedEvaluations
from ..replay.event_outputs import EventOutputs
from ..otlp.json_spans import (
    BAD_SPAN,
    BLANK,
    LOG_RECORDS,
    NOT_A_REQUEST,
    NOT_JSON,
    ReadProblem,
    ReadSpan,
    UnreadableInput,
    iter_spans,
    log_records,
)
from .coverage import Coverage, FileCoverage
from ..otlp.inputs import InputError, open_input, starts_with_logs
from ..otlp.lines import DEFAULT_MAX_DECOMPRESSED_BYTES, DEFAULT_MAX_LINE_BYTES
from ..replay.spans import Batch, ReplayClock, Replayer, ReplayLimits, TraceBuffer
from .results import (
    DEFAULT_MAX_QUIET_AGENTS,
    DEFAULT_MAX_QUIET_ROWS,
    Findings,
    VerdictRow,
)

_PRICE_WAIT_S = 30.0


@dataclass(frozen=True, slots=True)
class AnalyzerOptions:
    """How the analyzer bounds its memory. The defaults suit files of any size."""

    limits: ReplayLimits = field(default_factory=ReplayLimits)
    max_quiet_rows: int = DEFAULT_MAX_QUIET_ROWS
    max_quiet_agents: int = DEFAULT_MAX_QUIET_AGENTS
    # Agents whose guard state the engine keeps at once (the live bound); evictions are reported.
    max_tracked_agents: int = DEFAULT_MAX_AGENTS
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    max_decompressed_bytes: int = DEFAULT_MAX_DECOMPRESSED_BYTES

    def __post_init__(self) -> None:
        for name in ("max_tracked_agents", "max_line_bytes", "max_decompressed_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_quiet_rows < 0:
            raise ValueError(f"max_quiet_rows must be >= 0, got {self.max_quiet_rows}")
        if self.max_quiet_agents < 1:
            raise ValueError(f"max_quiet_agents must be >= 1, got {self.max_quiet_agents}")


@dataclass(slots=True)
class Analysis:
    """The result of one `analyze` call."""

    files: list[str]
    config: GuardConfig
    coverage: Coverage
    findings: Findings
    evaluations: RecordedEvaluations  # the input's evaluation events, set beside the replayed verdicts

    @property
    def verdicts(self) -> list[VerdictRow]:
        """Every verdict, as a list (all in memory: `findings.verdicts()` streams them)."""
        return list(self.findings.verdicts())

    def reaching(self, threshold: str) -> list[VerdictRow]:
        """Verdicts whose action is `threshold` or stronger (see `actions.ACTION_ORDER`)."""
        if not self.reached(threshold):
            return []
        return [row for row in self.findings.verdicts() if reaches(row.verdict.action, threshold)]

    def reached(self, threshold: str) -> int:
        """How many verdicts' actions are `threshold` or stronger."""
        return sum(n for action, n in self.findings.actions.items() if reaches(action, threshold))

    def findings_count(self) -> int:
        return sum(self.findings.findings_by_action.values())


def analyze(
    paths: Sequence[str | os.PathLike[str]],
    config: GuardConfig | dict[str, Any] | str | None = None,
    options: AnalyzerOptions | None = None,
    observe: Callable[[SpanView, Judged], None] | None = None,
) -> Analysis:
    """Analyse OTLP JSON trace files as one stream of spans; `observe`, when given, sees every judged
    span as the findings do (`html_report.HtmlReport.observe`). Raises `InputError` for a file that
    cannot be analysed at all (missing, binary, corrupt gzip, nothing in it is OTLP JSON, or nothing
    in its first `NOT_OTLP_RECORDS` records or `NOT_OTLP_BYTES` bytes) and `ConfigError` for an
    invalid config."""
    options = options or AnalyzerOptions()
    coverage = Coverage()
    findings = Findings(max_quiet_rows=options.max_quiet_rows, max_quiet_agents=options.max_quiet_agents)
    buffer = TraceBuffer(options.limits)
    coverage.buffer = buffer
    clock = ReplayClock()
    validated = GuardConfig.load(config)
    # A report may wait for the price table (loaded in the background at the first loop priced).
    engine = GuardEngine(validated, clock=clock, max_agents=options.max_tracked_agents, on_evict=coverage.evicted,
                         price_wait_s=_PRICE_WAIT_S)
    containment = Containment(coverage.internal_error)
    late_traces: frozenset[int] = frozenset()

    def on_judged(span: SpanView, judged: Judged) -> None:
        late = span.trace_id in late_traces
        coverage.judged_span(span, judged.classification.kind, judged.classification.convention,
                             judged.record, late)
        findings.add(span, judged)
        if observe is not None:
            observe(span, judged)

    event_outputs = EventOutputs()
    coverage.event_outputs = event_outputs
    replayer = Replayer(engine, on_judged, clock, contain=containment, event_outputs=event_outputs)
    # Coding-agent CLIs' tool calls (log records, spans): one record per call, joined within as many
    # records as a trace may wait for its root.
    cli_calls = CliCalls(engine, lambda span, judged, _: on_judged(span, judged), clock,
                         wait=options.limits.flush_after_records, contain=containment)
    coverage.cli_calls = cli_calls
    readers = _LogReaders(cli_calls, event_outputs, RecordedEvaluations())

    def replay(batches: list[Batch] | tuple[()]) -> None:
        nonlocal late_traces
        for batch in batches:
            late_traces = batch.late_traces
            replayer.replay(batch)

    record = 0
    for path in _log_files_first(paths):  # GenAI events then wait for the spans they name
        record = _read_file(path, record, coverage, buffer, replay, readers, options)
    replay(buffer.drain())
    cli_calls.drain()
    event_outputs.drain()
    coverage.verdicts_from_live_record = replayer.recorded_used
    coverage.not_ours = replayer.not_ours
    evaluations = readers.evaluations
    evaluations.compare(findings.verdicts())
    coverage.evaluations = evaluations
    return Analysis([os.fspath(p) for p in paths], validated, coverage, findings, evaluations)


@dataclass(slots=True)
class _LogReaders:
    """Where the records of a logs request go: CLI tool calls to be judged, GenAI events' output to
    its span, evaluation events to be compared with the replay."""

    cli_calls: CliCalls
    event_outputs: EventOutputs
    evaluations: RecordedEvaluations

    def read(self, document: Any, record: int, coverage: Coverage, file: FileCoverage) -> None:
        logs = read_records(log_records(document))
        for call, _ in logs.calls:
            self.cli_calls.add(call, None, record)
        for trace_id, span_id, event in logs.events:
            self.event_outputs.add(trace_id, span_id, event.messages)
        self.evaluations.add(logs.evaluations)
        coverage.logs_read(file, logs)


def _log_files_first(paths: Sequence[str | os.PathLike[str]]) -> list[str | os.PathLike[str]]:
    """The inputs, those whose first record is OTLP logs first (otherwise in the order given)."""
    return sorted(paths, key=lambda path: not starts_with_logs(path))


# A file whose first records are all something else than OTLP is refused there, not read to its end
# (a log of 256 MiB took minutes to be told it was no OTLP): at its first problem past either bound
# with no OTLP record before it (no span, no logs or metrics request, no empty request).
NOT_OTLP_RECORDS = 1000
NOT_OTLP_BYTES = 16 * 2**20
_NOT_OTLP = frozenset({NOT_JSON, NOT_A_REQUEST})


def _read_file(path: str | os.PathLike[str], record: int, coverage: Coverage, buffer: TraceBuffer,
               replay: Callable[[list[Batch] | tuple[()]], None], readers: _LogReaders,
               options: AnalyzerOptions) -> int:
    """Read one input file into the trace buffer, replaying what becomes ready; count what it held.
    `record` is the number of records (lines) read before it; returns the number after it."""
    source = open_input(path, max_line_bytes=options.max_line_bytes,
                        max_decompressed_bytes=options.max_decompressed_bytes)
    file = FileCoverage(os.fspath(path), compressed=source.compressed, named_gz_not_gzip=source.named_gz_not_gzip)
    coverage.files.append(file)
    first_problem: ReadProblem | None = None
    current_line = -1  # the line the last item came from
    record_line = -1  # the last line counted as an OTLP record
    lines_with_items = 0
    spans = 0
    not_otlp = 0  # records that were not OTLP
    add = buffer.add

    def record_ended() -> None:
        """Traces complete by now are replayed; CLI records that waited `flush_after_records` for
        their call's other record are judged alone (after span lines as after log lines)."""
        replay(buffer.ready(record))
        readers.cli_calls.expire(record)

    try:
        for read in iter_spans(source):
            if type(read) is SpanView:
                item = ReadSpan(read)
                line = source.lines
                if line != current_line:  # a new record
                    if current_line >= 0:
                        record_ended()
                    current_line = line
                    lines_with_items += 1
                    record += 1
                if line != record_line:  # a line with spans was a trace request
                    record_line = line
                    file.span_records += 1
                spans += 1
                readers.cli_calls.add_span(item, None, record)
                batches = add(item, record)
                if batches:
                    replay(batches)
                continue
            problem = cast(ReadProblem, read)  # iter_spans yields spans and the problems it met
            line = problem.line
            if line != current_line:
                if current_line >= 0:
                    record_ended()
                current_line = line
                lines_with_items += problem.lines
                record += 1
            if problem.reason == LOG_RECORDS and problem.document is not None:
                readers.read(problem.document, record, coverage, file)
            # A line with a span too broken to read was a trace request all the same.
            if line != record_line and problem.reason == BAD_SPAN:
                record_line = line
                file.span_records += 1
            if first_problem is None and problem.reason != BLANK:
                first_problem = problem
            coverage.problem(file, problem)
            if problem.reason in _NOT_OTLP:
                not_otlp += 1
                if (not_otlp >= NOT_OTLP_RECORDS or source.bytes_read >= NOT_OTLP_BYTES) and not spans \
                        and not (file.span_records or file.log_lines or file.metrics_lines) \
                        and source.lines <= lines_with_items + file.blank_lines:  # (no line held an empty request)
                    raise _not_otlp(file, first_problem)
    except UnreadableInput as error:
        raise InputError(file.path, error.line, error.reason) from None
    finally:
        source.close()
        file.spans += spans
        coverage.spans_read += spans
    file.lines = source.lines
    file.other_records = max(0, file.lines - lines_with_items)
    record_ended()
    if file.otlp_records == 0 and file.lines > file.blank_lines:
        raise _not_otlp(file, first_problem)
    return record


def _not_otlp(file: FileCoverage, problem: ReadProblem | None) -> InputError:
    hint = " (named .gz, but not gzip data)" if file.named_gz_not_gzip else ""
    if problem is None:
        return InputError(file.path, 0, f"not OTLP JSON{hint}")
    detail = f": {problem.detail}" if problem.detail else ""
    reason = "not JSON" if problem.reason == "not json" else problem.reason
    if problem.reason == NOT_A_REQUEST:
        reason = "JSON, but not an OTLP request"
    return InputError(file.path, problem.line, f"not OTLP JSON{hint}: {reason}{detail}")

