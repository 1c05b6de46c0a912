"""The reports view: each run's latest holdout, delta and notes (Run.ReportRecorded), one row per
run and kind; a correction replaces the row (notes merge), so a read is one query."""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.domain.run_reports import apply_report

__all__ = ["REPORT_ROWS", "report_recorded", "reports_of"]

REPORT_ROWS = "SELECT kind, report FROM view_run_reports WHERE run_id = ? ORDER BY kind"


def report_recorded(c: Any, e: Any, position: int) -> None:
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


def reports_of(rows: list[tuple[str, str]]) -> dict[str, Any]:
    """The rows of REPORT_ROWS as {kind: report}."""
    return {kind: msgspec.json.decode(report) for kind, report in rows}
