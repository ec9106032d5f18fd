"""Tool-call sequences that make no progress: the window of one agent's recent calls and its rules.

Identity of a call = tool name + canonical arguments; of a step = that call + its result's signature
(`signatures.result_signature`), so an identical call whose result changes (polling) is progress.
Every rule is judged incrementally on the call just ended, in O(window) work and bounded state.

The rules, each counting `repeats`:
- `cycle`: the steps repeat with a period of 2..max_period; repeats = whole periods in a row.
- `interleaved-repeat`: the same step again with only transparent calls between (period 1).
- `same-result`: the same step `repeats` times within the last `window` calls, other calls between.
- `error-loop`: the same tool failing with the same masked error on each of its last calls, whatever
  the arguments; repeats = those failures in a row.
- `near-duplicate`: the same tool, arguments equal but for whitespace, quotes and Unicode form, with
  the same result, on consecutive calls; repeats = those calls.

A call that continues a back-to-back run of identical calls (the repeat reminder's own run) is not
judged nor kept: that run is `repeat-tool-reminder`'s.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import NamedTuple

from ..records import Content, ToolCall
from .repeat import RepeatChain, ToolFilter, compact_arguments
from .signatures import error_signature, error_text, failed, loose_arguments, result_signature

CYCLE = "cycle"
INTERLEAVED_REPEAT = "interleaved-repeat"
SAME_RESULT = "same-result"
ERROR_LOOP = "error-loop"
NEAR_DUPLICATE = "near-duplicate"


class Step(NamedTuple):
    """One judged call, as the window keeps it: signatures and a bounded preview, never the texts."""

    name: str
    key: object  # (name, compacted arguments); a fresh object when the arguments were not read
    result: str | None  # signature of the result (of the error, for a failed call)
    error: str | None  # error signature of a failed call
    loose: object  # the near-duplicate key
    preview: str  # the arguments, cut at the preview length
    arguments_chars: int
    arguments_json: bool
    error_preview: str | None  # the error, cut at the preview length
    error_run: int  # this tool's failures in a row with this error, this one included (0: no failure)
    near_run: int  # consecutive near-duplicate calls ending here (1: none before)


class Finding(NamedTuple):
    """A rule that holds on the call just judged."""

    rule: str
    repeats: int
    pattern: tuple  # what identifies the pattern across its calls (the same while it goes on)
    steps: tuple[Step, ...]  # the calls that make it, oldest first
    next_key: object  # the key of the call that continues it (a near-duplicate's: its loose key)
    next_tool: str
    next_repeats: int  # repeats once that call continues it


@dataclass(slots=True)
class ProgressState:
    """One agent's window. `steps` is bounded; `runs[p]` counts the steps in a row equal to the step
    `p` before them (period p)."""

    steps: deque
    runs: list[int]
    seed: RepeatChain
    reacted: dict  # pattern -> [repeats at the first reaction, steered]; the guard bounds it
    previous: object = None  # the key of the last call, whatever its tool
    upcoming: Finding | None = None  # the finding the last judged call left open
    blocked: object = None  # the key blocked at its start, until that call ends




class ProgressDetector:
    """`transparent`: tools whose calls are not steps (bookkeeping). `seed_tools` and `seed_results`:
    which calls the repeat reminder tracks and whether it compares results, so that the detector
    knows that guard's back-to-back run exactly."""

    def __init__(self, *, rules: tuple[str, ...], max_period: int, min_repeats: int, window: int,
                 min_errors: int, preview_chars: int, transparent: ToolFilter, seed_tools: ToolFilter,
                 seed_results: bool = False):
        self.transparent = transparent.tracks
        self.seed_tracks = seed_tools.tracks
        self.seed_results = seed_results
        self.rules = frozenset(rules)
        self.max_period = max_period
        self.min_repeats = min_repeats
        self.window = window
        self.min_errors = min_errors
        self.preview_chars = preview_chars
        self._capacity = max(window, max_period * 2)

    def new_state(self) -> ProgressState:
        return ProgressState(deque(maxlen=self._capacity), [0] * (self.max_period + 1), RepeatChain(), {})

    @staticmethod
    def reset(state: ProgressState) -> None:
        state.steps.clear()
        state.runs[:] = [0] * len(state.runs)
        state.seed.reset()
        state.reacted.clear()
        state.previous = state.upcoming = state.blocked = None

    def judges(self, state: ProgressState, name: str, arguments: str | None) -> bool:
        """Whether a call about to start would be judged: not transparent, and not continuing a
        back-to-back run of identical calls (the repeat reminder's, or one it was told to leave)."""
        if self.transparent(name):
            return False
        if arguments is None:
            return True
        key = (name, compact_arguments(arguments))
        return key != state.previous and not (self.seed_tracks(name) and state.seed.matches(name, arguments))

    def observe(self, state: ProgressState, call: ToolCall, name: str) -> Finding | None:
        """Judge one ended call; None when no rule holds on it, or when it is not judged (a
        transparent call, or one continuing a back-to-back run of identical calls)."""
        arguments = call.arguments
        key = (name, compact_arguments(arguments)) if arguments is not None else None
        previous, state.previous = state.previous, key
        if self.seed_tracks(name):  # the repeat reminder's chain, kept as that guard keeps it
            if arguments is None:
                state.seed.reset()
            elif state.seed.observe(name, arguments,
                                    result_signature(call.result) if self.seed_results else None) > 1:
                return None
        if self.transparent(name) or (key is not None and key == previous):
            return None
        step = self._step(state, call, name, arguments, key)
        steps = state.steps
        steps.append(step)
        runs = state.runs
        count = len(steps)
        ident = (step.key, step.result)
        for period in range(1, self.max_period + 1):
            before = steps[count - 1 - period] if count > period else None
            runs[period] = runs[period] + 1 if before is not None and (before.key, before.result) == ident else 0
        finding = self._find(state, step)
        state.upcoming = finding
        return finding

    def _step(self, state: ProgressState, call: ToolCall, name: str, arguments: str | None, key: object) -> Step:
        limit = self.preview_chars
        if arguments is None:
            key = object()  # not read: equal to no other call
            loose: object = object()
            preview, chars, is_json = "", 0, True
        else:
            loose = (name, loose_arguments(arguments))
            preview, chars, is_json = arguments[:limit], len(arguments), call.arguments_content is Content.OK
        error = error_preview = None
        error_run = near_run = 0
        if failed(call):
            text = error_text(call)
            error, error_preview = error_signature(text), text[:limit]
            error_run = 1
            result = result_signature(text)  # a failure's outcome is what it said (another error is progress)
        else:
            result = result_signature(call.result)
        steps = state.steps
        if steps:
            last = steps[-1]
            if last.loose == loose and last.result == result and last.key != key:
                near_run = last.near_run + 1 if last.near_run else 2
        if error is not None:
            for earlier in reversed(steps):  # this tool's previous call, within the window
                if earlier.name == name:
                    if earlier.error == error:
                        error_run = earlier.error_run + 1
                    break
        return Step(name, key, result, error, loose, preview, chars, is_json, error_preview, error_run, near_run)

    def _find(self, state: ProgressState, step: Step) -> Finding | None:
        rules, runs, steps, min_repeats = self.rules, state.runs, state.steps, self.min_repeats
        for period in range(1, self.max_period + 1):
            length = runs[period] + period
            if length >= period * min_repeats:
                block = tuple(steps[i] for i in range(len(steps) - period, len(steps)))
                if period == 1 and INTERLEAVED_REPEAT in rules:
                    return Finding(INTERLEAVED_REPEAT, length, (INTERLEAVED_REPEAT, step.key), block, step.key,
                                   step.name, length + 1)
                if period > 1 and CYCLE in rules:
                    pattern = (CYCLE, frozenset(s.key for s in block))
                    return Finding(CYCLE, length // period, pattern, block, block[0].key, block[0].name,
                                   (length + 1) // period)
                break  # the shortest period names the pattern
        if SAME_RESULT in rules and step.result is not None:
            recent = range(max(0, len(steps) - self.window), len(steps))
            same = [i for i in recent if steps[i].key == step.key and steps[i].result == step.result]
            if len(same) >= min_repeats and not self._cycle_in_the_making(runs, same):
                return Finding(SAME_RESULT, len(same), (SAME_RESULT, step.key), (step,), step.key, step.name,
                               len(same) + 1)
        if ERROR_LOOP in rules and step.error_run >= self.min_errors:
            return Finding(ERROR_LOOP, step.error_run, (ERROR_LOOP, step.name, step.error), (step,), None, step.name,
                           step.error_run + 1)
        if NEAR_DUPLICATE in rules and step.near_run >= min_repeats:
            return Finding(NEAR_DUPLICATE, step.near_run, (NEAR_DUPLICATE, step.loose), (step,), step.loose,
                           step.name, step.near_run + 1)
        return None

    def _cycle_in_the_making(self, runs: list[int], same: list[int]) -> bool:
        """Whether the steps from the first of `same` to now repeat with the spacing of `same`: a
        cycle still short of its repeats, which the cycle rule names once it has them."""
        gap = same[1] - same[0]
        return (CYCLE in self.rules and gap <= self.max_period and runs[gap] > same[-1] - same[0] - gap
                and all(b - a == gap for a, b in zip(same, same[1:])))

    @staticmethod
    def continues(finding: Finding, name: str, arguments: str) -> bool:
        """Whether a call about to start (its result unknown) continues the finding's pattern."""
        if finding.rule == ERROR_LOOP:
            return name == finding.next_tool  # whatever the arguments
        if finding.rule == NEAR_DUPLICATE:
            return (name, loose_arguments(arguments)) == finding.next_key
        return (name, compact_arguments(arguments)) == finding.next_key
