"""A webhook receiver for tests of `otelguard serve --webhook URL`: it checks each request's HMAC and
timestamp on its own, as a receiver should, and answers the statuses it is given in turn."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from service_support import serving

SECRET = b"webhook-secret"

SKEW_S = 300


class Receiver:
    """A webhook endpoint: verifies each request's signature and timestamp as a receiver should, and
    answers `statuses` in turn (then 200)."""

    def __init__(self, statuses: list[int] = (), hold: threading.Event | None = None) -> None:
        self.statuses = list(statuses)
        self.hold = hold
        self.arrived = threading.Event()  # a first request came in
        self.accepted: list[dict] = []
        self.attempts = 0
        self.bad_signatures = 0
        self.got = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.arrived.set()
                if receiver.hold is not None:
                    receiver.hold.wait(10)
                timestamp = self.headers["X-Otelguard-Timestamp"]
                expected = "sha256=" + hmac.new(SECRET, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
                valid = (hmac.compare_digest(expected, self.headers["X-Otelguard-Signature"])
                         and abs(time.time() - int(timestamp)) <= SKEW_S)
                with receiver.got:
                    receiver.attempts += 1
                    status = receiver.statuses.pop(0) if receiver.statuses else 200
                    if not valid:
                        receiver.bad_signatures += 1
                        status = 401
                    elif status == 200:
                        receiver.accepted.append(json.loads(body))
                    receiver.got.notify_all()
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/otelguard"


@contextmanager
def receiving(statuses: list[int] = (), hold: threading.Event | None = None) -> Iterator[Receiver]:
    receiver = Receiver(statuses, hold)
    with serving(receiver.server):
        yield receiver
