"""The dashboard's ASGI app: `create_app(edge, gate)` is a Starlette app over the server's Edge and
Gate, served by uvicorn on the server's own event loop (services.server), so the pages, the JSON
API and the live streams read the same views as gRPC, through the same pool of worker threads,
authorized by the same table of roles.

Routes: the pages (services.web.pages, .run_page), the JSON API under /api/ (services.web.api,
.events), the server-sent events /api/runs/{run}/live and /api/live (services.web.live,
.live_runs), POST /login and /logout (services.web.login), and the static files under /static/
(services.web.static: the charts and the styles).

Errors: a WebError (or a ledger refusal) is `{"error": {"reason", "message", ...}}` with its status
under /api/; a page shows it, except 401, which redirects to /login. Anything else is a 500 with a
generic message, logged: bad input is never a 500. A client that leaves in the middle of its
request is no error. Every request counts as its connection's client for the edge's share of
worker threads (as a gRPC connection does), and responses carry `x-content-type-options: nosniff`,
`x-frame-options: DENY` and `referrer-policy: same-origin`. A request whose Host header is not
one the dashboard serves (services.web.hosts) is a 421 HOST_NOT_ALLOWED before anything else.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ledger.domain.errors import LedgerError
from ledger.domain.reasons import Reason
from services.runtime.auth import Gate
from services.runtime.edge import CLIENT, Edge
from services.web import api, compare, documents, events, login, pages, run_page
from services.web.access import Access, WebError, from_ledger, invalid
from services.web.hosts import AllowedHosts
from services.web.live import RunStreams, lineage_within_chunks, until_refused
from services.web.live_runs import LiveRuns
from services.web.markup import error_page

__all__ = ["create_app", "STATIC_DIR"]

log = logging.getLogger("trainledger.services.web")

STATIC_DIR = Path(__file__).parent / "static"
SSE_HEADERS = {"cache-control": "no-store", "x-accel-buffering": "no"}
_SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]


class _Connection:
    """Pure ASGI middleware: a request for a host not served is refused, the request's connection
    is its client for the edge's thread share, and every response gets the security headers."""

    def __init__(self, app: ASGIApp, hosts: AllowedHosts) -> None:
        self.app, self.hosts = app, hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", ()), *_SECURITY_HEADERS]
            await send(message)

        host = next((value for name, value in scope["headers"] if name == b"host"), b"")
        server = scope.get("server")
        if not self.hosts.allows(host.decode("latin-1"), str(server[0]) if server else ""):
            refusal = _host_refusal(host)
            await _respond(Request(scope), refusal)(scope, receive, sending)
            return
        client = scope.get("client")
        CLIENT.set(f"http:{client[0]}:{client[1]}" if client else "http")
        await self.app(scope, receive, sending)


OPS_PATHS = frozenset({"/metrics", "/healthz", "/readyz"})  # Read by scrapers and probes, not people.


def _is_api(request: Request) -> bool:
    """Whether `request` is answered JSON, never a page: the API and the operators' routes."""
    return request.url.path.startswith("/api/") or request.url.path in OPS_PATHS


def _host_refusal(host: bytes) -> WebError:
    """421 HOST_NOT_ALLOWED, saying how to allow the name asked for (when it is one: echoed only
    then, and at most a DNS name's length)."""
    name = host.decode("latin-1").rsplit(":", 1)[0] if host.count(b":") <= 1 else ""
    name = name if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}", name) else "NAME"
    return WebError(
        421,
        "HOST_NOT_ALLOWED",
        f"this server does not answer for that host name: add it with `trainledger serve --http-allowed-host {name}`"
        " (or TRAINLEDGER_HTTP_ALLOWED_HOSTS)",
    )


def _respond(request: Request, error: WebError) -> Response:
    if _is_api(request):
        return documents.json_response(error.body(), error.status)
    if error.status == 401:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
    return error_page(error)


async def _web_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, WebError)
    return _respond(request, error)


async def _ledger_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, LedgerError)
    refusal = from_ledger(error)
    if refusal.status == 500:
        log.error("unexpected ledger error serving %s", request.url.path, exc_info=error)
    return _respond(request, refusal)


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    reason = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED"}.get(error.status_code, "BAD_REQUEST")
    return _respond(request, WebError(error.status_code, reason, str(error.detail)))


async def _disconnected(request: Request, error: Exception) -> Response:
    return Response(status_code=400)  # Nobody reads it: the client has gone.


async def _unexpected(request: Request, error: Exception) -> Response:
    log.error("unexpected error serving %s", request.url.path, exc_info=error)
    return _respond(request, WebError(500, Reason.INTERNAL, "internal error"))


def _last_event_id(request: Request) -> int:
    value = request.headers.get("last-event-id", "") or request.query_params.get("last_event_id", "")
    if not value:
        return 0
    if not re.fullmatch(r"[0-9]{1,18}", value):
        raise invalid("last_event_id", "Last-Event-ID must be an event position")
    return int(value)


def _caller(request: Request, principal: str) -> str:
    host = request.client.host if request.client else "unknown"
    return f"{principal}@{host}"


async def run_live(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "run")
    last_id = _last_event_id(request)
    run_id = await api.run_of(request, identity)
    key = _caller(request, identity.principal("anonymous"))
    web.streams.check(key)  # A full server is a 429 before the stream starts.
    scope = identity.token.account if identity.token is not None else ""
    followed = lineage_within_chunks(web.streams.follow(run_id, key, last_id, scope or ""), web.edge, scope or "")
    chunks = until_refused(followed, web.access.gate, identity)
    return StreamingResponse(chunks, media_type="text/event-stream", headers=SSE_HEADERS)


async def live(request: Request) -> Response:
    web = api.web_of(request)
    identity = await api.identify(request, "runs")
    key = _caller(request, identity.principal("anonymous"))
    web.live.check(key)
    chunks = until_refused(web.live.follow(key, web.access.scope(identity)), web.access.gate, identity)
    return StreamingResponse(chunks, media_type="text/event-stream", headers=SSE_HEADERS)


def create_app(edge: Edge, gate: Gate, hosts: AllowedHosts | None = None, ops: Any = None) -> Starlette:
    """The dashboard over `edge` and `gate`, answering `hosts` (default: the loopback names), with
    /metrics, /healthz and /readyz when given `ops` (services.web.ops). Create it on the server's
    event loop."""
    routes: list[Any] = [
        Route("/", pages.runs),
        Route("/runs/{run:path}", run_page.run),
        Route("/compare", compare.page),
        Route("/accounts", pages.accounts),
        Route("/registry", pages.registry),
        Route("/registry/{family:path}", pages.family),
        Route("/events", pages.events),
        Route("/login", login.login, methods=["GET"]),
        Route("/login", login.login_post, methods=["POST"]),
        Route("/logout", login.logout, methods=["GET", "POST"]),
        Route("/api/runs", api.list_runs),
        Route("/api/runs/{run}/chart", api.get_chart),
        Route("/api/runs/{run}/spend", api.get_spend),
        Route("/api/runs/{run}/live", run_live),
        Route("/api/runs/{run}", api.get_run),
        Route("/api/compare", api.compare),
        Route("/api/compare/diff", compare.diff),
        Route("/api/accounts", api.accounts),
        Route("/api/registry", api.registry),
        Route("/api/registry/{family}", api.family),
        Route("/api/events", events.events),
        Route("/api/live", live),
        Mount("/static", StaticFiles(directory=STATIC_DIR, check_dir=False), name="static"),
    ]
    if ops is not None:
        routes[:0] = ops.routes(protected=True)
    app = Starlette(
        routes=routes,
        exception_handlers={
            WebError: _web_error,
            LedgerError: _ledger_error,
            HTTPException: _http_error,
            ClientDisconnect: _disconnected,
            Exception: _unexpected,
        },
    )
    app.state.web = api.Web(edge, Access(gate), RunStreams.of(edge), LiveRuns.of(edge))
    app.add_middleware(_Connection, hosts=hosts or AllowedHosts())
    if ops is not None:
        ops.count_requests(app)
    return app
