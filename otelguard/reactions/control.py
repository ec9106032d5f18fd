"""The control hook: how a verdict reaches back into the agent.

`inject` adds model-visible context after the current step's tool results, `steer` corrects at the
next step boundary, `cancel` aborts the active turn. Bind a control to the agent runs started inside
`with bind_control(control): ...`, or pass `control=` to the processor as the default.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import ContextManager, Protocol, runtime_checkable

from ..errors import AgentCancelled
from ..runtime.forksafe import fork_safe_lock
from ..model.records import Verdict
from ..runtime.scopes import scoped


@dataclass(frozen=True, slots=True)
class GuardMessage:
    """A message from a guard to the agent (and the model)."""

    text: str
    guard: str
    rule: str
    source: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_verdict(cls, verdict: Verdict) -> "GuardMessage":
        return cls(verdict.message or "", verdict.guard, verdict.rule, {"kind": "plugin", "plugin": verdict.guard})


@runtime_checkable
class AgentControl(Protocol):
    """Implemented by integrations and hand-written loops.

    Called from otelguard's control worker, never while otelguard holds a lock. Implementations must
    be thread-safe and should return quickly: the span thread waits at most 50 ms for a call, after
    which the call finishes in the background and is counted as slow.
    """

    def inject(self, message: GuardMessage) -> None: ...

    def steer(self, message: GuardMessage) -> None: ...

    def cancel(self, cause: str, verdict: Verdict) -> None: ...


class Mailbox:
    """A ready AgentControl for hand-written loops: `drain()` before each model call, check `cancelled`."""

    def __init__(self) -> None:
        self._lock = fork_safe_lock(self, "_lock")  # a control worker may hold it at a fork
        self._injected: list[GuardMessage] = []
        self._steering: list[GuardMessage] = []
        self._cancel: tuple[str, Verdict] | None = None

    def inject(self, message: GuardMessage) -> None:
        with self._lock:
            self._injected.append(message)

    def steer(self, message: GuardMessage) -> None:
        with self._lock:
            self._steering.append(message)

    def cancel(self, cause: str, verdict: Verdict) -> None:
        with self._lock:
            if self._cancel is None:
                self._cancel = (cause, verdict)

    def drain(self) -> list[GuardMessage]:
        """Take every pending message: injected context first, then steering, in arrival order."""
        with self._lock:
            messages = self._injected + self._steering
            self._injected, self._steering = [], []
        return messages

    @property
    def cancelled(self) -> bool:
        return self._cancel is not None

    @property
    def cancel_cause(self) -> str | None:
        return self._cancel[0] if self._cancel else None

    def raise_if_cancelled(self) -> None:
        if self._cancel is not None:
            raise AgentCancelled(self._cancel[0], self._cancel[1])

    def reset(self) -> None:
        with self._lock:
            self._injected, self._steering, self._cancel = [], [], None


_bound: contextvars.ContextVar[AgentControl | None] = contextvars.ContextVar("otelguard_control", default=None)


def bind_control(control: AgentControl) -> ContextManager[AgentControl]:
    """Agent runs started inside this block are controlled by `control`."""
    return scoped(_bound, control)


def bound_control() -> AgentControl | None:
    return _bound.get()
