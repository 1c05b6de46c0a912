"""How Run events change the series view and the chart view (their tables:
ledger.views.series.schema). The chart view's rollup is gathered per chunk: ledger.views.series.rollup
computes and writes it; ledger.views.series.charts reads it."""

from __future__ import annotations

from typing import Any

from ledger.views.handling import ViewHandlers
from ledger.views.series.rollup import ChartRollup
from ledger.views.store import ViewCursor

__all__ = ["chart_handlers", "series_handlers"]


def _steps_recorded(c: ViewCursor, e: Any, position: int) -> None:
    # One row per batch, naming the event that holds its columns (a page reads them from the log,
    # ledger.views.series.pages): projecting costs the same for a batch of one step or ten
    # thousand, and the steps are stored once.
    c.execute(
        "INSERT INTO view_series (run_id, first_step, attempt, last_step, superseded_above, count, position)"
        " VALUES (?, ?, ?, ?, NULL, ?, ?)",
        (str(e.originator_id), e.steps[0], e.attempt, e.steps[-1], len(e.steps), position),
    )


def _attempt_started(c: ViewCursor, e: Any, position: int) -> None:
    # Steps above the new attempt's resume point, recorded by earlier attempts, are superseded:
    # a batch row keeps the lowest such floor, and its steps above it read as superseded.
    floor = -1 if e.resumed_from_step is None else e.resumed_from_step
    c.execute(
        "UPDATE view_series SET superseded_above = ? WHERE run_id = ? AND last_step > ? AND attempt < ?"
        " AND (superseded_above IS NULL OR superseded_above > ?)",
        (floor, str(e.originator_id), floor, e.attempt, floor),
    )


def series_handlers() -> ViewHandlers:
    """The series view's handler of each event class it projects."""
    from ledger.domain.runs import Run

    return {Run.StepsRecorded: _steps_recorded, Run.AttemptStarted: _attempt_started}


def chart_handlers() -> ViewHandlers:
    """The chart view's one handler: the rollup of step batches, gathered per chunk."""
    from ledger.domain.runs import Run

    return {Run.StepsRecorded: ChartRollup()}
