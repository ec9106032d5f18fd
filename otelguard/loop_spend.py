"""What each loop has spent since its first repeated step: tokens in and out, and their price.

A loop here is what the thinking-loop guard judges on model calls: a run of stalled calls (its first
step is the call whose verdict counts one stalled call) or one call whose output repeated itself.
Each such call's usage is read from its span; the loop's tokens are kept per model and priced as a
whole at each step (`otelguard.pricing`), so a price table loaded after the loop began still prices
its earlier steps. The running total goes on the call's span and evaluation event and the price
into `otelguard.loop.cost` (live), or into the analyzer's report. A loop made of repeated tool calls
is judged on tool spans, which carry no usage: it has no spend here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .detectors.text_loop import TEXT_LOOP
from .engine.bounded import OpenSpans
from .guards.thinking_loop_guard import REPETITIVE_OUTPUT, THINKING_LOOP
from .pricing import price_usd
from .records import ModelUsage, Verdict

LOOP_VERDICTS = (THINKING_LOOP, REPETITIVE_OUTPUT)  # verdicts on model calls whose tokens were spent in a loop


@dataclass
class LoopSpend:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # None while a model of the loop has no price (unknown, or no table yet)

    def attributes(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {"otelguard.loop.input_tokens": self.input_tokens,
                                      "otelguard.loop.output_tokens": self.output_tokens}
        if self.cost_usd is not None:
            attributes["otelguard.loop.cost_usd"] = round(self.cost_usd, 9)
        return attributes


@dataclass(slots=True)  # one per looping agent: no __dict__ (state per agent, benchmarks/state_memory.py)
class _Loop:
    """The tokens of a loop's model, in fields (a dict of model -> [input, output] took three times
    the bytes), and of any further models it used (rare: an agent that changes model mid-loop)."""

    model: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    other_models: list | None = None  # model, input, output for each further model, flat
    counted_usd: float = 0.0  # of its price, what went into the cost metric so far

    def add(self, model: str | None, input_tokens: int, output_tokens: int) -> None:
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

    def price(self) -> float | None:
        prices = [price_usd(*spent) for spent in self.spent()]
        known = [price for price in prices if price is not None]
        return sum(known) if len(known) == len(prices) else None


@dataclass(frozen=True)
class LoopStep:
    spend: LoopSpend  # the loop's spend so far, this call included
    new_cost_usd: float  # price not counted before: this call's, plus earlier steps priced only now
    started: bool  # this call started the loop


class LoopLedger:
    """The spend of each agent's current loop, by kind of loop. Bounded like the agents' state."""

    def __init__(self, max_loops: int, on_evict: Callable[[str, int], None]):
        self._loops: OpenSpans[tuple[str, str, bool], _Loop] = OpenSpans(max_loops, on_evict=on_evict)
        self._lock = threading.Lock()

    def step(self, agent_key: str, verdict: Verdict, usage: ModelUsage) -> LoopStep:
        """Add one judged call's usage to its agent's loop of that kind."""
        # A text-loop verdict comes once a streak of answers is complete: a loop of its own, never a step
        # of the agent's stalled-reasoning loop (the same verdict name, another rule).
        text_loop = verdict.rule == TEXT_LOOP
        starts = verdict.verdict == REPETITIVE_OUTPUT or verdict.thinking_stalled == 1 or text_loop
        key = (agent_key, verdict.verdict, text_loop)
        with self._lock:
            loop = None if starts else self._loops.get(key)
            if loop is None:
                starts = True  # no loop under way (or it was evicted): this call starts one
                loop = _Loop(usage.model)
                self._loops.put(key, loop)
            loop.add(usage.model, usage.input_tokens or 0, usage.output_tokens or 0)
            cost = loop.price()
            new_cost = 0.0
            if cost is not None:
                new_cost, loop.counted_usd = max(cost - loop.counted_usd, 0.0), cost
            spent = loop.spent()
            totals = (sum(tokens[1] for tokens in spent), sum(tokens[2] for tokens in spent))
        return LoopStep(LoopSpend(*totals, cost), new_cost, starts)
