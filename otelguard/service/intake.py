"""What the listeners (`http`, `grpc`) ask of the service they feed: one contract, so that neither
imports the server that starts them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from google.protobuf.message import Message
from opentelemetry.metrics import Counter

from ..runtime.containment import Containment
from .judge import SpanJudge
from .options import ServiceOptions
from .page import LivePage
from .sessions import RecentVerdicts

RETRY_AFTER_S = 1  # what a busy service asks an exporter to wait before it retries


class Intake(Protocol):
    """The service as its listeners see it (`server.GuardService`)."""

    options: ServiceOptions
    containment: Containment
    judge: SpanJudge
    recent: RecentVerdicts
    page: LivePage | None  # the live page's store, when the page is served
    hook_calls: Counter

    def accept(self, signal: str, body: bytes, encoding: str) -> Message:
        """A request's decompressed body, decoded and judged: the response to send."""
        ...

    def accept_message(self, signal: str, request: Any) -> Message:
        """A decoded request (gRPC), judged: the response to send."""
        ...

    async def off_loop(self, work: Callable[..., Any], *args: Any) -> Any:
        """`work(*args)` on the service's decoding threads, awaited."""
        ...

    def refused(self, reason: str) -> None:
        """Count a request refused (`server.REFUSALS`)."""
        ...
