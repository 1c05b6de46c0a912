"""The search view's tables and how events change them: what a run search (ledger.views.search)
reads, indexed by what it compares.

- view_run_fields: one row per leaf of a run's spec (`spec.lora.r`), of its summary
  (`summary.eval_loss`) and per tag (`tags.team`, Run.TagsChanged): `num` holds a number,
  `text` a string (its first TEXT_INDEXED_MAX characters) or true/false; lists and nulls have no
  row. Indexed by (key, num) and (key, text), each with the run id, so a comparison is one index
  range that answers the run ids by itself.
- view_run_metrics: one row per run and metric: its last value (at its latest attempt, then step),
  its least and its greatest, each indexed with the metric. The least and greatest count every
  value recorded, those of steps a resumed attempt later replaced too (exact stats of the live
  line are GetMetrics'); the last is the resumed attempt's as soon as it records one.

A view of its own ("search"), so a ledger written before it existed builds it from its log when
opened, as any new view is. The handlers run in the projector's transaction, as every view's do.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from ledger.views.handling import ViewHandlers
from ledger.views.store import Table
from trainledger.fields import key_segment

__all__ = ["KEY_BYTES_MAX", "SEARCH_TABLES", "TEXT_INDEXED_MAX", "flatten", "search_handlers"]

#: The characters of a string value a search compares (a query's literal is shorter, so an equal
#: or ordered comparison is still exact; a like pattern sees only these).
TEXT_INDEXED_MAX = 256
#: A key longer than this (in UTF-8 bytes) is not projected: no field name a query may write
#: reaches it, and it keeps each index entry well inside PostgreSQL's limit.
KEY_BYTES_MAX = 256

SEARCH_TABLES: dict[str, Table] = {
    "view_run_fields": Table(
        {"run_id": str, "key": str, "num": float, "text": str},
        ("run_id", "key"),
        [("key", "num", "run_id"), ("key", "text", "run_id")],
        "search",
    ),
    "view_run_metrics": Table(
        {
            "run_id": str,
            "metric": str,
            "last_attempt": int,
            "last_step": int,
            "last_value": float,
            "min_value": float,
            "max_value": float,
        },
        ("run_id", "metric"),
        [("metric", "last_value", "run_id"), ("metric", "min_value", "run_id"), ("metric", "max_value", "run_id")],
        "search",
    ),
}

_FIELD_INSERT = "INSERT INTO view_run_fields (run_id, key, num, text) VALUES (?, ?, ?, ?)"
# A top-level summary key replaced drops its old leaves: the key itself and those under it.
_FIELD_DELETE = "DELETE FROM view_run_fields WHERE run_id = ? AND (key = ? OR substr(key, 1, CAST(? AS INTEGER)) = ?)"
_T = "view_run_metrics"
_NEWER = (
    f"(excluded.last_attempt > {_T}.last_attempt"
    f" OR (excluded.last_attempt = {_T}.last_attempt AND excluded.last_step >= {_T}.last_step))"
)
_METRIC_UPSERT = (
    f"INSERT INTO {_T} (run_id, metric, last_attempt, last_step, last_value, min_value, max_value)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, metric) DO UPDATE SET"
    f" last_value = CASE WHEN {_NEWER} THEN excluded.last_value ELSE {_T}.last_value END,"
    f" last_step = CASE WHEN {_NEWER} THEN excluded.last_step ELSE {_T}.last_step END,"
    f" last_attempt = CASE WHEN {_NEWER} THEN excluded.last_attempt ELSE {_T}.last_attempt END,"
    f" min_value = CASE WHEN excluded.min_value < {_T}.min_value THEN excluded.min_value ELSE {_T}.min_value END,"
    f" max_value = CASE WHEN excluded.max_value > {_T}.max_value THEN excluded.max_value ELSE {_T}.max_value END"
)


def flatten(document: Any, key: str) -> Iterator[tuple[str, float | None, str | None]]:
    """(key, num, text) of each leaf of `document` under `key` (dotted, each key a search's
    segment: trainledger.fields.key_segment, so two leaves never share a key), as view_run_fields holds them;
    nulls, lists, non-finite numbers, over-long keys and keys holding a backtick give no row."""
    if len(key.encode()) > KEY_BYTES_MAX:
        return
    if isinstance(document, dict):
        for name, value in document.items():
            segment = key_segment(str(name))
            if segment is not None:
                yield from flatten(value, f"{key}.{segment}")
    elif isinstance(document, bool):
        yield key, None, "true" if document else "false"
    elif isinstance(document, int | float):
        try:
            number = float(document)
        except OverflowError:
            return
        if math.isfinite(number):
            yield key, number, None
    elif isinstance(document, str):
        yield key, None, document[:TEXT_INDEXED_MAX]


def _insert(c: Any, run_id: str, document: Any, key: str) -> None:
    rows = [(run_id, *row) for row in flatten(document, key)]
    if rows:
        c.executemany(_FIELD_INSERT, rows)


def _run_opened(c: Any, e: Any, position: int) -> None:
    _insert(c, str(e.originator_id), e.spec, "spec")


def _summary(c: Any, e: Any, position: int) -> None:
    """Finished and SummaryNoted: each top-level key given replaces the one before, leaves and all."""
    run_id = str(e.originator_id)
    for name, value in e.summary.items():
        segment = key_segment(name)
        if segment is None:
            continue
        key = f"summary.{segment}"
        c.execute(_FIELD_DELETE, (run_id, key, len(key) + 1, key + "."))
        _insert(c, run_id, value, key)


def _steps(c: Any, e: Any, position: int) -> None:
    run_id, steps, rows = str(e.originator_id), e.steps, []
    for name, column in e.metrics.items():
        values, index = column["values"], column["index"]
        if values:
            last_step = steps[-1] if index is None else steps[index[-1]]
            rows.append((run_id, name, e.attempt, last_step, float(values[-1]), float(min(values)), float(max(values))))
    if rows:
        c.executemany(_METRIC_UPSERT, rows)


def _tags(c: Any, e: Any, position: int) -> None:
    """TagsChanged: a tag's row is replaced, or deleted with the tag."""
    run_id = str(e.originator_id)
    for key in [*e.removed, *e.set]:
        c.execute("DELETE FROM view_run_fields WHERE run_id = ? AND key = ?", (run_id, f"tags.{key_segment(key)}"))
    for key, value in e.set.items():
        _insert(c, run_id, value, f"tags.{key_segment(key)}")


def search_handlers() -> ViewHandlers:
    """The search view's handler of each event class it projects."""
    from ledger.domain.runs import Run

    return {
        Run.Opened: _run_opened,
        Run.Finished: _summary,
        Run.SummaryNoted: _summary,
        Run.StepsRecorded: _steps,
        Run.TagsChanged: _tags,
    }
