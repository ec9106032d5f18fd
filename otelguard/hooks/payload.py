"""Each CLI's hook input as one `HookEvent`: a tool call about to run (`pre`) or that ran (`post`).

What each CLI sends (see the README's hooks table):
- Claude Code: `PreToolUse` / `PostToolUse` / `PostToolUseFailure` with `session_id`, `prompt_id` (one
  per user prompt), `tool_name`, `tool_input`, `tool_use_id`; after the call `tool_response` or
  `error`, and `duration_ms`.
- Codex CLI: Claude's shape, with `turn_id` for the prompt and `tool_response` as text.
- Gemini CLI: `BeforeTool` / `AfterTool` with `session_id`, `tool_name`, `tool_input`, no call id;
  `tool_response` holds `llmContent`, `returnDisplay` and an optional `error`.
- opencode (through otelguard's plugin, `opencode_plugin.js`): `{"event": "before"|"after",
  "input": {tool, sessionID, callID, args?}, "output": {...}}` as the plugin API hands them over.

Everything in it is untrusted: names and ids are checked to be text, arguments canonicalised, results
kept as text. Long arguments and results are bounded (`bounded`), the same way for the call being
judged and for the history, so identity survives the cut. Nesting is bounded too (`read`): a value
nested deeper than `MAX_DEPTH` is kept as its JSON text, so that the call is still judged and
recorded (a model that wraps its arguments deeply still counts toward the stop).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from ..model.canonical import canonical_arguments
from ..detectors.signatures import MASKED_CHARS
from . import POST, PRE, TOOL_EVENTS

MAX_ARGUMENTS_CHARS = 8192
MAX_RESULT_CHARS = 8192
_MAX_ID_CHARS = 256
MAX_DEPTH = 64  # containers nested deeper than this in the hook input are read as their JSON text


class PayloadError(ValueError):
    """The hook input is not what the CLI documents (the call is allowed, and this is logged)."""


@dataclass(slots=True, frozen=True)
class HookEvent:
    cli: str
    phase: str  # PRE | POST
    session: str
    tool: str
    arguments: str | None  # canonical JSON, bounded
    run: str | None = None  # the user prompt / turn the call belongs to, where the CLI says
    call_id: str | None = None
    result: str | None = None  # bounded text
    failed: bool = False
    duration_ms: float | None = None
    hook_event_name: str | None = None  # as the CLI named the event (answers echo it)


def read(cli: str, data: bytes) -> tuple[HookEvent, bool]:
    """The hook input on stdin as a `HookEvent`, and whether it was nested too deep to be read as it
    is. Such input (which Python's JSON reader, or a walk of its values, cannot take in one
    recursion) is read again with every container deeper than `MAX_DEPTH` replaced by its JSON text
    as a string: the same input always reads the same, so repeats of it are still told. Raises
    ValueError (PayloadError, or not JSON)."""
    try:
        return parse(cli, json.loads(data)), False
    except RecursionError:
        pass
    try:
        return parse(cli, json.loads(_flattened(data.decode("utf-8"), MAX_DEPTH))), True
    except RecursionError:  # (unbalanced brackets that never close: not JSON either)
        raise PayloadError(f"hook input nested too deep to read (past {MAX_DEPTH} levels)") from None


# A JSON string (escapes included) or a bracket: what `_flattened` walks; everything else it skips in C.
_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[][{}]')


def _flattened(text: str, depth: int) -> str:
    """JSON `text` with each array or object nested deeper than `depth` written as a string holding
    its text (`{"a": [[1]]}` at depth 2: `{"a": ["[1]"]}`). Text that is not JSON stays not JSON."""
    pieces: list[str] = []
    level = start = kept = 0
    for match in _STRING_OR_BRACKET.finditer(text):
        token = match.group()
        if token[0] == '"':
            continue
        if token in "[{":
            level += 1
            if level == depth + 1:
                start = match.start()
            continue
        if level == depth + 1:
            pieces.append(text[kept:start])
            pieces.append(json.dumps(text[start:match.end()], ensure_ascii=False))
            kept = match.end()
        level -= 1
    pieces.append(text[kept:])
    return "".join(pieces)


def parse(cli: str, data: Any) -> HookEvent:
    if not isinstance(data, dict):
        raise PayloadError(f"hook input must be a JSON object, got {type(data).__name__}")
    if cli == "opencode":
        return _opencode(data)
    event_name = _text(data.get("hook_event_name"), "hook_event_name")
    phase = TOOL_EVENTS[cli].get(event_name)
    if phase is None:
        raise PayloadError(f"{cli} hook event {event_name!r} is not a tool hook")
    result, failed = None, False
    if phase == POST:
        if cli == "gemini-cli":
            response = data.get("tool_response")
            error = response.get("error") if isinstance(response, dict) else None
            failed = error is not None and error != ""
            content = response.get("llmContent") if isinstance(response, dict) else response
            # A failure is judged by what it said: the error with the output the model saw.
            result = result_of(_with_error(error, content) if failed else content)
        elif event_name == "PostToolUseFailure":
            failed = True
            result = result_of(data.get("error"))
        else:
            result = result_of(data.get("tool_response"))
    return HookEvent(
        cli=cli, phase=phase, session=_text(data.get("session_id"), "session_id"),
        tool=_text(data.get("tool_name"), "tool_name"), arguments=arguments_of(data.get("tool_input")),
        run=_optional_text(data.get("prompt_id") if cli == "claude-code" else data.get("turn_id")),
        call_id=_optional_text(data.get("tool_use_id")), result=result, failed=failed,
        duration_ms=_number(data.get("duration_ms")), hook_event_name=event_name,
    )


def _opencode(data: dict[str, Any]) -> HookEvent:
    event = data.get("event")
    phase = {"before": PRE, "after": POST}.get(event) if isinstance(event, str) else None
    inputs = data.get("input")
    if phase is None or not isinstance(inputs, dict):
        raise PayloadError("opencode hook input must be {'event': 'before'|'after', 'input': {...}}")
    output = data.get("output")
    if not isinstance(output, dict):
        output = {}
    arguments = inputs.get("args") if "args" in inputs else output.get("args")
    result, failed, duration_ms = None, False, None
    if phase == POST:
        result = result_of(output.get("output"))
        metadata = output.get("metadata")
        exit_code = metadata.get("exit") if isinstance(metadata, dict) else None
        failed = isinstance(exit_code, int) and not isinstance(exit_code, bool) and exit_code != 0
        duration_ms = _number(data.get("duration_ms"))
    return HookEvent(
        cli="opencode", phase=phase, session=_text(inputs.get("sessionID"), "input.sessionID"),
        tool=_text(inputs.get("tool"), "input.tool"), arguments=arguments_of(arguments),
        call_id=_optional_text(inputs.get("callID")), result=result, failed=failed, duration_ms=duration_ms,
        hook_event_name=f"tool.execute.{event}",
    )


def arguments_of(value: Any) -> str | None:
    text, _ = canonical_arguments(value)
    return None if text is None else bounded(text, MAX_ARGUMENTS_CHARS)


def result_of(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return bounded(text, MAX_RESULT_CHARS)


def bounded(text: str, limit: int) -> str:
    """`text`, or its head and its last `MASKED_CHARS` characters (`limit` in all) around a digest of
    the whole: what is kept of a long value (in the history and for the call judged alike), so two long
    values still compare equal or not, and the tail an outcome is judged by (a test run's summary, the
    end of a traceback) is kept as it came."""
    if len(text) <= limit:
        return text
    tail = min(MASKED_CHARS, limit // 2)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{text[:limit - tail]}… (+{len(text) - limit} chars, blake2b {digest}) …{text[-tail:]}"


def _with_error(error: Any, content: Any) -> Any:
    message = error.get("message") if isinstance(error, dict) else error
    if not isinstance(message, str) or not message:
        return content
    text = content if isinstance(content, str) else None if content is None else result_of(content)
    return message if not text else text if message in text else f"{message}\n{text}"


def _text(value: Any, field: str) -> str:
    text = _optional_text(value)
    if text is None:
        raise PayloadError(f"hook input has no {field}")
    return text


def _optional_text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()[:_MAX_ID_CHARS]
    return None


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None
