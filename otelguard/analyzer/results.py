"""What the replay found: steps per agent, verdicts, and the order of actions for `--fail-on`.

Every step with a verdict is kept, but steps without one are kept only up to `max_quiet_rows` per
agent, and only `max_quiet_agents` agents without any verdict keep a table (the others are
counted). What is kept goes to a `Spool` on disk: memory holds the summaries of the agents
`_LIVE_AGENTS` most recently active and the totals, however many verdicts there are.
"""

from __future__ import annotations

from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from operator import attrgetter
from typing import Any

from ..model.actions import ACTION_ORDER, Action
from ..conventions import model_name
from ..engine.loop_spend import MODEL_LOOP_VERDICTS, LoopSpend, LoopStep
from ..engine import AgentRef, Judged
from .spool import Spool
from ..model.records import SpanKind, SpanView, Verdict, is_counting
from ..report.steps import describe, summarize

FAIL_ON_CHOICES = tuple(action.value for action in ACTION_ORDER[1:])  # `--fail-on A`: A or stronger

DEFAULT_MAX_QUIET_ROWS = 500
DEFAULT_MAX_QUIET_AGENTS = 200
_LIVE_AGENTS = 1024  # agent summaries held in memory (the most recently active); the others are spooled


@dataclass(slots=True)
class Step:
    """One judged model or tool span of an agent, in replay order. `summary` holds what the report
    says of its record (see `summarize`), put into words only if the step is shown."""

    number: int
    kind: str  # "model" | "tool"
    trace_id: int
    span_id: int
    span_name: str
    convention: str
    summary: tuple[Any, ...]
    verdicts: tuple[Verdict, ...]

    @property
    def what(self) -> str:
        return describe(self.summary)[0]

    def to_json(self) -> dict[str, Any]:
        what, facts = describe(self.summary)
        return {
            "step": self.number,
            "kind": self.kind,
            "trace_id": f"{self.trace_id:032x}",
            "span_id": f"{self.span_id:016x}",
            "span_name": self.span_name,
            "convention": self.convention,
            "what": what,
            **facts,
            "verdicts": [verdict_json(v) for v in self.verdicts],
        }


@dataclass(slots=True)
class Loop:
    """One loop of an agent (`loop_spend`): of model calls (stalled reasoning, output that repeated
    itself) or of tool calls (a repeated call, a no-progress pattern); the steps with its verdicts and
    what it spent, up to the step that broke it or the end of the input. A tool loop's spend counts
    from the model call that asked for its first repeat, which no-progress finds some steps before
    its first verdict (`first_step`)."""

    kind: str  # the verdict: thinking_loop | repetitive_output | repeated_tool_call | no_progress
    rule: str  # its first verdict's
    key: str  # which of the agent's loops (`LoopStep.key`)
    first_step: int
    last_step: int
    spend: LoopSpend
    acted: bool = False  # a verdict of it reminded, steered or stopped: only such a loop is counted

    @property
    def of_tool_calls(self) -> bool:
        return self.kind not in MODEL_LOOP_VERDICTS

    def to_json(self) -> dict[str, Any]:
        spend = self.spend
        return {"kind": self.kind, "rule": self.rule, "first_step": self.first_step, "last_step": self.last_step,
                "input_tokens": spend.input_tokens, "output_tokens": spend.output_tokens,
                "cost_usd": None if spend.cost_usd is None else round(spend.cost_usd, 6),
                "unpriced": spend.unpriced if spend.cost_usd is None else None}


@dataclass(slots=True)
class AgentSummary:
    key: str
    name: str | None
    seq: int = 0  # the order in which agents were first seen
    runs: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    verdicts: int = 0  # non-counting verdicts
    steps_with_verdicts: int = 0
    quiet_rows: int = 0  # listed steps without a verdict
    quiet_steps_not_listed: int = 0
    first_trace_id: int | None = None
    traces: int = 0
    loops: list[Loop] = field(default_factory=list)
    _last_trace: int | None = None

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.key.startswith("trace:"):
            return f"(trace {self.key[6:]}, no agent span)"
        return f"({self.key})"

    @property
    def acted_loops(self) -> list[Loop]:
        """The loops the guard acted on (a loop only flagged is no loop a person must hear of), each
        with its spend from its first step."""
        return [loop for loop in self.loops if loop.acted]

    @property
    def steps_total(self) -> int:
        return self.model_calls + self.tool_calls

    def to_json(self, steps: Iterable[Step] | None = None) -> dict[str, Any]:
        """The agent, with `steps` (its listed steps, `Findings.steps`) when given."""
        out: dict[str, Any] = {
            "key": self.key,
            "name": self.name,
            "runs": self.runs,
            "traces": self.traces,
            "first_trace_id": f"{self.first_trace_id:032x}" if self.first_trace_id is not None else None,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "verdicts": self.verdicts,
            "loops": [loop.to_json() for loop in self.acted_loops],
        }
        if steps is not None:
            out["steps"] = [step.to_json() for step in steps]
            out["steps_not_listed"] = self.quiet_steps_not_listed
        return out


@dataclass(slots=True)
class VerdictRow:
    """A verdict with where it belongs."""

    verdict: Verdict
    agent: AgentSummary
    step: Step

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": f"{self.step.trace_id:032x}",
            "span_id": f"{self.step.span_id:016x}",
            "span_name": self.step.span_name,
            "agent": self.agent.label,
            "agent_key": self.agent.key,
            "step": self.step.number,
            "kind": self.step.kind,
            **verdict_json(self.verdict),
        }


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {
        "guard": verdict.guard,
        "verdict": verdict.verdict,
        "rule": verdict.rule,
        "action": verdict.action,
        "counting": is_counting(verdict),
        "tool": verdict.tool,
        "count": verdict.repeat_count,
        "stalled": verdict.thinking_stalled,
        "stream_chars": verdict.stream_chars,
        "error_code": verdict.error_code,
        "message": verdict.message,
        "evidence": [entry.to_json() for entry in verdict.evidence],
        "paused": verdict.paused,
    }


class Findings:
    """Collects judged spans into agents, steps and verdicts (bounded; see the module doc). Read
    them back with `agents()`, `steps(key)` and `verdicts()` once the analysis is over."""

    def __init__(self, *, max_quiet_rows: int = DEFAULT_MAX_QUIET_ROWS,
                 max_quiet_agents: int = DEFAULT_MAX_QUIET_AGENTS):
        self.max_quiet_rows = max_quiet_rows
        self.max_quiet_agents = max_quiet_agents
        self._spool = Spool()
        self._live: OrderedDict[str, AgentSummary] = OrderedDict()  # least recently active first
        self._spooled = False  # whether any agent summary went to the spool
        self._settled = True  # whether the spool holds every agent as it is now
        self._seq = 0
        self.agents_listed = 0
        # Agents without any verdict yet, least recently active first: the first to go past the budget.
        self._quiet: OrderedDict[str, None] = OrderedDict()
        self.quiet_agents_not_listed = 0
        self.quiet_agents_not_listed_steps = 0
        # Totals of the verdicts (the rows are in the spool).
        self.verdict_count = 0
        self.actions: Counter = Counter()  # action -> verdicts, counting ones too
        self.findings_by_action: Counter = Counter()  # action -> verdicts that are findings (not counting)
        self.flags: Counter = Counter()  # rule -> findings without an action
        self.counting = 0
        self.thinking_stalls = 0  # thinking_loop verdicts
        self.thinking_reactions = 0  # ... with an action
        self.cuts = 0  # `break` verdicts: streams cut

    def add(self, span: SpanView, judged: Judged) -> None:
        self._settled = False
        kind = judged.classification.kind
        agent = self._agent(judged.agent)
        if agent.first_trace_id is None:
            agent.first_trace_id = span.trace_id
        if agent._last_trace != span.trace_id:
            agent._last_trace = span.trace_id
            agent.traces += 1
        if kind is SpanKind.AGENT:
            agent.runs += 1
            return
        shown = judged.shown
        if kind is SpanKind.MODEL:
            agent.model_calls += 1
        else:
            agent.tool_calls += 1
        if not shown:
            if agent.quiet_rows >= self.max_quiet_rows:
                agent.quiet_steps_not_listed += 1
                return
            agent.quiet_rows += 1
        model = model_name(span, judged.classification) if kind is SpanKind.MODEL else None
        # The engine's step number: the one the verdicts' evidence names.
        step = Step(judged.step, kind.value, span.trace_id, span.span_id, span.name,
                    judged.classification.convention, summarize(judged.record, model), tuple(shown))
        row = _step_row(step)
        self._spool.add_step(agent.key, row)
        if shown:
            agent.steps_with_verdicts += 1
            self._quiet.pop(agent.key, None)
        for index, verdict in enumerate(shown):
            self._spool.add_verdict(agent.key, (index, row))
            self._count(verdict)
            if not is_counting(verdict):
                agent.verdicts += 1
        for loop_step in judged.loop_steps:
            _step_loop(agent, step.number, loop_step)

    def _count(self, verdict: Verdict) -> None:
        action = verdict.action
        self.verdict_count += 1
        self.actions[action] += 1
        if is_counting(verdict):
            self.counting += 1
        else:
            self.findings_by_action[action] += 1
            if action == "none":
                self.flags[verdict.rule] += 1
        if verdict.verdict == "thinking_loop":
            self.thinking_stalls += 1
            self.thinking_reactions += action != "none"
        self.cuts += action == "break"

    def _agent(self, ref: AgentRef) -> AgentSummary:
        key = ref.key
        agent = self._live.get(key)
        if agent is not None:
            self._live.move_to_end(key)
        else:
            agent = self._spooled_agent(key) if self._spooled else None
            if agent is None:
                agent = AgentSummary(key, ref.name, self._seq)
                self._seq += 1
                self.agents_listed += 1
                self._quiet[key] = None
            self._live[key] = agent
            if len(self._live) > _LIVE_AGENTS:
                _, oldest = self._live.popitem(last=False)
                self._spool.put_agent(oldest.key, oldest.seq, _AGENT_FIELDS(oldest))
                self._spooled = True
            if len(self._quiet) > self.max_quiet_agents:
                self._drop(next(iter(self._quiet)))
        if agent.name is None and ref.name:
            agent.name = ref.name
        if key in self._quiet:
            self._quiet.move_to_end(key)
        return agent

    def _drop(self, key: str) -> None:
        del self._quiet[key]
        agent = self._live.pop(key, None) or self._spooled_agent(key)
        self._spool.drop_agent(key)
        self.agents_listed -= 1
        self.quiet_agents_not_listed += 1
        self.quiet_agents_not_listed_steps += agent.steps_total if agent is not None else 0

    # --- reading, once the analysis is over --------------------------------------------------------
    def _settle(self) -> None:
        if self._settled:
            return
        for agent in self._live.values():
            self._spool.put_agent(agent.key, agent.seq, _AGENT_FIELDS(agent))
        self._spooled = self._settled = True

    def _spooled_agent(self, key: str) -> AgentSummary | None:
        row = self._spool.agent(key)
        return None if row is None else AgentSummary(*row)

    def agents(self) -> Iterator[AgentSummary]:
        """The listed agents, in the order first seen."""
        self._settle()
        return (AgentSummary(*row) for row in self._spool.agents())

    def steps(self, key: str) -> Iterator[Step]:
        """An agent's listed steps, in replay order."""
        self._settle()
        return map(_step_of, self._spool.steps(key))

    def verdicts(self) -> Iterator[VerdictRow]:
        """Every verdict, in the order found."""
        self._settle()
        agents: OrderedDict[str, AgentSummary] = OrderedDict()  # the agents of recent rows
        for key, (index, row) in self._spool.verdicts():
            agent = agents.get(key)
            if agent is None:
                spooled = self._spooled_agent(key)
                assert spooled is not None  # a verdict's agent is spooled before it
                agent = agents[key] = spooled
                if len(agents) > _LIVE_AGENTS:
                    agents.popitem(last=False)
            step = _step_of(row)
            yield VerdictRow(step.verdicts[index], agent, step)


def _step_loop(agent: AgentSummary, step_number: int, loop_step: LoopStep) -> None:
    """A step judged part of a loop: the agent's loop of its key goes on, or a new one starts. A loop
    never acted on is replaced by the next of its key (only loops that acted are reported; without
    this, every call repeated once would stay listed)."""
    loops = agent.loops
    loop = None if loop_step.started else next((each for each in reversed(loops) if each.key == loop_step.key), None)
    if loop is None:
        previous = next((at for at in range(len(loops) - 1, -1, -1) if loops[at].key == loop_step.key), None)
        if previous is not None and not loops[previous].acted:
            del loops[previous]
        verdict = loop_step.verdict
        loop = Loop(verdict.verdict, verdict.rule, loop_step.key, step_number, step_number, loop_step.spend)
        loops.append(loop)
    else:
        loop.last_step, loop.spend = step_number, loop_step.spend
    loop.acted = loop_step.acted


# Spooled as tuples of their fields: pickling a slotted dataclass itself is several times slower.
_AGENT_FIELDS = attrgetter(*(f.name for f in fields(AgentSummary)))
_VERDICT_FIELDS = attrgetter(*(f.name for f in fields(Verdict)))
_ACTION_AT = [f.name for f in fields(Verdict)].index("action")  # spooled as its string


def _step_row(step: Step) -> tuple[Any, ...]:
    verdicts = []
    for verdict in step.verdicts:
        values = list(_VERDICT_FIELDS(verdict))
        values[_ACTION_AT] = str(values[_ACTION_AT])
        verdicts.append(tuple(values))
    return (step.number, step.kind, step.trace_id, step.span_id, step.span_name, step.convention, step.summary,
            tuple(verdicts))


def _step_of(row: tuple[Any, ...]) -> Step:
    number, kind, trace_id, span_id, span_name, convention, summary, rows = row
    verdicts = []
    for values in rows:
        values = list(values)
        values[_ACTION_AT] = Action(values[_ACTION_AT])
        verdicts.append(Verdict(*values))
    return Step(number, kind, trace_id, span_id, span_name, convention, summary, tuple(verdicts))
