"""Reads of the provenance view (its tables: ledger.views.provenance.schema): a run's objective,
plan and progress, retraction, datasets, its checkpoints with their scores and deletions, the best
checkpoint, the retention plan and the states no prune may delete. Registry versions with the
checkpoint each was made from are read with the registry (ledger.views.registry.reads).

The best checkpoint and the retention plan are answered by ledger.domain.retention from the
checkpoints as the views hold them (the same keys as the Run aggregate's: attempt, step, scores,
superseded, deleted_at, expires_at), so the ledger has one rule for what matters.

Progress is computed at read time from the anchors the view keeps per run
(ledger.views.provenance.handlers, PROGRESS_WINDOW_S): the rate is the steps between the older
anchor and the last batch over the server time between them, so it covers roughly the last one to
two windows of the current attempt; the ETA is `now` plus the steps left at that rate, only while
the run is running.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from ledger.domain import retention
from ledger.views.models import (
    BestCheckpoint,
    Checkpoint,
    Dataset,
    Objective,
    Progress,
    ProtectedPage,
    ProtectedState,
    PruneEntry,
    PrunePage,
    Retraction,
)
from ledger.views.rows import decode, utc_time
from ledger.views.runs.checkpoints import CHECKPOINT_SELECT, to_scored_checkpoint
from ledger.views.store import Query

__all__ = ["DATASET_ROWS", "PLAN_ROW", "ProvenanceReads", "progress", "spec_max_steps"]

_PLAN_COLUMNS = (
    "metric, mode, max_steps, retraction_reason, retraction_principal, retracted_at, anchor_time, anchor_step,"
    " last_time, last_step"
)
PLAN_ROW = f"SELECT {_PLAN_COLUMNS} FROM view_run_plans WHERE run_id = ?"
PROTECTED_RUNS = (
    "SELECT r.run_id, p.metric, p.mode FROM view_runs r LEFT JOIN view_run_plans p ON p.run_id = r.run_id"
    " WHERE r.run_id > ? ORDER BY r.run_id LIMIT ?"
)
PROTECTED_ARTIFACTS = (
    "SELECT family, version, artifact_uri FROM view_versions WHERE family > ? OR (family = ? AND version > ?)"
    " ORDER BY family, version LIMIT ?"
)
DATASET_ROWS = (
    "SELECT role, digest, format, rows, tokens, source_uri, report, recorded_at FROM view_datasets"
    " WHERE run_id = ? ORDER BY position, role, digest"
)


def _mapping(checkpoint: Checkpoint) -> dict[str, Any]:
    """A checkpoint in the form ledger.domain.retention reads (with the model kept beside it)."""
    return {
        "attempt": checkpoint.attempt,
        "step": checkpoint.step,
        "scores": checkpoint.scores,
        "superseded": checkpoint.superseded,
        "deleted_at": checkpoint.deleted_at,
        "expires_at": checkpoint.expires_at,
        "model": checkpoint,
    }


def progress(
    *,
    max_steps: int | None,
    step: int | None,
    running: bool,
    done: bool = False,
    anchor: tuple[float, int] | None,
    last: tuple[float, int] | None,
    now: datetime,
) -> Progress:
    """How far a run has come: `anchor` and `last` are (epoch seconds, step) of the older anchor
    and the last batch of the current attempt. The rate needs time between them; the ETA needs a
    positive rate, a plan and a running run. A run `done` has come the whole way (its last step of
    a 0-based loop is max_steps - 1)."""
    fraction = None
    if max_steps and step is not None:
        fraction = 1.0 if done else min(1.0, max(0.0, step / max_steps))
    rate = None
    if anchor is not None and last is not None and last[0] > anchor[0] and last[1] >= anchor[1]:
        rate = (last[1] - anchor[1]) / (last[0] - anchor[0])
    eta = None
    if running and rate and max_steps and step is not None:
        eta = now + timedelta(seconds=max(0, max_steps - step) / rate)
    return Progress(max_steps=max_steps, step=step, fraction=fraction, steps_per_second=rate, eta=eta)


def spec_max_steps(spec: Any) -> int | None:
    """The steps a run's spec says it trains, for the progress of a run with no plan: `max_steps`
    at the spec's top, else among its `hyperparameters` (where the trainer integrations put it);
    None unless it is a positive whole number."""
    if not isinstance(spec, dict):
        return None
    for holder in (spec, spec.get("hyperparameters")):
        value = holder.get("max_steps") if isinstance(holder, dict) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if value > 0 and float(value).is_integer():
            return int(value)
    return None


class ProvenanceReads:
    """Reads of the provenance view, run by `query`."""

    def __init__(self, query: Query) -> None:
        self.query = query

    def run_plan(self, run_id: str) -> tuple[Any, ...] | None:
        """The run's row of view_run_plans (_PLAN_COLUMNS), None before the view has it."""
        row = self.query.row(PLAN_ROW, (run_id,))
        return tuple(row) if row else None

    @staticmethod
    def plan_parts(
        plan: Sequence[Any] | None,
        *,
        status: str,
        last_step: int | None,
        now: datetime,
        spec: dict[str, Any] | None = None,
    ) -> tuple[Objective | None, Retraction | None, Progress]:
        """The objective, retraction and progress a row of _PLAN_COLUMNS says; with no plan,
        progress is against the `spec`'s max_steps (spec_max_steps)."""
        if plan is None:
            planned = spec_max_steps(spec)
            return (
                None,
                None,
                progress(max_steps=planned, step=last_step, running=False, anchor=None, last=None, now=now),
            )
        metric, mode, max_steps, reason, principal, retracted_at, anchor_time, anchor_step, last_time, last = plan
        if max_steps is None:
            max_steps = spec_max_steps(spec)
        objective = Objective(metric=metric, mode=mode) if metric else None
        retraction = (
            None
            if retracted_at is None
            else Retraction(reason=reason or "", retracted_at=utc_time(retracted_at), principal=principal or "")
        )
        return (
            objective,
            retraction,
            progress(
                max_steps=max_steps,
                step=last_step,
                running=status == "running",
                done=status == "done",
                anchor=None if anchor_time is None else (anchor_time, anchor_step),
                last=None if last_time is None else (last_time, last),
                now=now,
            ),
        )

    def datasets(self, run_id: str) -> tuple[Dataset, ...]:
        """The run's datasets in the order they were recorded."""
        return tuple(
            Dataset(
                role=role,
                digest=digest,
                format=format_,
                rows=rows,
                tokens=tokens,
                source_uri=source_uri or "",
                report=decode(report),
                recorded_at=utc_time(recorded_at),
            )
            for role, digest, format_, rows, tokens, source_uri, report, recorded_at in self.query.rows(
                DATASET_ROWS, (run_id,)
            )
        )

    def run_checkpoints(self, run_id: str, now: datetime, limit: int | None = None) -> list[Checkpoint]:
        """The run's checkpoints in (step, attempt) order with scores and deletions (at most `limit`)."""
        sql = f"{CHECKPOINT_SELECT} WHERE c.run_id = ? ORDER BY c.step, c.attempt"
        params: tuple[Any, ...] = (run_id,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (run_id, limit)
        moment = now.timestamp()
        return [to_scored_checkpoint(row, moment) for row in self.query.rows(sql, params)]

    def registered_points(self, run_id: str) -> list[tuple[int, int]]:
        """The (attempt, step) of every checkpoint of the run a registry version was made from."""
        return [
            (attempt, step)
            for attempt, step in self.query.rows(
                "SELECT attempt, step FROM view_registered_points WHERE run_id = ?", (run_id,)
            )
        ]

    def best_checkpoint(
        self, run_id: str, *, metric: str, mode: str, include_superseded: bool, now: datetime
    ) -> BestCheckpoint | None:
        """retention.best over the run's checkpoints, None when none has the score."""
        checkpoints = [_mapping(checkpoint) for checkpoint in self.run_checkpoints(run_id, now)]
        found = retention.best(checkpoints, metric, mode, now, include_superseded=include_superseded)
        if found is None:
            return None
        return BestCheckpoint(checkpoint=found[0]["model"], score=found[1], metric=metric, mode=mode)  # type: ignore[arg-type]

    def prune_page(
        self,
        run_id: str,
        *,
        objective: Objective | None,
        keep_last: int,
        after: tuple[int, int] | None,
        limit: int,
        now: datetime,
    ) -> PrunePage:
        """A page of retention.plan over the run's checkpoints: the entries after `after` (a
        (step, attempt)), at most `limit`."""
        checkpoints = [_mapping(checkpoint) for checkpoint in self.run_checkpoints(run_id, now)]
        entries = retention.plan(
            checkpoints,
            objective=None if objective is None else {"metric": objective.metric, "mode": objective.mode},
            registered=self.registered_points(run_id),
            now=now,
            keep_last=keep_last,
        )
        if after is not None:
            entries = [e for e in entries if (e.checkpoint["step"], e.checkpoint["attempt"]) > after]
        page = entries[:limit]
        more = len(entries) > limit
        return PrunePage(
            entries=tuple(
                PruneEntry(checkpoint=entry.checkpoint["model"], delete=entry.delete, kept_because=entry.kept_because)
                for entry in page
            ),
            after=(page[-1].checkpoint["step"], page[-1].checkpoint["attempt"]) if more and page else None,
        )

    def protected_page(self, *, after: tuple[str, str, int] | None, limit: int, now: datetime) -> ProtectedPage:
        """A page of the states no prune may delete (ProtectedPage): the protected checkpoints of
        up to `limit` runs after `after`, then up to `limit` registry versions' artifacts."""
        phase, key, version = after or ("runs", "", 0)
        if phase == "runs":
            rows = self.query.rows(PROTECTED_RUNS, (key, limit + 1))
            states: list[ProtectedState] = []
            for run_id, metric, mode in rows[:limit]:
                states += self._protected_of_run(run_id, metric, mode, now)
            if len(rows) > limit:
                return ProtectedPage(states=tuple(states), after=("runs", rows[limit - 1][0], 0))
            return ProtectedPage(states=tuple(states), after=("versions", "", 0))
        found = self.query.rows(PROTECTED_ARTIFACTS, (key, key, version, limit + 1))
        states = [ProtectedState(uri=uri, backend="", why=("artifact",)) for _, _, uri in found[:limit] if uri]
        more = len(found) > limit
        return ProtectedPage(
            states=tuple(states), after=("versions", found[limit - 1][0], found[limit - 1][1]) if more else None
        )

    def _protected_of_run(
        self, run_id: str, metric: str | None, mode: str | None, now: datetime
    ) -> list[ProtectedState]:
        checkpoints = {(c.attempt, c.step): c for c in self.run_checkpoints(run_id, now)}
        kept = retention.protected_points(
            [_mapping(checkpoint) for checkpoint in checkpoints.values()],
            {"metric": metric, "mode": mode or "min"} if metric else None,
            self.registered_points(run_id),
            now,
        )
        states: list[ProtectedState] = []
        for point, why in sorted(kept.items()):
            checkpoint = checkpoints[point]
            for uri in (checkpoint.handle.uri, checkpoint.sampler_uri):
                if uri:
                    states.append(ProtectedState(uri=uri, backend=checkpoint.handle.backend, why=why))
        return states
