"""The live page of `otelguard serve`: `GET /` shows the HTML report's page (`otelguard.report`) for
the sessions the service holds, redrawn as they change.

`LivePage.observe` sees every span the judge judged, on the judge's thread, and puts it into a
`report.live.LiveReport` as `analyze --html` puts the analyzer's into its store (the same conversion,
`report.steps`): that store is the page's own, apart from the guard's state, bounded, and
only ever held by the judge for one step's bookkeeping (see its doc): a page request never makes
the judge wait for more than a copy of references. Sessions it forgets are counted in
`otelguard_state_evictions_total{otelguard_state="page_sessions"}`.

Routes (`routes`), read-only: `GET /` the page (or, with a token and no cookie, the login form),
`POST /login` the form's token checked (a cookie set, see `access`), `GET /live/data` the index as
JSON, `GET /live/runs/N` a run as JSON. The page and its data answer with the report's
Content-Security-Policy as a header too, `no-store`, `nosniff`, no referrer and no framing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import parse_qs

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ..report.steps import report_step
from ..engine import Judged
from ..model.records import SpanKind, SpanView
from ..reactions.metrics import GuardMetrics
from ..report.html import content_security_policy, live_page, login_page, new_nonce
from ..report.live import LIVE_SESSIONS, LiveReport
from .access import PAGE_COOKIE, page_cookie_value, signed_in, token_matches
from .sessions import session_of_judged

if TYPE_CHECKING:
    from .intake import Intake

PAGE = "/"
LOGIN = "/login"
DATA = "/live/data"
RUN = "/live/runs/"
DATA_PREFIX = "/live/"  # what the page's cookie opens, besides the page
OPEN_PATHS = frozenset({PAGE, LOGIN})  # they answer a request without a token themselves (the login form)
POLL_MS = 2000
MAX_LOGIN_BYTES = 4096  # a login form's body: the token and its name


class LivePage:
    """The page's store, filled from the judge (`observe`)."""

    def __init__(self, metrics: GuardMetrics, max_sessions: int = LIVE_SESSIONS) -> None:
        self.report = LiveReport(max_sessions=max_sessions,
                                 on_evict=lambda reason, count: metrics.evicted("page_sessions", reason, count))
        metrics.evicted("page_sessions", "capacity", 0)
        metrics.evicted("page_sessions", "bytes", 0)

    def observe(self, view: SpanView, judged: Judged, service: str | None) -> None:
        """One judged span (the judge's thread): a model or tool call is a step of its agent's run; an
        agent span's end ends one of its runs."""
        kind = judged.classification.kind
        agent = judged.agent
        if kind is SpanKind.AGENT:
            self.report.run_ended(agent.key, agent.name, agent.session)
        elif kind in (SpanKind.MODEL, SpanKind.TOOL):
            self.report.add_step(agent.key, agent.name, report_step(view, judged, kind),
                                 session_of_judged(judged))


def routes(service: Intake) -> list[Route]:
    page = service.page
    assert page is not None
    token = service.options.token
    secure = service.options.tls is not None
    engine = service.judge.engine

    async def show(request: Request) -> Response:
        nonce = new_nonce()
        headers = request.headers
        if token is not None and not signed_in(headers.get("authorization"), headers.get("cookie"), token):
            return _html(login_page(nonce, LOGIN), content_security_policy(nonce, form=True), 401)
        return _html(live_page(nonce, DATA, RUN, poll_ms=POLL_MS), content_security_policy(nonce, connect=True))

    async def login(request: Request) -> Response:
        if token is None:
            return RedirectResponse(PAGE, 303)
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_LOGIN_BYTES:
                    service.refused("too_large")
                    return Response("a login form is smaller than this\n", 413, media_type="text/plain")
        except ClientDisconnect:
            return Response(status_code=400)
        # (the body's bound bounds its fields: a form of several fields is read, not refused)
        given = parse_qs(body.decode("utf-8", "replace")).get("token", [""])[0].strip()
        if not token_matches(given, token):
            service.refused("unauthenticated")
            nonce = new_nonce()
            return _html(login_page(nonce, LOGIN, failed=True), content_security_policy(nonce, form=True), 401)
        answer = RedirectResponse(PAGE, 303, headers=_HEADERS)
        answer.set_cookie(PAGE_COOKIE, page_cookie_value(token), path="/", httponly=True, samesite="strict",
                          secure=secure)
        return answer

    def paused(session: str) -> bool:
        return engine.session_paused(session)

    async def data(request: Request) -> Response:
        return _json(await run_in_threadpool(page.report.index, paused))

    async def run(request: Request) -> Response:
        text = await run_in_threadpool(page.report.run, request.path_params["number"], paused)
        if text is None:
            return _json('{"error":"no such run held"}', 404)
        return _json(text)

    return [Route(PAGE, show, methods=["GET"]), Route(LOGIN, login, methods=["POST"]),
            Route(DATA, data, methods=["GET"]), Route(RUN + "{number:int}", run, methods=["GET"])]


_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY"}


def _html(text: str, csp: str, status: int = 200) -> Response:
    # frame-ancestors only works as a header (a page's meta policy cannot say it)
    return HTMLResponse(text, status, headers={**_HEADERS, "Content-Security-Policy": csp + "; frame-ancestors 'none'"})


def _json(text: str, status: int = 200) -> Response:
    return Response(text, status, media_type="application/json",
                    headers={**_HEADERS, "Content-Security-Policy": "default-src 'none'; frame-ancestors 'none'"})
