"""What operators watch a server with, over HTTP: /metrics (Prometheus' text format,
services.runtime.metrics), /healthz (the process answers) and /readyz (caught up, services.runtime.readiness).

On the dashboard's port /metrics is a ledger-wide read, authorized as ListRuns is (operators,
auditors, admins; a token scoped to an account is refused) once authentication is on. On an
address of its own (`serve --metrics HOST:PORT`, which works with --no-http) the three routes are
all that is served, without authentication: bind it where only the scraper reaches. /healthz and
/readyz are never authenticated, as gRPC health is not.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ledger.domain.reasons import Reason
from services.runtime.edge import Edge
from services.runtime.metrics import CONTENT_TYPE, HttpMetrics, Metrics
from services.runtime.readiness import Readiness
from services.web.access import Access, Subject, WebError

__all__ = ["Ops"]


class Ops:
    """The metrics and readiness of one server, and the routes that show them."""

    def __init__(self, edge: Edge, metrics: Metrics | None, readiness: Readiness, access: Access) -> None:
        self.edge, self.metrics, self.readiness, self.access = edge, metrics, readiness, access

    def routes(self, *, protected: bool) -> list[Route]:
        async def metrics(request: Request) -> Response:
            if protected:
                try:  # A scraper is answered 401 or 403, never sent to the login page.
                    identity = await self.access.identify(request, "runs")
                    await self.access.authorize("runs", identity, Subject())
                    scope = identity.token.account if identity.token is not None else ""
                    if scope:  # A run list narrows to a scope; the metrics are the whole ledger's.
                        if self.metrics is not None:
                            self.metrics.auth_refusals.labels(Reason.OUTSIDE_SCOPE.value).inc()
                        message = f"metrics cover the whole ledger: outside the token's scope (account {scope})"
                        raise WebError(403, Reason.OUTSIDE_SCOPE.value, message)
                except WebError as error:
                    return JSONResponse(error.body(), error.status)
            if self.metrics is None:
                raise WebError(404, "NOT_FOUND", "this server keeps no metrics")
            body = await self.edge.call(self.metrics.exposition)
            return Response(body, media_type=CONTENT_TYPE, headers={"cache-control": "no-store"})

        async def healthz(request: Request) -> Response:
            return JSONResponse({"alive": True}, headers={"cache-control": "no-store"})

        async def readyz(request: Request) -> Response:
            ready, why = self.readiness.ready, self.readiness.why
            status = 200 if ready else 503
            return JSONResponse({"ready": ready, "reason": why}, status, headers={"cache-control": "no-store"})

        return [Route("/metrics", metrics), Route("/healthz", healthz), Route("/readyz", readyz)]

    def count_requests(self, app: Starlette) -> None:
        """Count `app`'s requests by route and status (the outermost middleware)."""
        if self.metrics is not None:
            app.add_middleware(HttpMetrics, metrics=self.metrics)

    def app(self) -> Any:
        """The three routes alone, unauthenticated: for an address of their own."""
        app = Starlette(routes=self.routes(protected=False))
        self.count_requests(app)
        return app
