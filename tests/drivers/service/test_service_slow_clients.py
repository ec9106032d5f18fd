"""`otelguard serve` against clients that hold connections: a request must arrive whole in time (its
headers, then its body) or its connection is closed and counted; gRPC handshakes likewise; past
`max_connections` HTTP answers 503 (warning once); and when descriptors run out anyway, the condition is logged once
and counted (not a traceback per accept), the soft descriptor limit having been raised to the hard
one at start. All on loopback, deadlines of a fraction of a second."""

from __future__ import annotations

import http.client
import logging
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from otelguard.service.options import Deadlines
from service_support import post, running_service, scrape

DEADLINES = Deadlines(header_timeout_s=0.3, body_timeout_s=0.3)
HEADERS = b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\nContent-Length: 100\r\n"
HALF_SENT = {
    "nothing": b"",
    "half a request line": b"POST /v1/tra",
    "headers without their end": HEADERS,
    "headers and half the body": HEADERS + b"\r\n" + b"\0" * 50,
}


def _still_open_after(seconds: float, *sent: tuple[tuple[str, int], bytes]) -> list[bytes]:
    """Connections opened at once, each sending its payload and nothing more: the payloads of those
    the server has not closed within `seconds`."""
    connections = []
    for address, payload in sent:
        connection = socket.create_connection(address, timeout=5)
        connection.sendall(payload)
        connections.append((connection, payload))
    deadline = time.monotonic() + seconds
    still_open = []
    for connection, payload in connections:
        with connection:
            try:
                connection.settimeout(max(0.01, deadline - time.monotonic()))
                while connection.recv(4096):  # (gRPC sends its settings first)
                    pass
            except TimeoutError:
                still_open.append(payload)
    return still_open


def _counted(service, family: str, **labels: str) -> float:
    return sum(sample.value for sample in scrape(service).get(family, [])
               if sample.name.endswith("_total") and all(sample.labels.get(k) == v for k, v in labels.items()))


def test_a_request_not_received_in_time_is_closed_and_counted() -> None:
    with running_service(grpc=True, deadlines=DEADLINES) as service:
        host, port = service.grpc_target.rsplit(":", 1)
        grpc_address = (host, int(port))
        assert _still_open_after(1.5, *((service.http_address, payload) for payload in HALF_SENT.values()),
                                 (grpc_address, b""), (grpc_address, b"PRI * HTTP/2.0\r\n")) == []
        assert _counted(service, "otelguard_service_refused_requests", reason="timeout") == len(HALF_SENT)
        assert _counted(service, "otelguard_internal_errors") == 0


def test_a_slow_request_within_its_deadlines_and_an_idle_keep_alive_are_served() -> None:
    """The header deadline starts at a request's first byte: a kept-alive connection idle for longer
    than it (within the keep-alive timeout) serves its next request."""
    with running_service(deadlines=DEADLINES) as service:
        connection = http.client.HTTPConnection(*service.http_address, timeout=5)
        connection.putrequest("POST", "/v1/traces")
        connection.putheader("Content-Type", "application/x-protobuf")
        connection.putheader("Content-Length", "0")
        time.sleep(0.1)
        connection.endheaders()
        answer = connection.getresponse()
        answer.read()
        assert answer.status == 200
        time.sleep(0.5)
        connection.request("POST", "/v1/traces", body=b"", headers={"Content-Type": "application/x-protobuf"})
        assert connection.getresponse().status == 200
        connection.close()


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_past_max_connections_http_answers_503_and_warns_once() -> None:
    """Four idle connections fill a limit of four: each further request is answered 503, and
    uvicorn's warning about it is logged once, not once a request."""
    records = Records()
    uvicorn_log = logging.getLogger("uvicorn.error")
    with running_service(max_connections=4) as service:
        uvicorn_log.addHandler(records)
        try:
            idle = [socket.create_connection(service.http_address, timeout=5) for _ in range(4)]
            assert [post(service, "/v1/traces", b"")[0] for _ in range(5)] == [503] * 5
        finally:
            uvicorn_log.removeHandler(records)
        assert records.messages == ["Exceeded concurrency limit."]
        for connection in idle:
            connection.close()
        deadline = time.monotonic() + 2
        while post(service, "/v1/traces", b"")[0] != 200:
            assert time.monotonic() < deadline
            time.sleep(0.05)


def _limits(pid: int) -> tuple[int, int]:
    line = next(line for line in Path(f"/proc/{pid}/limits").read_text().splitlines()
                if line.startswith("Max open files"))
    soft, hard = line.split()[3:5]
    return int(soft), int(hard)


@pytest.mark.skipif(not Path("/proc/self/limits").exists(), reason="reads the limits in /proc")
def test_out_of_descriptors_is_logged_once_and_counted(tmp_path) -> None:
    """A serve started with a soft limit of 64 descriptors and a hard limit of 128 raises the soft one;
    140 connections then exhaust it: one line on stderr, the failures counted, and serving resumes
    once they are closed."""
    stderr = tmp_path / "stderr"
    with stderr.open("wb") as errors:
        process = subprocess.Popen(
            ["sh", "-c", 'ulimit -S -n 64 && ulimit -H -n 128 && exec "$@"', "sh", sys.executable, "-m", "otelguard",
             "serve", "--http", "127.0.0.1:0", "--grpc", "off", "--metrics", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=errors, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        first = process.stdout.readline()
        found = re.search(r"OTLP/HTTP http://([0-9.]+):(\d+), metrics (http://\S+/metrics)", first)
        assert found, first + stderr.read_text()
        address = (found[1], int(found[2]))
        assert _limits(process.pid) == (128, 128)
        held = []
        for _ in range(140):
            held.append(socket.create_connection(address, timeout=5))
        time.sleep(0.3)
        for connection in held:
            connection.close()
        deadline = time.monotonic() + 5  # asyncio retries accepting a second later
        while True:
            try:
                with urllib.request.urlopen(found[3], timeout=1) as answer:
                    metrics = answer.read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert [sample.value for family in text_string_to_metric_families(metrics)
                for sample in family.samples if sample.name == "otelguard_service_accept_failures_total"] > [0]
    finally:
        process.kill()
        process.wait(10)
    lines = stderr.read_text().splitlines()
    assert len(lines) == 1 and "cannot accept connections: [Errno 24] Too many open files" in lines[0], lines
