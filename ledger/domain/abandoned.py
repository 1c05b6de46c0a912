"""Holds nobody will settle, settled by the ledger itself: those of an attempt a new attempt
fenced off (SUPERSEDED) or whose lease lapsed (LOST), and those past their expiry (EXPIRED).
They are never written off at $0: a hold on GPU time is charged pro rata up to its attempt's last
sign of life, any other as reserved (`settlement`). A plan past its TTL expires instead: what it
left undrawn was never spent (ledger.domain.plans).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ledger.domain.accounts import Account
from ledger.domain.base import Audit
from ledger.domain.entries import Hold
from ledger.domain.parents import roll_up
from ledger.domain.reasons import Reason
from trainledger.pricing import gpu_line_usd_micro

__all__ = [
    "EXPIRED",
    "LOST",
    "SUPERSEDED",
    "LastSeen",
    "expire_overdue",
    "settle_abandoned",
    "settle_attempts",
    "settlement",
]

# Why the ledger settled a hold itself (SpendSettled.reason): a new attempt fenced off the
# attempt that held it, the attempt's lease lapsed, or the hold's expiry passed.
SUPERSEDED: str = Reason.ATTEMPT_SUPERSEDED.value
LOST = "ATTEMPT_LOST"
EXPIRED = "RESERVATION_EXPIRED"
# The last sign of life of an attempt by its number (None: unknown, e.g. a hold of no run's attempt).
LastSeen = Callable[[int], "datetime | None"]


def settlement(hold: Hold, granted_at: datetime | None, last_seen_at: datetime | None) -> tuple[int, str]:
    """What the ledger charges for an abandoned hold, and how: (amount, "pro_rata") for a hold
    whose basis is GPU time only (its rate times the time from the grant to the attempt's last
    sign of life, at most the hold), else (the hold, "as_reserved"): presumed spent in full."""
    gpu = hold.basis.gpu
    if gpu is None or hold.basis.tokens or granted_at is None or last_seen_at is None:
        return hold.amount_usd_micro, "as_reserved"
    elapsed_ms = max(0, int((last_seen_at - granted_at).total_seconds() * 1000))
    if gpu.gpu_milliseconds:
        elapsed_ms = min(elapsed_ms, gpu.gpu_milliseconds)
    # The basis's own rule (trainledger.pricing), at most the hold.
    line_usd_micro = gpu_line_usd_micro(elapsed_ms, gpu.usd_micro_per_gpu_hour, gpu.gpu_count or 1)
    return min(hold.amount_usd_micro, line_usd_micro), "pro_rata"


def settle_abandoned(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    keys: list[str],
    reason: str,
    last_seen: LastSeen | None,
) -> int:
    """Settle the pending holds `keys` of `account` nobody will settle (SpendSettled, one event
    each, with `reason`): never silently at $0 (see `settlement`). The last sign of life of a
    hold's attempt is the later of what `last_seen` says and the attempt's latest pending grant.
    Returns how many were settled."""
    # A reservation is a sign of life of its attempt too: the latest one each attempt still holds.
    latest_grants: dict[int, datetime] = {}
    for hold in account.holds.values():
        granted = hold.reserved_at  # Absent in states saved before it was kept.
        if granted is not None:
            latest_grants[hold.attempt] = max(granted, latest_grants.get(hold.attempt, granted))
    for key in keys:
        hold = account.holds[key]
        seen = last_seen(hold.attempt) if last_seen is not None and hold.attempt > 0 else None
        if seen is not None:
            seen = max(seen, latest_grants.get(hold.attempt, seen))
        amount, method = settlement(hold, hold.reserved_at, seen)
        account.record(
            Account.SpendSettled,
            audit,
            reservation_id=key,
            reserved=hold.amount_usd_micro,
            amount=amount,
            method=method,
            reason=reason,
            last_seen_at=seen,
        )
        roll_up(parents, audit, account, key, "settle", -hold.amount_usd_micro, 0, amount)
    return len(keys)


def expire_overdue(account: Account, parents: list[Account], audit: Audit, last_seen: LastSeen | None = None) -> int:
    """Settle every pending hold of `account` past its expiry (settle_abandoned, RESERVATION_EXPIRED).
    A plan past its TTL expires instead: what it left undrawn was never spent (ledger.domain.plans)."""
    overdue = [key for key, hold in account.holds.items() if hold.expires_at <= audit.now]
    plans = [key for key in overdue if account.holds[key].kind == "plan"]
    for key in plans:
        amount = account.holds[key].amount_usd_micro
        account.record(Account.SpendExpired, audit, reservation_id=key, amount=amount)
        roll_up(parents, audit, account, key, "expire", -amount, 0)
    calls = [key for key in overdue if key not in plans]
    return len(plans) + settle_abandoned(account, parents, audit, keys=calls, reason=EXPIRED, last_seen=last_seen)


def settle_attempts(
    account: Account, parents: list[Account], audit: Audit, *, below: int, reason: str, last_seen: LastSeen
) -> int:
    """Settle the pending holds of the attempts numbered below `below` (settle_abandoned with
    `reason`): a dead trainer's holds neither block the cap until their expiry nor vanish at $0.
    Returns how many were settled. A plan is not a call's hold: it is left to ledger.domain.plans."""
    keys = [key for key, hold in account.holds.items() if 0 < hold.attempt < below and hold.kind != "plan"]
    return settle_abandoned(account, parents, audit, keys=keys, reason=reason, last_seen=last_seen)
