"""A run search: the runs a query (ledger.views.search.grammar) selects, in the order asked, as the
same RunSummary rows ListRuns answers, a page at a time.

A search ordered by a document key or a metric walks that key's index in order (and then the runs
lacking it), so a page reads the runs up to its end rather than sorting every match. A page
continues from an offset: an offset costs the rows it skips (bounded by SEARCH_OFFSET_MAX).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import msgspec

from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason
from ledger.views.models import RunSummary
from ledger.views.runs.reads import RUN_SUMMARY_SELECT, run_filters, to_run_summary, with_tags
from ledger.views.search.compile import Sql, compile_order, compile_where
from ledger.views.search.grammar import parse_order, parse_query
from ledger.views.store import ReadTooLong

__all__ = [
    "FIELD_ROWS_MAX",
    "SEARCH_OFFSET_MAX",
    "SEARCH_READ_S",
    "SearchPage",
    "compile_search",
    "run_fields",
    "search_runs",
]

SEARCH_OFFSET_MAX = 100_000
#: The most time one statement of a search may take (ledger.views.store.Query.bounded_rows: CPU
#: time on SQLite, the statement's time on PostgreSQL), well under a call's deadline: a query the
#: bounds of its text allow can still be slow at a large ledger's size (64 `like` comparisons over
#: every run), and it is refused rather than left to hold a reader.
SEARCH_READ_S = 3.0
#: The most field values one run_fields read answers (a page of runs with large specs).
FIELD_ROWS_MAX = 5_000


class SearchPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a run search; `next_offset` continues it, None when no run is left."""

    runs: tuple[RunSummary, ...]
    next_offset: int | None


# A run not retracted: one lookup of its plan by the run's id (a join would read the plan of
# every match before a page is cut).
NOT_RETRACTED = "NOT EXISTS (SELECT 1 FROM view_run_plans p WHERE p.run_id = r.run_id AND p.retracted_at IS NOT NULL)"


def compile_search(
    where: str,
    order_by: str,
    *,
    descending: bool,
    include_retracted: bool,
    now: float,
    collate: str = "",
    **filters: str,
) -> tuple[Sql, ...]:
    """The SELECTs of the ids a search finds, one per part of its order (compile_order): each
    ordered, to be cut by a LIMIT, and every run of one before every run of the next;
    INVALID_QUERY or QUERY_TOO_LARGE, before any SQL runs, when `where` or `order_by` is refused.
    `filters` are ListRuns' (status, name_contains, run_id_prefix, account: RunViewReads.list_runs),
    each ANDed in. `collate` is the database's clause for byte order (Storage.byte_order), so text
    compares and orders, and `like` folds case, alike on each backend."""
    condition = compile_where(parse_query(where), now, collate) if where.strip() else None
    parts = compile_order(parse_order(order_by) if order_by.strip() else None, descending, now, collate)
    # Retracted runs are left out by NOT_RETRACTED below, not by list_runs' join of the plans.
    prefix, filtered, params = run_filters(after=None, include_retracted=True, **filters)
    # The accounts' CTE (a prefix) takes the first parameter when an account is given.
    cte_params, filter_params = (params[:1], params[1:]) if filters.get("account") else ([], params)
    conditions = ([] if condition is None else [f"({condition.text})"]) + filtered
    conditions += [] if include_retracted else [NOT_RETRACTED]
    where_params = () if condition is None else condition.params
    selects = []
    for part in parts:
        head = [] if part.condition is None else [part.condition.text]
        head_params = () if part.condition is None else part.condition.params
        text = f"{prefix}SELECT r.run_id FROM {part.source}"
        if head or conditions:
            text += " WHERE " + " AND ".join(head + conditions)
        text += " ORDER BY " + part.terms.text
        selects.append(Sql(text, (*cte_params, *head_params, *where_params, *filter_params, *part.terms.params)))
    return tuple(selects)


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
    # The parts in turn, each cut where the page ends (one run more, to know whether another
    # follows): a page costs the runs up to its end, never every match sorted.
    wanted, found = offset + limit + 1, list[str]()
    try:
        for select in search:
            if len(found) >= wanted:
                break
            found += [run_id for (run_id,) in rows(select.text + " LIMIT ?", (*select.params, wanted - len(found)))]
    except ReadTooLong as stopped:
        raise Invalid(
            f"query: took longer than {stopped.limit_s:g} s at this ledger's size: narrow it",
            reason=Reason.QUERY_TOO_LARGE,
            limit="time_s",
            maximum=stopped.limit_s,
            position=1,
        ) from None
    found = found[offset:]
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
