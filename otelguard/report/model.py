"""What a report shows, as plain values: a driver (the analyzer, later the service) fills them from
its own records; the renderer (`report.html`) reads only these.

Every string here may come from the input (names, ids, arguments, results, model text, messages
that quote them): the renderer treats them all as untrusted text.
"""

from __future__ import annotations

from dataclasses import dataclass, field

CONTENT_CHARS = 2000  # of a step's arguments or output, embedded (its full length is kept beside)
LOOKAHEAD_CALLS = 5  # calls after an acting verdict that decide whether its loop stopped


@dataclass(frozen=True, slots=True)
class Text:
    """The first `CONTENT_CHARS` characters of a string, and its full length."""

    head: str
    length: int

    @classmethod
    def of(cls, text: str) -> Text:
        return cls(text[:CONTENT_CHARS], len(text))


@dataclass(frozen=True, slots=True)
class Spend:
    """What a loop spent so far: tokens (None: no model call of it reported usage) and USD (None:
    not priced, `unpriced` says why)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    unpriced: str | None = None


@dataclass(frozen=True, slots=True)
class LoopMark:
    """A verdict's step of its loop: which of the run's loops (`key`), whether this step started it,
    whether a verdict of it acted so far, and its spend so far."""

    key: str
    started: bool
    acted: bool
    spend: Spend


@dataclass(frozen=True, slots=True)
class StepVerdict:
    guard: str
    verdict: str
    rule: str
    action: str
    acting: bool  # reminded, steered or stopped (not `none`)
    counting: bool  # only counts (a repeat between thresholds, a stall below the limit)
    message: str | None = None
    evidence: tuple[int, ...] = ()  # the steps that made its pattern, the judged step last
    counts: str = ""  # e.g. "count 3"
    loop: LoopMark | None = None


@dataclass(frozen=True, slots=True)
class Step:
    """One judged model or tool call of a run, in order. `arguments` / `output`: None when not
    captured or left out of the report."""

    number: int
    kind: str  # "model" | "tool"
    span_name: str
    name: str | None  # the tool's, or the model's
    what: str  # one line (the text report's)
    start_ns: int = 0
    end_ns: int | None = None
    error: bool = False
    arguments: Text | None = None
    output: Text | None = None
    verdicts: tuple[StepVerdict, ...] = ()


@dataclass(slots=True)
class Episode:
    """One loop of a run, as the engine steps it (`loop_spend`): from the step that started it, shown
    from its first evidence step, to its last step; with what it spent."""

    key: str
    guard: str
    verdict: str
    rule: str  # its first verdict's
    first_step: int  # the step that started it (the analyzer's `Loop.first_step`)
    evidence_step: int  # its earliest evidence step (<= first_step)
    last_step: int
    spend: Spend
    acted: bool = False


@dataclass(slots=True)
class ActingVerdict:
    """A verdict that acted, where it is, what its loop cost, and whether the loop stopped after it
    ("stopped": none of the next `LOOKAHEAD_CALLS` calls of its kind continued its pattern)."""

    run: int  # the run's number in the report
    id: int  # the verdict's number in its run
    step: int
    kind: str
    guard: str
    verdict: str
    rule: str
    action: str
    message: str | None
    evidence: tuple[int, ...]
    counts: str
    loop_key: str | None
    outcome: str | None = None  # "stopped" | "continued" | None (not a loop verdict)
    calls_after: int = 0  # calls of its kind seen after it (up to LOOKAHEAD_CALLS)
    loop_spend: Spend | None = None  # its loop's, in the end


@dataclass(slots=True)
class RunSummary:
    """One run (the analyzer's agent: its steps are numbered together) in the index."""

    key: str
    label: str | None
    number: int  # 1, 2, ... in the order first seen
    runs: int = 0  # agent-run spans ended
    model_calls: int = 0
    tool_calls: int = 0
    acting: int = 0  # acting verdicts
    flagged: int = 0  # findings without an action
    loops: int = 0  # loops acted on
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    unpriced: int = 0  # loops acted on without a price
    first_start_ns: int | None = None
    last_end_ns: int | None = None
    steps_kept: int = 0  # steps in the timeline
    steps_dropped: int = 0  # steps of its ended runs before any acting verdict: not kept


@dataclass(slots=True)
class RuleTotals:
    """A guard's rule over the whole report."""

    guard: str
    rule: str
    acting: int = 0
    actions: dict[str, int] = field(default_factory=dict)
    stopped: int = 0
    continued: int = 0
    loops: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    unpriced: int = 0


def add_loops(counts: RunSummary | RuleTotals, loops: int, input_tokens: int, output_tokens: int,
              cost_usd: float | None, unpriced: int) -> None:
    """Loops and what they spent, added to a run's or a rule's counts (`cost_usd`: of the priced ones;
    the counts' cost stays None until a loop is priced)."""
    counts.loops += loops
    counts.input_tokens += input_tokens
    counts.output_tokens += output_tokens
    counts.unpriced += unpriced
    if cost_usd is not None:
        counts.cost_usd = (counts.cost_usd or 0.0) + cost_usd


@dataclass(slots=True)
class Overview:
    """The report's head: what was read and the driver's own summary and coverage lines (shown as
    they are; `warnings` marks the lines that say the verdicts are incomplete)."""

    title: str
    files: list[str]
    summary_lines: list[str] = field(default_factory=list)
    coverage_lines: list[str] = field(default_factory=list)
    warnings: list[bool] = field(default_factory=list)  # per coverage line
    counts: dict[str, int | float | None] = field(default_factory=dict)  # runs, agents, steps, verdicts...
    incomplete: bool = False
