"""A run search: the runs a query (ledger.views.search.grammar) selects, in the order asked, as the
same RunSummary rows ListRuns answers, a page at a time.

A page continues from an offset: a search may order by any field, so no single index orders every
search, and an offset costs the rows it skips (bounded by SEARCH_OFFSET_MAX).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import msgspec

from ledger.views.models import RunSummary
from ledger.views.runs.reads import RUN_SUMMARY_SELECT, run_filters, to_run_summary, with_tags
from ledger.views.search.compile import Sql, compile_order, compile_where
from ledger.views.search.grammar import parse_order, parse_query

__all__ = [
    "FIELD_ROWS_MAX",
    "SEARCH_OFFSET_MAX",
    "SEARCH_SELECT",
    "SearchPage",
    "compile_search",
    "run_fields",
    "search_runs",
]

SEARCH_OFFSET_MAX = 100_000
#: The most field values one run_fields read answers (a page of runs with large specs).
FIELD_ROWS_MAX = 5_000


class SearchPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a run search; `next_offset` continues it, None when no run is left."""

    runs: tuple[RunSummary, ...]
    next_offset: int | None


# The runs a search selects and orders, by id: narrow rows, so sorting many matches stays cheap.
SEARCH_SELECT = (
    "SELECT r.run_id FROM view_runs r LEFT JOIN view_accounts a ON a.account = r.run_id"
    " LEFT JOIN view_run_plans p ON p.run_id = r.run_id"
)


def compile_search(
    where: str,
    order_by: str,
    *,
    descending: bool,
    include_retracted: bool,
    now: float,
    collate: str = "",
    **filters: str,
) -> Sql:
    """The SELECT of the ids a search finds, in order, up to its LIMIT and OFFSET; INVALID_QUERY
    or QUERY_TOO_LARGE, before any SQL runs, when `where` or `order_by` is refused. `filters` are
    ListRuns' (status, name_contains, run_id_prefix, account: RunViewReads.list_runs), each ANDed in.
    `collate` is the database's clause for byte order (Storage.byte_order), so text compares and
    orders, and `like` folds case, alike on each backend."""
    condition = compile_where(parse_query(where), now, collate) if where.strip() else None
    join, terms = compile_order(parse_order(order_by) if order_by.strip() else None, descending, now, collate)
    prefix, filtered, params = run_filters(after=None, include_retracted=include_retracted, **filters)
    # The accounts' CTE (a prefix) takes the first parameter when an account is given.
    cte_params, filter_params = (params[:1], params[1:]) if filters.get("account") else ([], params)
    conditions = ([] if condition is None else [f"({condition.text})"]) + filtered
    text = prefix + SEARCH_SELECT + join.text
    if conditions:
        text += " WHERE " + " AND ".join(conditions)
    text += " ORDER BY " + terms.text
    where_params = () if condition is None else condition.params
    return Sql(text, (*cte_params, *join.params, *where_params, *filter_params, *terms.params))


def search_runs(
    rows: Callable[[str, tuple[Any, ...]], list[Any]],
    *,
    where: str,
    order_by: str = "",
    descending: bool = False,
    limit: int,
    offset: int = 0,
    include_retracted: bool = False,
    now: datetime,
    collate: str = "",
    **filters: str,
) -> SearchPage:
    """Up to `limit` runs `where` selects (every run when empty), from `offset`, ordered by
    `order_by` (a field, then optionally asc or desc; `descending` too), newest first when none;
    retracted runs only with `include_retracted`. `rows` runs a query (ViewReader's). The page's
    ids come first, then their summaries: only the page's rows are ever made whole."""
    search = compile_search(
        where,
        order_by,
        descending=descending,
        include_retracted=include_retracted,
        now=now.timestamp(),
        collate=collate,
        **filters,
    )
    # One more than the page, to know whether another follows.
    found = [run_id for (run_id,) in rows(search.text + " LIMIT ? OFFSET ?", (*search.params, limit + 1, offset))]
    page = found[:limit]
    summaries = {}
    if page:
        listed = rows(f"{RUN_SUMMARY_SELECT} WHERE r.run_id IN ({', '.join('?' * len(page))})", tuple(page))
        summaries = {row[0]: row for row in listed}
    more = len(found) > limit
    return SearchPage(
        runs=with_tags(rows, tuple(to_run_summary(summaries[run_id], now) for run_id in page)),
        next_offset=offset + limit if more else None,
    )


def run_fields(
    rows: Callable[[str, tuple[Any, ...]], list[Any]],
    run_ids: Sequence[str],
    *,
    keys: Sequence[str] = (),
    prefix: str = "",
) -> dict[str, dict[str, float | str]]:
    """The values of the search view's fields (`spec.lr`, `summary.eval_loss`, `tags.team`) of
    `run_ids`: those named `keys`, else every one under `prefix`; a number as a float, anything
    else as its text. At most FIELD_ROWS_MAX values, by run and key."""
    if not run_ids or not (keys or prefix):
        return {}
    marks = ", ".join("?" * len(run_ids))
    if keys:
        which, args = f"key IN ({', '.join('?' * len(keys))})", tuple(keys)
    else:
        which, args = "key >= ? AND key < ?", (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1))
    found: dict[str, dict[str, float | str]] = {}
    for run_id, key, num, text in rows(
        f"SELECT run_id, key, num, text FROM view_run_fields WHERE run_id IN ({marks}) AND {which}"
        " ORDER BY run_id, key LIMIT ?",
        (*run_ids, *args, FIELD_ROWS_MAX),
    ):
        found.setdefault(run_id, {})[key] = num if num is not None else text
    return found
