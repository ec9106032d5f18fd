"""A CLI session's tool calls as GenAI spans, handed to the engine through its lifecycle.

Each hook process is new, so it rebuilds the session's guard state by replaying the session's recent
events (`history.WINDOW`) into a fresh `GuardEngine`, then hands it the call being judged. The engine
sees what a traced agent would show it: one `invoke_agent` span per user prompt (Claude Code's
`prompt_id`, Codex's `turn_id`; Gemini CLI and opencode name none, so a session is one run), keyed by
the session id (`gen_ai.conversation.id`), and one `execute_tool` span per call under it, started
before the call runs and ended after. A new prompt starts a new run, which resets the guards' run
state as it does for any agent. Replaying is exact for any guard whose state follows from the calls
(every guard today): no guard state is stored, so a new guard needs nothing here.
"""

from __future__ import annotations

import hashlib

from ..model import semconv as sc
from ..conventions import session_trace_id
from ..engine import GuardEngine, Judged, Started
from ..model.records import SpanView, Status
from .history import StoredEvent
from .payload import PRE

_NO_RUN = object()


def _id(bits: int, *parts: str) -> int:
    digest = hashlib.blake2b("\0".join(parts).encode("utf-8", "surrogatepass"), digest_size=bits // 8).digest()
    return int.from_bytes(digest, "big") or 1  # an id of 0 means none


class SessionReplay:
    """One session's spans into `engine`, in the order the hooks saw the calls."""

    def __init__(self, engine: GuardEngine, cli: str, session: str):
        self.engine, self.cli, self.session = engine, cli, session
        self.trace_id = session_trace_id(cli, session)  # the session's trace, as the service keys a CLI's
        self._run: object = _NO_RUN
        self._run_span_id = 0

    def replay(self, events: list[StoredEvent]) -> None:
        for event in events:
            if event.phase == PRE:
                self.start(event.run, event.call_id, event.tool, event.arguments)
            else:
                self.end(event.run, event.call_id, event.tool, event.arguments, event.result, event.failed,
                         event.duration_ms)

    def start(self, run: str | None, call_id: str, tool: str, arguments: str | None) -> Started | None:
        parent = self._in_run(run)
        return self.engine.start(self._tool_span(parent, call_id, tool, arguments))

    def end(self, run: str | None, call_id: str, tool: str, arguments: str | None, result: str | None,
            failed: bool, duration_ms: float | None) -> Judged | None:
        parent = self._in_run(run)
        span = self._tool_span(parent, call_id, tool, arguments, result)
        if failed:
            span.status, span.status_message = Status.ERROR, result
        span.end_ns = int((duration_ms or 0.0) * 1e6)  # the CLI's own timing: recorded, never judged
        return self.engine.end(span)

    def _in_run(self, run: str | None) -> int:
        """The run span the call belongs to, started when the prompt changes."""
        if run != self._run:
            self._run = run
            self._run_span_id = _id(64, self.cli, self.session, "run", run or "")
            self.engine.start(SpanView(
                f"{sc.OP_INVOKE_AGENT} {self.cli}", self.trace_id, self._run_span_id, None,
                {sc.GEN_AI_OPERATION_NAME: sc.OP_INVOKE_AGENT, sc.GEN_AI_AGENT_NAME: self.cli,
                 sc.GEN_AI_CONVERSATION_ID: self.session}))
        return self._run_span_id

    def _tool_span(self, parent: int, call_id: str, tool: str, arguments: str | None,
                   result: str | None = None) -> SpanView:
        attributes = {sc.GEN_AI_OPERATION_NAME: sc.OP_EXECUTE_TOOL, sc.GEN_AI_TOOL_NAME: tool,
                      sc.GEN_AI_TOOL_CALL_ID: call_id}
        if arguments is not None:
            attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = arguments
        if result is not None:
            attributes[sc.GEN_AI_TOOL_CALL_RESULT] = result
        return SpanView(f"{sc.OP_EXECUTE_TOOL} {tool}", self.trace_id, _id(64, self.cli, self.session, call_id),
                        parent, attributes)
