"""Which checkpoints of a run matter, and which may be deleted: one rule for the ledger and its tools.

A checkpoint is *usable* when it was not superseded by a later attempt's resume, not deleted, and
its handle has not expired. Three kinds are protected and never offered for deletion:

- "resume": the live resume point, the most progressed usable checkpoint (what RunState.resume
  names, so a crashed trainer can always come back);
- "best": the usable checkpoint that scores best on the run's objective (ties go to the later
  step, then the later attempt), what a retrain would register;
- "registered": any checkpoint a registry version was made from.

A retention plan (`plan`) keeps those, keeps the newest `keep_last` usable checkpoints besides
("recent"), shows deleted ones and expired ones as such (an expired handle's provider has dropped
the state already: there is nothing left to delete), and offers every other checkpoint, superseded
ones included, for deletion. The functions read plain checkpoint mappings (the Run aggregate's
state and the views' rows have the same keys: attempt, step, scores, superseded, deleted_at,
expires_at), so the rule is written once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.domain.runs import Run

__all__ = ["PlanEntry", "Point", "best", "plan", "protected_points", "protections", "usable"]

Point = tuple[int, int]  # (attempt, step): a checkpoint's identity within its run
Checkpoint = Mapping[str, Any]


@dataclass(frozen=True)
class PlanEntry:
    """One checkpoint in a retention plan: delete it, or why it is kept."""

    checkpoint: Checkpoint
    delete: bool
    kept_because: tuple[str, ...]


def _expired(checkpoint: Checkpoint, now: datetime) -> bool:
    expires_at = checkpoint.get("expires_at")
    return expires_at is not None and expires_at <= now


def usable(checkpoint: Checkpoint, now: datetime) -> bool:
    """Not superseded, not deleted, not expired: a resume or a registration could use it."""
    return not checkpoint.get("superseded") and checkpoint.get("deleted_at") is None and not _expired(checkpoint, now)


def best(
    checkpoints: Iterable[Checkpoint],
    metric: str,
    mode: str,
    now: datetime,
    *,
    include_superseded: bool = False,
) -> tuple[Checkpoint, float] | None:
    """The checkpoint with the best score on `metric` ("min" or "max" is better), among the usable
    ones (and superseded ones when asked; never deleted or expired ones), with its score; None when
    none has the score. Ties go to the later step, then the later attempt."""
    chosen: tuple[Checkpoint, float] | None = None
    for checkpoint in checkpoints:
        if checkpoint.get("deleted_at") is not None or _expired(checkpoint, now):
            continue
        if checkpoint.get("superseded") and not include_superseded:
            continue
        score = (checkpoint.get("scores") or {}).get(metric)
        if score is None or not math.isfinite(score):
            continue
        if chosen is None:
            chosen = (checkpoint, score)
            continue
        held = chosen[1]
        better = score < held if mode == "min" else score > held
        tied = score == held and (checkpoint["step"], checkpoint["attempt"]) > (
            chosen[0]["step"],
            chosen[0]["attempt"],
        )
        if better or tied:
            chosen = (checkpoint, score)
    return chosen


def protected_points(
    checkpoints: Sequence[Checkpoint],
    objective: Mapping[str, str] | None,
    registered: Iterable[Point],
    now: datetime,
) -> dict[Point, tuple[str, ...]]:
    """The protected checkpoints among `checkpoints`, each with why ("resume", "best", "registered")."""
    kept: dict[Point, list[str]] = {}
    live = [checkpoint for checkpoint in checkpoints if usable(checkpoint, now)]
    if live:
        resume = max(live, key=lambda checkpoint: (checkpoint["step"], checkpoint["attempt"]))
        kept.setdefault((resume["attempt"], resume["step"]), []).append("resume")
    if objective:
        found = best(checkpoints, objective["metric"], objective["mode"], now)
        if found is not None:
            kept.setdefault((found[0]["attempt"], found[0]["step"]), []).append("best")
    points = {(checkpoint["attempt"], checkpoint["step"]) for checkpoint in checkpoints}
    for point in registered:
        if point in points and "registered" not in kept.get(point, ()):
            kept.setdefault(point, []).append("registered")
    return {point: tuple(reasons) for point, reasons in kept.items()}


def protections(run: Run, now: datetime) -> dict[Point, tuple[str, ...]]:
    """The run's protected checkpoints, each with why ("resume", "best", "registered")."""
    registered = [(entry["attempt"], entry["step"]) for entry in run.registered]
    return protected_points(run.checkpoints, run.objective, registered, now)


def plan(
    checkpoints: Sequence[Checkpoint],
    *,
    objective: Mapping[str, str] | None,
    registered: Iterable[Point],
    now: datetime,
    keep_last: int = 0,
) -> list[PlanEntry]:
    """What retention does with each checkpoint, in (step, attempt) order. `registered` names
    the (attempt, step) of every checkpoint a registry version was made from."""
    kept = protected_points(checkpoints, objective, registered, now)
    live = sorted(
        (checkpoint for checkpoint in checkpoints if usable(checkpoint, now)),
        key=lambda checkpoint: (checkpoint["step"], checkpoint["attempt"]),
    )
    recent = (
        {(checkpoint["attempt"], checkpoint["step"]) for checkpoint in live[len(live) - keep_last :]}
        if keep_last > 0
        else set()
    )
    entries: list[PlanEntry] = []
    for checkpoint in sorted(checkpoints, key=lambda checkpoint: (checkpoint["step"], checkpoint["attempt"])):
        point = (checkpoint["attempt"], checkpoint["step"])
        reasons = list(kept.get(point, ()))
        if point in recent:
            reasons.append("recent")
        if checkpoint.get("deleted_at") is not None:
            reasons = ["deleted"]
        elif not reasons and _expired(checkpoint, now):
            reasons = ["expired"]
        entries.append(PlanEntry(checkpoint=checkpoint, delete=not reasons, kept_because=tuple(reasons)))
    return entries
