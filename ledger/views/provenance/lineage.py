"""The lineage view: which run started from which run's checkpoint (Run.Opened's source), indexed
both ways, so a run's state names its source (run, name, step) and lists the runs started from it.
A view of its own, so a ledger written before it existed builds it from its log when opened."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any
from uuid import UUID

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
    "touched",
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

# The linked run's name (runs view) and whether it was retracted (the provenance view's plans).
SOURCE_ROW = (
    "SELECT l.source_run_id, COALESCE(r.name, ''), l.source_step, l.source_uri, r.opened_at,"
    " p.retracted_at IS NOT NULL"
    " FROM view_run_lineage l LEFT JOIN view_runs r ON r.run_id = l.source_run_id"
    " LEFT JOIN view_run_plans p ON p.run_id = l.source_run_id WHERE l.run_id = ?"
)
CHILD_ROWS = (
    "SELECT l.run_id, COALESCE(r.name, ''), l.source_step, l.source_uri, l.opened_at, p.retracted_at IS NOT NULL"
    " FROM view_run_lineage l LEFT JOIN view_runs r ON r.run_id = l.run_id"
    " LEFT JOIN view_run_plans p ON p.run_id = l.run_id WHERE l.source_run_id = ?"
    " ORDER BY l.opened_at DESC, l.run_id DESC LIMIT ?"
)
CHILD_COUNT = "SELECT COUNT(*) FROM view_run_lineage WHERE source_run_id = ?"
# The runs opened from a run's checkpoints at or after a position, in the log's order.
CHILDREN_OPENED = (
    "SELECT position, run_id FROM view_run_lineage WHERE source_run_id = ? AND position >= ? ORDER BY position LIMIT ?"
)


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


def touched(events: Sequence[tuple[int, Any]]) -> frozenset[UUID]:
    """The aggregates whose views a chunk of (position, event) changed: each event's own, and
    the run each run it opens was opened from (that run's children changed), so that a follower
    of the source run is woken by its child's opening."""
    ids = {event.originator_id for _, event in events}
    for _, event in events:
        source = getattr(event, "source", None)
        if isinstance(source, dict) and source.get("run_id"):
            with contextlib.suppress(ValueError, TypeError):
                ids.add(UUID(source["run_id"]))
    return frozenset(ids)


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
        source_run_id, name, step, uri, opened_at, retracted = row
        return LineageRun(
            run_id=source_run_id,
            name=name,
            step=step,
            uri=uri,
            opened_at=optional_utc_time(opened_at),
            retracted=bool(retracted),
        )

    def children(self, run_id: str, limit: int = CHILDREN_LISTED) -> tuple[tuple[LineageRun, ...], int]:
        """The latest `limit` runs started from `run_id`'s checkpoints, newest first, and how many
        there are in all."""
        rows = self.query.rows(CHILD_ROWS, (run_id, limit))
        children = tuple(
            LineageRun(
                run_id=child, name=name, step=step, uri=uri, opened_at=utc_time(opened_at), retracted=bool(retracted)
            )
            for child, name, step, uri, opened_at, retracted in rows
        )
        if len(children) < limit:
            return children, len(children)
        count = self.query.row(CHILD_COUNT, (run_id,))
        return children, int(count[0]) if count else len(children)

    def opened_since(self, run_id: str, position: int, limit: int) -> list[tuple[int, str]]:
        """(position, run id) of at most `limit` runs opened from `run_id`'s checkpoints at
        `position` or after, in the log's order."""
        return [(int(at), str(child)) for at, child in self.query.rows(CHILDREN_OPENED, (run_id, position, limit))]
