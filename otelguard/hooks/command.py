"""`otelguard hook <cli>`: one tool call's hook, from stdin to the CLI's answer on stdout, exit 0.

The call is judged by the same engine and guards as every driver (`decision`, the local path): the
session's recent calls are replayed from the local history, the new call is judged, and the history
gets the call. Harmless by construction: anything that goes wrong allows the call (nothing printed)
and is written to the log beside the history.

With `OTELGUARD_URL` set, the hook first asks a running `otelguard serve` (`POST /v1/hook/<cli>`,
answered there by the same local path, on the service's host; `OTELGUARD_TOKEN` when the service
wants a token). A warm service spares the hook its imports and replay: this module imports only what
asking needs and `json` (not even `typing`, nor `http.client` for plain HTTP), and the engine only when the
service gives no answer within 50 ms (`OTELGUARD_URL_TIMEOUT_MS`), the hook then deciding locally and
saying so in its log.
"""

from __future__ import annotations

import gc
import io
import os
import sys
import time

from . import log, paths

TYPE_CHECKING = False  # (not typing's: see the module doc)
if TYPE_CHECKING:
    from typing import BinaryIO, NoReturn, TextIO
    from urllib.parse import SplitResult

    from ..records import Verdict

DEFAULT_SERVICE_TIMEOUT_MS = 50.0
MAX_ANSWER_BYTES = 1 << 20  # a hook's answer is a few hundred bytes


def run_as_the_process(cli: str) -> NoReturn:
    """`run` as the whole of a process started for this one call (`otelguard hook <cli>`), which it
    sets up for that and ends without the interpreter's teardown: the answer is written and flushed,
    the history committed and closed. Skipped, the cyclic collector's passes over freshly imported
    modules and the teardown's module cleanup would cost ~27 M instructions, an eighth of a hook. JSON
    is read with the standard library alone: orjson's import costs one call more than it saves."""
    from .. import fastjson

    gc.disable()
    fastjson.use_standard_library()
    code = run(cli, sys.stdin.buffer, sys.stdout)
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)


def run(cli: str, stdin: BinaryIO, stdout: TextIO) -> int:
    """Judge the call on `stdin`, print the answer; always 0 (see the module doc). Whatever otelguard
    writes to stderr meanwhile (a contained error's warning) goes to the log."""
    began = time.perf_counter()
    log_path = paths.log_path()
    stderr, sys.stderr = sys.stderr, io.StringIO()
    event = None
    verdicts: tuple[Verdict, ...] = ()
    try:
        data = stdin.read()
        answer = _ask_service(cli, data, log_path) if os.environ.get("OTELGUARD_URL") else None
        if answer is None:
            from .decision import answer_with_call

            answer, event, verdicts = answer_with_call(cli, data, log_path)
    finally:
        written, sys.stderr = sys.stderr.getvalue(), stderr
    if written:
        log.write(log_path, "WARNING", f"{cli} hook wrote to stderr:\n{written}")
    try:
        stdout.write(answer)
        stdout.flush()
    except OSError:
        pass
    if event is not None and verdicts and os.environ.get("OTELGUARD_OTLP_ENDPOINT"):
        try:
            from .export import send_later

            send_later(event, verdicts)
        except Exception as error:  # the call is answered already: telemetry is no reason to fail it
            log.write(log_path, "ERROR", f"could not start the OTLP sender: {type(error).__name__}: {error}")
    if os.environ.get("OTELGUARD_DEBUG"):
        log.write(log_path, "DEBUG", f"{cli} hook took {(time.perf_counter() - began) * 1000:.1f} ms")
    return 0


def _ask_service(cli: str, data: bytes, log_path: str) -> str | None:
    """The answer of the `otelguard serve` at OTELGUARD_URL, or None (logged) when it gives none in time."""
    from urllib.parse import urlsplit

    url = os.environ["OTELGUARD_URL"].rstrip("/")
    headers = {"Content-Type": "application/json"}
    token = os.environ.get("OTELGUARD_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        where = urlsplit(url)
        timeout_s = float(os.environ.get("OTELGUARD_URL_TIMEOUT_MS") or DEFAULT_SERVICE_TIMEOUT_MS) / 1000
        post = _post if where.scheme == "http" else _post_with_http_client
        status, body = post(where, f"{where.path}/v1/hook/{cli}", data, headers, timeout_s)
        if status != 200:
            raise OSError(f"HTTP {status}")
        return body.decode("utf-8")
    except Exception as error:  # down, slow, refused, or no such service: the local path answers
        from ..terminal import printable  # (only here: the answered path imports no regex machinery)

        log.write(log_path, "WARNING", f"service fallback: {printable(url, 200)} gave no answer "
                  f"({printable(f'{type(error).__name__}: {error}', 200)}); judged here")
        return None


def _post(where: SplitResult, target: str, body: bytes, headers: dict[str, str],
          timeout_s: float) -> tuple[int, bytes]:
    """POST over plain HTTP/1.1, written here: `http.client` imports `email` and `ssl`, which cost a
    hook more than the rest of its work (~125 M instructions). The service (uvicorn) answers with a
    Content-Length: the answer is read up to it, whether or not the connection is closed after it (it
    is asked to be); any other answer raises."""
    import socket

    lines = [f"POST {target} HTTP/1.1", f"Host: {where.netloc}", f"Content-Length: {len(body)}",
             "Connection: close", *(f"{name}: {value}" for name, value in headers.items())]
    if any("\r" in line or "\n" in line for line in lines):
        raise ValueError("a line break in the URL or a header")
    with socket.create_connection((where.hostname or "localhost", where.port or 80), timeout=timeout_s) as link:
        link.sendall("\r\n".join(lines).encode("latin-1") + b"\r\n\r\n" + body)
        received = bytearray()
        while (answer := _answer(received)) is None:
            chunk = link.recv(65536)
            if not chunk:
                raise OSError(f"the connection closed before the whole answer ({len(received)} bytes)")
            received += chunk
            if len(received) > MAX_ANSWER_BYTES:
                raise OSError("the answer is too long")
    return answer


def _answer(received: bytearray) -> tuple[int, bytes] | None:
    """(status, body) of an HTTP/1.x answer with a Content-Length, or None while part of it is still to come."""
    head, separator, body = bytes(received).partition(b"\r\n\r\n")
    if not separator:
        return None
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.lower().partition(":")[::2] for line in header_lines)
    length = fields.get("content-length", "").strip()
    if not status_line.startswith("HTTP/1.") or not length.isdigit():
        raise OSError(f"not an HTTP answer with a Content-Length: {status_line[:80]!r}")
    if len(body) < int(length):
        return None
    return int(status_line.split()[1]), body[:int(length)]


def _post_with_http_client(where: SplitResult, target: str, body: bytes, headers: dict[str, str],
                           timeout_s: float) -> tuple[int, bytes]:
    """POST over HTTPS (or anything but plain HTTP) with the standard library's client."""
    import http.client

    if where.scheme != "https":
        raise ValueError(f"OTELGUARD_URL must be http:// or https://, not {where.scheme}://")
    connection = http.client.HTTPSConnection(where.netloc, timeout=timeout_s)
    try:
        connection.request("POST", target, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()
