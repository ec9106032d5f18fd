"""A stand-in OTLP/HTTP collector on 127.0.0.1 that records every request body by path."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator


class Collector:
    """A stand-in OTLP/HTTP collector on 127.0.0.1 that records every request body by path."""

    def __init__(self) -> None:
        self.received: dict[str, list[bytes]] = {}
        received = self.received

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                received.setdefault(self.path, []).append(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def running_collector() -> Iterator[Collector]:
    """A started collector, stopped after (a test module's fixture: `yield from running_collector()`)."""
    stand_in = Collector()
    stand_in.thread.start()
    yield stand_in
    stand_in.server.shutdown()
    stand_in.server.server_close()
    stand_in.thread.join(5)


def wait_for(collector: Collector, path: str, timeout_s: float = 30.0) -> list[bytes]:
    """The bodies received on `path`, waiting until one arrives (a detached sender may take a while)."""
    deadline = time.monotonic() + timeout_s
    while not collector.received.get(path) and time.monotonic() < deadline:
        time.sleep(0.05)
    return collector.received.get(path, [])
