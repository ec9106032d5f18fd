"""The steps behind a verdict (`records.Evidence`): which calls made its pattern, and what is kept of them.

A guard keeps, for the pattern it watches, the step number and span id of its last `MAX_EVIDENCE`
calls (`StepTrail`: 16 bytes a step). Previews are made when a verdict is: of the judged call
always; of an earlier step only where the rule found it the same as the judged call (identical
arguments; the same outcome, volatile fields masked), because a guard keeps no text of the calls
before it (an agent's state stays bounded). What is quoted came from a model or a tool: it is escaped
as the guards' messages quote it (`canonical.cut_preview`: no markup, no line of its own), in at most
`PREVIEW_CHARS` characters.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import cast

from ..model.canonical import cut_preview
from ..model.records import Content, Evidence, ToolCall
from .signatures import failed, failure_text

MAX_EVIDENCE = 10
PREVIEW_CHARS = 200
_ID_MASK = (1 << 64) - 1


def span_id_kept(span_id: int) -> int:
    """A span id as the trails keep it: 64 unsigned bits (what any real span id is)."""
    return span_id & _ID_MASK


class StepTrail(array):
    """(step, span id) of the last `MAX_EVIDENCE` steps of a pattern in the making, oldest first, flat in
    one array (no object per step)."""

    __slots__ = ()

    def __new__(cls) -> StepTrail:
        return cast(StepTrail, super().__new__(cls, "Q"))  # (the stubs type array's __new__ as array's own)

    def add(self, step: int, span_id: int) -> None:
        self.append(step)
        self.append(span_id_kept(span_id))
        if len(self) > 2 * MAX_EVIDENCE:
            del self[:2]

    def restart(self, step: int, span_id: int) -> None:
        """The pattern starts afresh at this step."""
        del self[:]
        self.add(step, span_id)

    def pairs(self, count: int | None = None) -> list[tuple[int, int]]:
        """The last `count` (all, when None) (step, span id) pairs, oldest first."""
        start = 0 if count is None else max(0, len(self) - 2 * count)
        return [(self[at], self[at + 1]) for at in range(start, len(self), 2)]


def preview(text: str | None, is_json: bool = False, total_chars: int | None = None) -> str | None:
    """`text` as a message quotes it (JSON shown as it is, other text as one JSON string; `<`, `>` and
    controls escaped), cut so that the whole preview, the note of what was cut included, fits in
    `PREVIEW_CHARS` characters. `total_chars`: the length of the whole when `text` is its head."""
    if text is None:
        return None
    total = len(text) if total_chars is None else total_chars
    keep = PREVIEW_CHARS
    while True:
        quoted = cut_preview(text[:keep], total, is_json)
        if len(quoted) <= PREVIEW_CHARS or keep == 0:
            return quoted[:PREVIEW_CHARS]
        keep = max(0, keep - (len(quoted) - PREVIEW_CHARS))  # escapes and the note took the difference


def tool_outcome(call: ToolCall) -> str | None:
    """What a call printed, as the progress rules judge it: its result, or a failure's text."""
    return failure_text(call) if failed(call) else call.result


def of_tool_call(step: int, span_id: int, call: ToolCall) -> Evidence:
    """The judged tool call as evidence, with previews of its own arguments and outcome."""
    return Evidence(step, span_id_kept(span_id), call.name,
                    preview(call.arguments, call.arguments_content is Content.OK or not call.arguments),
                    preview(tool_outcome(call)))


def of_model_call(step: int, span_id: int, judged_text: str | None) -> Evidence:
    """The judged model call as evidence, with a preview of the text its rule judged (reasoning or output)."""
    return Evidence(step, span_id_kept(span_id), outcome_preview=preview(judged_text) if judged_text else None)


def earlier(step: int, span_id: int, judged: Evidence, *, same_arguments: bool, same_outcome: bool,
            tool: str | None = None) -> Evidence:
    """An earlier step of the pattern: the judged step's previews where the rule found them the same."""
    return Evidence(step, span_id, judged.tool if tool is None else tool,
                    judged.arguments_preview if same_arguments else None,
                    judged.outcome_preview if same_outcome else None)


def pattern(before: Sequence[tuple[int, int]], judged: Evidence, *, same_arguments: bool = False,
            same_outcome: bool = False) -> tuple[Evidence, ...]:
    """The evidence of a pattern: its steps `before` the judged one, (step, span id) oldest first, then
    `judged`; at most `MAX_EVIDENCE`, the oldest left out."""
    entries = [earlier(step, span_id, judged, same_arguments=same_arguments, same_outcome=same_outcome)
               for step, span_id in before[-(MAX_EVIDENCE - 1):]]
    return (*entries, judged)


def then(evidence: Sequence[Evidence], entry: Evidence) -> tuple[Evidence, ...]:
    """`evidence` and one step more, at most `MAX_EVIDENCE` (the oldest dropped)."""
    return (*evidence, entry)[-MAX_EVIDENCE:]


def steps_text(evidence: Iterable[Evidence]) -> str:
    """The steps as a message names them: `3, 5, 7`."""
    return ", ".join(str(entry.step) for entry in evidence)


def explained(evidence: Iterable[Evidence]) -> str:
    """The evidence in one line for a person (an evaluation event's explanation, a report): each step
    with its span and tool; no previews (those are in the JSON)."""
    parts = []
    for entry in evidence:
        part = f"step {entry.step} (span {entry.span_id:016x}"
        if entry.tool is not None:
            part += f", {cut_preview(entry.tool[:80], len(entry.tool), False)}"
        parts.append(part + ")")
    return "evidence: " + "; ".join(parts) if parts else ""
