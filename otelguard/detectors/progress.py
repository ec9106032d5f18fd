"""Tool-call sequences that make no progress: the window of one agent's recent calls and its rules.

Identity of a call = tool name + canonical arguments; of a step = that call + its outcome's signature
(`signatures.outcome_signature` of its result, or of its status and output when it failed), so an
identical call whose result changes (polling, a test run after an edit) is progress. Every rule is
judged incrementally on the call just ended, in O(window + max_period) work, over bounded state:
each step is a few 64-bit hashes (`Window`), and the arguments preview a message quotes is kept
only for calls seen before in the window (a cycle's calls all are).

The rules, each counting `repeats`:
- `cycle`: the steps repeat with a period of 2..max_period; repeats = whole periods in a row.
- `interleaved-repeat`: the same step again with only transparent calls between (period 1).
- `same-result`: the same step `repeats` times within the last `window` steps, other calls between
  (not evenly spaced as a cycle still short of its repeats is: that one is the cycle rule's).
- `error-loop`: one tool failing with the same error (what it printed, `signatures.outcome_signature`)
  on each of its last calls, their arguments near-identical (`near_identical`); repeats = those
  failures in a row. A failure that printed nothing beyond its status is no evidence of the same
  error; where the source reports no output at all, only identical arguments continue the run.
- `near-duplicate`: the same tool, arguments equal but for whitespace, quotes and Unicode form, the
  same outcome, on consecutive steps; repeats = those steps.

A call that continues a back-to-back run of identical calls (the repeat reminder's run, or one its
include / exclude leaves out) is neither judged nor kept: that run is `repeat-tool-reminder`'s.

A finding's evidence is the steps of the window that make its pattern (the cycle's periods, the
repeats, the same results, the failures in a row), each step's number and span kept in the window.
A rule never reports a pattern any of whose calls is of a tool it exempts (`exempt`); a lower rule
may still report the call.
"""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from typing import NamedTuple

from ..model.records import Content, Evidence, ToolCall
from .evidence import MAX_EVIDENCE, earlier, of_tool_call, preview, span_id_kept
from .repeat import ToolFilter
from .signatures import failed, failure_text, loose_arguments, outcome_signature

CYCLE = "cycle"
INTERLEAVED_REPEAT = "interleaved-repeat"
SAME_RESULT = "same-result"
ERROR_LOOP = "error-loop"
NEAR_DUPLICATE = "near-duplicate"

_NO_ERROR = -1  # a step that did not fail (hash() never returns -1)
_UNREAD_KEYS = itertools.count(1 << 62)  # arguments not read: a key equal to no other call's
_NO_OUTPUT = hash("a failure whose source reports no output")
_NO_TOKENS = (-1, -1)  # a step whose place in the agent's spend is not known (token counts are never < 0)
_MAX_FAILING_TOOLS = 4  # tools whose last failing arguments are kept, to tell an error loop's
_FAILURE_ARGUMENTS_CHARS = 256  # near-identical arguments (their loose form, this much of it)
NEAR_IDENTICAL_RATIO = 0.9


def near_identical(first: str, second: str, exact: bool = False) -> bool:
    """Two loose argument texts (each cut at `_FAILURE_ARGUMENTS_CHARS`) that differ in at most about a
    tenth of their characters: the same command retried with a flag or a value changed, not another
    one. `exact`: equal only."""
    if first == second:
        return True
    return not exact and SequenceMatcher(None, first, second, autojunk=False).ratio() >= NEAR_IDENTICAL_RATIO


class Label(NamedTuple):
    """What a message quotes of a call: its tool and its arguments cut at the preview length."""

    name: str
    preview: str
    arguments_chars: int
    arguments_json: bool


class Finding(NamedTuple):
    """A rule that holds on the call just judged."""

    rule: str
    repeats: int
    pattern: tuple  # what identifies the pattern across its calls (the same while it goes on)
    labels: tuple[Label, ...]  # the calls that make it, oldest first (a cycle's all, else the last)
    error_preview: str | None  # the error, cut at the preview length (error-loop)
    next_key: int  # the key of the call that continues it (a near-duplicate's: its loose key)
    next_tool: str
    next_repeats: int  # repeats once that call continues it
    next_arguments: str = ""  # error-loop: the loose arguments its next call must be near-identical to
    exact: bool = False  # error-loop: identical only (the source reports no output)
    # The pattern's first repeat (or the oldest of its steps the window still holds): the agent's
    # tokens before the model call that asked for it (its `ToolCall.tokens_before`), where the loop's
    # spend counts from. None when not known (no model call had reported usage).
    since: tuple[int, int] | None = None
    evidence: tuple[Evidence, ...] = ()  # the steps that make it, oldest first, the judged call last


class Window:
    """One agent run's last steps, oldest first, a field an array: the hashes of each step's call
    (`keys`), of call + outcome (`idents`), of loose call + outcome (`nears`), of its tool (`names`)
    and of its error (`errors`; _NO_ERROR when it did not fail), the error-loop and near-duplicate
    runs ending at it, its step number and span id (`steps`, `spans`: its evidence), and where it
    stands in the agent's spend (`spent`: its call's `tokens_before`, input then output, two entries a
    step; _NO_TOKENS when not known)."""

    __slots__ = ("keys", "idents", "nears", "names", "errors", "error_runs", "near_runs", "steps", "spans", "spent")

    def __init__(self) -> None:
        self.keys, self.idents, self.nears, self.names = array("q"), array("q"), array("q"), array("q")
        self.errors, self.error_runs, self.near_runs = array("q"), array("q"), array("q")
        self.steps, self.spans, self.spent = array("q"), array("Q"), array("q")

    def __len__(self) -> int:
        return len(self.keys)

    def _columns(self) -> tuple[array, ...]:
        """The columns of one entry a step (`spent` has two)."""
        return (self.keys, self.idents, self.nears, self.names, self.errors, self.error_runs, self.near_runs,
                self.steps, self.spans)

    def append(self, key: int, ident: int, near: int, name: int, error: int, error_run: int, near_run: int,
               step: int, span_id: int, tokens_before: tuple[int, int] | None) -> None:
        for column, value in zip(self._columns(), (key, ident, near, name, error, error_run, near_run, step,
                                                   span_id_kept(span_id))):
            column.append(value)
        self.spent.extend(tokens_before if tokens_before is not None else _NO_TOKENS)

    def drop_oldest(self) -> int:
        """Forget the oldest step; its key."""
        key = self.keys[0]
        for column in self._columns():
            del column[0]
        del self.spent[:2]
        return key

    def tokens_before(self, at: int) -> tuple[int, int] | None:
        """Step `at`'s place in the agent's spend (its call's `tokens_before`), if known."""
        if at < 0:
            return None
        input_tokens, output_tokens = self.spent[2 * at], self.spent[2 * at + 1]
        return None if input_tokens < 0 else (input_tokens, output_tokens)


@dataclass(slots=True)
class ProgressState:
    """One agent run's window (at most `capacity` steps); the label of each call seen more than once
    in the window, by key (None until there is one); `runs[p]`, the steps in a row equal to the step
    `p` before them (the empty tuple, no list, while every run is 0: the last call was new to the
    window, as most are)."""

    window: Window = field(default_factory=Window)
    labels: dict | None = None
    runs: list | tuple = field(default_factory=tuple)
    seed: int | None = None  # the key of the repeat reminder's current run
    seed_outcome: int | None = None  # and its outcome, when that guard compares results
    previous: int | None = None  # the key of the last call, whatever its tool
    # pattern -> [repeats at the first reaction, steered, where its loop spend counts from]; the guard bounds it
    reacted: dict | None = None
    upcoming: Finding | None = None  # the finding the last judged call left open
    blocked: tuple | None = None  # (key, verdict) of the call blocked at its start, until it ends
    failures: dict | None = None  # tool name hash -> loose arguments of its last call, while it failed


def call_key(name: str, arguments: str) -> int:
    return hash((name, arguments))


def loose_key(name: str, arguments: str) -> int:
    return hash((name, loose_arguments(arguments)))


class ProgressDetector:
    """`transparent`: tools whose calls are not steps (bookkeeping). `seed_tools` and `seed_results`:
    which calls the repeat reminder tracks and whether it compares results, so that the detector
    knows that guard's back-to-back run exactly."""

    def __init__(self, *, rules: tuple[str, ...], max_period: int, min_repeats: int, window: int,
                 min_errors: int, preview_chars: int, transparent: ToolFilter, seed_tools: ToolFilter,
                 seed_results: bool = False, exempt: Mapping[str, Callable[[str], bool]] | None = None):
        self.transparent = transparent.tracks
        self.exempt = dict(exempt or {})  # rule -> whether a tool name is exempt from it
        self.seed_tracks = seed_tools.tracks
        self.seed_results = seed_results
        self.rules = frozenset(rules)
        self.max_period = max_period
        self.min_repeats = min_repeats
        self.window = window
        self.min_errors = min_errors
        self.preview_chars = preview_chars
        self._capacity = max(window, max_period * 2)
        self._no_runs = [0] * (max_period + 1)

    def new_state(self) -> ProgressState:
        return ProgressState()

    def reset(self, state: ProgressState) -> None:
        state.window, state.runs = Window(), ()
        state.labels = state.seed = state.seed_outcome = state.previous = state.reacted = state.upcoming = None
        state.blocked = state.failures = None

    def judges(self, state: ProgressState, name: str, arguments: str) -> bool:
        """Whether a call about to start (its arguments known) would be judged: not transparent, and
        not continuing a back-to-back run of identical calls."""
        if self.transparent(name):
            return False
        key = call_key(name, arguments)
        return key != state.previous and not (state.seed == key and self.seed_tracks(name))

    def observe(self, state: ProgressState, call: ToolCall, name: str, *, judge: bool = True, step: int = 0,
                span_id: int = 0) -> Finding | None:
        """Judge one ended call (step `step`, in span `span_id`); None when no rule holds on it, or when
        it is not judged (a transparent call, or one continuing a back-to-back run of identical calls).
        `judge` False: only note it as the last call (one blocked at its start does not go on the pattern)."""
        arguments = call.arguments
        key = call_key(name, arguments) if arguments is not None else next(_UNREAD_KEYS)
        previous, state.previous = state.previous, key
        if self.seed_tracks(name):  # the repeat reminder's chain, kept as that guard keeps it
            outcome = outcome_signature(call.result) if self.seed_results and arguments is not None else None
            continued = arguments is not None and key == state.seed and outcome == state.seed_outcome
            state.seed, state.seed_outcome = (key if arguments is not None else None), outcome
            if continued:
                return None
        if not judge or self.transparent(name) or key == previous:
            return None
        error = error_preview = None
        loose_form = loose_arguments(arguments) if arguments is not None else None
        loose = hash((name, loose_form)) if loose_form is not None else key  # = loose_key
        loose_text = loose_form[:_FAILURE_ARGUMENTS_CHARS] if loose_form is not None else None
        exact = False
        if failed(call):
            text = failure_text(call)
            outcome = error = outcome_signature(text)  # another error, or more of its output, is progress
            error_preview = text[:self.preview_chars]
            if error is None and call.result is None:  # no output reported: only identical arguments tell
                error, exact = _NO_OUTPUT, True
        else:
            outcome = outcome_signature(call.result)
        period = self._append(state, name, arguments, call, key, hash((key, outcome)), hash((loose, outcome)),
                              error, loose_text, exact, step, span_id)
        finding = self._find(state, period, key, loose, outcome, error_preview, name)
        if finding is not None:
            if finding.rule != CYCLE:
                finding = finding._replace(labels=(self._label(name, arguments, call),), next_tool=name,
                                           next_arguments=loose_text or "", exact=exact)
            finding = finding._replace(evidence=self._evidence(state, finding, of_tool_call(step, span_id, call)))
        state.upcoming = finding
        return finding

    def _evidence(self, state: ProgressState, finding: Finding, judged: Evidence) -> tuple[Evidence, ...]:
        """The window's steps that make the finding's pattern, oldest first, the judged call (the last
        step) as `judged`. An earlier step shows the judged call's previews where the rule found it the
        same (the same call; the same outcome); a cycle's other calls, their own arguments."""
        window, rule, repeats = state.window, finding.rule, finding.repeats
        count = len(window)
        last = count - 1
        if rule == CYCLE:  # its whole periods in a row
            positions: Sequence[int] = range(count - repeats * len(finding.labels), count)
        elif rule == SAME_RESULT:  # the same step within the window
            ident = window.idents[last]
            positions = [at for at in range(max(0, count - self.window), count) if window.idents[at] == ident]
        elif rule == ERROR_LOOP:  # the tool's failures in a row: its last `repeats` steps
            name = window.names[last]
            positions = [at for at in range(count) if window.names[at] == name][-repeats:]
        else:  # interleaved-repeat and near-duplicate: the last `repeats` steps
            positions = range(count - repeats, count)
        positions = list(positions)[-MAX_EVIDENCE:]
        same_outcome_always = rule in (ERROR_LOOP, NEAR_DUPLICATE)  # the same error / outcome by the rule
        labels = state.labels or {}
        others: dict[int, tuple[str, str | None]] = {}  # a cycle's other calls: tool and preview, made once each
        entries = []
        for at in positions[:-1]:
            key = window.keys[at]
            same_call = key == window.keys[last]
            entry = earlier(window.steps[at], window.spans[at], judged, same_arguments=same_call,
                            same_outcome=same_outcome_always or window.idents[at] == window.idents[last])
            label = labels.get(key)
            if not same_call and label is not None and rule == CYCLE:  # another call of the cycle: its own
                if key not in others:
                    others[key] = (label.name, preview(label.preview, label.arguments_json, label.arguments_chars)
                                   if label.arguments_chars else None)
                entry = Evidence(entry.step, entry.span_id, *others[key], entry.outcome_preview)
            entries.append(entry)
        return (*entries, judged)

    def _label(self, name: str, arguments: str | None, call: ToolCall) -> Label:
        if arguments is None:
            return Label(name, "", 0, True)
        return Label(name, arguments[:self.preview_chars], len(arguments), call.arguments_content is Content.OK)

    def _append(self, state: ProgressState, name: str, arguments: str | None, call: ToolCall,
                key: int, ident: int, near: int, error: int | None, loose_text: str | None, exact: bool,
                step: int, span_id: int) -> int:
        """Append the step to the window; return the shortest period whose run has `min_repeats` (0: none)."""
        window = state.window
        name_hash = hash(name)
        error_run = near_run = 0
        failures = state.failures
        previous_failure = failures.pop(name_hash, None) if failures else None
        if error is not None:
            error_run = 1
            for at in range(len(window) - 1, -1, -1):  # this tool's previous step in the window
                if window.names[at] == name_hash:
                    if window.errors[at] == error and previous_failure is not None \
                            and near_identical(previous_failure, loose_text or "", exact):
                        error_run = window.error_runs[at] + 1
                    break
            if failures is None:
                failures = state.failures = {}
            if len(failures) >= _MAX_FAILING_TOOLS:
                del failures[next(iter(failures))]  # the tool that failed longest ago
            failures[name_hash] = loose_text or ""
        if window and window.nears[-1] == near and window.keys[-1] != key:
            near_run = window.near_runs[-1] + 1 if window.near_runs[-1] else 2
        # Only a call seen before in the window can be part of a pattern a message quotes.
        seen = key in window.keys
        if seen:
            if state.labels is None:
                state.labels = {}
            if key not in state.labels:
                state.labels[key] = self._label(name, arguments, call)
        window.append(key, ident, near, name_hash, _NO_ERROR if error is None else error, error_run, near_run, step,
                      span_id, call.tokens_before)
        if len(window) > self._capacity:
            dropped = window.drop_oldest()
            if state.labels and dropped not in window.keys:
                state.labels.pop(dropped, None)
        runs = state.runs
        if not seen:  # a call new to the window equals none before it: every period's run breaks
            state.runs = ()
            return 0
        if not isinstance(runs, list):  # the empty tuple: every run was 0
            runs = state.runs = list(self._no_runs)
        idents = window.idents
        shortest, min_repeats = 0, self.min_repeats
        for period in range(1, min(self.max_period, len(idents) - 1) + 1):
            run = runs[period] = runs[period] + 1 if idents[-1 - period] == ident else 0
            if not shortest and run + period >= period * min_repeats:
                shortest = period
        for period in range(len(idents), self.max_period + 1):
            runs[period] = 0
        return shortest

    def _find(self, state: ProgressState, period: int, key: int, loose: int, outcome: int | None,
              error_preview: str | None, tool: str) -> Finding | None:
        """The first rule that holds on the call just appended (of `tool`) and exempts none of its pattern's tools."""
        rules, runs, labels, min_repeats = self.rules, state.runs, state.labels, self.min_repeats
        window = state.window
        count = len(window)
        name = ""  # `observe` names the current call; a cycle names its own
        if period:  # the shortest period names the pattern
            length = runs[period] + period
            # The pattern's `length` steps end here; its first repeat is the step after its first period.
            since = window.tokens_before(max(0, count - runs[period]))
            if period == 1 and INTERLEAVED_REPEAT in rules and not self._exempts(INTERLEAVED_REPEAT, tool):
                return Finding(INTERLEAVED_REPEAT, length, (INTERLEAVED_REPEAT, key), (), None, key, name, length + 1,
                               since=since)
            if period > 1 and CYCLE in rules:
                block_keys = window.keys[count - period:]
                assert labels is not None  # each step of the block was seen p steps before: labelled
                block = tuple(labels[k] for k in block_keys)
                if not self._exempts(CYCLE, *(label.name for label in block)):
                    return Finding(CYCLE, length // period, (CYCLE, frozenset(block_keys)), block, None,
                                   block_keys[0], block[0].name, (length + 1) // period, since=since)
        ident = window.idents[-1]
        if SAME_RESULT in rules and outcome is not None and labels and key in labels \
                and not self._exempts(SAME_RESULT, tool):  # (seen before)
            recent = window.idents[max(0, count - self.window):]
            same = [count - len(recent) + at for at, other in enumerate(recent) if other == ident] \
                if recent.count(ident) >= min_repeats else []
            if len(same) >= min_repeats and not self._cycle_in_the_making(runs, same):
                return Finding(SAME_RESULT, len(same), (SAME_RESULT, key), (), None, key, name, len(same) + 1,
                               since=window.tokens_before(same[1]))
        error_run = window.error_runs[-1]
        if ERROR_LOOP in rules and error_run >= self.min_errors and not self._exempts(ERROR_LOOP, tool):
            return Finding(ERROR_LOOP, error_run, (ERROR_LOOP, window.names[-1], window.errors[-1]), (),
                           error_preview, key, name, error_run + 1, since=self._second_failure(window))
        near_run = window.near_runs[-1]
        if NEAR_DUPLICATE in rules and near_run >= min_repeats and not self._exempts(NEAR_DUPLICATE, tool):
            return Finding(NEAR_DUPLICATE, near_run, (NEAR_DUPLICATE, loose), (), None, loose, name, near_run + 1,
                           since=window.tokens_before(max(0, count - near_run + 1)))
        return None

    @staticmethod
    def _second_failure(window: Window) -> tuple[int, int] | None:
        """Where the last step's error loop had its first repeat (its tool's second failure in a row):
        the latest step of that tool whose run was 2, or the oldest of its steps the window holds."""
        name, oldest = window.names[-1], None
        for at in range(len(window) - 1, -1, -1):
            if window.names[at] == name:
                if window.error_runs[at] == 2:
                    return window.tokens_before(at)
                oldest = at
        return window.tokens_before(oldest) if oldest is not None else None

    def _exempts(self, rule: str, *tools: str) -> bool:
        exempt = self.exempt.get(rule)
        return exempt is not None and any(exempt(tool) for tool in tools)

    def _cycle_in_the_making(self, runs: Sequence[int], same: Sequence[int]) -> bool:
        """Whether the steps from the first of `same` to now repeat with the spacing of `same`: a
        cycle still short of its repeats, which the cycle rule names once it has them."""
        gap = same[1] - same[0]
        return (CYCLE in self.rules and gap <= self.max_period and runs[gap] > same[-1] - same[0] - gap
                and all(b - a == gap for a, b in zip(same, same[1:])))

    @staticmethod
    def continues(finding: Finding, name: str, arguments: str) -> bool:
        """Whether a call about to start (its outcome unknown) continues the finding's pattern."""
        if finding.rule == ERROR_LOOP:
            loose = loose_arguments(arguments)[:_FAILURE_ARGUMENTS_CHARS]
            return name == finding.next_tool and near_identical(finding.next_arguments, loose, finding.exact)
        if finding.rule == NEAR_DUPLICATE:
            return loose_key(name, arguments) == finding.next_key
        return call_key(name, arguments) == finding.next_key
