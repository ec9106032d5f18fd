"""The OTLP/HTTP receiver and the metrics endpoint, as Starlette apps (served by uvicorn).

`/v1/traces`, `/v1/logs` and `/v1/metrics` take `application/x-protobuf` or `application/json`
bodies, plain or gzip (at most `MAX_GZIP_MEMBERS` members). Answers, as the OTLP/HTTP specification
says: 200 with the signal's `Export*ServiceResponse` in the request's encoding (a partial success
names what was rejected); 400 with a `google.rpc.Status` for a body that cannot be decoded (nothing
of it is kept); 413 for a body past `max_request_bytes`, counted after decompression (read no
further: a gzip bomb costs at most that much); 415 for another content type or encoding; 503 with
`Retry-After` while the judge's queue is full (and, from uvicorn, past `max_connections`); 404 and
405 (Starlette's own) for other paths and methods. With a token, every route first asks for it
(`access.RequireToken`: 401). `GET /v1/verdicts?session=ID` answers a session's recent verdicts as
JSON (the decision API, for clients that ask rather than listen); `POST /v1/sessions/ID/pause` and
`/resume` pause a session and end its pause (`GuardEngine.pause`). `GET /` is the live page, and
`/login`, `/live/...` its login and data (`page`: the page's cookie opens those, nothing else).

The event loop only reads bodies: decompressing and decoding them (work that grows with a body's
size) runs on the service's decoding threads (`Intake.off_loop`), so a large request never
holds the other listeners.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from google.protobuf.json_format import MessageToJson
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from prometheus_client.exposition import choose_encoder
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.routing import Route

from ..hooks import CLIS as HOOK_CLIS
from ..hooks.command import DISABLE_HEADER
from ..hooks.decision import answer as answer_hook
from .access import RequireToken
from .intake import RETRY_AFTER_S, Intake
from .judge import QueueFull
from .page import DATA_PREFIX as PAGE_DATA, OPEN_PATHS as PAGE_OPEN, routes as page_routes
from ..otlp.requests import MalformedRequest
from .sessions import MAX_SESSION_CHARS

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry


PROTOBUF = "application/x-protobuf"
JSON = "application/json"
MAX_GZIP_MEMBERS = 64  # OTLP exporters send one; a body of more is refused (400)
_GZIP_CHUNK = 64 * 1024  # compressed bytes handed to zlib at a time (what a member's end copies over)


class UnsupportedMedia(Exception):
    """A content type or encoding the receiver does not speak (answered with 415)."""


class TooLarge(Exception):
    """A body past the size limit, compressed or not (answered with 413)."""


def receiver_app(service: Intake) -> Starlette:
    """The OTLP/HTTP receiver's routes; issue-23 routes (decision API, hooks) join this app."""

    def endpoint(signal: str):
        async def receive(request: Request) -> Response:
            encoding = JSON if _media_type(request) == JSON else PROTOBUF
            try:
                if _media_type(request) not in (PROTOBUF, JSON):
                    raise UnsupportedMedia(f"content type {request.headers.get('content-type')!r}: "
                                           f"send {PROTOBUF} or {JSON}")
                limit = service.options.max_request_bytes
                content_encoding = _content_encoding(request)  # refused before the body is read
                body = await _body(request, limit)
                answer = await service.off_loop(_accepted, service, signal, body, encoding, content_encoding)
            except ClientDisconnect:  # gone before its body was in (or closed at its deadline): no one to answer
                return Response(status_code=400)
            except UnsupportedMedia as error:
                return _status(415, code_pb2.INVALID_ARGUMENT, str(error), encoding)
            except TooLarge as error:
                service.refused("too_large")
                return _status(413, code_pb2.RESOURCE_EXHAUSTED, str(error), encoding)
            except MalformedRequest as error:
                return _status(400, code_pb2.INVALID_ARGUMENT, str(error), encoding)
            except QueueFull as error:
                service.refused("busy")
                response = _status(503, code_pb2.UNAVAILABLE, f"busy: {error}", encoding)
                response.headers["Retry-After"] = str(RETRY_AFTER_S)
                return response
            except Exception:  # a bug in otelguard: counted and logged, never a crashed receiver
                service.containment.record_and_maybe_raise("service.receive")
                return _status(500, code_pb2.INTERNAL, "internal error in otelguard (logged)", encoding)
            return _message(200, answer, encoding)

        return receive

    async def verdicts(request: Request) -> Response:
        """`GET /v1/verdicts?session=ID`: the session's recent verdicts, oldest first (the decision API)."""
        session = request.query_params.get("session", "")
        if not session or len(session) > MAX_SESSION_CHARS:
            return JSONResponse({"error": f"give ?session=ID (1 to {MAX_SESSION_CHARS} characters)"}, 400)
        return JSONResponse({"session": session, "paused": service.judge.engine.session_paused(session),
                             "verdicts": service.recent.of(session)}, headers={"Cache-Control": "no-store"})

    def pausing(pause: bool):
        async def change(request: Request) -> Response:
            """`POST /v1/sessions/ID/pause` (`/resume`): deliver nothing to the session's agents (again)."""
            session = request.path_params["session"]
            if not session or len(session) > MAX_SESSION_CHARS:
                return JSONResponse({"error": f"a session id is 1 to {MAX_SESSION_CHARS} characters"}, 400)
            engine = service.judge.engine
            if pause:
                engine.pause(session)
            else:
                engine.resume(session)
            return JSONResponse({"session": session, "paused": engine.session_paused(session)},
                                headers={"Cache-Control": "no-store"})

        return change

    async def hook(request: Request) -> Response:
        """`POST /v1/hook/<cli>`: a coding-agent CLI's hook input, answered as `otelguard hook <cli>`
        answers it (the same local path, run here: `hooks.decision.answer`), in the CLI's own JSON."""
        cli = request.path_params["cli"]
        if cli not in HOOK_CLIS:
            return JSONResponse({"error": f"unknown CLI {cli[:40]!r}: one of {', '.join(HOOK_CLIS)}"}, 404)
        try:
            body = await _body(request, service.options.max_request_bytes)
        except TooLarge as error:
            service.refused("too_large")
            return JSONResponse({"error": str(error)}, 413)
        except ClientDisconnect:
            return Response(status_code=400)
        engine = service.judge.engine
        disabled = request.headers.get(DISABLE_HEADER, "") == "1"  # the CLI runs with OTELGUARD_DISABLE
        # SQLite and the engine: off the loop. A session paused here (POST /v1/sessions/ID/pause) is paused there.
        answer = await run_in_threadpool(answer_hook, cli, body,
                                         paused=lambda session: disabled or engine.session_paused(session))
        service.hook_calls.add(1, {"cli": cli})
        return Response(answer, media_type=JSON)

    app = Starlette(routes=[
        *(Route(f"/v1/{signal}", endpoint(signal), methods=["POST"]) for signal in ("traces", "logs", "metrics")),
        Route("/v1/verdicts", verdicts, methods=["GET"]),
        Route("/v1/sessions/{session:path}/pause", pausing(True), methods=["POST"]),
        Route("/v1/sessions/{session:path}/resume", pausing(False), methods=["POST"]),
        Route("/v1/hook/{cli}", hook, methods=["POST"]),
        *(page_routes(service) if service.page is not None else ()),
    ])
    page = service.page is not None  # the page's cookie opens its data; the page and its login decide themselves
    return _guarded(app, service.options.token, service.refused, cookie_paths=(PAGE_DATA,) if page else (),
                    open_paths=PAGE_OPEN if page else frozenset())


def metrics_app(registry: CollectorRegistry, token: str | None = None,
                refused: Callable[[str], None] | None = None) -> Starlette:
    """The service's registry at `/metrics` itself, in the format the scraper's Accept header asks
    for (Prometheus text or OpenMetrics, prometheus_client's encoders). A route, not a mount: a mount
    answers `/metrics` with a redirect to `/metrics/`, which scrapers and plain curl do not follow."""
    async def metrics(request: Request) -> Response:
        encode, content_type = choose_encoder(request.headers.get("accept", ""))
        return Response(encode(registry), headers={"Content-Type": content_type})

    return _guarded(Starlette(routes=[Route("/metrics", metrics, methods=["GET"])]), token, refused)


def _guarded(app: Starlette, token: str | None, refused: Callable[[str], None] | None, *,
             cookie_paths: tuple[str, ...] = (), open_paths: frozenset[str] = frozenset()) -> Starlette:
    if token is not None:
        app.add_middleware(RequireToken, token=token, on_refused=refused, cookie_paths=cookie_paths,
                           open_paths=open_paths)
    return app


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


async def _body(request: Request, limit: int) -> bytes:
    """The body as sent, read no further than `limit` bytes."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > limit:
        raise TooLarge(f"{length} bytes sent; at most {limit} taken")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise TooLarge(f"more than {limit} bytes sent; at most {limit} taken")
    return bytes(body)


def _content_encoding(request: Request) -> str:
    """"gzip" or "" (none); another encoding is `UnsupportedMedia`."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return ""
    if encoding != "gzip":
        raise UnsupportedMedia(f"content encoding {encoding!r}: send gzip or none")
    return encoding


def _accepted(service: Intake, signal: str, body: bytes, encoding: str, content_encoding: str) -> Message:
    """On a decoding thread: the body decompressed, decoded and accepted (`Intake.accept`)."""
    limit = service.options.max_request_bytes
    return service.accept(signal, gunzip(body, limit) if content_encoding else body, encoding)


def gunzip(body: bytes, limit: int) -> bytes:
    """`body` (one to `MAX_GZIP_MEMBERS` gzip members) decompressed, never more than `limit` bytes of
    it: past that, `TooLarge` (a small bomb costs no more than the limit). zlib is handed the body a
    chunk at a time, so each member's end leaves at most a chunk over: the work is linear in the
    body's size, however its members are cut. Not gzip: `MalformedRequest`."""
    out = bytearray()
    view = memoryview(body)
    at = 0
    try:
        for _ in range(MAX_GZIP_MEMBERS):
            decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
            while not decompressor.eof:
                chunk = view[at:at + _GZIP_CHUNK]
                if not chunk:
                    raise MalformedRequest("not valid gzip data: cut short")
                out += decompressor.decompress(chunk, limit + 1 - len(out))
                if len(out) > limit:
                    raise TooLarge(f"more than {limit} bytes once decompressed; at most {limit} taken")
                at += len(chunk) - len(decompressor.unused_data)
            # gzip allows trailing zero padding (a member starts with 0x1f: looked for only after a zero)
            if at == len(body) or (body[at] == 0 and body.count(0, at) == len(body) - at):
                return bytes(out)
    except zlib.error as error:
        raise MalformedRequest(f"not valid gzip data: {error}") from None
    raise MalformedRequest(f"more than {MAX_GZIP_MEMBERS} gzip members")


def _status(http_status: int, code: int, message: str, encoding: str) -> Response:
    return _message(http_status, status_pb2.Status(code=code, message=message), encoding)


def _message(http_status: int, message: Message, encoding: str) -> Response:
    if encoding == JSON:
        return Response(MessageToJson(message, indent=None), http_status, media_type=JSON)
    return Response(message.SerializeToString(), http_status, media_type=PROTOBUF)
