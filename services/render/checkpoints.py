"""Checkpoints for people: what a checkpoint is (live, best, superseded, expired, deleted, final),
its scores, a run's checkpoints, a retention plan and what a prune did."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from services.render.tables import table, when

__all__ = ["checkpoint_state", "checkpoints_table", "figure", "plan_table", "plan_text", "prune_table", "scores_text"]


def _same(checkpoint: Any, other: Any) -> bool:
    return other is not None and (checkpoint.step, checkpoint.attempt) == (other.step, other.attempt)


def checkpoint_state(checkpoint: Any, live: Any = None, best: Any = None, now: datetime | None = None) -> str:
    """What a checkpoint is: "live (resume)" (the resume point), "best", "superseded",
    "expired" (its handle's time passed), "deleted" (recorded deleted), "final"; "live" when it
    is none of the first five and still usable."""
    now = now or datetime.now(UTC)
    expired = bool(getattr(checkpoint, "expired", False)) or (
        checkpoint.expires_at is not None and checkpoint.expires_at <= now
    )
    deleted = getattr(checkpoint, "deleted_at", None) is not None
    marks = []
    if _same(checkpoint, live):
        marks.append("live (resume)")
    if _same(checkpoint, best):
        marks.append("best")
    if checkpoint.superseded:
        marks.append("superseded")
    if expired:
        marks.append("expired")
    if deleted:
        marks.append("deleted")
    if not marks:
        marks.append("live")
    if checkpoint.final:
        marks.append("final")
    return ", ".join(marks)


def scores_text(scores: Mapping[str, float] | None) -> str | None:
    """A checkpoint's scores as "eval_loss=0.412, win_rate=0.61" (by name); None without any."""
    if not scores:
        return None
    return ", ".join(f"{name}={figure(value)}" for name, value in sorted(scores.items()))


def figure(value: float) -> str:
    """A recorded value (a score, a metric) with six significant digits."""
    return f"{value:.6g}"


def checkpoints_table(checkpoints: Sequence[Any], state: Any, now: datetime) -> str:
    """A run's checkpoints: handle, times, scores and state (`checkpoint_state`) of each."""
    scored = any(getattr(c, "scores", None) for c in checkpoints)
    deleted = any(getattr(c, "deleted_at", None) is not None for c in checkpoints)
    headers = ["STEP", "ATTEMPT", "BACKEND", "URI", "FIDELITY", "SAVED", "EXPIRES"]
    headers += ["DELETED"] * deleted + ["SCORES"] * scored + ["STATE"]
    best = getattr(state, "best_checkpoint", None)
    return table(
        headers,
        [
            (
                c.step,
                c.attempt,
                c.handle.backend if c.handle else None,
                c.handle.uri if c.handle else None,
                c.handle.fidelity if c.handle else None,
                when(c.saved_at),
                when(c.expires_at),
                *([when(c.deleted_at)] if deleted else []),
                *([scores_text(c.scores)] if scored else []),
                checkpoint_state(c, state.checkpoint, best, now),
            )
            for c in checkpoints
        ],
    )


def plan_table(entries: Sequence[Any], actions: Sequence[tuple[str, str]] | None = None) -> str:
    """A retention plan: each checkpoint with its handle, scores and what retention does with it
    ("delete", else "keep: " and why). `actions`, one (result, detail) per entry, replaces the
    plan's column with what a prune did (deleted, kept, failed ...) and why."""
    scored = any(e.checkpoint.scores for e in entries)
    headers = ["STEP", "ATTEMPT", "BACKEND", "URI", "SAVED"] + ["SCORES"] * scored
    headers += ["RESULT", "DETAIL"] if actions is not None else ["PLAN"]
    rows = []
    for i, entry in enumerate(entries):
        c = entry.checkpoint
        row: list[Any] = [
            c.step,
            c.attempt,
            c.handle.backend if c.handle else None,
            c.handle.uri if c.handle else None,
            when(c.saved_at),
            *([scores_text(c.scores)] if scored else []),
        ]
        row += list(actions[i]) if actions is not None else [plan_text(entry)]
        rows.append(row)
    return table(headers, rows)


def plan_text(entry: Any) -> str:
    """ "delete", "deleted" (recorded deleted before), or "keep: resume, best" (why it is kept)."""
    if "deleted" in entry.kept_because:
        return "deleted"
    return "delete" if entry.delete else "keep: " + ", ".join(entry.kept_because)


def prune_table(results: Sequence[Any]) -> str:
    """What a prune did, per checkpoint: run, step, attempt, uri, result and why."""
    return table(
        ["RUN", "STEP", "ATTEMPT", "URI", "RESULT", "DETAIL"],
        [(r.run, r.step, r.attempt, r.uri or None, r.result, r.detail or None) for r in results],
        first=(0,),
    )
