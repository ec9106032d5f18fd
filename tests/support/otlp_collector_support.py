"""A stand-in OTLP/HTTP collector on 127.0.0.1 that records every request body by path."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, TypeVar

T = TypeVar("T")


class Collector:
    """A stand-in OTLP/HTTP collector on 127.0.0.1 that records every request body by path."""

    def __init__(self) -> None:
        self.received: dict[str, list[bytes]] = {}
        self._arrived = threading.Condition()
        received, arrived = self.received, self._arrived

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with arrived:
                    received.setdefault(self.path, []).append(body)
                    arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_until(self, read: Callable[[dict[str, list[bytes]]], T], done: Callable[[T], bool],
                   timeout_s: float = 30.0) -> T:
        """`read(received)` once `done` holds of it, or when the time is up (a detached sender may take
        a while): woken by each request that arrives."""
        with self._arrived:
            self._arrived.wait_for(lambda: done(read(self.received)), timeout_s)
            return read(self.received)


def running_collector() -> Iterator[Collector]:
    """A started collector, stopped after (a test module's fixture: `yield from running_collector()`)."""
    stand_in = Collector()
    stand_in.thread.start()
    yield stand_in
    stand_in.server.shutdown()
    stand_in.server.server_close()
    stand_in.thread.join(5)
