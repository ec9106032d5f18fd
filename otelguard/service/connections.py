"""What a connection to `otelguard serve` may hold, and for how long (docs/security.md).

uvicorn serves HTTP with no deadline on reading a request: a client that sends half a request line,
or headers and then nothing, holds its connection (a descriptor) for ever, and enough of them take
every listener down. `deadline_protocol` is uvicorn's h11 protocol with two deadlines: a request's
headers must arrive within `header_timeout_s` (counted from the connection, or from the first byte of
a later request on it), its body within `body_timeout_s` of its headers. A connection past either is
closed and counted. Between requests uvicorn's own keep-alive timeout applies, and its
`limit_concurrency` answers 503 past `max_connections`; gRPC gets the same bounds from its own server
options (`grpc_options`).

When descriptors run out anyway, asyncio logs a traceback for each accept it retries (thousands a
second); `AcceptFailures` is the loop's exception handler that counts them and logs the first.
`raise_descriptor_limit` lifts the process's soft descriptor limit to its hard limit. uvicorn warns
once per request past the connection limit or not HTTP: `RepeatedWarnings` lets each such warning
through once a minute.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .options import Deadlines

logger = logging.getLogger("otelguard")

KEEP_ALIVE_S = 5  # an idle connection between requests is closed after this (uvicorn's default, stated)
GRPC_IDLE_S = 120  # a gRPC connection with no call open is closed after this (clients reconnect)
GRPC_MAX_AGE_S = 600  # a gRPC connection is asked to go after this, its open calls given body_timeout_s
_ACCEPT_FAILED = "socket.accept() out of system resource"  # asyncio's message (base_events / selector_events)
REPEAT_EVERY_S = 60.0
UVICORN_LOG = "uvicorn.error"  # where uvicorn's protocols log


def deadline_protocol(deadlines: Deadlines, on_timeout: Callable[[], None]) -> type[H11Protocol]:
    """uvicorn's h11 protocol that closes a connection whose request has not arrived whole in time."""

    class DeadlineProtocol(H11Protocol):
        _timer: asyncio.TimerHandle | None = None
        _reading_body = False

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm(deadlines.header_timeout_s, reading_body=False)

        def data_received(self, data: bytes) -> None:
            if self._timer is None and self.conn.their_state is h11.IDLE:  # a later request's first byte
                self._arm(deadlines.header_timeout_s, reading_body=False)
            super().data_received(data)
            state = self.conn.their_state
            if state is h11.SEND_BODY:
                if not self._reading_body:  # the headers are in: the body's deadline starts now
                    self._arm(deadlines.body_timeout_s, reading_body=True)
            elif state is not h11.IDLE:  # the request is in (or the connection is over)
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self, seconds: float, *, reading_body: bool) -> None:
            self._disarm()
            self._reading_body = reading_body
            self._timer = self.loop.call_later(seconds, self._expired)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._reading_body = False

        def _expired(self) -> None:
            self._timer = None
            # A request still arriving: its headers (IDLE) or its body. One fully read is the app's.
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
                on_timeout()
                self.transport.close()

    return DeadlineProtocol


def grpc_options(deadlines: Deadlines) -> list[tuple[str, int]]:
    """grpc core's own bounds for the same: the TLS and HTTP/2 handshake within the header deadline,
    idle connections closed, and every connection's age bounded (its calls given the body deadline)."""
    return [("grpc.server_handshake_timeout_ms", round(deadlines.header_timeout_s * 1000)),
            ("grpc.max_connection_idle_ms", GRPC_IDLE_S * 1000),
            ("grpc.max_connection_age_ms", GRPC_MAX_AGE_S * 1000),
            ("grpc.max_connection_age_grace_ms", round(deadlines.body_timeout_s * 1000))]


class AcceptFailures:
    """The serving loop's exception handler: a failed accept (descriptors or memory exhausted) is
    counted and the first one logged; everything else goes to asyncio's default handler."""

    def __init__(self, count: Callable[[], None]):
        self._count = count
        self._logged = False

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != _ACCEPT_FAILED:
            loop.default_exception_handler(context)
            return
        self._count()
        if not self._logged:
            self._logged = True
            logger.warning("otelguard serve: cannot accept connections: %s (the descriptor limit is %s); "
                           "logged once, counted in otelguard.service.accept_failures",
                           context.get("exception"), descriptor_limit())


class RepeatedWarnings(logging.Filter):
    """A filter for uvicorn's logger (`UVICORN_LOG`): each warning message (uvicorn's are fixed texts)
    at most once every `REPEAT_EVERY_S`."""

    def __init__(self) -> None:
        super().__init__()
        self._last: dict[object, float] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.WARNING:
            return True
        now = time.monotonic()
        last = self._last.get(record.msg)
        if last is not None and now - last < REPEAT_EVERY_S:
            return False
        if len(self._last) >= 64:  # (fixed texts: a bound that is never reached)
            self._last.clear()
        self._last[record.msg] = now
        return True


def descriptor_limit() -> str:
    try:
        import resource
    except ImportError:  # not on this platform
        return "unknown"
    return str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])


def raise_descriptor_limit() -> None:
    """Lift the soft limit on open descriptors to the hard limit (each connection holds one)."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != hard:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    except (ImportError, ValueError, OSError):  # no such limit here, or the system refuses it: keep the soft one
        pass
