"""`repeat-tool-reminder`: count consecutive identical tool calls, remind at thresholds."""

from __future__ import annotations


from ..model.actions import Action
from ..model.canonical import arguments_preview, escape_quoted
from ..detectors.evidence import of_tool_call, pattern
from ..detectors.repeat import RepeatChain, ToolFilter, any_of
from ..detectors.signatures import outcome_signature
from ..model.records import Content, Evidence, SpanView, ToolCall, Verdict
from .settings import RepeatToolReminderConfig
from .base import Guard, ToolStart

REPEATED_TOOL_CALL = "repeated_tool_call"

SHORT_TEXT = (
    "You are repeating the exact same tool call with identical arguments. Carefully analyze the "
    "previous result before calling again: if the task is not complete, try a different approach or "
    "different arguments instead of repeating the call."
)
_DETAILED_ADVICE = (
    "The repeated calls are not making progress. Do not call this tool with these exact arguments "
    "again. Inspect the latest result and choose a different action, different arguments, or finish "
    "the task if enough evidence has been gathered."
)
_STOP_ADVICE = (
    "This identical call was blocked because it made no progress. Do not retry this tool with these "
    "exact arguments. Inspect prior results and take a different action, or finish the task if enough "
    "evidence has been gathered."
)


class RepeatToolReminder(Guard):
    id = RepeatToolReminderConfig.guard_id

    def __init__(self, config: RepeatToolReminderConfig):
        self.config = config
        self._filter = ToolFilter(config.include, config.exclude)
        self._exempt = any_of(config.exempt_tools)
        self._first = config.thresholds[0]
        stop = config.stop_after
        self._reminders = frozenset(t for t in config.thresholds if stop is None or t < stop)
        # A block before the call runs needs its arguments; without stop_after, a start does nothing.
        self.reads_tool_start = stop is not None

    def new_state(self) -> RepeatChain:
        return RepeatChain()

    def on_agent_run(self, state: RepeatChain) -> None:
        state.reset()

    def _tracked_name(self, call: ToolCall) -> str | None:
        """The call's tool name when the chain tracks it; None for an untracked call (transparent)."""
        name = call.name
        if name is None or not self._filter.tracks(name):
            return None
        return name

    def on_tool_start(self, state: RepeatChain, call: ToolCall, span: SpanView, decision: ToolStart, *,
                      step: int = 0) -> None:
        stop, arguments = self.config.stop_after, call.arguments
        if stop is None or arguments is None:
            return
        name = self._tracked_name(call)
        if name is None or self._exempt(name):
            return
        continues = state.matches(name, arguments)
        upcoming = state.count + 1 if continues else 1
        if upcoming >= stop:
            # The calls of the run so far (none when it starts with this one), then the call blocked.
            evidence = pattern(state.trail.pairs() if continues else (), of_tool_call(step, span.span_id, call),
                               same_arguments=True)
            decision.block = self._verdict(name, call, upcoming, evidence)

    def on_tool_end(self, state: RepeatChain, call: ToolCall, span: SpanView, timed_out_ms: float | None, *,
                    step: int = 0) -> list[Verdict]:
        name = self._tracked_name(call)
        if name is None:
            return []
        arguments = call.arguments
        if arguments is None:
            state.reset()  # arguments not captured: no key, so nothing can claim a repeat across it
            return []
        # result_aware: an identical call whose result changed (polling that moves on) restarts the run.
        result_aware = self.config.result_aware
        count = state.observe(name, arguments, outcome_signature(call.result) if result_aware else None,
                              step=step, span_id=span.span_id)
        if count < 2 or self._exempt(name):  # an exempt tool's run is kept (it breaks others'), never judged
            return []
        # The run's calls: identical arguments; the same result where results are compared.
        evidence = pattern(state.trail.pairs()[:-1], of_tool_call(step, span.span_id, call), same_arguments=True,
                           same_outcome=result_aware)
        return [self._verdict(name, call, count, evidence)]

    def _verdict(self, name: str, call: ToolCall, count: int, evidence: tuple[Evidence, ...]) -> Verdict:
        stop = self.config.stop_after
        if stop is not None and count >= stop:
            text = self._detailed("Repeated tool call blocked:", name, count, call, _STOP_ADVICE)
            return Verdict(self.id, REPEATED_TOOL_CALL, "repeat-stop", Action.BLOCK, text, tool=name, repeat_count=count,
                           evidence=evidence)
        if count in self._reminders:
            if count == self._first:
                text = SHORT_TEXT
            else:
                text = self._detailed("Repeated tool call detected:", name, count, call, _DETAILED_ADVICE)
            return Verdict(self.id, REPEATED_TOOL_CALL, "repeat-threshold", Action.REMIND, text, tool=name,
                           repeat_count=count, evidence=evidence)
        return Verdict(self.id, REPEATED_TOOL_CALL, "repeat-threshold", Action.NONE, tool=name, repeat_count=count,
                       evidence=evidence)

    def _detailed(self, header: str, name: str, count: int, call: ToolCall, advice: str) -> str:
        # The name and arguments came from the model: quoted escaped, never as markup or lines of their
        # own, and not at all where the message is shown in a system-level role (quote_untrusted).
        quoted = self.config.quote_untrusted
        lines = [header, f"- tool: {escape_quoted(name)}"] if quoted else [header]
        lines.append(f"- consecutive_calls: {count}")
        if quoted and self.config.include_arguments:
            preview = arguments_preview(call.arguments, self.config.arguments_preview_chars,
                                        call.arguments_content is Content.OK)
            lines.append(f"- arguments: {preview}")
        lines.append(advice)
        return "\n".join(lines)
