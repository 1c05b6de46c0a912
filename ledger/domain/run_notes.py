"""Commands on what a run records besides its training: summary notes, reports
(ledger.domain.run_reports), datasets, the provider sessions it used, and its retraction. Each is
allowed after the run finished (provenance may come late); none on a retracted run.
"""

from __future__ import annotations

from typing import Any

from ledger.domain import run_reports
from ledger.domain.base import Audit
from ledger.domain.errors import Conflict, Invalid, NotFound
from ledger.domain.limits import SUMMARY_BYTES_MAX, check_document_bytes
from ledger.domain.reasons import Reason
from ledger.domain.runs import Run

__all__ = [
    "DATASETS_MAX",
    "SESSIONS_MAX",
    "check_summary",
    "link_session",
    "note_summary",
    "record_dataset",
    "record_report",
    "retract",
]

# How many datasets one run may record (each RunState lists them all).
DATASETS_MAX = 64
# How many provider sessions one run may be linked to (a session per attempt, and then some).
SESSIONS_MAX = 1_024


def note_summary(run: Run, audit: Audit, *, summary: dict[str, Any]) -> int | None:
    """Merge notes into the summary; allowed after finish (a correction keeps the status)."""
    if all(run.summary.get(key) == value for key, value in summary.items()):
        return run.version
    run.check_not_retracted()
    check_summary(run, summary)
    run.record(Run.SummaryNoted, audit, summary=summary)
    return None


def record_report(run: Run, audit: Audit, *, kind: str, report: dict[str, Any]) -> int | None:
    """Record a holdout, delta or notes report (ledger.domain.run_reports); allowed after
    finish (a correction keeps the status); the same report again is a duplicate."""
    reports = run.__dict__.get("reports", {})
    if run_reports.is_recorded(reports, kind, report):
        return run.version
    run.check_not_retracted()
    if kind == "notes":
        run_reports.check_notes_bytes(reports, report)
    run.record(Run.ReportRecorded, audit, kind=kind, report=report)
    return None


def check_summary(run: Run, notes: dict[str, Any]) -> None:
    """The summary these notes would merge into stays within SUMMARY_BYTES_MAX, since every
    RunState carries it whole (SUMMARY_TOO_LARGE)."""
    check_document_bytes({**run.summary, **notes}, "summary", SUMMARY_BYTES_MAX, Reason.SUMMARY_TOO_LARGE)


def record_dataset(run: Run, audit: Audit, *, dataset: dict[str, Any]) -> int | None:
    """Record a dataset (role, digest, format, rows, tokens, source_uri, report). The same
    role and digest again answers with the first record's version when the payload is the
    same, else EXISTS_WITH_DIFFERENT_PAYLOAD. Allowed before the first attempt and after the
    finish (provenance may come late), refused on a retracted run; at most DATASETS_MAX."""
    for recorded in run.datasets:
        if recorded["role"] == dataset["role"] and recorded["digest"] == dataset["digest"]:
            if all(recorded[key] == value for key, value in dataset.items()):
                return int(recorded["version"])
            raise Conflict(
                f"the {dataset['role']} dataset {dataset['digest']} was recorded with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                digest=dataset["digest"],
            )
    run.check_not_retracted()
    if len(run.datasets) >= DATASETS_MAX:
        raise Invalid(
            f"the run has {DATASETS_MAX} datasets recorded already", reason=Reason.MAP_TOO_LARGE, limit=DATASETS_MAX
        )
    run.record(Run.DatasetRecorded, audit, **dataset)
    return None


def link_session(run: Run, audit: Audit, *, provider: str, session_id: str, attempt: int) -> int | None:
    """Link a provider's session to the run (allowed at any time: a bill comes after the run).
    Linking the same session again answers with the version of the first link."""
    sessions: dict[str, int] = getattr(run, "sessions", {})
    linked = sessions.get(f"{provider}/{session_id}")
    if linked is not None:
        return linked
    run.check_not_retracted()
    if len(sessions) >= SESSIONS_MAX:
        raise Invalid(
            f"the run has {SESSIONS_MAX} sessions linked already", reason=Reason.MAP_TOO_LARGE, limit=SESSIONS_MAX
        )
    if attempt and not any(entry["number"] == attempt for entry in run.attempts):
        raise NotFound(f"the run has no attempt {attempt}", reason=Reason.ATTEMPT_NOT_FOUND, attempt=attempt)
    run.record(Run.SessionLinked, audit, provider=provider, session_id=session_id, attempt=attempt)
    return None


def retract(run: Run, audit: Audit, *, reason: str) -> int | None:
    """Retract the run. Retracting again with the same reason answers with the first
    retraction's version; with another reason it is EXISTS_WITH_DIFFERENT_PAYLOAD."""
    retraction = run.retraction
    if retraction is not None:
        if retraction["reason"] == reason:
            return int(retraction["version"])
        raise Conflict(
            f"the run was retracted with another reason: {retraction['reason']}",
            reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
        )
    run.record(Run.Retracted, audit, reason=reason)
    return None
