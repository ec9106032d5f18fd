"""`otelguard hook <cli>`: one tool call's hook, from stdin to the CLI's answer on stdout, exit 0.

The call is judged by the same engine and guards as every driver (`decision`, the local path): the
session's recent calls are replayed from the local history, the new call is judged, and the history
gets the call. Harmless by construction: anything that goes wrong allows the call (nothing printed)
and is written to the log beside the history.

With `OTELGUARD_URL` set, the hook first asks a running `otelguard serve` (`POST /v1/hook/<cli>`,
answered there by the same local path, on the service's host; `OTELGUARD_TOKEN` when the service
wants a token). A warm service spares the hook the engine's imports and its replay: the engine is
imported only when the service gives no answer within 50 ms (`OTELGUARD_URL_TIMEOUT_MS`), the hook
then deciding locally and saying so in its log. Whatever listens at that URL, the hook relays only an
answer otelguard itself gives that CLI (`answers.read`: never an `allow`, never a system message);
anything else is logged and the call decided locally. With `OTELGUARD_DISABLE=1` the service is told
(`X-Otelguard-Disable: 1`), and the call is judged as in a paused session either way.
"""

from __future__ import annotations

import io
import os
import sys
import time
from typing import TYPE_CHECKING, BinaryIO, NoReturn, TextIO

from . import log, paths

DISABLE_HEADER = "X-Otelguard-Disable"  # the CLI runs with OTELGUARD_DISABLE: judge its call as paused
if TYPE_CHECKING:
    from urllib.parse import SplitResult

    from ..engine.loop_spend import LoopStep
    from ..model.records import Verdict

DEFAULT_SERVICE_TIMEOUT_MS = 50.0
MAX_ANSWER_BYTES = 1 << 20  # a hook's answer is a few hundred bytes


def run_as_the_process(cli: str) -> NoReturn:
    """`run` as the whole of a process started for this one call (`otelguard hook <cli>`): the
    process exits with its status once the answer is written."""
    sys.exit(run(cli, sys.stdin.buffer, sys.stdout))


def run(cli: str, stdin: BinaryIO, stdout: TextIO) -> int:
    """Judge the call on `stdin`, print the answer; always 0 (see the module doc). Whatever otelguard
    writes to stderr meanwhile (a contained error's warning) goes to the log."""
    began = time.perf_counter()
    log_path = paths.log_path()
    stderr, sys.stderr = sys.stderr, io.StringIO()
    event = None
    verdicts: tuple[Verdict, ...] = ()
    loop_steps: tuple[LoopStep, ...] = ()
    answer = ""
    try:
        data = stdin.read()
        told = _ask_service(cli, data, log_path) if os.environ.get("OTELGUARD_URL") else None
        if told is None:
            from .decision import answer_with_call

            told, event, verdicts, loop_steps = answer_with_call(cli, data, log_path)
        answer = told
    except Exception:  # what the local path does not contain itself: the call is allowed all the same
        import traceback

        from ..runtime.containment import raise_internal_errors

        if raise_internal_errors():  # the project's own tests: a bug fails them
            raise
        log.write(log_path, "ERROR", f"internal error, call allowed ({cli}):\n" + traceback.format_exc())
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

            send_later(event, verdicts, loop_steps)
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
    if paths.disabled():
        headers[DISABLE_HEADER] = "1"
    try:
        where = urlsplit(url)
        timeout_s = float(os.environ.get("OTELGUARD_URL_TIMEOUT_MS") or DEFAULT_SERVICE_TIMEOUT_MS) / 1000
        status, body = _post(where, f"{where.path}/v1/hook/{cli}", data, headers, timeout_s)
        if status != 200:
            raise OSError(f"HTTP {status}")
        text = body.decode("utf-8")
    except Exception as error:  # down, slow, refused, or no such service: the local path answers
        from ..runtime.terminal import printable

        log.write(log_path, "WARNING", f"service fallback: {printable(url, 200)} gave no answer "
                  f"({printable(f'{type(error).__name__}: {error}', 200)}); judged here")
        return None
    from .answers import read

    if read(cli, text) is None:  # not otelguard's (an allow, a system message): never relayed to the CLI
        from ..runtime.terminal import printable

        log.write(log_path, "WARNING", f"service fallback: {printable(url, 200)} answered what otelguard never "
                  f"answers a {cli} hook ({printable(text, 200)}); judged here")
        return None
    return text


def _post(where: SplitResult, target: str, body: bytes, headers: dict[str, str],
          timeout_s: float) -> tuple[int, bytes]:
    """POST with the standard library's HTTP client: (status, body). HTTPS verifies the service's
    certificate against the system's trust store (`ssl.create_default_context`, as `http.client`
    does by default); an answer longer than `MAX_ANSWER_BYTES` raises."""
    import http.client

    if where.scheme == "http":
        connection: http.client.HTTPConnection = http.client.HTTPConnection(where.netloc, timeout=timeout_s)
    elif where.scheme == "https":
        connection = http.client.HTTPSConnection(where.netloc, timeout=timeout_s)
    else:
        raise ValueError(f"OTELGUARD_URL must be http:// or https://, not {where.scheme}://")
    try:
        connection.request("POST", target, body=body, headers=headers)
        response = connection.getresponse()
        answer = response.read(MAX_ANSWER_BYTES + 1)
        if len(answer) > MAX_ANSWER_BYTES:
            raise OSError("the answer is too long")
        return response.status, answer
    finally:
        connection.close()
