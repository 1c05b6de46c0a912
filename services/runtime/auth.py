"""Who may call what: bearer tokens checked against the ledger's token book, the one table of
roles per RPC, and the account scope of a token.

Authentication is on when the server is told so (`serve --auth`) or as soon as the ledger has
issued a token. Once a token has been issued it stays on, even when every token is later revoked
or expired: revoking the last admin token locks the ledger (a new admin token is made with
`trainledger tokens create` on the database), it never opens it. With authentication on:

- every call but health and reflection carries `authorization: Bearer tl_<id>_<secret>`;
  otherwise UNAUTHENTICATED (TOKEN_MISSING, TOKEN_INVALID, TOKEN_EXPIRED, TOKEN_REVOKED);
- the principal recorded on events is the token's. An `x-principal` header is ignored (and logged
  when it names someone else), so a client that always sends one keeps working;
- the token's role must be listed for the method in ROLES_BY_METHOD, else PERMISSION_DENIED
  (ROLE_NOT_ALLOWED);
- a token scoped to an account acts only on that account, the accounts under it and the runs
  whose accounts are under it (the ledger answers: Ledger.account_within, Ledger.run_within).
  Opening a run or an account that exists already acts on it, so its key or name must be new or
  under the scope too (Ledger.opening_within): refused as outside the scope otherwise.
  ListRuns answers a scoped token the runs under its scope only (NARROWED_BY_METHOD). Calls
  that are not about one account or run (the registry, the event log, providers' bills and
  their reconciliation) are ledger-wide: a scoped token is refused them (OUTSIDE_SCOPE). An unknown run or account is
  outside every scope, so a scoped token cannot learn whether it exists.

The book is read from storage at most once per CACHE_S per server, so a revocation written by any
process (another replica, `trainledger tokens revoke`) is refused everywhere within that time. A
token the book does not hold makes it read again (one read at a time, shared by every call waiting
for it, so unknown tokens cannot make the server read storage once per call): a token works as
soon as it is issued.

A call is authenticated when it starts; a stream is checked again while it is open (Gate.guard,
Gate.recheck): a write stream with each request, every stream at least every STREAM_RECHECK_S,
so a revoked or expired token ends its open streams (RecordSteps, WatchRun, ReadEvents, the
dashboard's live feeds) within STREAM_RECHECK_S + CACHE_S, with UNAUTHENTICATED and its reason;
so do the streams opened without a token once the first token turns authentication on.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ledger.domain.errors import PermissionDenied, Unauthenticated
from ledger.domain.reasons import Reason
from ledger.domain.tokens import Token, parse_bearer
from services.runtime.edge import Edge
from services.runtime.guard import guarded
from services.runtime.logs import CALLER

__all__ = [
    "is_loopback",
    "ROLES_BY_METHOD",
    "SCOPE_BY_METHOD",
    "OPENED_BY_METHOD",
    "OPEN_PREFIXES",
    "CACHE_S",
    "STREAM_RECHECK_S",
    "Identity",
    "Gate",
    "startup_notes",
]

log = logging.getLogger("trainledger.services")

CACHE_S = 1.0
# How often an open stream's token is checked again (services.runtime.guard): a revoked or expired token
# ends its streams within this and CACHE_S.
STREAM_RECHECK_S = 2.0
STREAM_SUBJECTS_MAX = 64
# The (subject, scope) pairs found inside a scope, kept (Gate.within): past this many, forgotten.
INSIDE_KEPT_MAX = 16_384
WARNED_MAX = 1_024
OPEN_PREFIXES = ("/grpc.health.v1.", "/grpc.reflection.")
_I = TypeVar("_I")

_T, _O, _AU, _AD = "trainer", "operator", "auditor", "admin"
_WRITERS = frozenset({_T, _O, _AD})
_RUN_READERS = frozenset({_T, _O, _AU, _AD})
_OPERATORS = frozenset({_O, _AD})
_AUDITORS = frozenset({_AU, _AD})
_WIDE_READERS = frozenset({_O, _AU, _AD})

# The one table: every RPC of every service and the roles that may call it.
ROLES_BY_METHOD: dict[str, frozenset[str]] = {
    "/trainledger.v1.Runs/OpenRun": _WRITERS,
    "/trainledger.v1.Runs/StartAttempt": _WRITERS,
    "/trainledger.v1.Runs/AppendSteps": _WRITERS,
    "/trainledger.v1.Runs/RecordSteps": _WRITERS,
    "/trainledger.v1.Runs/SaveCheckpoint": _WRITERS,
    "/trainledger.v1.Runs/FinishRun": _WRITERS,
    "/trainledger.v1.Runs/NoteSummary": _WRITERS,
    "/trainledger.v1.Runs/SetTags": _WRITERS,
    "/trainledger.v1.Runs/RecordReport": _WRITERS,
    "/trainledger.v1.Runs/GetRunState": _RUN_READERS,
    "/trainledger.v1.Runs/ListRuns": _WIDE_READERS,
    "/trainledger.v1.Runs/GetSeries": _RUN_READERS,
    "/trainledger.v1.Runs/WatchRun": _RUN_READERS,
    "/trainledger.v1.Runs/LinkSession": _WRITERS,
    "/trainledger.v1.Runs/GetMetrics": _RUN_READERS,
    "/trainledger.v1.Runs/ListCheckpoints": _RUN_READERS,
    "/trainledger.v1.Runs/BestCheckpoint": _RUN_READERS,
    "/trainledger.v1.Runs/RetractRun": _OPERATORS,
    "/trainledger.v1.Runs/RecordDataset": _WRITERS,
    "/trainledger.v1.Runs/PlanPrune": _RUN_READERS,
    "/trainledger.v1.Runs/DeleteCheckpoint": _WRITERS,
    "/trainledger.v1.Runs/Heartbeat": _WRITERS,
    "/trainledger.v1.Spend/OpenAccount": _OPERATORS,
    "/trainledger.v1.Spend/SetCap": _OPERATORS,
    "/trainledger.v1.Spend/Reserve": _WRITERS,
    "/trainledger.v1.Spend/ReservePlan": _WRITERS,
    "/trainledger.v1.Spend/Commit": _WRITERS,
    "/trainledger.v1.Spend/Release": _WRITERS,
    "/trainledger.v1.Spend/Charge": _WRITERS,
    "/trainledger.v1.Spend/GetAccount": _RUN_READERS,
    "/trainledger.v1.Spend/ListReservations": _RUN_READERS,
    "/trainledger.v1.Spend/RecordBilledUsage": _OPERATORS,
    "/trainledger.v1.Spend/Reconcile": _WIDE_READERS,
    "/trainledger.v1.Spend/AdjustToBill": _OPERATORS,
    "/trainledger.v1.Registry/Register": _OPERATORS,
    "/trainledger.v1.Registry/Promote": _OPERATORS,
    "/trainledger.v1.Registry/Rollback": _OPERATORS,
    "/trainledger.v1.Registry/MoveAlias": _OPERATORS,
    "/trainledger.v1.Registry/RetireFamily": _OPERATORS,
    "/trainledger.v1.Registry/GetCurrent": _WIDE_READERS,
    "/trainledger.v1.Registry/ListVersions": _WIDE_READERS,
    "/trainledger.v1.Registry/ListFamilies": _WIDE_READERS,
    "/trainledger.v1.Registry/ListProtectedStates": _OPERATORS,
    "/trainledger.v1.Events/ReadEvents": _AUDITORS,
    "/trainledger.v1.Events/GetHead": _AUDITORS,
    "/trainledger.v1.Events/Verify": _AUDITORS,
    "/trainledger.v1.Events/VerifyStream": _AUDITORS,
}

# What a scoped token's call is about: ("run", field) or ("account", field) of the request
# ("batch.run_id": a field of a field); a method not listed is ledger-wide. OpenRun and
# OpenAccount name the parent of what they open.
SCOPE_BY_METHOD: dict[str, tuple[str, str]] = {
    "/trainledger.v1.Runs/OpenRun": ("account", "parent_account"),
    "/trainledger.v1.Runs/StartAttempt": ("run", "run_id"),
    "/trainledger.v1.Runs/AppendSteps": ("run", "batch.run_id"),
    "/trainledger.v1.Runs/RecordSteps": ("run", "batch.run_id"),
    "/trainledger.v1.Runs/SaveCheckpoint": ("run", "run_id"),
    "/trainledger.v1.Runs/FinishRun": ("run", "run_id"),
    "/trainledger.v1.Runs/NoteSummary": ("run", "run_id"),
    "/trainledger.v1.Runs/SetTags": ("run", "run_id"),
    "/trainledger.v1.Runs/RecordReport": ("run", "run_id"),
    "/trainledger.v1.Runs/GetRunState": ("run", "run_id"),
    "/trainledger.v1.Runs/GetSeries": ("run", "run_id"),
    "/trainledger.v1.Runs/WatchRun": ("run", "run_id"),
    "/trainledger.v1.Runs/LinkSession": ("run", "run_id"),
    "/trainledger.v1.Runs/GetMetrics": ("run", "run_id"),
    "/trainledger.v1.Runs/ListCheckpoints": ("run", "run_id"),
    "/trainledger.v1.Runs/BestCheckpoint": ("run", "run_id"),
    "/trainledger.v1.Runs/RetractRun": ("run", "run_id"),
    "/trainledger.v1.Runs/RecordDataset": ("run", "run_id"),
    "/trainledger.v1.Runs/PlanPrune": ("run", "run_id"),
    "/trainledger.v1.Runs/DeleteCheckpoint": ("run", "run_id"),
    "/trainledger.v1.Runs/Heartbeat": ("run", "run_id"),
    "/trainledger.v1.Spend/OpenAccount": ("account", "parent"),
    "/trainledger.v1.Spend/SetCap": ("account", "account"),
    "/trainledger.v1.Spend/Reserve": ("account", "account"),
    "/trainledger.v1.Spend/ReservePlan": ("account", "account"),
    "/trainledger.v1.Spend/Commit": ("account", "account"),
    "/trainledger.v1.Spend/Release": ("account", "account"),
    "/trainledger.v1.Spend/Charge": ("account", "account"),
    "/trainledger.v1.Spend/GetAccount": ("account", "account"),
    "/trainledger.v1.Spend/ListReservations": ("account", "account"),
}
# Listings a scoped token may call all the same: the field of the request naming the account they
# are narrowed to. Left empty, the servicer narrows the listing to the token's scope
# (services.grpc.interceptors.SCOPE); naming an account outside it is refused as outside the scope.
NARROWED_BY_METHOD: dict[str, str] = {"/trainledger.v1.Runs/ListRuns": "account"}
# What an opening call names that may exist already, under another scope: ("run", run key field)
# or ("account", name field). It must be new, or under the token's scope, as the parent is; else
# the call is refused as outside the scope, never told where the thing lives.
OPENED_BY_METHOD: dict[str, tuple[str, str]] = {
    "/trainledger.v1.Runs/OpenRun": ("run", "run_key"),
    "/trainledger.v1.Spend/OpenAccount": ("account", "account"),
}
# Another run an opening call names, when the request sets it: (message field, run id field). It
# must be a run under the token's scope too, or the call is refused as outside the scope (never
# told whether that run or its checkpoint exists, nor its name or uri in the opened run's state).
SOURCE_BY_METHOD: dict[str, tuple[str, str]] = {
    "/trainledger.v1.Runs/OpenRun": ("source_checkpoint", "source_checkpoint.run_id"),
}


@dataclass(frozen=True)
class Identity:
    """The caller of one call: its token, or None when authentication is off (or the method is
    open to all: `open`, health and reflection)."""

    token: Token | None
    open: bool = False

    def principal(self, claimed: str) -> str:
        return claimed if self.token is None else self.token.holder


def is_loopback(host: str) -> bool:
    """Whether a listen host is a loopback address (where `serve` may run without authentication)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _field(request: Any, path: str) -> str:
    for name in path.split("."):
        request = getattr(request, name)
    return str(request)


class Gate:
    """Authentication and authorization for one server over its ledger."""

    def __init__(self, edge: Edge, *, required: bool = False, clock: Callable[[], float] = time.monotonic) -> None:
        self.edge, self.required, self.clock = edge, required, clock
        self._book: dict[str, Token] = {}
        self._read_at = -float("inf")
        self._lock = asyncio.Lock()
        self._warned: set[tuple[str, str]] = set()
        self._inside: set[tuple[str, str]] = set()
        #: The token book's reads from storage so far (each one a trip to a worker thread).
        self.book_reads = 0

    async def book(self, *, since: float | None = None) -> dict[str, Token]:
        """The token book, read from storage when the copy in memory is older than CACHE_S, or
        (with `since`, a time of self.clock) when it was read before that time. Reads are one at
        a time: callers waiting meanwhile share the read that ends their wait."""
        if since is None and self.clock() - self._read_at < CACHE_S:
            return self._book
        async with self._lock:
            stale = self.clock() - self._read_at >= CACHE_S if since is None else self._read_at < since
            if stale:
                started = self.clock()  # The book holds every token issued before its read began.
                self.book_reads += 1
                self._book = await self.edge.call(self.edge.ledger.token_book)
                self._read_at = started
        return self._book

    async def authenticate(self, method: str, metadata: Mapping[str, str]) -> Identity:
        """The caller's identity. Raises Unauthenticated, PermissionDenied (ROLE_NOT_ALLOWED)."""
        if method.startswith(OPEN_PREFIXES):
            return Identity(None, open=True)
        arrived = self.clock()
        book = await self.book()
        if not book and not self.required:
            return Identity(None)
        value = metadata.get("authorization", "")
        if not value:
            raise Unauthenticated(
                "authentication is on: send a token (the CLI: --token-file FILE or TRAINLEDGER_TOKEN;"
                " gRPC: `authorization: Bearer <token>`)",
                reason=Reason.TOKEN_MISSING,
            )
        scheme, _, credential = value.partition(" ")
        if scheme.lower() != "bearer":
            raise Unauthenticated("the authorization is not a bearer token", reason=Reason.TOKEN_INVALID)
        token_id, secret = parse_bearer(credential.strip())
        token = book.get(token_id)
        if token is None:  # Perhaps issued since the book was read: read it again.
            token = (await self.book(since=arrived)).get(token_id)
        if token is None:
            raise Unauthenticated("the bearer token is not valid", reason=Reason.TOKEN_INVALID)
        token.check(secret, self.edge.ledger.clock())
        CALLER.set((token.holder, token.token_id))  # For the call's log line, refused or not.
        if token.role not in ROLES_BY_METHOD.get(method, frozenset({"admin"})):
            raise PermissionDenied(
                f"role {token.role} may not call {method.rsplit('/', 1)[-1]}",
                reason=Reason.ROLE_NOT_ALLOWED,
                role=token.role,
            )
        claimed = metadata.get("x-principal", "")
        if claimed and claimed != token.holder:
            self._ignored(token, claimed)
        return Identity(token)

    async def recheck(self, identity: Identity) -> None:
        """Raises Unauthenticated (TOKEN_REVOKED, TOKEN_EXPIRED) when the caller's token has been
        revoked or has expired since its call was authenticated (as the book read at most
        CACHE_S ago says). A call made without a token, while authentication was off, raises
        Unauthenticated (TOKEN_MISSING) once it is on: issuing the first token turns it on."""
        token = identity.token
        if token is None:
            if not identity.open and (self.required or await self.book()):
                raise Unauthenticated(
                    "authentication is on now: send `authorization: Bearer <token>`", reason=Reason.TOKEN_MISSING
                )
            return
        current = (await self.book()).get(token.token_id, token)
        current.check_usable(self.edge.ledger.clock())

    def guard(self, identity: Identity, items: AsyncIterator[_I]) -> AsyncIterator[_I]:
        """A stream of this caller's that ends with Unauthenticated once its token is revoked or
        expires, or that was opened without a token and authentication has been turned on since,
        checked at least every STREAM_RECHECK_S (services.runtime.guard); a method open to all is never
        ended so."""
        if identity.open:
            return items
        return guarded(items, functools.partial(self.recheck, identity), STREAM_RECHECK_S)

    def _ignored(self, token: Token, claimed: str) -> None:
        """Log an x-principal that differs from the token's, once per token and claim (clients
        send one with every call)."""
        seen = (token.token_id, claimed[:64])
        if seen in self._warned or len(self._warned) >= WARNED_MAX:
            return
        self._warned.add(seen)
        log.warning("x-principal %r ignored: token %s names %r", seen[1], token.token_id, token.holder)

    async def authorize(self, method: str, identity: Identity, request: Any) -> None:
        """Raises PermissionDenied (OUTSIDE_SCOPE) when a scoped token's request is about a run
        or account outside its scope, or is ledger-wide."""
        token = identity.token
        if token is None or not token.account:
            return
        scope = SCOPE_BY_METHOD.get(method)
        narrowed = NARROWED_BY_METHOD.get(method)
        inside = False
        if narrowed is not None:
            account = _field(request, narrowed)
            inside = not account or await self.within(account, token.account)
        elif scope is not None:
            subject = _field(request, scope[1])
            inside = bool(subject) and await self.within(subject, token.account)
        opened = OPENED_BY_METHOD.get(method)
        if inside and opened is not None:
            kind, path = opened
            inside = await self.edge.call(self.edge.ledger.opening_within, kind, _field(request, path), token.account)
        source = SOURCE_BY_METHOD.get(method)
        if inside and source is not None and request.HasField(source[0]):
            run_id = _field(request, source[1])
            try:
                run_id = str(uuid.UUID(run_id))
            except ValueError:
                pass  # Not a run id: under no scope, so refused as outside it.
            inside = await self.within(run_id, token.account)
        if not inside:
            raise PermissionDenied(
                f"outside the token's scope (account {token.account})", reason=Reason.OUTSIDE_SCOPE, scope=token.account
            )

    async def within(self, subject: str, scope: str) -> bool:
        """Whether the run or account `subject` (a run's account is named by its run id) is under
        `scope` (Ledger.account_within, in a worker thread). A yes is kept: an account's parent never
        changes once opened, so what is under a scope stays there; a no is asked again (the account
        may be opened since)."""
        if (subject, scope) in self._inside:
            return True
        inside = bool(await self.edge.call(self.edge.ledger.account_within, subject, scope))
        if inside:
            if len(self._inside) >= INSIDE_KEPT_MAX:
                self._inside.clear()
            self._inside.add((subject, scope))
        return inside

    async def authorize_stream(
        self, method: str, identity: Identity, requests: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        """A request stream whose every request is authorized (see authorize), its token checked
        again with each (recheck): a write stream ends as soon as its token is revoked or expires."""
        allowed: set[str] = set()  # The subjects already found inside the scope on this stream.
        scope = SCOPE_BY_METHOD.get(method)
        async for request in requests:
            await self.recheck(identity)
            subject = _field(request, scope[1]) if scope is not None else ""
            if subject not in allowed:
                await self.authorize(method, identity, request)
                if len(allowed) < STREAM_SUBJECTS_MAX:
                    allowed.add(subject)
            yield request


def startup_notes(*, required: bool, tokens: int, host: str, tls: bool) -> tuple[str, list[str]]:
    """What `serve` says of authentication: ", authentication on" for its first line when it is
    on (--auth, or a token issued), and the warnings to print: no token to call with yet, and
    tokens sent in plaintext to an address other machines reach."""
    if not (required or tokens):
        return "", []
    notes = []
    if not tokens:
        notes.append(
            "no token issued yet, so every call is refused: create one with"
            " `trainledger tokens create --db FILE --principal NAME --role admin`"
        )
    if not tls and not is_loopback(host):
        notes.append(
            f"bearer tokens travel in plaintext to {host}: serve with --tls-cert FILE --tls-key FILE,"
            " or listen on a loopback address"
        )
    return ", authentication on", notes
