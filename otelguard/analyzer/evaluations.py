"""Recorded evaluation events beside the replayed verdicts: where the live guard and the replay disagree.

A live guard leaves a `gen_ai.evaluation.result` event per verdict (`live.evaluation_events`); an
input holding those events (OTLP logs) is compared, once the replay is over, with what the replay
found on the same span. otelguard's own events (named `otelguard.<guard>.<rule>`, labelled with the
action) are matched to the replayed verdict of that guard and rule on that span; three things are
flagged:

- `not_reproduced`: a recorded otelguard verdict that the replay does not reach on that span;
- `not_recorded`: a replayed verdict with an action that no recorded event carries, on a trace the
  input holds evaluation events for (a trace without any was not evaluated live, or not exported);
- `label_mismatch`: the same verdict, with another action.

Other evaluators' events are listed, not compared. Bounded: at most `max_events` recorded events
are kept (the rest are counted in `not_kept`, and not compared), and at most as many disagreements
are listed (all are counted).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..model.actions import Action
from ..conventions.genai_events import RecordedEvaluation, evaluation_name
from .results import VerdictRow

DEFAULT_MAX_EVENTS = 100_000
NOT_REPRODUCED = "not_reproduced"
NOT_RECORDED = "not_recorded"
LABEL_MISMATCH = "label_mismatch"


@dataclass(slots=True)
class Replayed:
    """The replayed verdict a recorded event was set beside: its action, agent and step."""

    action: str
    agent: str
    step: int


@dataclass(slots=True)
class Entry:
    """One recorded evaluation event, with the replayed verdict it matches (None: none matched, or
    another evaluator's, not compared)."""

    recorded: RecordedEvaluation
    replayed: Replayed | None = None

    @property
    def agrees(self) -> bool | None:
        """Whether the replay agrees; None for another evaluator's event."""
        if not self.recorded.ours:
            return None
        return self.replayed is not None and self.replayed.action == self.recorded.label

    def to_json(self) -> dict[str, Any]:
        recorded = self.recorded
        replayed = self.replayed
        return {
            "trace_id": f"{recorded.trace_id:032x}",
            "span_id": f"{recorded.span_id:016x}",
            "name": recorded.name,
            "evaluator": "otelguard" if recorded.ours else "other",
            "label": recorded.label,
            "value": recorded.value,
            "explanation": recorded.explanation,
            "agent_name": recorded.agent_name,
            "replayed_action": replayed.action if replayed else None,
            "agent": replayed.agent if replayed else None,
            "step": replayed.step if replayed else None,
            "agrees": self.agrees,
        }


@dataclass(frozen=True, slots=True)
class Disagreement:
    kind: str  # NOT_REPRODUCED | NOT_RECORDED | LABEL_MISMATCH
    trace_id: int
    span_id: int
    name: str
    recorded_label: str | None
    replayed_action: str | None
    agent: str | None  # the replayed verdict's agent and step (None: the replay reached none)
    step: int | None

    def describe(self) -> str:
        where = f"span {self.trace_id:032x}/{self.span_id:016x}"
        if self.step is not None:
            where += f" (agent {self.agent}, step {self.step})"
        if self.kind == NOT_REPRODUCED:
            return f"{self.name} on {where}: recorded {self.recorded_label}, not reproduced by the replay"
        if self.kind == NOT_RECORDED:
            return f"{self.name} on {where}: replayed {self.replayed_action}, no recorded event carries it"
        return f"{self.name} on {where}: recorded {self.recorded_label}, replayed {self.replayed_action}"

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "trace_id": f"{self.trace_id:032x}", "span_id": f"{self.span_id:016x}",
                "name": self.name, "recorded_label": self.recorded_label, "replayed_action": self.replayed_action,
                "agent": self.agent, "step": self.step}


class RecordedEvaluations:
    """The evaluation events an input holds (bounded), then `compare`d with the replayed verdicts."""

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS):
        self.max_events = max_events
        self.entries: list[Entry] = []  # in the order read
        self._by_span: dict[tuple[int, int], list[Entry]] = {}  # otelguard's own, not matched yet
        self._traces: set[int] = set()  # traces with any evaluation event kept
        self.read = 0
        self.not_kept = 0  # past `max_events`: not compared
        self.disagreements: list[Disagreement] = []
        self.disagreement_counts: Counter = Counter()  # kind -> count
        self.compared = False

    def add(self, evaluations: Iterable[RecordedEvaluation]) -> None:
        for recorded in evaluations:
            self.read += 1
            if len(self.entries) >= self.max_events:
                self.not_kept += 1
                continue
            entry = Entry(recorded)
            self.entries.append(entry)
            self._traces.add(recorded.trace_id)
            if recorded.ours:
                self._by_span.setdefault((recorded.trace_id, recorded.span_id), []).append(entry)

    @property
    def ours(self) -> int:
        return sum(1 for entry in self.entries if entry.recorded.ours)

    @property
    def agreeing(self) -> int:
        return sum(1 for entry in self.entries if entry.agrees)

    def compare(self, rows: Iterable[VerdictRow]) -> None:
        """Set each replayed verdict beside the recorded event of its guard and rule on its span."""
        if not self.entries:
            return
        for row in rows:
            verdict, step = row.verdict, row.step
            name = evaluation_name(verdict.guard, verdict.rule)
            action = str(verdict.action)
            waiting = self._by_span.get((step.trace_id, step.span_id))
            entry = next((e for e in waiting if e.recorded.name == name), None) if waiting else None
            if waiting and entry is not None:
                waiting.remove(entry)
                entry.replayed = Replayed(action, row.agent.label, step.number)
                if entry.recorded.label != action:
                    self._flag(LABEL_MISMATCH, entry.recorded, action, row)
            elif verdict.action != Action.NONE and step.trace_id in self._traces:
                self._flag(NOT_RECORDED, None, action, row, name=name)
        for waiting in self._by_span.values():
            for entry in waiting:
                self._flag(NOT_REPRODUCED, entry.recorded, None, None)
        self._by_span.clear()
        self.compared = True

    def _flag(self, kind: str, recorded: RecordedEvaluation | None, action: str | None, row: VerdictRow | None,
              *, name: str = "") -> None:
        self.disagreement_counts[kind] += 1
        if len(self.disagreements) >= self.max_events:
            return
        if recorded is not None:
            trace_id, span_id, name, label = recorded.trace_id, recorded.span_id, recorded.name, recorded.label
        else:
            assert row is not None
            trace_id, span_id, label = row.step.trace_id, row.step.span_id, None
        self.disagreements.append(Disagreement(kind, trace_id, span_id, name, label, action,
                                               row.agent.label if row else None, row.step.number if row else None))

    def summary_json(self) -> dict[str, Any]:
        ours = self.ours
        return {
            "read": self.read,
            "otelguard": ours,
            "other": len(self.entries) - ours,
            "agreeing": self.agreeing,
            "disagreements": sum(self.disagreement_counts.values()),
            "disagreements_by_kind": dict(sorted(self.disagreement_counts.items())),
            "not_compared": self.not_kept,
        }
