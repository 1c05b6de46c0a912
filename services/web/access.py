"""Who may read what on the dashboard: the bearer token of an HTTP request, checked by the same Gate
as gRPC calls, and the refusals the web answers.

A request carries its token as `Authorization: Bearer <token>` or in the `trainledger_token`
cookie (set by POST /login, HttpOnly, SameSite=Strict). Each endpoint is authenticated and
authorized as the gRPC method it mirrors (METHODS), so one table of roles and scopes
(services.runtime.auth) decides for both: the Gate's `authenticate` checks the token and its role for the
method, its `authorize` checks a scoped token's account against the run or account asked about
(a request-like object carrying `run_id` or `account`). Without authentication (no token issued,
no --auth) every request is let in, as gRPC lets every call in.

Every refusal is a WebError: an HTTP status, a stable reason and a message, plus fields such as
the parameter at fault; services.web.app turns it into `{"error": {...}}` for the API and an error
page (or a redirect to /login) for pages. Ledger errors map by kind (`from_ledger`).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from starlette.requests import HTTPConnection

from ledger.domain.errors import (
    CapExceeded,
    Conflict,
    Contended,
    Exhausted,
    Invalid,
    LedgerError,
    NotFound,
    PermissionDenied,
    Refused,
    Unauthenticated,
    Unavailable,
)
from ledger.domain.reasons import Reason
from services.runtime.auth import Gate, Identity
from services.runtime.logs import CALLER, http_refused

__all__ = [
    "TOKEN_COOKIE",
    "METHODS",
    "WebError",
    "from_ledger",
    "bearer",
    "Access",
    "Subject",
    "invalid",
]

TOKEN_COOKIE = "trainledger_token"

# The gRPC method each endpoint is authorized as.
_RUNS, _SPEND = "/trainledger.v1.Runs/", "/trainledger.v1.Spend/"
METHODS: dict[str, str] = {
    "runs": _RUNS + "ListRuns",
    "run": _RUNS + "GetRunState",
    "spend": _SPEND + "ListReservations",
    "account": _SPEND + "GetAccount",
    "registry": "/trainledger.v1.Registry/ListVersions",
    "events": "/trainledger.v1.Events/ReadEvents",
}

# HTTP status by ledger error kind, most specific first (as services.grpc.errors maps them to gRPC).
_STATUS_BY_KIND: tuple[tuple[type[LedgerError], int], ...] = (
    (Invalid, 400),
    (NotFound, 404),
    (Conflict, 409),
    (Refused, 409),
    (Contended, 409),
    (CapExceeded, 429),
    (Exhausted, 429),
    (Unavailable, 503),
    (Unauthenticated, 401),
    (PermissionDenied, 403),
)


class WebError(Exception):
    """A refusal of an HTTP request: status, reason, message and extra fields for the body."""

    def __init__(self, status: int, reason: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.status, self.reason, self.message, self.fields = status, reason, message, fields

    def body(self) -> dict[str, Any]:
        return {"error": {"reason": self.reason, "message": self.message, **self.fields}}


def invalid(field: str, message: str) -> WebError:
    """A bad query parameter: 400 INVALID_PARAMETER naming it."""
    return WebError(400, "INVALID_PARAMETER", message, field=field)


def from_ledger(error: LedgerError) -> WebError:
    """The WebError of a ledger refusal: its status by kind. A bad value is INVALID_PARAMETER
    naming its field (the ledger's own reason beside it); other refusals keep their reason."""
    status = next((code for kind, code in _STATUS_BY_KIND if isinstance(error, kind)), 500)
    metadata = {key: value for key, value in error.metadata.items() if isinstance(value, str | int | float)}
    if status == 400:
        return WebError(
            400, "INVALID_PARAMETER", error.message, field=str(metadata.get("field", "")), detail=str(error.reason)
        )
    if status == 500:
        return WebError(500, Reason.INTERNAL, "internal error")
    return WebError(status, str(error.reason), error.message, **{k: v for k, v in metadata.items() if k != "reason"})


def bearer(connection: HTTPConnection) -> str:
    """The request's `authorization` value: its header, else `Bearer <cookie>`; empty when neither."""
    header = connection.headers.get("authorization", "")
    if header:
        return header
    cookie = connection.cookies.get(TOKEN_COOKIE, "")
    return f"Bearer {cookie}" if cookie else ""


# The request being identified, (HTTP method, path): for the log line of a refusal.
_REQUEST: ContextVar[tuple[str, str]] = ContextVar("web_request", default=("GET", ""))


def _logged(refusal: WebError) -> WebError:
    """`refusal`, logged as a refused call is (services.runtime.logs.http_refused)."""
    if refusal.status in (401, 403):
        http_refused(*_REQUEST.get(), refusal.status, refusal.reason)
    return refusal


@dataclass(frozen=True)
class Subject:
    """What a scoped token's request is about, shaped like the gRPC request the Gate reads."""

    run_id: str = ""
    account: str = ""


class Access:
    """The Gate as the web uses it."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    async def identify(self, connection: HTTPConnection, endpoint: str) -> Identity:
        """The caller, authenticated as the method `endpoint` mirrors. Raises WebError (401, 403)."""
        metadata: Mapping[str, str] = {"authorization": bearer(connection)}
        CALLER.set(None)
        _REQUEST.set((str(connection.scope.get("method", "GET")), connection.url.path))
        try:
            return await self.gate.authenticate(METHODS[endpoint], metadata)
        except LedgerError as error:
            raise _logged(from_ledger(error)) from None

    async def authorize(self, endpoint: str, identity: Identity, subject: Subject) -> None:
        """Raises WebError 403 (OUTSIDE_SCOPE) when a scoped token may not read `subject`."""
        try:
            await self.gate.authorize(METHODS[endpoint], identity, subject)
        except LedgerError as error:
            raise _logged(from_ledger(error)) from None

    async def within(self, identity: Identity, account: str) -> bool:
        """Whether the caller may read `account` (always, without a scoped token)."""
        token = identity.token
        if token is None or not token.account:
            return True
        edge = self.gate.edge
        return bool(account) and await edge.call(edge.ledger.account_within, account, token.account)

    @staticmethod
    def scope(identity: Identity) -> str:
        """The account a scoped token is limited to; empty for an unscoped one (or none)."""
        token = identity.token
        return token.account if token is not None else ""

    async def required(self) -> bool:
        """Whether requests need a token (authentication on)."""
        return self.gate.required or bool(await self.gate.book())
