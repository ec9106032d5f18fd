"""A loopback HTTP server for tests that receive what a real client sends (a webhook, OTLP/HTTP)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Self

# (path, request body) -> (status, content type, response body)
OnPost = Callable[[str, bytes], tuple[int, str, bytes]]


class LoopbackServer:
    """Answers POSTs on 127.0.0.1, on a free port, from a daemon thread, with `headers` besides the
    content type; `base` is its URL. Closed by `close()` (joins the thread) or as a context manager."""

    def __init__(self, on_post: OnPost, headers: dict[str, str] | None = None):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, content_type, reply = on_post(self.path, body)
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Recorder(LoopbackServer):
    """An OTLP/HTTP endpoint that keeps each request body it gets, by path (the next hop)."""

    def __init__(self) -> None:
        self.bodies: dict[str, list[bytes]] = {}
        self.got = threading.Condition()
        super().__init__(self._posted)

    def _posted(self, path: str, body: bytes) -> tuple[int, str, bytes]:
        with self.got:
            self.bodies.setdefault(path, []).append(body)
            self.got.notify_all()
        return 200, "application/x-protobuf", b""

    def wait_for(self, *paths: str, timeout_s: float = 10.0) -> bool:
        with self.got:
            return self.got.wait_for(lambda: all(path in self.bodies for path in paths), timeout_s)


class Redirect(LoopbackServer):
    """Answers every POST with a redirect (`status`) to `location`, counting them in `posts`."""

    def __init__(self, status: int, location: str) -> None:
        self.posts = 0
        self.status = status
        super().__init__(self._posted, {"Location": location, "Content-Length": "0"})

    def _posted(self, path: str, body: bytes) -> tuple[int, str, bytes]:
        self.posts += 1
        return self.status, "text/plain", b""
