"""Commands on a run's checkpoints: save one, find the one at a step (to register a version from, to
delete), record its deletion (unless ledger.domain.retention protects it), and keep the
checkpoints registry versions were made from.
"""

from __future__ import annotations

from typing import Any

from ledger.domain.base import Audit
from ledger.domain.errors import Conflict, Invalid, NotFound, Refused
from ledger.domain.reasons import Reason
from ledger.domain.retention import protections
from ledger.domain.run_attempts import check_writer, revive
from ledger.domain.runs import Run

__all__ = [
    "checkpoint_at",
    "delete_checkpoint",
    "note_registered",
    "save_checkpoint",
    "source_checkpoint",
]


def save_checkpoint(run: Run, audit: Audit, *, attempt: int, checkpoint: dict[str, Any]) -> int | None:
    """Record a durable checkpoint. Returns the version of an identical earlier save."""
    for saved in run.checkpoints:
        if saved["attempt"] == attempt and saved["step"] == checkpoint["step"]:
            # Scores are part of the identity; a checkpoint in a snapshot taken before they
            # existed has none (unscored: None or {}).
            if all(
                (saved.get(key) or {}) == (value or {}) if key == "scores" else saved[key] == value
                for key, value in checkpoint.items()
            ):
                return int(saved["version"])
            raise Conflict(
                f"a checkpoint at step {checkpoint['step']} was saved with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                step=checkpoint["step"],
            )
    check_writer(run, attempt)
    floor = run.attempts[-1]["resumed_from_step"]
    if floor is not None and checkpoint["step"] <= floor:
        raise Invalid(
            f"step {checkpoint['step']} is not after the attempt's resume point {floor}",
            reason=Reason.STEP_BEFORE_RESUME,
        )
    revive(run, audit, attempt=attempt)
    run.record(Run.CheckpointSaved, audit, attempt=attempt, **checkpoint)
    return None


def checkpoint_at(run: Run, step: int, attempt: int = 0) -> dict[str, Any]:
    """The checkpoint saved at `step` by `attempt`; attempt 0 means the one a resume at that
    step would use (not superseded), else the latest saved at that step. CHECKPOINT_NOT_FOUND."""
    found: dict[str, Any] | None = None
    for checkpoint in run.checkpoints:
        if checkpoint["step"] != step:
            continue
        if attempt:
            if checkpoint["attempt"] == attempt:
                return checkpoint
        elif found is None or found["superseded"] or not checkpoint["superseded"]:
            found = checkpoint
    if found is None:
        where = f" by attempt {attempt}" if attempt else ""
        raise NotFound(
            f"the run has no checkpoint at step {step}{where}", reason=Reason.CHECKPOINT_NOT_FOUND, step=step
        )
    return found


def delete_checkpoint(run: Run, audit: Audit, *, attempt: int, step: int, reason: str) -> int | None:
    """Record that a checkpoint's state was deleted. Refused (CHECKPOINT_PROTECTED) for the
    live resume point, the best checkpoint on the run's objective and a registered version's
    source (ledger.domain.retention). Deleting it again answers with the first record's version."""
    checkpoint = checkpoint_at(run, step, attempt)
    if checkpoint.get("deleted_at") is not None:
        return int(checkpoint["deleted_version"])
    # Allowed on a retracted run: reclaiming its storage is housekeeping, not a training record.
    kept = protections(run, audit.now).get((checkpoint["attempt"], step), ())
    if kept:
        raise Refused(
            f"the checkpoint at step {step} is protected ({', '.join(kept)})",
            reason=Reason.CHECKPOINT_PROTECTED,
            step=step,
            protected_by=",".join(kept),
        )
    run.record(Run.CheckpointDeleted, audit, attempt=checkpoint["attempt"], step=step, reason=reason)
    return None


def source_checkpoint(run: Run, *, step: int, attempt: int, digest: str) -> dict[str, Any]:
    """The checkpoint a registry version is made from: it exists, was not deleted and was
    saved with `digest` (CHECKPOINT_NOT_FOUND, CHECKPOINT_DELETED, CHECKPOINT_DIGEST_MISMATCH).
    A retracted run is no source (RUN_RETRACTED)."""
    run.check_not_retracted()
    checkpoint = checkpoint_at(run, step, attempt)
    if checkpoint.get("deleted_at") is not None:
        raise Refused(f"the checkpoint at step {step} was deleted", reason=Reason.CHECKPOINT_DELETED, step=step)
    if checkpoint["digest"] != digest:
        raise Refused(
            f"the checkpoint at step {step} was saved with digest {checkpoint['digest'] or '(none)'}, not {digest}",
            reason=Reason.CHECKPOINT_DIGEST_MISMATCH,
            step=step,
            checkpoint_digest=checkpoint["digest"],
        )
    return checkpoint


def note_registered(run: Run, audit: Audit, *, family: str, version: int, attempt: int, step: int) -> None:
    """Keep the checkpoint a registry version was made from (recorded with the registration)."""
    for entry in run.registered:
        if (entry["family"], entry["version"]) == (family, version):
            return
    run.record(Run.CheckpointRegistered, audit, family=family, version=version, attempt=attempt, step=step)
