"""A run's checkpoints as read models: a row of view_checkpoints alone (`to_checkpoint`), or joined
with its marks of the provenance view, its scores and deletion (`to_scored_checkpoint`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from ledger.views.models import Checkpoint, StateHandle
from ledger.views.rows import decode, optional_utc_time, utc_time

__all__ = ["CHECKPOINT_COLUMNS", "CHECKPOINT_SELECT", "to_checkpoint", "to_scored_checkpoint"]

CHECKPOINT_COLUMNS = "attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at, expires_at, digest"
#: A run's checkpoints with their scores and deletions (filter on c.run_id).
CHECKPOINT_SELECT = (
    "SELECT c.attempt, c.step, c.backend, c.uri, c.fidelity, c.sampler_uri, c.final, c.saved_at, c.expires_at,"
    " c.digest, c.superseded, m.scores, m.deleted_at FROM view_checkpoints c LEFT JOIN view_checkpoint_marks m"
    " ON m.run_id = c.run_id AND m.attempt = c.attempt AND m.step = c.step"
)


def to_checkpoint(row: Any) -> Checkpoint:
    """A row of CHECKPOINT_COLUMNS as a Checkpoint."""
    attempt, step, backend, uri, fidelity, sampler_uri, final, saved_at, expires_at, digest = row
    return Checkpoint(
        attempt=attempt,
        step=step,
        handle=StateHandle(backend=backend, uri=uri, fidelity=fidelity),
        sampler_uri=sampler_uri or "",
        final=bool(final),
        saved_at=utc_time(saved_at),
        expires_at=optional_utc_time(expires_at),
        digest=digest or "",
    )


def to_scored_checkpoint(row: Sequence[Any], now: float) -> Checkpoint:
    """A row of CHECKPOINT_SELECT as a Checkpoint, `expired` as of `now` (epoch seconds)."""
    superseded, scores, deleted_at = row[10:13]
    expires_at = row[8]
    return msgspec.structs.replace(
        to_checkpoint(row[:10]),
        superseded=bool(superseded),
        scores=decode(scores) if scores else {},
        deleted_at=optional_utc_time(deleted_at),
        expired=expires_at is not None and expires_at <= now,
    )
