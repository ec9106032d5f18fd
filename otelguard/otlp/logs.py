"""OTLP log records read for the guard, one pass over a decoded request, for the analyzer and the service.

Each record is one of: a coding-agent CLI's tool call or what one of its model calls spent
(`conventions.agent_clis`), a GenAI event that
tells of a model call's output (`conventions.genai_events`), an evaluation event
(`gen_ai.evaluation.result`, otelguard's or another evaluator's: `live.evaluation_events`), or none
of these (not read). The decoders hand records over as `LogRecordFields`, already decoded: the
analyzer's OTLP/JSON reader (`analyzer.otlp_json.log_records`, from the JSON it parsed for spans) and
the service's protobuf reader (`service.received.log_calls_of`); `read_records` sorts them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..conventions.agent_clis import CliModelCall, CliToolCall, from_log
from ..conventions.genai_events import EventOutput, RecordedEvaluation, event_name, read_evaluation, read_event

_GENAI = "gen_ai."


class LogRecordFields(NamedTuple):
    """One log record, decoded: its sender's service.name (None where unknown), trace context, event
    name field, attributes and body."""

    service: str | None
    trace_id: int
    span_id: int
    event_name: str
    attributes: Mapping[str, Any]
    body: Any
    time_ns: int
    observed_ns: int


@dataclass(slots=True)
class LogsRead:
    """What a request's log records held for the guard, and how many were not read."""

    # CLI tool calls and model calls, in record order (a model call's usage counts for the tool calls it
    # asked for, which come after it), each with the sender's service.name.
    calls: list[tuple[CliToolCall | CliModelCall, str | None]] = field(default_factory=list)
    events: list[tuple[int, int, EventOutput]] = field(default_factory=list)  # (trace id, span id, output)
    evaluations: list[RecordedEvaluation] = field(default_factory=list)
    records: int = 0
    genai_not_read: int = 0  # records not read that carry gen_ai content (an event name or an attribute)

    @property
    def model_calls(self) -> int:
        """Of `calls`, the CLI model calls (told by their usage)."""
        return sum(isinstance(call, CliModelCall) for call, _ in self.calls)

    @property
    def not_read(self) -> int:
        return self.records - len(self.calls) - len(self.events) - len(self.evaluations)

    def add(self, record: LogRecordFields | None) -> None:
        """One record (None: one that could not be decoded, counted as not read)."""
        self.records += 1
        if record is None:
            return
        attributes = record.attributes
        call = from_log(attributes, record.time_ns, record.observed_ns, record.trace_id, record.span_id)
        if call is not None:
            self.calls.append((call, record.service))
            return
        name = event_name(record.event_name, attributes)
        evaluation = read_evaluation(name, attributes, record.trace_id, record.span_id)
        if evaluation is not None and record.span_id:
            self.evaluations.append(evaluation)
            return
        event = read_event(name, attributes, record.body)
        if event is not None and record.span_id:
            self.events.append((record.trace_id, record.span_id, event))
        elif name.startswith(_GENAI) or any(key.startswith(_GENAI) for key in attributes):
            self.genai_not_read += 1


def read_records(records: Iterable[LogRecordFields | None]) -> LogsRead:
    """Sort a request's decoded log records (None: a record that could not be decoded)."""
    read = LogsRead()
    for record in records:
        read.add(record)
    return read
