"""The dashboard's JSON API: each endpoint validates its parameters, is authorized as the gRPC method
it mirrors (services.web.access), reads the ledger through the server's Edge (its bounded pool of worker
threads, within the calling connection's share, exactly as the gRPC servicers do) and answers
application/json.

Documents are the ledger's read models encoded by msgspec: money stays integer micro-dollars in
`*_usd_micro` fields, times are RFC 3339 UTC strings. A bad parameter is 400 INVALID_PARAMETER
naming it, before anything is read; what a request may hold is bounded (RUNS_LIMIT_MAX,
RESERVATIONS_LIMIT_MAX, WIDTH_MIN..WIDTH_MAX, COMPARE_RUNS_MAX).

A RUN in a path is resolved by `resolve_run`: a run id, a unique id prefix (at least PREFIX_MIN
characters), the exact name of one run, or the run key it was opened with; several matches are
409 AMBIGUOUS_RUN listing the candidates, none is 404 RUN_NOT_FOUND. A scoped token cannot learn
whether a run outside its scope exists: both are 403 OUTSIDE_SCOPE.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from starlette.requests import HTTPConnection, Request
from starlette.responses import Response

from ledger.domain.base import ledger_id
from ledger.domain.errors import LedgerError
from ledger.domain.limits import ID_LENGTH_MAX, check_text
from ledger.domain.reasons import Reason
from ledger.views import models
from services.render.diff import COMPARE_RUNS_MAX
from services.runtime import paging as tokens
from services.runtime.auth import Identity
from services.runtime.edge import Edge
from services.runtime.scopes import lineage_within
from services.web.access import Access, Subject, WebError, from_ledger, invalid
from services.web.documents import (
    account_document,
    builtins,
    chart_document,
    history_document,
    json_response,
    state_document,
    summary_document,
)
from services.web.params import (
    metric_names,
    page_token,
    required_integer,
    status,
    step_range,
    text,
)
from services.web.search import RUNS_PARAMETERS, check_known, search_of

if TYPE_CHECKING:
    from services.web.live import RunStreams
    from services.web.live_runs import LiveRuns

__all__ = [
    "Web",
    "resolve_run",
    "RUNS_LIMIT_MAX",
    "RESERVATIONS_LIMIT_MAX",
    "COMPARE_RUNS_MAX",
]

T = TypeVar("T")

RUNS_LIMIT_DEFAULT, RUNS_LIMIT_MAX = 50, 200
RESERVATIONS_LIMIT_DEFAULT, RESERVATIONS_LIMIT_MAX = 200, 1_000
CHECKPOINTS_MAX = 1_000
PREFIX_MIN = 4
MATCH_PAGE = 500
MATCH_MAX = 5_000
CANDIDATES_SHOWN = 10
_ID_PREFIX = re.compile(r"[0-9a-f-]+")


class Web:
    """What every endpoint shares: the edge, access, and the live streams."""

    def __init__(self, edge: Edge, access: Access, streams: RunStreams, live: LiveRuns) -> None:
        self.edge, self.access, self.streams, self.live = edge, access, streams, live
        self.ledger = edge.ledger

    async def call(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A ledger read in a worker thread; a ledger refusal becomes a WebError."""
        try:
            return await self.edge.call(function, *args, **kwargs)
        except LedgerError as error:
            raise from_ledger(error) from None

    async def search(self, function: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A run search as `call`, within the edge's searches at once (Edge.search)."""
        try:
            return await self.edge.search(function, *args, **kwargs)
        except LedgerError as error:
            raise from_ledger(error) from None


def web_of(connection: HTTPConnection) -> Web:
    web: Web = connection.app.state.web
    return web


# Runs by the names people use.


def _matches(ledger: Any, prefix: str, contains: str, scope: str) -> list[models.RunSummary]:
    """The runs whose id starts with `prefix` and name holds `contains`, under `scope` when given."""
    found: list[models.RunSummary] = []
    after = None
    while len(found) < MATCH_MAX:
        page = ledger.list_runs(
            limit=MATCH_PAGE,
            after=after,
            run_id_prefix=prefix,
            name_contains=contains,
            account=scope,
            include_retracted=True,
        )
        found += page.runs
        after = page.after
        if after is None:
            break
    return found


def _choose(ledger: Any, ref: str, scope: str) -> tuple[str | None, list[models.RunSummary]]:
    """(the run id `ref` names, None) or (None, the candidates: several, or none). With a `scope`,
    only runs under it are looked at: another scope's runs never shadow one of its own."""
    lowered = ref.lower()
    if len(ref) >= PREFIX_MIN and _ID_PREFIX.fullmatch(lowered) and len(lowered) <= 36:
        by_prefix = _matches(ledger, lowered, "", scope)
        if any(run.run_id == lowered for run in by_prefix):
            return lowered, []
        if len(by_prefix) == 1:
            return by_prefix[0].run_id, []
        if by_prefix:
            return None, by_prefix
    if len(ref) > ID_LENGTH_MAX:
        return None, []
    named = [run for run in _matches(ledger, "", ref, scope) if run.name == ref]
    if len(named) == 1:
        return named[0].run_id, []
    if named:
        return None, named
    keyed = str(ledger_id("run", ref))
    if any(run.run_id == keyed for run in _matches(ledger, keyed, "", scope)):
        return keyed, []
    return None, []


async def resolve_run(web: Web, identity: Identity, ref: str) -> str:
    """The id of the run `ref` names, authorized for the caller as GetRunState. Raises WebError:
    404 RUN_NOT_FOUND, 409 AMBIGUOUS_RUN (with `candidates`), 403 OUTSIDE_SCOPE."""
    try:
        check_text(ref, "run", limit=1_024)
    except LedgerError:
        raise WebError(404, Reason.RUN_NOT_FOUND, "no such run", run=ref[:64]) from None
    scope = web.access.scope(identity)  # A scoped token only hears of runs it may read.
    run_id, candidates = await web.call(_choose, web.ledger, ref, scope)
    if run_id is None and len(candidates) > 1:
        shown = [{"run_id": run.run_id, "name": run.name, "status": run.status} for run in candidates]
        raise WebError(
            409,
            "AMBIGUOUS_RUN",
            f"{ref} names {len(candidates)} runs: give more of the id",
            candidates=shown[:CANDIDATES_SHOWN],
            count=len(candidates),
        )
    if run_id is None:
        if scope:
            raise WebError(403, Reason.OUTSIDE_SCOPE, f"outside the token's scope (account {scope})", scope=scope)
        raise WebError(404, Reason.RUN_NOT_FOUND, f"no run {ref}", run=ref[:64])
    await web.access.authorize("run", identity, Subject(run_id=run_id))
    return run_id


async def run_of(request: HTTPConnection, identity: Identity) -> str:
    return await resolve_run(web_of(request), identity, request.path_params["run"])


def _run_documents(ledger: Any, run_id: str, scope: str = "") -> dict[str, Any]:
    state = lineage_within(ledger, ledger.run_state(run_id), scope)
    return {
        "state": state_document(state),
        "metrics": builtins(ledger.metric_stats(run_id)),
        "checkpoints": builtins(ledger.checkpoints(run_id, limit=CHECKPOINTS_MAX)),
    }


class RunsAnswer(NamedTuple):
    """A page of runs and the token of the next (empty after the last)."""

    runs: tuple[models.RunSummary, ...]
    next_page: str


async def runs_page(web: Web, request: HTTPConnection, identity: Identity) -> RunsAnswer:
    """The page of runs a runs request asks for (retracted runs only with include_retracted=1),
    those a search selects when it has one (services.web.search), the filters ANDed. A scoped
    token lists the runs under its account (an account filter outside its scope is refused)."""
    limit = required_integer(request, "limit", RUNS_LIMIT_DEFAULT, minimum=1, maximum=RUNS_LIMIT_MAX)
    filters = {"status": status(request), "name_contains": text(request, "name"), "account": text(request, "account")}
    search = search_of(request)
    scope = web.access.scope(identity)
    if scope:
        if filters["account"] and not await web.access.within(identity, filters["account"]):
            raise WebError(403, Reason.OUTSIDE_SCOPE, f"outside the token's scope (account {scope})", scope=scope)
        filters["account"] = filters["account"] or scope
    retracted = include_retracted(request)
    if search.given:
        offset = page_token(request, tokens.search_offset)
        found = await web.search(
            web.ledger.search_runs,
            **search._asdict(),
            limit=limit,
            offset=offset,
            include_retracted=retracted,
            **filters,
        )
        return RunsAnswer(found.runs, tokens.search_token(found.next_offset))
    after = page_token(request, tokens.runs_after)
    page = await web.call(web.ledger.list_runs, limit=limit, after=after, include_retracted=retracted, **filters)
    return RunsAnswer(page.runs, tokens.runs_token(page.after))


def include_retracted(request: HTTPConnection) -> bool:
    """Whether a runs request asks for retracted runs too (include_retracted=1)."""
    return request.query_params.get("include_retracted", "") in ("1", "true", "on")


async def identify(request: HTTPConnection, endpoint: str) -> Identity:
    return await web_of(request).access.identify(request, endpoint)


async def list_runs(request: Request) -> Response:
    web = web_of(request)
    check_known(request, RUNS_PARAMETERS)
    identity = await identify(request, "runs")
    page = await runs_page(web, request, identity)
    return json_response({"runs": [summary_document(run) for run in page.runs], "next_page": page.next_page or None})


async def get_run(request: Request) -> Response:
    web = web_of(request)
    identity = await identify(request, "run")
    run_id = await run_of(request, identity)
    scope = identity.token.account if identity.token is not None else ""
    return json_response(await web.call(_run_documents, web.ledger, run_id, scope or ""))


async def get_chart(request: Request) -> Response:
    web = web_of(request)
    identity = await identify(request, "run")
    names = metric_names(request)
    from_step, to_step, width = step_range(request)
    run_id = await run_of(request, identity)
    chart = await web.call(web.ledger.chart, run_id, metrics=names, from_step=from_step, to_step=to_step, width=width)
    return json_response(chart_document(chart))


def _spend_document(ledger: Any, run_id: str, limit: int, after: int) -> dict[str, Any]:
    account = ledger.account(run_id)
    page = ledger.reservations(run_id, limit=limit, after_position=after)
    hours = ledger.spend_hours(run_id)
    return {
        "account": account.account,
        "cap_usd_micro": account.cap_usd_micro,
        "committed_usd_micro": account.committed_usd_micro,
        "presumed_usd_micro": account.presumed_usd_micro,
        "pending_usd_micro": account.pending_usd_micro,
        "remaining_usd_micro": account.remaining_usd_micro,
        "overrun_usd_micro": account.overrun_usd_micro,
        "hours": [
            {
                "hour": builtins(h.hour),
                "committed_usd_micro": h.committed_usd_micro,
                "presumed_usd_micro": h.presumed_usd_micro,
            }
            for h in hours
        ],
        "reservations": [
            {
                "reservation_id": r.reservation_id,
                "kind": r.kind,
                "state": r.state,
                "amount_usd_micro": r.amount_usd_micro,
                "actual_usd_micro": r.actual_usd_micro,
                "reserved_at": builtins(r.reserved_at),
                "settled_at": builtins(r.settled_at),
                "attempt": r.attempt,
            }
            for r in page.reservations
        ],
        "next_page": tokens.position_token(page.after_position) or None,
    }


async def get_spend(request: Request) -> Response:
    web = web_of(request)
    identity = await identify(request, "spend")
    limit = required_integer(request, "limit", RESERVATIONS_LIMIT_DEFAULT, minimum=1, maximum=RESERVATIONS_LIMIT_MAX)
    after = page_token(request, tokens.position_after)
    run_id = await resolve_run(web, identity, request.path_params["run"])
    await web.access.authorize("spend", identity, Subject(account=run_id))
    return json_response(await web.call(_spend_document, web.ledger, run_id, limit, after))


async def compare(request: Request) -> Response:
    web = web_of(request)
    identity = await identify(request, "run")
    refs = list(dict.fromkeys(r.strip() for r in request.query_params.getlist("run") if r.strip()))
    if not refs:
        raise invalid("run", "name at least one run to compare")
    if len(refs) > COMPARE_RUNS_MAX:
        raise invalid("run", f"at most {COMPARE_RUNS_MAX} runs at once")
    names = metric_names(request)
    if len(names) != 1:
        raise invalid("metric", "name one metric to compare")
    _, _, width = step_range(request)
    run_ids = list(dict.fromkeys([await resolve_run(web, identity, ref) for ref in refs]))
    return json_response(await web.call(_compare_document, web.ledger, run_ids, names[0], width))


def _compare_document(ledger: Any, run_ids: Iterable[str], metric: str, width: int) -> dict[str, Any]:
    runs = []
    for run_id in run_ids:
        state = ledger.run_state(run_id)
        chart = ledger.chart(run_id, metrics=[metric], width=width)
        series = [builtins(s) for m in chart.metrics if m.name == metric for s in m.series if not s.superseded]
        runs.append({"run_id": run_id, "name": state.run.name, "series": series})
    return {"metric": metric, "runs": runs}


async def visible_accounts(web: Web, identity: Identity) -> list[models.Account]:
    """The accounts people set caps on, as the caller may read them (a scoped token: its subtree)."""
    accounts: tuple[models.Account, ...] = await web.call(web.ledger.account_tree)
    if not web.access.scope(identity):
        return list(accounts)
    return [account for account in accounts if await web.access.within(identity, account.account)]


async def accounts(request: Request) -> Response:
    web = web_of(request)
    identity = await identify(request, "account")
    return json_response({"accounts": [account_document(a) for a in await visible_accounts(web, identity)]})


async def registry(request: Request) -> Response:
    web = web_of(request)
    identity = await identify(request, "registry")
    await web.access.authorize("registry", identity, Subject())
    families = await web.call(web.ledger.families)
    return json_response({"families": builtins(families)})


async def read_family(web: Web, request: HTTPConnection) -> models.Family:
    identity = await identify(request, "registry")
    await web.access.authorize("registry", identity, Subject())
    name = request.path_params["family"]
    try:
        check_text(name, "family", limit=1_024)
    except LedgerError:
        raise WebError(404, Reason.FAMILY_NOT_FOUND, "no such family") from None
    family: models.Family = await web.call(web.ledger.family, name)
    return family


async def family(request: Request) -> Response:
    found = await read_family(web_of(request), request)
    return json_response(
        {
            "family": found.family,
            "current": found.current,
            "versions": builtins(found.versions),
            "history": [history_document(p) for p in found.history],
            "aliases": [{"alias": a.alias, "version": a.version} for a in found.aliases],
            "retired": builtins(found.retired),
        }
    )
