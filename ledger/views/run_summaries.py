"""A run as a list shows it (RunSummary): the columns that make one and how a row becomes one,
shared by ListRuns (ledger.views.queries) and run search (ledger.views.search.reads)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from ledger.views.models import RunSummary
from ledger.views.provenance import progress
from ledger.views.rows import utc_time

__all__ = ["PRESUMED", "RUN_SUMMARY_SELECT", "run_summaries"]

# An account's totals with what the ledger presumed spent for its abandoned holds.
PRESUMED = "COALESCE((SELECT p.presumed FROM view_presumed p WHERE p.account = a.account), 0)"
#: A run's summary over view_runs r, its account a and its plan p; a query adds its WHERE and order.
RUN_SUMMARY_SELECT = (
    "SELECT r.run_id, r.name, r.status, r.current_attempt, r.last_step, r.opened_at,"
    " COALESCE(a.committed, 0), COALESCE(a.parent, ''), a.cap, COALESCE(a.pending, 0),"
    " p.max_steps, p.anchor_time, p.anchor_step, p.last_time, p.last_step, p.retracted_at,"
    f" {PRESUMED}"
    " FROM view_runs r LEFT JOIN view_accounts a ON a.account = r.run_id"
    " LEFT JOIN view_run_plans p ON p.run_id = r.run_id"
)


def run_summaries(rows: Iterable[Any], now: datetime) -> tuple[RunSummary, ...]:
    """The rows of RUN_SUMMARY_SELECT as RunSummary, progress as of `now` (the ETA)."""
    return tuple(
        RunSummary(
            run_id=run_id,
            name=name,
            status=status,
            current_attempt=current or 0,
            last_step=last_step,
            committed_usd_micro=committed,
            opened_at=utc_time(opened_at),
            parent_account=parent,
            cap_usd_micro=cap,
            pending_usd_micro=pending,
            progress=progress(
                max_steps=max_steps,
                step=last_step,
                running=status == "running",
                done=status == "done",
                anchor=None if anchor_time is None else (anchor_time, anchor_step),
                last=None if last_time is None else (last_time, last_batch_step),
                now=now,
            ),
            retracted=retracted_at is not None,
            presumed_usd_micro=presumed,
        )
        for (
            run_id,
            name,
            status,
            current,
            last_step,
            opened_at,
            committed,
            parent,
            cap,
            pending,
            max_steps,
            anchor_time,
            anchor_step,
            last_time,
            last_batch_step,
            retracted_at,
            presumed,
        ) in rows
    )
