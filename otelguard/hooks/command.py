"""`otelguard hook <cli>`: one tool call's hook, from stdin to the CLI's answer on stdout, exit 0.

The call is judged by the same engine and guards as every driver (`decision`, the local path): the
session's recent calls are replayed from the local history, the new call is judged, and the history
gets the call. Harmless by construction: anything that goes wrong allows the call (nothing printed)
and is written to the log beside the history.

With `OTELGUARD_URL` set, the hook first asks a running `otelguard serve` (`POST /v1/hook/<cli>`,
answered there by the same local path, on the service's host; `OTELGUARD_TOKEN` when the service
wants a token). A warm service spares the hook its imports and replay: this module imports only what
asking needs, and the engine only when the service gives no answer within 50 ms
(`OTELGUARD_URL_TIMEOUT_MS`), the hook then deciding locally and saying so in its log.
"""

from __future__ import annotations

import io
import os
import sys
import time
from typing import BinaryIO, TextIO

from . import log, paths

DEFAULT_SERVICE_TIMEOUT_MS = 50.0


def run(cli: str, stdin: BinaryIO, stdout: TextIO) -> int:
    """Judge the call on `stdin`, print the answer; always 0 (see the module doc). Whatever otelguard
    writes to stderr meanwhile (a contained error's warning) goes to the log."""
    began = time.perf_counter()
    log_path = paths.log_path()
    stderr, sys.stderr = sys.stderr, io.StringIO()
    event, verdicts = None, ()
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
    if verdicts and os.environ.get("OTELGUARD_OTLP_ENDPOINT"):
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
    import http.client
    from urllib.parse import urlsplit

    url = os.environ["OTELGUARD_URL"].rstrip("/")
    headers = {"Content-Type": "application/json"}
    token = os.environ.get("OTELGUARD_TOKEN")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        where = urlsplit(url)
        connection_type = http.client.HTTPSConnection if where.scheme == "https" else http.client.HTTPConnection
        timeout_ms = float(os.environ.get("OTELGUARD_URL_TIMEOUT_MS") or DEFAULT_SERVICE_TIMEOUT_MS)
        connection = connection_type(where.netloc, timeout=timeout_ms / 1000)
        try:
            connection.request("POST", f"{where.path}/v1/hook/{cli}", body=data, headers=headers)
            response = connection.getresponse()
            body = response.read()
        finally:
            connection.close()
        if response.status != 200:
            raise OSError(f"HTTP {response.status}")
        return body.decode("utf-8")
    except Exception as error:  # down, slow, refused, or no such service: the local path answers
        from ..terminal import printable  # (only here: the answered path imports no regex machinery)

        log.write(log_path, "WARNING", f"service fallback: {printable(url, 200)} gave no answer "
                  f"({printable(f'{type(error).__name__}: {error}', 200)}); judged here")
        return None
