"""Commands on a run's attempts: start an attempt (fencing the one before it), change the run's
plan (max_steps), finish the run; and the fence every write of an attempt passes (`check_writer`).

Each takes the Run (ledger.domain.runs), checks the request against its state and records one
event on it, or answers with the version of the event that already recorded the same request
(an idempotent retry). An attempt's lease is ledger.domain.leases.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger.domain.base import Audit
from ledger.domain.errors import Conflict, Invalid, NotFound, Refused
from ledger.domain.reasons import Reason
from ledger.domain.run_notes import check_summary
from ledger.domain.runs import Run

__all__ = ["change_plan", "check_max_steps", "check_writer", "finish", "resumable_checkpoint", "start_attempt"]


def check_writer(run: Run, attempt: int) -> None:
    """Only the current attempt of a running run that was not retracted may append."""
    run.check_not_retracted()
    current = run.current_attempt
    if attempt < 1 or attempt > current:
        raise NotFound(f"attempt {attempt} was never started", reason=Reason.ATTEMPT_NOT_FOUND, attempt=attempt)
    if attempt < current:
        raise Refused(
            f"attempt {attempt} is superseded by attempt {current}",
            reason=Reason.ATTEMPT_SUPERSEDED,
            attempt=attempt,
            current_attempt=current,
        )
    if run.status not in ("running", "lost"):
        raise Refused(f"the run is {run.status}", reason=Reason.RUN_FINISHED, status=run.status)


def check_max_steps(run: Run, max_steps: int, floor: int | None) -> None:
    """A plan may not end before the step the run (or the attempt's resume point) has reached."""
    if floor is not None and max_steps < floor:
        raise Invalid(
            f"max_steps {max_steps} is below step {floor} the run has reached",
            reason=Reason.MAX_STEPS_BELOW_LAST_STEP,
            max_steps=max_steps,
            last_step=floor,
        )


def change_plan(run: Run, audit: Audit, *, max_steps: int | None) -> int | None:
    """An OpenRun of this run with a max_steps: records the new plan when it differs. The same
    plan again answers with the version of the PlanChanged that set it (None when the plan
    was set otherwise: at the opening, or by an attempt's start)."""
    if max_steps is None or max_steps == run.max_steps:
        if max_steps is None:
            return None
        version: int | None = run.__dict__.get("plan_version")
        return version
    run.check_not_retracted()
    check_max_steps(run, max_steps, run.last_step)
    run.record(Run.PlanChanged, audit, max_steps=max_steps)
    return None


def start_attempt(
    run: Run,
    audit: Audit,
    *,
    attempt_id: str,
    label: str,
    resume_from_step: int | None,
    max_steps: int | None = None,
    lease_s: int | None = None,
    lease_asked: bool = True,
) -> int | None:
    """Start attempt n+1, fencing attempt n, holding a lease of `lease_s` seconds (None: no
    lease). Returns the version of an earlier identical start (a retry), or None when a new
    event was recorded; a retry that did not ask for a lease (`lease_asked` False: a replay
    that never knew it) takes the attempt's as it is. `max_steps` (when given) is the run's
    plan from now on; it may not be below the resume point."""
    for attempt in run.attempts:
        if attempt_id and attempt["attempt_id"] == attempt_id:
            # An attempt started before leases holds none: any lease retries it.
            held_s = attempt.get("lease_s")
            if (
                attempt["resumed_from_step"] != resume_from_step
                or attempt["label"] != label
                or (lease_asked and held_s is not None and held_s != lease_s)
            ):
                raise Conflict(
                    f"attempt id {attempt_id} was used with another resume point, label or lease",
                    reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                )
            return int(attempt["version"])
    run.check_not_retracted()
    if run.status == "done":
        raise Refused("the run is done", reason=Reason.RUN_FINISHED, status=run.status)
    if resume_from_step is not None:
        resumable_checkpoint(run, resume_from_step, audit.now)
    if max_steps is not None:
        check_max_steps(run, max_steps, resume_from_step)
    fields: dict[str, Any] = {} if max_steps is None else {"max_steps": max_steps}
    if lease_s is not None:
        fields["lease_s"] = lease_s
    run.record(
        run.AttemptStarted,
        audit,
        attempt=run.current_attempt + 1,
        attempt_id=attempt_id,
        label=label,
        resumed_from_step=resume_from_step,
        **fields,
    )
    return None


def resumable_checkpoint(run: Run, step: int, now: datetime) -> dict[str, Any]:
    """The live checkpoint at `step` a new attempt may resume from, else an error."""
    checkpoint: dict[str, Any]
    for checkpoint in reversed(run.checkpoints):
        if checkpoint["step"] == step and not checkpoint["superseded"]:
            if checkpoint.get("deleted_at") is not None:
                raise Refused(f"the checkpoint at step {step} was deleted", reason=Reason.CHECKPOINT_DELETED, step=step)
            expires_at = checkpoint["expires_at"]
            if expires_at is not None and expires_at <= now:
                raise Refused(
                    f"the checkpoint at step {step} expired at {expires_at.isoformat()}",
                    reason=Reason.CHECKPOINT_EXPIRED,
                    step=step,
                )
            return checkpoint
    raise NotFound(f"no checkpoint at step {step} to resume from", reason=Reason.CHECKPOINT_NOT_FOUND, step=step)


def finish(run: Run, audit: Audit, *, attempt: int, status: str, summary: dict[str, Any], error: str) -> int | None:
    """Finish the run. A retry of the same finish answers with the first one's version."""
    if run.status not in ("running", "lost"):
        if (
            run.status == status
            and run.error == error
            and attempt == run.current_attempt
            and all(run.summary.get(key) == value for key, value in summary.items())
        ):
            return int(run.finished_version)
        raise Refused(f"the run is already {run.status}", reason=Reason.RUN_FINISHED, status=run.status)
    check_writer(run, attempt)
    check_summary(run, summary)
    revive(run, audit, attempt=attempt)
    run.record(Run.Finished, audit, attempt=attempt, status=status, summary=summary, error=error)
    return None


def revive(run: Run, audit: Audit, *, attempt: int) -> bool:
    """A write of the current attempt of a lost run: record that it is running again (before the
    write). Returns whether it was lost."""
    if run.status != "lost" or attempt != run.current_attempt:
        return False
    run.record(Run.AttemptReturned, audit, attempt=attempt, lost_at=run.attempts[-1].get("lost_at"))
    return True
