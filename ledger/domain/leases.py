"""Attempt leases: how the ledger tells a live attempt from a crashed one.

An attempt holds a lease of `lease_s` seconds (given at StartAttempt, LEASE_S_DEFAULT when not),
renewed by every write of the attempt (a step batch, a checkpoint, a finish) and, when the
trainer is idle, by a heartbeat. A heartbeat is recorded only when nothing renewed the lease in
the last heartbeat period (1/HEARTBEAT_SHARE of it, at most HEARTBEAT_PERIOD_MAX_S), so an idle
run adds at most one event per period and a busy one none. A lease that lapses makes the
attempt and its run *lost* (Run.AttemptLost, appended by the server's sweep with the last sign
of life); a lost attempt that writes again is running again (Run.AttemptReturned), and the gap
stays in the record. Attempts started before leases existed hold none and are never lost.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ledger.domain import run_attempts
from ledger.domain.base import Audit
from ledger.domain.errors import Invalid
from ledger.domain.reasons import Reason
from trainledger.leases import HEARTBEAT_SHARE, LEASE_S_DEFAULT, LEASE_S_MAX, LEASE_S_MIN, heartbeat_period_s

if TYPE_CHECKING:
    from ledger.domain.runs import Run

__all__ = [
    "HEARTBEAT_SHARE",
    "LEASE_S_DEFAULT",
    "LEASE_S_MAX",
    "LEASE_S_MIN",
    "check_lease_s",
    "expires_at",
    "heartbeat",
    "lapse",
    "last_seen",
]

# A heartbeat renews the lease in the log only when the last sign of life is older than
# heartbeat_period_s(lease_s): the resolution of the last sign of life an idle attempt leaves.


def check_lease_s(lease_s: int) -> None:
    """Raise Invalid (INVALID_LEASE) unless LEASE_S_MIN <= lease_s <= LEASE_S_MAX."""
    if isinstance(lease_s, bool) or not isinstance(lease_s, int) or not LEASE_S_MIN <= lease_s <= LEASE_S_MAX:
        raise Invalid(
            f"lease_s must be from {LEASE_S_MIN} to {LEASE_S_MAX} seconds, not {lease_s}",
            reason=Reason.INVALID_LEASE,
            field="lease_s",
            minimum=LEASE_S_MIN,
            maximum=LEASE_S_MAX,
        )


def _attempt(run: Run, number: int) -> dict[str, Any] | None:
    attempt: dict[str, Any]
    for attempt in reversed(run.attempts):
        if attempt["number"] == number:
            return attempt
    return None


def last_seen(run: Run, number: int) -> datetime | None:
    """The last sign of life of attempt `number`: its last write or recorded heartbeat (its start
    before any); None for an attempt the run never started."""
    attempt = _attempt(run, number)
    if attempt is None:
        return None
    seen: datetime = attempt.get("last_seen_at") or attempt["started_at"]
    return seen


def expires_at(run: Run) -> datetime | None:
    """When the current attempt's lease lapses unless renewed; None when there is nothing to
    lapse (no attempt, an attempt without a lease, a run not running or retracted)."""
    if run.status != "running" or not run.attempts or run.retraction is not None:
        return None
    attempt = run.attempts[-1]
    lease_s = attempt.get("lease_s")
    if lease_s is None:
        return None
    seen: datetime = attempt.get("last_seen_at") or attempt["started_at"]
    return seen + timedelta(seconds=lease_s)


def heartbeat(run: Run, audit: Audit, *, attempt: int) -> int | None:
    """Renew the current attempt's lease: a lost attempt is running again (AttemptReturned); a
    heartbeat is recorded only when nothing renewed the lease in its last heartbeat period.
    Returns the run's version when nothing was recorded (None: an event was). Raises what a write
    of a superseded or finished attempt raises."""
    run_attempts.check_writer(run, attempt)
    if run_attempts.revive(run, audit, attempt=attempt):
        return None
    lease_s = run.attempts[-1].get("lease_s") or LEASE_S_DEFAULT
    seen = last_seen(run, attempt)
    if seen is not None and audit.now - seen < timedelta(seconds=heartbeat_period_s(lease_s)):
        return int(run.version)
    run.record(run.AttemptHeartbeat, audit, attempt=attempt)
    return None


def lapse(run: Run, audit: Audit) -> int | None:
    """Record the current attempt (and the run) lost if its lease lapsed by `audit.now`. Returns
    the lost attempt's number, or None when the lease holds (or there is none)."""
    deadline = expires_at(run)
    if deadline is None or deadline > audit.now:
        return None
    attempt = run.attempts[-1]
    run.record(
        run.AttemptLost,
        audit,
        attempt=attempt["number"],
        last_seen_at=last_seen(run, attempt["number"]),
        lease_s=attempt["lease_s"],
    )
    return int(attempt["number"])
