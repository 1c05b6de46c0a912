"""The run search on the dashboard: the `where`, `order_by` and `desc` parameters of /api/runs and
of the runs page (docs/search.md), checked before anything is read. A query refused is 400
INVALID_PARAMETER naming the parameter, with the ledger's reason (INVALID_QUERY, QUERY_TOO_LARGE)
as `detail` and the position of the fault (1-based, in characters) as `position`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from starlette.requests import HTTPConnection

from ledger.domain.errors import LedgerError
from ledger.views.search.grammar import QUERY_BYTES_MAX
from ledger.views.search.reads import compile_search
from services.web.access import WebError, invalid
from services.web.params import text

__all__ = ["RUNS_PARAMETERS", "Search", "check_known", "search_of"]

#: The query parameters /api/runs takes; any other is refused.
RUNS_PARAMETERS = ("limit", "page", "status", "name", "account", "include_retracted", "where", "order_by", "desc")


class Search(NamedTuple):
    where: str
    order_by: str
    descending: bool

    @property
    def given(self) -> bool:
        """Whether the request searches (a where or an order_by given)."""
        return bool(self.where or self.order_by)


def check_known(request: HTTPConnection, known: Iterable[str]) -> None:
    """400 INVALID_PARAMETER naming the first query parameter not in `known` (a misspelt filter
    is an error, not every run)."""
    allowed = set(known)
    for name in request.query_params:
        if name not in allowed:
            raise invalid(name[:64], f"unknown parameter {name[:64]!r}; the parameters are {', '.join(known)}")


def search_of(request: HTTPConnection) -> Search:
    """The request's search, each part checked on its own, so a refusal names its parameter."""
    where = text(request, "where", limit=QUERY_BYTES_MAX)
    order_by = text(request, "order_by", limit=QUERY_BYTES_MAX)
    desc = request.query_params.get("desc", "")
    if desc not in ("", "0", "1", "true", "false"):
        raise invalid("desc", f"desc is 1 or 0, not {desc[:40]!r}")
    search = Search(where, order_by, desc in ("1", "true"))
    for name, parts in (("where", (where, "")), ("order_by", ("", order_by))):
        try:
            compile_search(*parts, descending=search.descending, include_retracted=False, now=0.0)
        except LedgerError as error:
            position = str(error.metadata.get("position", ""))
            raise WebError(
                400,
                "INVALID_PARAMETER",
                error.message,
                field=name,
                detail=str(error.reason),
                **({"position": int(position)} if position.isdigit() else {}),
            ) from None
    return search
