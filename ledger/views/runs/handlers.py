"""How each Run event changes the runs view (its tables: ledger.views.runs.schema); the lease rows'
handlers (ledger.views.runs.leases) run after these."""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.views.handling import ViewHandlers, both, dump, to_epoch
from ledger.views.runs.leases import lease_handlers
from ledger.views.store import ViewCursor

__all__ = ["runs_handlers"]

_json_decode = msgspec.json.decode


def _run_opened(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "INSERT INTO view_runs (run_id, run_key, name, status, spec, summary, error, opened_at, finished_at,"
        " current_attempt, last_step, position) VALUES (?, ?, ?, 'running', ?, '{}', '', ?, NULL, 0, NULL, ?)",
        (str(e.originator_id), e.run_key, e.name, dump(e.spec), to_epoch(e.timestamp), position),
    )


def _attempt_started(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    floor = -1 if e.resumed_from_step is None else e.resumed_from_step
    c.execute("UPDATE view_attempts SET ended = 1 WHERE run_id = ?", (run_id,))
    c.execute(
        "INSERT INTO view_attempts (run_id, number, attempt_id, label, started_at, resumed_from_step, ended)"
        " VALUES (?, ?, ?, ?, ?, ?, 0)",
        (run_id, e.attempt, e.attempt_id, e.label, to_epoch(e.timestamp), e.resumed_from_step),
    )
    c.execute("UPDATE view_checkpoints SET superseded = 1 WHERE run_id = ? AND step > ?", (run_id, floor))
    c.execute(
        "UPDATE view_runs SET current_attempt = ?, last_step = ?, status = 'running', position = ? WHERE run_id = ?",
        (e.attempt, e.resumed_from_step, position, run_id),
    )


def _steps_recorded(c: ViewCursor, e: Any, position: int) -> None:
    c.execute(
        "UPDATE view_runs SET last_step = ?, position = ? WHERE run_id = ?",
        (e.steps[-1], position, str(e.originator_id)),
    )


def _checkpoint_saved(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    c.execute(
        "INSERT INTO view_checkpoints (run_id, attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at,"
        " expires_at, digest, superseded) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)",
        (
            run_id,
            e.attempt,
            e.step,
            e.backend,
            e.uri,
            e.fidelity,
            e.sampler_uri,
            int(e.final),
            to_epoch(e.timestamp),
            to_epoch(e.expires_at),
            e.digest,
        ),
    )
    c.execute("UPDATE view_runs SET position = ? WHERE run_id = ?", (position, run_id))


def _merge_summary(c: ViewCursor, run_id: str, notes: dict[str, Any]) -> str:
    c.execute("SELECT summary FROM view_runs WHERE run_id = ?", (run_id,))
    row = c.fetchone()
    return dump({**_json_decode(row[0]), **notes})


def _finished(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    c.execute(
        "UPDATE view_runs SET status = ?, summary = ?, error = ?, finished_at = ?, position = ? WHERE run_id = ?",
        (e.status, _merge_summary(c, run_id, e.summary), e.error, to_epoch(e.timestamp), position, run_id),
    )
    c.execute("UPDATE view_attempts SET ended = 1 WHERE run_id = ?", (run_id,))


def _summary_noted(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    c.execute(
        "UPDATE view_runs SET summary = ?, position = ? WHERE run_id = ?",
        (_merge_summary(c, run_id, e.summary), position, run_id),
    )


def _tags_changed(c: ViewCursor, e: Any, position: int) -> None:
    run_id = str(e.originator_id)
    for key in [*e.removed, *e.set]:
        c.execute("DELETE FROM view_run_tags WHERE run_id = ? AND key = ?", (run_id, key))
    if e.set:
        c.executemany(
            "INSERT INTO view_run_tags (run_id, key, value) VALUES (?, ?, ?)",
            [(run_id, key, value) for key, value in e.set.items()],
        )
    c.execute("UPDATE view_runs SET position = ? WHERE run_id = ?", (position, run_id))


def runs_handlers() -> ViewHandlers:
    """The runs view's handler of each event class it projects: its own, each followed by the
    lease rows' handler of the same event."""
    from ledger.domain.runs import Run

    handlers: ViewHandlers = {
        Run.Opened: _run_opened,
        Run.AttemptStarted: _attempt_started,
        Run.StepsRecorded: _steps_recorded,
        Run.CheckpointSaved: _checkpoint_saved,
        Run.Finished: _finished,
        Run.SummaryNoted: _summary_noted,
        Run.TagsChanged: _tags_changed,
    }
    for event_class, lease_handler in lease_handlers().items():
        known = handlers.get(event_class)
        handlers[event_class] = lease_handler if known is None else both(known, lease_handler)  # type: ignore[arg-type]
    return handlers
