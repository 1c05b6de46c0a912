"""How events change the provenance view (its tables: ledger.views.provenance.schema): runs'
objectives, plans, retractions and progress anchors, checkpoints' scores and deletions, datasets,
and the checkpoints registry versions were made from."""

from __future__ import annotations

from typing import Any

from ledger.views.handling import Names, ViewHandlers, dump, named, naming, to_epoch
from ledger.views.store import ViewCursor

__all__ = ["PROGRESS_WINDOW_S", "provenance_handlers"]

#: How old the newer progress anchor gets before it becomes the older one: the recent step rate
#: spans roughly one to two of these (ledger.views.provenance.reads.progress).
PROGRESS_WINDOW_S = 60.0


def _plan_opened(c: ViewCursor, e: Any, position: int) -> None:
    objective = getattr(e, "objective", None) or {}
    c.execute(
        "INSERT INTO view_run_plans (run_id, metric, mode, max_steps, retraction_reason, retraction_principal,"
        " retracted_at, anchor_time, anchor_step, recent_time, recent_step, last_time, last_step, position)"
        " VALUES (?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, ?)",
        (
            str(e.originator_id),
            objective.get("metric", ""),
            objective.get("mode", ""),
            getattr(e, "max_steps", None),
            position,
        ),
    )


def _plan_changed(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_run_plans SET max_steps = ?, position = ? WHERE run_id = ?",
        (e.max_steps, position, str(e.originator_id)),
    )


def _plan_attempt(c: ViewCursor, e: Any, position: int) -> None:
    # A new attempt's rate starts from its own first batch.
    run_id = str(e.originator_id)
    c.execute(
        "UPDATE view_run_plans SET anchor_time = NULL, anchor_step = NULL, recent_time = NULL, recent_step = NULL,"
        " last_time = NULL, last_step = NULL, position = ? WHERE run_id = ?",
        (position, run_id),
    )
    if getattr(e, "max_steps", None) is not None:
        c.execute("UPDATE view_run_plans SET max_steps = ? WHERE run_id = ?", (e.max_steps, run_id))


def _plan_steps(c: ViewCursor, e: Any, position: int) -> None:
    # One statement (every right-hand side reads the row as it was): the first batch of an
    # attempt sets both anchors; a batch a window after the newer anchor makes it the older one
    # and itself the newer; every batch is the last.
    t, step = to_epoch(e.timestamp), e.steps[-1]
    moved = "recent_time IS NULL OR ? - recent_time >= ?"
    c.execute(
        f"UPDATE view_run_plans SET"
        f" anchor_time = CASE WHEN recent_time IS NULL THEN ? WHEN ? - recent_time >= ? THEN recent_time"
        f" ELSE anchor_time END,"
        f" anchor_step = CASE WHEN recent_time IS NULL THEN ? WHEN ? - recent_time >= ? THEN recent_step"
        f" ELSE anchor_step END,"
        f" recent_time = CASE WHEN {moved} THEN ? ELSE recent_time END,"
        f" recent_step = CASE WHEN {moved} THEN ? ELSE recent_step END,"
        f" last_time = ?, last_step = ?, position = ? WHERE run_id = ?",
        (
            *(t, t, PROGRESS_WINDOW_S),
            *(step, t, PROGRESS_WINDOW_S),
            *(t, PROGRESS_WINDOW_S, t),
            *(t, PROGRESS_WINDOW_S, step),
            *(t, step, position, str(e.originator_id)),
        ),
    )


def _plan_retracted(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_run_plans SET retraction_reason = ?, retraction_principal = ?, retracted_at = ?, position = ?"
        " WHERE run_id = ?",
        (e.reason, e.principal, to_epoch(e.timestamp), position, str(e.originator_id)),
    )


def _checkpoint_scored(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_checkpoint_marks (run_id, attempt, step, scores, deleted_at, deleted_reason)"
        " VALUES (?, ?, ?, ?, NULL, NULL)",
        (str(e.originator_id), e.attempt, e.step, dump(getattr(e, "scores", None) or {})),
    )


def _checkpoint_deleted(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_checkpoint_marks SET deleted_at = ?, deleted_reason = ? WHERE run_id = ? AND attempt = ?"
        " AND step = ?",
        (to_epoch(e.timestamp), e.reason, str(e.originator_id), e.attempt, e.step),
    )


def _checkpoint_registered(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_registered_points (run_id, family, version, attempt, step) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (run_id, family, version) DO NOTHING",
        (str(e.originator_id), e.family, e.version, e.attempt, e.step),
    )


def _dataset_recorded(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_datasets (run_id, role, digest, format, rows, tokens, source_uri, report, recorded_at,"
        " position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            str(e.originator_id),
            e.role,
            e.digest,
            e.format,
            e.rows,
            e.tokens,
            e.source_uri,
            dump(e.report),
            to_epoch(e.timestamp),
            position,
        ),
    )


def _version_source(c: ViewCursor, e: Any, position: int, family: str) -> None:
    source = getattr(e, "source_checkpoint", None)
    if source:
        c.execute(
            "INSERT INTO view_version_sources (family, version, run_id, step, attempt, checkpoint_digest)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (family, e.version, source["run_id"], source["step"], source["attempt"], source["checkpoint_digest"]),
        )


def provenance_handlers(names: Names) -> ViewHandlers:
    """The provenance view's handler of each event class it projects, families named through
    `names`."""
    from ledger.domain.registry import Family
    from ledger.domain.runs import Run

    return {
        Run.Opened: _plan_opened,
        Run.PlanChanged: _plan_changed,
        Run.AttemptStarted: _plan_attempt,
        Run.StepsRecorded: _plan_steps,
        Run.Retracted: _plan_retracted,
        Run.CheckpointSaved: _checkpoint_scored,
        Run.CheckpointDeleted: _checkpoint_deleted,
        Run.CheckpointRegistered: _checkpoint_registered,
        Run.DatasetRecorded: _dataset_recorded,
        Family.Created: naming(names),
        Family.VersionRegistered: named(names, _version_source),
    }
