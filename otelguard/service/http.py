"""The OTLP/HTTP receiver and the metrics endpoint, as Starlette apps (served by uvicorn).

`/v1/traces`, `/v1/logs` and `/v1/metrics` take `application/x-protobuf` or `application/json`
bodies, plain or gzip. Answers, as the OTLP/HTTP specification says: 200 with the signal's
`Export*ServiceResponse` in the request's encoding (a partial success names what was rejected);
400 with a `google.rpc.Status` for a body that cannot be decoded (nothing of it is kept); 415 for
another content type or encoding; 503 with `Retry-After` while the judge's queue is full; 404 and
405 (Starlette's own) for other paths and methods.
"""

from __future__ import annotations

import gzip
import zlib
from typing import TYPE_CHECKING

from google.protobuf.json_format import MessageToJson
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from .received import MalformedRequest
from .judge import QueueFull

if TYPE_CHECKING:
    from .server import GuardService

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
RETRY_AFTER_S = 1


class UnsupportedMedia(Exception):
    """A content type or encoding the receiver does not speak (answered with 415)."""


def receiver_app(service: GuardService) -> Starlette:
    """The OTLP/HTTP receiver's routes; issue-23 routes (decision API, hooks) join this app."""

    def endpoint(signal: str):
        async def receive(request: Request) -> Response:
            encoding = JSON if _media_type(request) == JSON else PROTOBUF
            try:
                if _media_type(request) not in (PROTOBUF, JSON):
                    raise UnsupportedMedia(f"content type {request.headers.get('content-type')!r}: "
                                           f"send {PROTOBUF} or {JSON}")
                body = _decoded_body(await request.body(), request)
                answer = service.accept(signal, body, encoding)
            except UnsupportedMedia as error:
                return _status(415, code_pb2.INVALID_ARGUMENT, str(error), encoding)
            except MalformedRequest as error:
                return _status(400, code_pb2.INVALID_ARGUMENT, str(error), encoding)
            except QueueFull as error:
                response = _status(503, code_pb2.UNAVAILABLE, f"busy: {error}", encoding)
                response.headers["Retry-After"] = str(RETRY_AFTER_S)
                return response
            except Exception:  # a bug in otelguard: counted and logged, never a crashed receiver
                service.containment.record_and_maybe_raise("service.receive")
                return _status(500, code_pb2.INTERNAL, "internal error in otelguard (logged)", encoding)
            return _message(200, answer, encoding)

        return receive

    return Starlette(routes=[
        Route(f"/v1/{signal}", endpoint(signal), methods=["POST"]) for signal in ("traces", "logs", "metrics")
    ])


def metrics_app(registry: object) -> Starlette:
    """Prometheus text at `/metrics` (prometheus_client's own ASGI app over the service's registry)."""
    from prometheus_client import make_asgi_app

    return Starlette(routes=[Mount("/metrics", make_asgi_app(registry))])  # type: ignore[arg-type]


def _media_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";", 1)[0].strip().lower()


def _decoded_body(body: bytes, request: Request) -> bytes:
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding != "gzip":
        raise UnsupportedMedia(f"content encoding {encoding!r}: send gzip or none")
    try:
        return gzip.decompress(body)
    except (OSError, EOFError, zlib.error) as error:
        raise MalformedRequest(f"not valid gzip data: {error}") from None


def _status(http_status: int, code: int, message: str, encoding: str) -> Response:
    return _message(http_status, status_pb2.Status(code=code, message=message), encoding)


def _message(http_status: int, message: Message, encoding: str) -> Response:
    if encoding == JSON:
        return Response(MessageToJson(message, indent=None), http_status, media_type=JSON)
    return Response(message.SerializeToString(), http_status, media_type=PROTOBUF)
