"""What each loop has spent since its first repeated step: tokens in and out, and their price.

A loop here is what the thinking-loop guard judges on model calls: a run of stalled calls (its first
step is the call whose verdict counts one stalled call) or one call whose output repeated itself.
Each such call's usage is read from its span and priced (`otelguard.pricing`); the running total goes
on the call's span and evaluation event and its price into `otelguard.loop.cost` (live), or into the
analyzer's report. A loop made of repeated tool calls is judged on tool spans, which carry no usage:
it has no spend here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .engine.bounded import OpenSpans
from .pricing import price_usd
from .records import ModelUsage, Verdict

THINKING_LOOP, REPETITIVE_OUTPUT = "thinking_loop", "repetitive_output"
LOOP_VERDICTS = (THINKING_LOOP, REPETITIVE_OUTPUT)  # verdicts on model calls whose tokens were spent in a loop


@dataclass
class LoopSpend:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a step could not be priced (unknown model, no genai-prices)

    def attributes(self) -> dict[str, Any]:
        attributes: dict[str, Any] = {"otelguard.loop.input_tokens": self.input_tokens,
                                      "otelguard.loop.output_tokens": self.output_tokens}
        if self.cost_usd is not None:
            attributes["otelguard.loop.cost_usd"] = round(self.cost_usd, 9)
        return attributes


class LoopLedger:
    """The spend of each agent's current loop, by kind of loop. Bounded like the agents' state."""

    def __init__(self, max_loops: int, on_evict: Callable[[str, int], None]):
        self._loops: OpenSpans[tuple[str, str], LoopSpend] = OpenSpans(max_loops, on_evict=on_evict)
        self._lock = threading.Lock()

    def step(self, agent_key: str, verdict: Verdict, usage: ModelUsage) -> tuple[LoopSpend, float | None, bool]:
        """Add one judged call's usage to its loop; returns the loop's spend so far (a copy), this
        call's price (None when it has none) and whether the call started the loop."""
        input_tokens, output_tokens = usage.input_tokens or 0, usage.output_tokens or 0
        step_cost = price_usd(usage.model, input_tokens, output_tokens)
        starts = verdict.verdict == REPETITIVE_OUTPUT or verdict.thinking_stalled == 1
        key = (agent_key, verdict.verdict)
        with self._lock:
            spend = None if starts else self._loops.get(key)
            if spend is None:
                starts = True  # no loop under way (or it was evicted): this call starts one
                spend = LoopSpend()
                self._loops.put(key, spend)
            spend.input_tokens += input_tokens
            spend.output_tokens += output_tokens
            spend.cost_usd = None if spend.cost_usd is None or step_cost is None else spend.cost_usd + step_cost
            return LoopSpend(spend.input_tokens, spend.output_tokens, spend.cost_usd), step_cost, starts
