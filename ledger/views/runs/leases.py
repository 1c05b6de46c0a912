"""The runs view's lease rows: the lease of each run's current attempt, its last sign of life and
when it lapses (view_leases), and the run's status as it is lost and returns. The lease sweep
(ledger.application.leases) asks `LeaseReads.lapsed_leases` which runs to look at; the aggregate
decides. The table is the runs view's (ledger.views.runs.schema).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger.views.handling import Handler
from ledger.views.store import Query, ViewCursor

__all__ = ["LEASE_ROW", "LeaseReads", "lease_handlers"]

LEASE_ROW = "SELECT attempt, lease_s, last_seen_at, expires_at, lost_at FROM view_leases WHERE run_id = ?"


def _started(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    if e.lease_s is None:  # An attempt started before leases existed: nothing to lapse.
        c.execute("DELETE FROM view_leases WHERE run_id = ?", (run_id,))
        return
    seen = e.timestamp.timestamp()
    c.execute(
        "INSERT INTO view_leases (run_id, attempt, lease_s, last_seen_at, expires_at, lost_at)"
        " VALUES (?, ?, ?, ?, ?, NULL) ON CONFLICT (run_id) DO UPDATE SET attempt = excluded.attempt,"
        " lease_s = excluded.lease_s, last_seen_at = excluded.last_seen_at, expires_at = excluded.expires_at,"
        " lost_at = NULL",
        (run_id, e.attempt, e.lease_s, seen, seen + e.lease_s),
    )


def _seen(c: ViewCursor, e: Any, position: int) -> None:
    """A write or heartbeat of the attempt renews its lease (a lost run's first write is preceded
    by AttemptReturned, which reopens the lease)."""
    seen = e.timestamp.timestamp()
    c.execute(
        "UPDATE view_leases SET last_seen_at = ?, expires_at = CASE WHEN expires_at IS NULL THEN NULL"
        " ELSE ? + lease_s END WHERE run_id = ? AND attempt = ?",
        (seen, seen, str(e.originator_id), e.attempt),
    )


def _lost(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    c.execute(
        "UPDATE view_leases SET expires_at = NULL, lost_at = ? WHERE run_id = ?", (e.timestamp.timestamp(), run_id)
    )
    c.execute("UPDATE view_runs SET status = 'lost', position = ? WHERE run_id = ?", (position, run_id))


def _returned(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    seen = e.timestamp.timestamp()
    c.execute(
        "UPDATE view_leases SET last_seen_at = ?, expires_at = ? + lease_s, lost_at = NULL WHERE run_id = ?",
        (seen, seen, run_id),
    )
    c.execute("UPDATE view_runs SET status = 'running', position = ? WHERE run_id = ?", (position, run_id))


def _ended(c: ViewCursor, e: Any, position: int) -> None:
    """A finished or retracted run has no lease to lapse."""
    c.execute("UPDATE view_leases SET expires_at = NULL WHERE run_id = ?", (str(e.originator_id),))


def lease_handlers() -> dict[type, Handler]:
    """The lease rows' handler of each Run event (the runs view runs each after its own)."""
    from ledger.domain.runs import Run

    return {
        Run.AttemptStarted: _started,
        Run.StepsRecorded: _seen,
        Run.CheckpointSaved: _seen,
        Run.AttemptHeartbeat: _seen,
        Run.AttemptLost: _lost,
        Run.AttemptReturned: _returned,
        Run.Finished: _ended,
        Run.Retracted: _ended,
    }


class LeaseReads:
    """The sweep's question to the runs view."""

    def __init__(self, query: Query) -> None:
        self.query = query

    def lapsed_leases(self, now: datetime, limit: int) -> list[str]:
        """The ids of runs whose current attempt's lease lapsed by `now`, at most `limit`."""
        rows = self.query.rows(
            "SELECT run_id FROM view_leases WHERE expires_at <= ? ORDER BY expires_at LIMIT ?", (now.timestamp(), limit)
        )
        return [row[0] for row in rows]
