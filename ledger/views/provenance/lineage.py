"""The lineage view: which run started from which run's checkpoint (Run.Opened's source), indexed
both ways, so a run's state names its source (run, name, step) and lists the runs started from it.
A view of its own, so a ledger written before it existed builds it from its log when opened."""

from __future__ import annotations

from typing import Any

from ledger.views.handling import ViewHandlers, to_epoch
from ledger.views.models import LineageRun
from ledger.views.rows import optional_utc_time, utc_time
from ledger.views.store import Query, Table, ViewCursor

__all__ = [
    "CHILDREN_LISTED",
    "CHILD_COUNT",
    "CHILD_ROWS",
    "LINEAGE_TABLES",
    "SOURCE_ROW",
    "LineageReads",
    "lineage_handlers",
]

#: How many of a run's children its state lists (the latest opened).
CHILDREN_LISTED = 50

LINEAGE_TABLES: dict[str, Table] = {
    # One row per run opened from another run's checkpoint; runs opened from none have no row.
    "view_run_lineage": Table(
        {
            "run_id": str,
            "source_run_id": str,
            "source_step": int,
            "source_uri": str,
            "opened_at": float,
            "position": int,
        },
        ("run_id",),
        [("source_run_id", "opened_at", "run_id")],
        "lineage",
    ),
}

SOURCE_ROW = (
    "SELECT l.source_run_id, COALESCE(r.name, ''), l.source_step, l.source_uri, r.opened_at"
    " FROM view_run_lineage l LEFT JOIN view_runs r ON r.run_id = l.source_run_id WHERE l.run_id = ?"
)
CHILD_ROWS = (
    "SELECT l.run_id, COALESCE(r.name, ''), l.source_step, l.source_uri, l.opened_at"
    " FROM view_run_lineage l LEFT JOIN view_runs r ON r.run_id = l.run_id WHERE l.source_run_id = ?"
    " ORDER BY l.opened_at DESC, l.run_id DESC LIMIT ?"
)
CHILD_COUNT = "SELECT COUNT(*) FROM view_run_lineage WHERE source_run_id = ?"


def _run_opened(c: ViewCursor, e: Any, position: int) -> None:
    source = getattr(e, "source", None)
    if not source:
        return
    c.execute(
        "INSERT INTO view_run_lineage (run_id, source_run_id, source_step, source_uri, opened_at, position)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            str(e.originator_id),
            source["run_id"],
            source["step"],
            source.get("uri", ""),
            to_epoch(e.timestamp),
            position,
        ),
    )


def lineage_handlers() -> ViewHandlers:
    from ledger.domain.runs import Run

    return {Run.Opened: _run_opened}


class LineageReads:
    """Reads of the lineage view, run by `query`."""

    def __init__(self, query: Query) -> None:
        self.query = query

    def source(self, run_id: str) -> LineageRun | None:
        """The run and checkpoint step `run_id` started from; None when it started from none."""
        row = self.query.row(SOURCE_ROW, (run_id,))
        if row is None:
            return None
        source_run_id, name, step, uri, opened_at = row
        return LineageRun(run_id=source_run_id, name=name, step=step, uri=uri, opened_at=optional_utc_time(opened_at))

    def children(self, run_id: str, limit: int = CHILDREN_LISTED) -> tuple[tuple[LineageRun, ...], int]:
        """The latest `limit` runs started from `run_id`'s checkpoints, newest first, and how many
        there are in all."""
        rows = self.query.rows(CHILD_ROWS, (run_id, limit))
        children = tuple(
            LineageRun(run_id=child, name=name, step=step, uri=uri, opened_at=utc_time(opened_at))
            for child, name, step, uri, opened_at in rows
        )
        if len(children) < limit:
            return children, len(children)
        count = self.query.row(CHILD_COUNT, (run_id,))
        return children, int(count[0]) if count else len(children)
