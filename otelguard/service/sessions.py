"""Which agent session a verdict belongs to, and each session's recent verdicts (`GET /v1/verdicts`).

The CLIs and SDKs name a session by different attributes: Claude Code and opencode `session.id`,
Gemini CLI and the GenAI conventions `gen_ai.conversation.id`, Codex CLI `conversation.id`. The
guard's CLI tool calls carry their session as `gen_ai.conversation.id` (`conventions.agent_clis`).
The same attributes are the collector's routing key for a fleet (collector-config/fleet-sessions.yaml).
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict, deque
from typing import Any

from ..conventions import SESSION_ATTRIBUTES, session_of  # noqa: F401  (the service's names for them)
from ..engine import Judged
from ..model.records import Verdict
from ..runtime.terminal import cut

MAX_SESSIONS = 10_000
MAX_VERDICTS_PER_SESSION = 50
MAX_SESSION_CHARS = 256  # the longest session id the API is asked for; a longer one is not kept
MAX_NAME_CHARS = 256  # each other name kept (tool, agent, service, ...), cut past this
MAX_MESSAGE_CHARS = 4096  # the message kept, cut past this
MAX_SESSION_BYTES = 64 * 1024  # a session's verdicts kept, as JSON; the oldest go first
MAX_BYTES = 64 * 1024 * 1024  # every session's, as JSON; the least recently heard from go first


def session_of_judged(judged: Judged) -> str | None:
    """The session of a judged span: its own session attribute, else that of the agent run the engine
    tied it to (an integration's tool spans carry none: the id is on the `invoke_agent` span)."""
    own = session_of(judged.span.attributes) if judged.span is not None else None
    return own or judged.agent.session


def verdict_event(service: str | None, judged: Judged, verdict: Verdict) -> dict[str, Any]:
    """One verdict as the JSON object the webhook posts and the decision API answers: the verdict's
    fields (`Verdict.to_json`: its `evidence` and `paused` too), its agent, session, trace and span ids
    (hex, as OTLP/JSON writes them), what its loop has spent (`loop`: the span's `otelguard.loop.*`
    without the prefix; None for a verdict on no loop), and the time."""
    span = judged.span
    event = verdict.to_json()
    step = next((step for step in judged.loop_steps if step.verdict is verdict), None)
    event["loop"] = ({key.removeprefix("otelguard.loop."): value for key, value in step.spend.attributes().items()}
                     if step is not None else None)
    event.update(
        agent=judged.agent.name, agent_key=judged.agent.key, service=service,
        session=session_of_judged(judged),
        trace_id=f"{span.trace_id:032x}" if span is not None else None,
        span_id=f"{span.span_id:016x}" if span is not None else None,
        time=round(time.time(), 3))
    return event


class RecentVerdicts:
    """The last verdicts of the sessions heard from most recently, bounded in count and in bytes:
    at most `per_session` verdicts and `session_bytes` of a session, `max_sessions` sessions and
    `max_bytes` in all. A verdict is kept as compact JSON (what the API answers), its names cut to
    `MAX_NAME_CHARS` and its message to `MAX_MESSAGE_CHARS`, so one always fits in `session_bytes`;
    a session id longer than the API takes (`MAX_SESSION_CHARS`) is not kept at all. Written by the
    judge's thread, read by the API: one lock, held briefly."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, per_session: int = MAX_VERDICTS_PER_SESSION,
                 session_bytes: int = MAX_SESSION_BYTES, max_bytes: int = MAX_BYTES):
        self.max_sessions = max_sessions
        self.per_session = per_session
        self.session_bytes = session_bytes
        self.max_bytes = max_bytes
        self._sessions: OrderedDict[str, _Kept] = OrderedDict()
        self.bytes = 0  # the JSON kept, every session's
        self._lock = threading.Lock()

    def add(self, event: dict[str, Any]) -> None:
        session = event.get("session")
        if not isinstance(session, str) or not session or len(session) > MAX_SESSION_CHARS:
            return
        verdict = json.dumps(_kept(event), separators=(",", ":"), ensure_ascii=False, default=str).encode()
        with self._lock:
            kept = self._sessions.pop(session, None) or _Kept()
            kept.verdicts.append(verdict)
            kept.bytes += len(verdict)
            self.bytes += len(verdict)
            while len(kept.verdicts) > self.per_session or kept.bytes > self.session_bytes:
                self._forget(kept, kept.verdicts.popleft())
            self._sessions[session] = kept
            while len(self._sessions) > self.max_sessions or self.bytes > self.max_bytes:
                for verdict in self._sessions.popitem(last=False)[1].verdicts:
                    self.bytes -= len(verdict)

    def _forget(self, kept: _Kept, verdict: bytes) -> None:
        kept.bytes -= len(verdict)
        self.bytes -= len(verdict)

    def of(self, session: str) -> list[dict[str, Any]]:
        """The session's recent verdicts, oldest first (empty for a session not heard of, or forgotten)."""
        with self._lock:
            kept = self._sessions.get(session)
            verdicts = list(kept.verdicts) if kept is not None else []
        return [json.loads(verdict) for verdict in verdicts]


class _Kept:
    __slots__ = ("verdicts", "bytes")

    def __init__(self) -> None:
        self.verdicts: deque[bytes] = deque()
        self.bytes = 0


def _kept(event: dict[str, Any]) -> dict[str, Any]:
    """The event with every text value cut: the message to `MAX_MESSAGE_CHARS`, the rest (the evidence's
    tools and previews too) to `MAX_NAME_CHARS`."""
    return {key: cut(value, MAX_MESSAGE_CHARS if key == "message" else MAX_NAME_CHARS) if isinstance(value, str)
            else [_kept(entry) for entry in value] if key == "evidence" and isinstance(value, list)
            else value for key, value in event.items()}
