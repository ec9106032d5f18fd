"""`no-progress`: tool-call sequences that go round without progress (see `detectors.progress`).

The first detection of a pattern reminds, with a message naming it; a cycle, interleaved repeat or
near-duplicate going on for `steer_after` more repeats steers (same-result and error-loop remind once
per pattern); with `stop_after`, the call that would bring it to that many
repeats is blocked at its start (when its arguments are known there; at its end otherwise), as the
repeat reminder's `stop_after` does.

A rule beyond the seed's: its message names its evidence (the steps of the pattern, and with
`include_arguments` the result those calls kept getting). `exempt_tools` exempts tools from every
rule, `exempt_tools_by_rule` from the rules named.
"""

from __future__ import annotations


from ..model.actions import Action
from ..model.canonical import cut_preview, escape_quoted
from ..detectors.evidence import of_tool_call, steps_text, then
from ..detectors.progress import (
    CYCLE,
    ERROR_LOOP,
    INTERLEAVED_REPEAT,
    NEAR_DUPLICATE,
    SAME_RESULT,
    Finding,
    Label,
    ProgressDetector,
    ProgressState,
    call_key,
)
from ..detectors.repeat import ToolFilter, any_of
from ..model.records import Evidence, SpanView, ToolCall, Verdict
from .settings import NoProgressConfig, RepeatToolReminderConfig
from .base import Guard, ToolStart

NO_PROGRESS_VERDICT = "no_progress"

_HEADERS = {
    CYCLE: "No progress: the same {calls} tool calls keep repeating in a cycle ({repeats} times in a row):",
    INTERLEAVED_REPEAT: "No progress: the same tool call keeps repeating with only bookkeeping calls between "
                        "({repeats} times):",
    SAME_RESULT: "No progress: the same tool call returned the same result {repeats} times in the last {window} "
                 "calls:",
    ERROR_LOOP: "No progress: the tool keeps failing with the same error ({repeats} times in a row):",
    NEAR_DUPLICATE: "No progress: nearly identical tool calls (differing only in spacing, quoting or Unicode "
                    "form) keep repeating ({repeats} times):",
}
_REMIND_ADVICE = (
    "These calls are not making progress. Use what their results already told you: take a different "
    "action or approach, or finish the task if enough evidence has been gathered."
)
_STEER_ADVICE = (
    "You are still repeating this pattern after a reminder. Stop repeating these calls now: choose a "
    "different action, or finish the task with what you have."
)
_BLOCK_ADVICE = (
    "This call was blocked because it continues a pattern that made no progress. Do not repeat these "
    "calls again: take a different action, or finish the task with what you have."
)
_REMIND_ONCE = frozenset({SAME_RESULT, ERROR_LOOP})
_SAME_OUTCOME = frozenset({INTERLEAVED_REPEAT, SAME_RESULT, NEAR_DUPLICATE})  # messages quote that outcome
_MAX_PATTERNS = 8  # patterns remembered per agent run, to escalate rather than remind again


class NoProgress(Guard):
    id = NoProgressConfig.guard_id

    def __init__(self, config: NoProgressConfig, repeat: RepeatToolReminderConfig | None = None):
        self.config = config
        self._detector = ProgressDetector(
            rules=config.rules, max_period=config.max_period, min_repeats=config.min_repeats,
            window=config.window, min_errors=config.min_errors, preview_chars=config.arguments_preview_chars,
            transparent=ToolFilter(include=config.transparent),
            seed_tools=ToolFilter(repeat.include, repeat.exclude) if repeat is not None else ToolFilter(),
            seed_results=repeat is not None and repeat.result_aware,
            exempt={rule: any_of(config.exempt_tools + config.exempt_tools_by_rule.get(rule, ()))
                    for rule in config.rules
                    if config.exempt_tools or config.exempt_tools_by_rule.get(rule)},
        )
        # A block before the call runs needs its arguments; without stop_after, a start does nothing.
        self.reads_tool_start = config.stop_after is not None

    def new_state(self) -> ProgressState:
        return self._detector.new_state()

    def on_agent_run(self, state: ProgressState) -> None:
        self._detector.reset(state)

    def on_tool_start(self, state: ProgressState, call: ToolCall, span: SpanView, decision: ToolStart, *,
                      step: int = 0) -> None:
        stop, finding, name, arguments = self.config.stop_after, state.upcoming, call.name, call.arguments
        if stop is None or finding is None or name is None or arguments is None or finding.next_repeats < stop:
            return
        if not self._detector.judges(state, name, arguments) or not self._detector.continues(finding, name, arguments):
            return
        # The pattern's steps so far, then the call blocked.
        evidence = then(finding.evidence, of_tool_call(step, span.span_id, call))
        verdict = self._verdict(finding, Action.BLOCK, finding.next_repeats, name, _since(state, finding), evidence)
        state.blocked = (call_key(name, arguments), verdict)
        if decision.block is None:
            decision.block = verdict

    def on_tool_end(self, state: ProgressState, call: ToolCall, span: SpanView, timed_out_ms: float | None, *,
                    step: int = 0) -> list[Verdict]:
        name = call.name
        if name is None:
            return []
        blocked = state.blocked
        if blocked is not None:
            state.blocked = None
            if call.arguments is not None and blocked[0] == call_key(name, call.arguments):
                self._detector.observe(state, call, name, judge=False)  # not on the pattern, but the last call
                return [blocked[1]]
        finding = self._detector.observe(state, call, name, step=step, span_id=span.span_id)
        if finding is None:
            return []
        return [self._react(state, finding)]

    def _react(self, state: ProgressState, finding: Finding) -> Verdict:
        stop, repeats, evidence = self.config.stop_after, finding.repeats, finding.evidence
        tool = finding.labels[-1].name  # the call just judged
        since = _since(state, finding)
        if stop is not None and repeats >= stop:
            return self._verdict(finding, Action.BLOCK, repeats, tool, since, evidence)
        if state.reacted is None:
            state.reacted = {}
        reacted = state.reacted.get(finding.pattern)
        if reacted is None:
            if len(state.reacted) >= _MAX_PATTERNS:
                del state.reacted[next(iter(state.reacted))]  # the oldest
            state.reacted[finding.pattern] = [repeats, False, since]
            return self._verdict(finding, Action.REMIND, repeats, tool, since, evidence)
        first, steered, _ = reacted
        # A same result or error seen again is no new evidence of a loop: one reminder per pattern.
        # The cycle rules' repeats are the same calls with the same results each time: they escalate.
        if not steered and finding.rule not in _REMIND_ONCE and repeats >= first + self.config.steer_after:
            reacted[1] = True
            return self._verdict(finding, Action.STEER, repeats, tool, since, evidence)
        return Verdict(self.id, NO_PROGRESS_VERDICT, finding.rule, Action.NONE, tool=tool, repeat_count=repeats,
                       loop_since=since, evidence=evidence)

    def _verdict(self, finding: Finding, action: Action, repeats: int, tool: str, since: tuple[int, int] | None,
                 evidence: tuple[Evidence, ...]) -> Verdict:
        """A verdict that acts, on the call of `tool` (the one judged, or the one blocked at its start)."""
        return Verdict(self.id, NO_PROGRESS_VERDICT, finding.rule, action,
                       self._message(finding, action, repeats, evidence), tool=tool, repeat_count=repeats,
                       loop_since=since, evidence=evidence)

    def _message(self, finding: Finding, action: Action, repeats: int, evidence: tuple[Evidence, ...]) -> str:
        # Names, arguments, errors and results came from the model or a tool: quoted escaped, never as
        # markup, and not at all where the message is shown in a system-level role (quote_untrusted).
        header = _HEADERS[finding.rule].format(calls=len(finding.labels), repeats=repeats, window=self.config.window)
        if action is Action.BLOCK:
            header = "Tool call blocked. " + header
        lines = [header, *self._quoted(finding)] if self.config.quote_untrusted else [header]
        lines.append(f"- steps: {steps_text(evidence)}")
        if finding.rule in _SAME_OUTCOME and self.config.quote_untrusted and self.config.include_arguments:
            outcome = next((entry.outcome_preview for entry in reversed(evidence) if entry.outcome_preview), None)
            if outcome is not None:
                lines.append(f"- result each time: {outcome}")
        lines.append(_BLOCK_ADVICE if action is Action.BLOCK else _STEER_ADVICE if action is Action.STEER
                     else _REMIND_ADVICE)
        return "\n".join(lines)

    def _quoted(self, finding: Finding) -> list[str]:
        """The lines naming the calls: their tools, and their arguments or error (include_arguments)."""
        if finding.rule == CYCLE:
            return [f"- call {number}: {escape_quoted(label.name)}" + self._arguments(label, " ")
                    for number, label in enumerate(finding.labels, start=1)]
        label = finding.labels[-1]
        lines = [f"- tool: {escape_quoted(label.name)}"]
        if finding.rule != ERROR_LOOP:
            arguments = self._arguments(label, "")
            if arguments:
                lines.append(f"- arguments: {arguments}")
        elif finding.error_preview is not None and self.config.include_arguments:
            lines.append(f"- error: {cut_preview(finding.error_preview, len(finding.error_preview), False)}")
        return lines

    def _arguments(self, label: Label, before: str) -> str:
        if not self.config.include_arguments or not label.arguments_chars:
            return ""
        return before + cut_preview(label.preview, label.arguments_chars, label.arguments_json)


def _since(state: ProgressState, finding: Finding) -> tuple[int, int] | None:
    """Where the pattern's loop spend counts from: its first repeat as found when the guard first
    reacted to it (the window may have moved past that call since), else as found now."""
    reacted = state.reacted.get(finding.pattern) if state.reacted else None
    return reacted[2] if reacted is not None else finding.since
