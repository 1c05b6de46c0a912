"""Commands on a run's steps: record a batch of steps (ledger.domain.batches) for the current
attempt, or answer an identical retry with the version that first recorded it, at any distance.

Steps stay out of the Run's state (ledger.domain.runs): it keeps the last step of the current
attempt and a bounded window of batch fingerprints (BATCH_WINDOW); older batches are recalled
from the keys index (ledger.storage.keys) through `recall`.
"""

from __future__ import annotations

from collections.abc import Callable

from ledger.domain import runs
from ledger.domain.base import Audit
from ledger.domain.batches import StepBatch
from ledger.domain.errors import Conflict, Invalid
from ledger.domain.reasons import Reason
from ledger.domain.run_attempts import check_writer, revive
from ledger.domain.runs import Run

__all__ = ["RecallBatch", "record_steps"]

# Recalls the (digest, version) of the batch an attempt recorded from a first to a last step.
RecallBatch = Callable[[int, int, int], "tuple[str, int] | None"]


def record_steps(run: Run, audit: Audit, batch: StepBatch, recall: RecallBatch | None = None) -> int | None:
    """Record one batch. Returns the version of the identical batch recorded before (a
    retry), or None when a new event was recorded. `recall` finds batches older than the
    state's window."""
    current = run.current_attempt
    if batch.attempt == current and run.last_step is not None and batch.steps[0] <= run.last_step:
        return _match_recorded(run, batch, recall)
    if batch.attempt < current:
        for first, last, digest, version in run.fenced_batches:
            if (first, last, digest) == (batch.steps[0], batch.steps[-1], batch.digest):
                return int(version)
        found = recall(batch.attempt, batch.steps[0], batch.steps[-1]) if recall is not None else None
        if found is not None and found[0] == batch.digest:
            return found[1]
    check_writer(run, batch.attempt)
    revive(run, audit, attempt=batch.attempt)
    run.record(
        run.StepsRecorded,
        audit,
        attempt=batch.attempt,
        steps=batch.steps,
        tokens=batch.tokens,
        usd_micro=batch.usd_micro,
        metrics=batch.metrics,
        digest=batch.digest,
    )
    return None


def _match_recorded(run: Run, batch: StepBatch, recall: RecallBatch | None) -> int:
    first, last = batch.steps[0], batch.steps[-1]
    for recorded_first, recorded_last, digest, version in reversed(run.batches):
        if recorded_first == first and recorded_last == last and digest == batch.digest:
            return int(version)
        if recorded_first <= last and first <= recorded_last:
            raise Conflict(
                f"steps {first}..{last} overlap steps already recorded with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                first_step=first,
                last_step=last,
            )
    floor = run.attempts[-1]["resumed_from_step"]
    if floor is not None and first <= floor:
        raise Invalid(
            f"step {first} is not after the attempt's resume point {floor}",
            reason=Reason.STEP_BEFORE_RESUME,
            step=first,
            resumed_from_step=floor,
        )
    # Until the window has pruned a batch it holds every batch of the attempt, so a step
    # below all of them was never recorded: it does not increase.
    if run.batches and (first >= run.batches[0][0] or len(run.batches) < runs.BATCH_WINDOW):
        raise Invalid(
            f"steps must increase within an attempt: step {first} is not after {run.last_step}",
            reason=Reason.STEPS_NOT_INCREASING,
            step=first,
            last_step=run.last_step,
        )
    found = recall(batch.attempt, first, last) if recall is not None else None
    if found is not None:
        if found[0] == batch.digest:
            return found[1]
        raise Conflict(
            f"steps {first}..{last} were recorded with another payload",
            reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
            first_step=first,
            last_step=last,
        )
    raise Conflict(
        f"steps {first}..{last} overlap steps recorded earlier in this attempt",
        reason=Reason.STEP_ALREADY_RECORDED,
        first_step=first,
        last_step=last,
    )
