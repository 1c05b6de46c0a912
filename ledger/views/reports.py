"""The reports view: each run's latest holdout, delta and notes (Run.ReportRecorded), one row per
run and kind; a correction replaces the row (notes merge), so a read is one query. A view of its
own, so a ledger written before it existed builds it from its log when opened."""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.domain.run_reports import apply_report
from ledger.views.handling import ViewHandlers
from ledger.views.store import Table, ViewCursor

__all__ = ["REPORTS_TABLES", "REPORT_ROWS", "report_recorded", "reports_handlers", "reports_of"]

REPORTS_TABLES: dict[str, Table] = {
    # A run's latest report of each kind.
    "view_run_reports": Table(
        {"run_id": str, "kind": str, "report": str, "position": int},
        ("run_id", "kind"),
        [],
        "reports",
    ),
}

REPORT_ROWS = "SELECT kind, report FROM view_run_reports WHERE run_id = ? ORDER BY kind"


def report_recorded(c: ViewCursor, e: Any, position: int) -> None:
    """Run.ReportRecorded: replace the run's report of that kind (notes: merge into them)."""
    run_id = str(e.originator_id)
    c.execute("SELECT kind, report FROM view_run_reports WHERE run_id = ? AND kind = ?", (run_id, e.kind))
    reports = {kind: msgspec.json.decode(report) for kind, report in c.fetchall()}
    apply_report(reports, e.kind, e.report)
    c.execute("DELETE FROM view_run_reports WHERE run_id = ? AND kind = ?", (run_id, e.kind))
    c.execute(
        "INSERT INTO view_run_reports (run_id, kind, report, position) VALUES (?, ?, ?, ?)",
        (run_id, e.kind, msgspec.json.encode(reports[e.kind]).decode(), position),
    )


def reports_handlers() -> ViewHandlers:
    """The reports view's handler of each event class it projects."""
    from ledger.domain.runs import Run

    return {Run.ReportRecorded: report_recorded}


def reports_of(rows: list[tuple[str, str]]) -> dict[str, Any]:
    """The rows of REPORT_ROWS as {kind: report}."""
    return {kind: msgspec.json.decode(report) for kind, report in rows}
