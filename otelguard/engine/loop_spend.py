"""What each loop has spent: tokens in and out, and their price (`otelguard.engine.pricing`).

The engine counts each agent's model calls that report their usage as they end (`AgentSpend`, in the
agent's state) and, for every loop verdict, steps that agent's loop (`loop_step`, under the agent's
lock): every driver gets the same spend from the engine (`Judged.loop_steps`). A loop is what the
guards judge:

- of model calls (`thinking_loop`, `repetitive_output`): a run of stalled calls (from the call whose
  verdict counts one stalled call), a streak of restated text-only answers (a loop of its own), or
  one call whose output repeated itself. It spent the usage of those calls.
- of tool calls (`repeated_tool_call`, `no_progress`): each repeated call was asked for by a model
  call. The loop spent the usage of the agent's model calls from the one that asked for the
  pattern's first repeat to the one that asked for the judged call, and on while the pattern goes
  on: the agent's tokens now less its tokens before that first model call (`ToolCall.tokens_before`,
  kept by the guard as `Verdict.loop_since`). The repeat ladder's first repeat is its count-2 call;
  no-progress finds its pattern some repeats in, and looks back to its first repeat.

A loop's tokens are kept per model and priced as a whole at each step, so a price table loaded after
the loop began still prices its earlier steps. A loop counts (the `otelguard.loop.tokens` and
`otelguard.loop.cost` metrics, the analyzer's summary) once a verdict of it acted: from then on with
all it has spent since it began. Where the agent's model calls report no usage (a coding-agent CLI's
hooks see tool calls only), the loop says so (`unpriced`) instead of claiming 0 tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import pricing
from ..model.actions import Action
from ..detectors.text_loop import TEXT_LOOP
from ..guards.no_progress import NO_PROGRESS_VERDICT
from ..guards.repeat_tool_reminder import REPEATED_TOOL_CALL
from ..guards.thinking_loop_guard import REPETITIVE_OUTPUT, THINKING_LOOP
from ..model.records import ModelUsage, Record, ToolCall, Verdict

MODEL_LOOP_VERDICTS = (THINKING_LOOP, REPETITIVE_OUTPUT)  # verdicts on model calls whose tokens were spent in a loop
TOOL_LOOP_VERDICTS = (REPEATED_TOOL_CALL, NO_PROGRESS_VERDICT)  # verdicts on tool calls the model asked for in a loop
LOOP_VERDICTS = MODEL_LOOP_VERDICTS + TOOL_LOOP_VERDICTS

# Why a loop has no price.
NO_USAGE = "no token usage reported"  # the agent's model calls report none (a CLI's hooks: tool calls only)
UNKNOWN_MODEL = "model not in genai-prices' table"
NO_PRICE_TABLE = "no price table (genai-prices not installed, or still loading)"


@dataclass
class LoopSpend:
    input_tokens: int | None = None  # None: no model call of the loop reported its usage
    output_tokens: int | None = None
    cost_usd: float | None = None
    unpriced: str | None = None  # why cost_usd is None

    def attributes(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {}
        if self.input_tokens is not None and self.output_tokens is not None:
            attributes["otelguard.loop.input_tokens"] = self.input_tokens
            attributes["otelguard.loop.output_tokens"] = self.output_tokens
        if self.cost_usd is not None:
            attributes["otelguard.loop.cost_usd"] = round(self.cost_usd, 9)
        elif self.unpriced is not None:
            attributes["otelguard.loop.unpriced"] = self.unpriced
        return attributes


@dataclass(frozen=True, slots=True)
class LoopStep:
    """One loop verdict's step of its loop."""

    verdict: Verdict
    key: str  # which of the agent's loops: the verdict's name, or `text-loop` (a loop of its own)
    spend: LoopSpend  # the loop's spend so far, this step included
    started: bool  # this step started the loop
    acted: bool  # a verdict of the loop acted (this one or an earlier one): the loop counts
    model: str | None  # the model its tokens are counted under (the metrics' label)
    new_output_tokens: int  # output tokens to count now: all so far at the loop's first acting verdict
    new_cost_usd: float  # price to count now: likewise, plus earlier steps priced only now


@dataclass(slots=True)  # one per looping agent: no __dict__ (state per agent, benchmarks/state_memory.py)
class _Loop:
    """A loop's tokens by model: its model's in fields (a dict of model -> [input, output] took three
    times the bytes), any further models' (rare: an agent that changes model mid-loop) in a flat list."""

    key: str
    model: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    other_models: list | None = None  # model, input, output for each further model, flat
    reported: bool = False  # some of its model calls reported usage
    # A tool loop: the agent's tokens (input, output) counted into it so far.
    through: tuple[int, int] | None = None
    acted: bool = False
    counted_output: int = 0  # of its output tokens, what went into the token metric so far
    counted_usd: float = 0.0  # of its price, what went into the cost metric so far

    def add(self, model: str | None, input_tokens: int, output_tokens: int) -> None:
        self.reported = True
        if model == self.model:
            self.input_tokens += input_tokens
            self.output_tokens += output_tokens
            return
        others = self.other_models
        if others is None:
            others = self.other_models = []
        for at in range(0, len(others), 3):
            if others[at] == model:
                others[at + 1] += input_tokens
                others[at + 2] += output_tokens
                return
        others += (model, input_tokens, output_tokens)

    def spent(self) -> list[tuple[str | None, int, int]]:
        """(model, input tokens, output tokens) of each model of the loop."""
        others = self.other_models or ()
        return [(self.model, self.input_tokens, self.output_tokens),
                *((others[at], others[at + 1], others[at + 2]) for at in range(0, len(others), 3))]

    def spend(self, price_wait_s: float) -> LoopSpend:
        if not self.reported:
            return LoopSpend(unpriced=NO_USAGE)
        spent = self.spent()
        tokens = (sum(each[1] for each in spent), sum(each[2] for each in spent))
        if price_wait_s:  # a report may wait for the table; an agent's thread never does (0)
            pricing.wait_until_loaded(price_wait_s)
        prices = [pricing.price_usd(*each) for each in spent]
        if all(price is not None for price in prices):
            return LoopSpend(*tokens, sum(prices))  # type: ignore[arg-type]  # (none is None)
        return LoopSpend(*tokens, unpriced=UNKNOWN_MODEL if pricing.pricing_available() else NO_PRICE_TABLE)


@dataclass(slots=True)  # one per agent whose model calls report usage: no __dict__
class AgentSpend:
    """One agent's tokens so far (its model calls that reported usage) and its loops under way (one
    per key at most)."""

    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None  # of the latest call that reported usage
    # The agent's tokens before its latest top-level model call that reported usage: where the tool
    # calls that call asked for stand (`ToolCall.tokens_before`). None until a call reported usage.
    asked_before: tuple[int, int] | None = None
    loops: list[_Loop] | None = None

    def model_ended(self, usage: ModelUsage, *, top_level: bool = True) -> None:
        """Count one model call's usage. `top_level` False: a call made inside a tool call (the tool
        called a model): its tokens count, but the agent's next tool calls are still the ones the
        model call before the tool asked for."""
        if usage.input_tokens is None and usage.output_tokens is None:
            return  # reports nothing: its source may report the call's usage apart (a CLI's request log)
        if top_level or self.asked_before is None:
            self.asked_before = (self.input_tokens, self.output_tokens)
        self.input_tokens += usage.input_tokens or 0
        self.output_tokens += usage.output_tokens or 0
        if usage.model:
            self.model = usage.model

    def _open(self, key: str) -> _Loop | None:
        return next((loop for loop in self.loops or () if loop.key == key), None)

    def _start(self, loop: _Loop) -> _Loop:
        """The agent's loop of that key from now on (one of a few keys: the list stays short)."""
        loops = self.loops
        if loops is None:
            loops = self.loops = []
        loops[:] = [other for other in loops if other.key != loop.key]
        loops.append(loop)
        return loop


def loop_step(spend: AgentSpend, verdict: Verdict, record: Record | None, usage: ModelUsage | None,
              price_wait_s: float = 0.0) -> LoopStep | None:
    """Step the agent's loop of `verdict` (judged on `record`; `usage`: a model call's own); None for
    a verdict on no loop."""
    kind = verdict.verdict
    if kind in MODEL_LOOP_VERDICTS and usage is not None:
        key = TEXT_LOOP if verdict.rule == TEXT_LOOP else kind
        # A text-loop verdict comes once a streak of answers is complete: a loop of its own, never a
        # step of the agent's stalled-reasoning loop (the same verdict name, another rule).
        starts = kind == REPETITIVE_OUTPUT or verdict.thinking_stalled == 1 or key == TEXT_LOOP
        loop = None if starts else spend._open(key)
        started = loop is None  # none under way (an agent state made mid-loop): this call starts one
        if loop is None:
            loop = spend._start(_Loop(key, usage.model))
        if usage.input_tokens is not None or usage.output_tokens is not None:
            loop.add(usage.model, usage.input_tokens or 0, usage.output_tokens or 0)
        model = usage.model
    elif kind in TOOL_LOOP_VERDICTS and isinstance(record, ToolCall):
        key = kind
        loop = None if _first_verdict_of_pattern(verdict) else spend._open(key)
        started = loop is None
        if loop is None:
            # From the model call that asked for the pattern's first repeat: found by the guard, or
            # (the repeat ladder's first repeat, or no usage known back then) the judged call's.
            since = verdict.loop_since or record.tokens_before or spend.asked_before
            loop = spend._start(_Loop(key, spend.model, through=since))
        if spend.asked_before is not None:  # the agent reports usage: what it spent since
            now = (spend.input_tokens, spend.output_tokens)
            through = loop.through or now
            loop.add(spend.model, now[0] - through[0], now[1] - through[1])
            loop.through = now
        model = spend.model
    else:
        return None
    loop_spend = loop.spend(price_wait_s)
    loop.acted = loop.acted or verdict.action != Action.NONE
    new_output, new_cost = 0, 0.0
    if loop.acted:  # the loop counts: what it spent and was not counted yet
        output = loop_spend.output_tokens or 0
        new_output, loop.counted_output = output - loop.counted_output, output
        if loop_spend.cost_usd is not None:
            new_cost, loop.counted_usd = max(loop_spend.cost_usd - loop.counted_usd, 0.0), loop_spend.cost_usd
    return LoopStep(verdict, key, loop_spend, started, loop.acted, model, new_output, new_cost)


def _first_verdict_of_pattern(verdict: Verdict) -> bool:
    """The repeat ladder's verdict on its first repeat (count 2); no-progress's first reaction to a
    pattern (it reminds once a pattern, the later verdicts steer, block or only count)."""
    if verdict.verdict == REPEATED_TOOL_CALL:
        return verdict.repeat_count == 2
    return verdict.action == Action.REMIND
