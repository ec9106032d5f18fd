"""Who may talk to `otelguard serve`: a bearer token on every route (HTTP and gRPC), and TLS files.

`--token-file F` holds one token; each HTTP request must carry `Authorization: Bearer <token>` and
each gRPC call the same `authorization` metadata (what OTLP exporters send with
`OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer <token>"`). A request without it is answered 401
(gRPC `UNAUTHENTICATED`) before its body is read. Tokens are compared in constant time.

The live page (`service.page`) is for a browser, which cannot send a header: its login form posts the
token once, and the answer sets a cookie (`PAGE_COOKIE`: HttpOnly, SameSite=Strict, Secure under TLS,
Path=/) holding not the token but `page_cookie_value(token)`, an HMAC of it that opens only the page and
its data (`cookie_paths`), never a receiver, the API or the hook route.
"""

from __future__ import annotations

import hashlib
import hmac
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import grpc

AUTHORIZATION = "authorization"
PAGE_COOKIE = "otelguard_page"
UNAUTHENTICATED = "unauthenticated"  # what a refusal is counted as
_SCHEME = "bearer "


class AccessError(Exception):
    """A token or TLS file that cannot be used (reported in one line at start)."""


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A PEM certificate chain and its private key, served on HTTP and gRPC alike."""

    cert: str
    key: str

    def check(self) -> None:
        """Raises `AccessError` when the pair cannot be loaded (missing, unreadable, not matching)."""
        try:
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(self.cert, self.key)
        except (OSError, ssl.SSLError) as error:
            raise AccessError(f"--tls-cert {self.cert} / --tls-key {self.key}: {error}") from None

    def grpc_credentials(self) -> grpc.ServerCredentials:
        with open(self.key, "rb") as key, open(self.cert, "rb") as cert:
            return grpc.ssl_server_credentials([(key.read(), cert.read())])


def read_token(path: str) -> str:
    """The token in `path` (surrounding whitespace ignored); raises `AccessError` if unreadable or empty."""
    try:
        with open(path, encoding="utf-8") as file:
            token = file.read().strip()
    except (OSError, UnicodeDecodeError) as error:
        raise AccessError(f"--token-file {path}: {getattr(error, 'strerror', None) or error}") from None
    problem = token_problem(token)
    if problem:
        raise AccessError(f"--token-file {path}: {problem}")
    return token


def token_problem(token: str) -> str:
    """Why `token` can never authenticate a request ('' when it can): a header carries one word of
    printable ASCII (a non-ASCII token would be compared as bytes no client sends)."""
    if not token:
        return "expected one token, got nothing"
    if any(character.isspace() for character in token):
        return "expected one token (no spaces), got several words"
    if not all("!" <= character <= "~" for character in token):
        return "the token must be printable ASCII (what an Authorization header carries)"
    return ""


def authorized(header: str | bytes | None, token: str) -> bool:
    """Whether an `Authorization` value is `Bearer <token>` (the scheme in any case)."""
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    if not header or header[:len(_SCHEME)].lower() != _SCHEME:
        return False
    return token_matches(header[len(_SCHEME):].strip(), token)


def token_matches(given: str, token: str) -> bool:
    """Whether `given` is the token, compared in constant time."""
    return hmac.compare_digest(given.encode("utf-8", "replace"), token.encode())


def page_cookie_value(token: str) -> str:
    """What the page's cookie holds: derived from the token (a cookie that leaks does not give the
    token, which would open the receivers), the same for every login while the token is."""
    return hmac.new(token.encode(), b"otelguard live page", hashlib.sha256).hexdigest()


def cookie_authorized(header: str | bytes | None, token: str) -> bool:
    """Whether a `Cookie` header holds the page's cookie for `token`."""
    if isinstance(header, bytes):
        header = header.decode("latin-1")
    if not header:
        return False
    expected = page_cookie_value(token).encode()
    for part in header.split(";"):
        name, _, value = part.strip().partition("=")
        if name == PAGE_COOKIE and hmac.compare_digest(value.strip().encode(), expected):
            return True
    return False


def signed_in(authorization: str | bytes | None, cookie: str | bytes | None, token: str) -> bool:
    """Whether a request's `Authorization` or `Cookie` header opens what the page's cookie opens."""
    return authorized(authorization, token) or cookie_authorized(cookie, token)


class RequireToken:
    """ASGI middleware: an HTTP request without the bearer token is answered 401, its body unread.
    On `cookie_paths` (path prefixes: the live page's data) the page's cookie is taken as well;
    `open_paths` (exact: the page itself and its login form) pass, and decide for themselves."""

    def __init__(self, app: Any, token: str, on_refused: Callable[[str], None] | None = None, *,
                 cookie_paths: tuple[str, ...] = (), open_paths: frozenset[str] = frozenset()):
        self.app = app
        self.token = token
        self.on_refused = on_refused
        self.cookie_paths = cookie_paths
        self.open_paths = open_paths

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] not in self.open_paths:
            headers: dict[bytes, bytes] = {}
            for name, value in scope["headers"]:
                headers.setdefault(name, value)  # a header given twice counts as its first, as Starlette reads it
            if self.cookie_paths and scope["path"].startswith(self.cookie_paths):
                allowed = signed_in(headers.get(b"authorization"), headers.get(b"cookie"), self.token)
            else:
                allowed = authorized(headers.get(b"authorization"), self.token)
            if not allowed:
                if self.on_refused is not None:
                    self.on_refused(UNAUTHENTICATED)
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"a bearer token is required\n"})
                return
        await self.app(scope, receive, send)


class TokenInterceptor(grpc.aio.ServerInterceptor):
    """gRPC: a call without the bearer token in its `authorization` metadata ends `UNAUTHENTICATED`."""

    def __init__(self, token: str, on_refused: Callable[[str], None]):
        self.token = token

        async def deny(request: Any, context: grpc.aio.ServicerContext) -> None:
            on_refused(UNAUTHENTICATED)
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "a bearer token is required")

        self._deny = grpc.unary_unary_rpc_method_handler(deny)

    async def intercept_service(self, continuation: Any, details: grpc.HandlerCallDetails) -> Any:
        header = next((value for name, value in details.invocation_metadata or () if name == AUTHORIZATION), None)
        if authorized(header, self.token):
            return await continuation(details)
        return self._deny
