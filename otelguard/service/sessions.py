"""Which agent session a verdict belongs to, and each session's recent verdicts (`GET /v1/verdicts`).

The CLIs and SDKs name a session by different attributes: Claude Code and opencode `session.id`,
Gemini CLI and the GenAI conventions `gen_ai.conversation.id`, Codex CLI `conversation.id`. The
guard's CLI tool calls carry their session as `gen_ai.conversation.id` (`conventions.agent_clis`).
The same attributes are the collector's routing key for a fleet (collector-config/fleet-sessions.yaml).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from typing import Any

from ..conventions import SESSION_ATTRIBUTES, session_of  # noqa: F401  (the service's names for them)
from ..engine import Judged
from ..records import Verdict

MAX_SESSIONS = 10_000
MAX_VERDICTS_PER_SESSION = 50
MAX_SESSION_CHARS = 256


def verdict_event(service: str | None, judged: Judged, verdict: Verdict) -> dict[str, Any]:
    """One verdict as the JSON object the webhook posts and the decision API answers: the verdict's
    fields (`Verdict.to_json`: its `evidence` and `paused` too), its agent, session, trace and span ids
    (hex, as OTLP/JSON writes them), and the time."""
    span = judged.span
    event = verdict.to_json()
    event.update(
        agent=judged.agent.name, agent_key=judged.agent.key, service=service,
        session=(session_of(span.attributes) if span is not None else None) or judged.agent.session,
        trace_id=f"{span.trace_id:032x}" if span is not None else None,
        span_id=f"{span.span_id:016x}" if span is not None else None,
        time=round(time.time(), 3))
    return event


class RecentVerdicts:
    """The last `per_session` verdicts of the `max_sessions` sessions heard from most recently.
    Written by the judge's thread, read by the API: one lock, held briefly."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, per_session: int = MAX_VERDICTS_PER_SESSION):
        self.max_sessions = max_sessions
        self.per_session = per_session
        self._sessions: OrderedDict[str, deque[dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, event: dict[str, Any]) -> None:
        session = event.get("session")
        if not session:
            return
        with self._lock:
            verdicts = self._sessions.pop(session, None)
            if verdicts is None:
                verdicts = deque(maxlen=self.per_session)
            verdicts.append(event)
            self._sessions[session] = verdicts
            if len(self._sessions) > self.max_sessions:
                self._sessions.popitem(last=False)

    def of(self, session: str) -> list[dict[str, Any]]:
        """The session's recent verdicts, oldest first (empty for a session not heard of, or forgotten)."""
        with self._lock:
            return list(self._sessions.get(session, ()))
