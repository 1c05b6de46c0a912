"""Commands on spend accounts: reserve, commit, release, charge, settle abandoned holds and set a cap.

Each takes an Account (ledger.domain.accounts) and the parents above it, checks the request
against the account's state, and records past-tense events on it; every change is mirrored onto
each parent by roll_up, so the caller saves the account and its parents in one transaction.
A repeated id is answered from the entry it left: an identical retry gets its first answer
(the version first recorded, or the same refusal), the same id with another payload is a
Conflict. Ids that have left an account's settled window are looked up through `recall`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from ledger.domain.accounts import Account, Recall
from ledger.domain.base import Audit
from ledger.domain.errors import CapExceeded, Conflict, Invalid, NotFound, PermissionDenied, Refused
from ledger.domain.reasons import Reason
from trainledger.pricing import gpu_line_usd_micro
from trainledger.text import account_text, usd_text

__all__ = [
    "SETTLED",
    "adjust",
    "EXPIRED",
    "LOST",
    "SUPERSEDED",
    "LastSeen",
    "charge",
    "check_not_retracted",
    "commit",
    "expire_overdue",
    "release",
    "settle_abandoned",
    "settle_attempts",
    "settlement",
    "reserve",
    "roll_up",
    "set_cap",
]

# Why the ledger settled a hold itself (SpendSettled.reason): a new attempt fenced off the
# attempt that held it, the attempt's lease lapsed, or the hold's expiry passed.
SUPERSEDED: str = Reason.ATTEMPT_SUPERSEDED.value
LOST = "ATTEMPT_LOST"
EXPIRED = "RESERVATION_EXPIRED"
# The last sign of life of an attempt by its number (None: unknown, e.g. a hold of no run's attempt).
LastSeen = Callable[[int], "datetime | None"]
# Why a reservation that is settled refuses a commit or a release: the state it is in.
SETTLED: dict[str, Reason] = {
    "released": Reason.RESERVATION_RELEASED,
    "refused": Reason.RESERVATION_REFUSED,
    "charged": Reason.RESERVATION_CHARGED,
    "committed": Reason.RESERVATION_COMMITTED,
}


def roll_up(
    parents: list[Account],
    audit: Audit,
    child: Account,
    ref: str,
    kind: str,
    pending_delta: int,
    committed_delta: int,
    presumed_delta: int = 0,
) -> None:
    """Mirror a change of `child` onto every parent, each computing its own overrun: a commit
    overruns by what its actual exceeds its hold; spend without a hold (a charge, a late
    commit, net of the settlement it replaces) overruns by what lies beyond the parent's
    remaining amount."""
    for parent in parents:
        if kind == "commit":
            overrun_delta = max(0, committed_delta + pending_delta)
        elif kind in ("charge", "late_commit", "adjust"):
            overrun_delta = parent.excess(committed_delta + presumed_delta)
        else:
            overrun_delta = 0
        fields: dict[str, Any] = {"presumed_delta": presumed_delta} if presumed_delta else {}
        parent.record(
            Account.SpendRolledUp,
            audit,
            child=child.name,
            ref=ref,
            kind=kind,
            pending_delta=pending_delta,
            committed_delta=committed_delta,
            overrun_delta=overrun_delta,
            **fields,
        )


def check_not_retracted(chain: Iterable[Account]) -> None:
    """New spend is refused in a retracted run's subtree: a hold, a charge or an account opened on
    an account whose chain (the account and its parents) holds a retracted run's account is
    RUN_RETRACTED, naming that account, as a write on the run's own account is."""
    for holder in chain:
        holder.check_not_retracted()


def settlement(hold: dict[str, Any], granted_at: datetime | None, last_seen_at: datetime | None) -> tuple[int, str]:
    """What the ledger charges for an abandoned hold, and how: (amount, "pro_rata") for a hold
    whose basis is GPU time only (its rate times the time from the grant to the attempt's last
    sign of life, at most the hold), else (the hold, "as_reserved"): presumed spent in full."""
    gpu = hold["basis"].get("gpu") if isinstance(hold.get("basis"), dict) else None
    if not gpu or hold["basis"].get("tokens") or granted_at is None or last_seen_at is None:
        return int(hold["amount"]), "as_reserved"
    elapsed_ms = max(0, int((last_seen_at - granted_at).total_seconds() * 1000))
    held_ms = int(gpu.get("gpu_milliseconds") or 0)
    if held_ms:
        elapsed_ms = min(elapsed_ms, held_ms)
    rate = int(gpu.get("usd_micro_per_gpu_hour") or 0)
    count = int(gpu.get("gpu_count") or 1)
    # The basis's own rule (trainledger.pricing), at most the hold.
    return min(int(hold["amount"]), gpu_line_usd_micro(elapsed_ms, rate, count)), "pro_rata"


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
        granted = hold.get("reserved_at")  # Absent in states saved before it was kept.
        if granted is not None:
            latest_grants[hold["attempt"]] = max(granted, latest_grants.get(hold["attempt"], granted))
    for key in keys:
        hold = account.holds[key]
        seen = last_seen(hold["attempt"]) if last_seen is not None and hold["attempt"] > 0 else None
        if seen is not None:
            seen = max(seen, latest_grants.get(hold["attempt"], seen))
        amount, method = settlement(hold, hold.get("reserved_at"), seen)
        account.record(
            Account.SpendSettled,
            audit,
            reservation_id=key,
            reserved=hold["amount"],
            amount=amount,
            method=method,
            reason=reason,
            last_seen_at=seen,
        )
        roll_up(parents, audit, account, key, "settle", -hold["amount"], 0, amount)
    return len(keys)


def expire_overdue(account: Account, parents: list[Account], audit: Audit, last_seen: LastSeen | None = None) -> int:
    """Settle every pending hold of `account` past its expiry (settle_abandoned, RESERVATION_EXPIRED).
    A plan past its TTL expires instead: what it left undrawn was never spent (ledger.domain.plans)."""
    overdue = [key for key, hold in account.holds.items() if hold["expires_at"] <= audit.now]
    plans = [key for key in overdue if account.holds[key].get("kind") == "plan"]
    for key in plans:
        amount = account.holds[key]["amount"]
        account.record(Account.SpendExpired, audit, reservation_id=key, amount=amount)
        roll_up(parents, audit, account, key, "expire", -amount, 0)
    calls = [key for key in overdue if key not in plans]
    return len(plans) + settle_abandoned(account, parents, audit, keys=calls, reason=EXPIRED, last_seen=last_seen)


def reserve(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    reservation_id: str,
    amount: int,
    basis: dict[str, Any],
    expires_at: datetime,
    attempt: int,
    recall: Recall | None = None,
    last_seen: LastSeen | None = None,
) -> int | None:
    """Hold `amount` against the account and every parent, once the holds past their expiry are
    settled (`last_seen` tells their attempts' last signs of life). Returns the version of an
    identical earlier request. Raises CapExceeded after recording the refusal on `account`."""
    entry = account.entry(reservation_id, recall)
    if entry is not None:
        # A charge entry has no attempt: check its kind before comparing payloads.
        if entry["state"] == "charged" or entry.get("kind") == "plan":
            raise Conflict(
                f"{reservation_id} is a charge's or a plan's id",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        if (entry["amount"], entry["basis"], entry["attempt"]) != (amount, basis, attempt):
            raise Conflict(
                f"reservation {reservation_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        if entry["state"] == "refused":
            raise CapExceeded(
                f"reservation {reservation_id} was refused:"
                f" it would cross the cap of {account_text(entry['refused_by'])}",
                reason=Reason.SPEND_CAP_EXCEEDED,
                account=entry["refused_by"],
                remaining_usd_micro=entry["remaining"],
            )
        return int(entry["reserved_version"])
    check_not_retracted((account, *parents))
    expire_overdue(account, parents, audit, last_seen)
    # The part of the hold the attempt's plan covers is pending already (ledger.domain.plans).
    plan_id, drawn = account.plan_cover(attempt, amount, audit.now)
    for holder in (account, *parents):
        headroom = holder.remaining
        if headroom is not None and amount - drawn > headroom:
            account.record(
                Account.SpendRefused,
                audit,
                reservation_id=reservation_id,
                amount=amount,
                basis=basis,
                attempt=attempt,
                refused_by=holder.name,
                remaining=headroom,
            )
            raise CapExceeded(
                f"reserving {usd_text(amount)} would cross the cap of {account_text(holder.name)}:"
                f" {usd_text(headroom)} remains",
                reason=Reason.SPEND_CAP_EXCEEDED,
                account=holder.name,
                remaining_usd_micro=headroom,
            )
    account.record(
        Account.SpendReserved,
        audit,
        reservation_id=reservation_id,
        amount=amount,
        basis=basis,
        expires_at=expires_at,
        attempt=attempt,
    )
    if drawn:
        account.record(Account.PlanDrawn, audit, plan_id=plan_id, drawn_by=reservation_id, amount=drawn)
    roll_up(parents, audit, account, reservation_id, "reserve", amount - drawn, 0)
    return None


def commit(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    reservation_id: str,
    actual: int,
    basis: dict[str, Any],
    recall: Recall | None = None,
) -> tuple[int | None, int]:
    """Settle a hold with the actual amount, charged in full. Returns (version of an identical
    earlier commit or None, overrun). A hold that expired, or was settled by the ledger (its
    attempt superseded or lost, its expiry passed), is committed late: the money was spent all
    the same, without a hold, and the actual replaces what the ledger had charged for it."""
    entry = account.entry(reservation_id, recall)
    if entry is None:
        raise NotFound(
            f"no reservation {reservation_id}", reason=Reason.RESERVATION_NOT_FOUND, reservation_id=reservation_id
        )
    if entry.get("kind") == "plan":
        raise Refused(
            f"{reservation_id} is a plan: its holds are committed, not the plan",
            reason=Reason.RESERVATION_IS_PLAN,
            reservation_id=reservation_id,
        )
    state = entry["state"]
    if state == "committed":
        if entry["actual"] != actual:
            raise Conflict(
                f"reservation {reservation_id} was committed with another amount",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        # The overrun first answered (a late commit's is what lay beyond the cap, not the hold).
        return int(entry["settled_version"]), int(entry.get("overrun", max(0, actual - entry["amount"])))
    late = state in ("expired", "settled") or (state == "released" and entry.get("reason") == SUPERSEDED)
    if state in ("released", "refused", "charged") and not late:
        raise Refused(f"reservation {reservation_id} is {state}", reason=SETTLED[state], reservation_id=reservation_id)
    reserved = entry["amount"]
    if state == "pending":
        overrun = max(0, actual - reserved)
        account.record(
            Account.SpendCommitted,
            audit,
            reservation_id=reservation_id,
            reserved=reserved,
            actual=actual,
            basis=basis,
            overrun=overrun,
            late=False,
        )
        roll_up(parents, audit, account, reservation_id, "commit", -reserved, actual)
    else:  # Abandoned: the money was spent all the same, without a hold.
        # What the ledger presumed for the hold, at most what is left presumed on the account: an
        # adjustment to a bill may have taken part of it off already (adjust), and what it took
        # stays taken, so the spend never counts below nothing.
        replaced = min(int(entry.get("presumed", 0)), account.presumed) if state == "settled" else 0
        overrun = account.excess(actual - replaced)
        fields: dict[str, Any] = {"replaced": replaced} if replaced else {}
        account.record(
            Account.SpendCommitted,
            audit,
            reservation_id=reservation_id,
            reserved=0,
            actual=actual,
            basis=basis,
            overrun=overrun,
            late=True,
            **fields,
        )
        roll_up(parents, audit, account, reservation_id, "late_commit", 0, actual, -replaced)
    return None, overrun


def release(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    reservation_id: str,
    reason: str,
    recall: Recall | None = None,
) -> int | None:
    """Give a hold back. Releasing a settled hold again answers with its settling version."""
    entry = account.entry(reservation_id, recall)
    if entry is None:
        raise NotFound(
            f"no reservation {reservation_id}", reason=Reason.RESERVATION_NOT_FOUND, reservation_id=reservation_id
        )
    if entry["state"] in ("released", "expired", "refused", "settled"):
        return int(entry["settled_version"])
    if entry["state"] != "pending":
        raise Refused(
            f"reservation {reservation_id} is {entry['state']}",
            reason=SETTLED[entry["state"]],
            reservation_id=reservation_id,
        )
    account.record(Account.SpendReleased, audit, reservation_id=reservation_id, amount=entry["amount"], reason=reason)
    roll_up(parents, audit, account, reservation_id, "release", -entry["amount"], 0)
    return None


def charge(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    charge_id: str,
    amount: int,
    basis: dict[str, Any],
    reason: str,
    recall: Recall | None = None,
) -> tuple[int | None, int]:
    """Record spend that already happened, in full; the part beyond the cap is an overrun."""
    entry = account.entry(charge_id, recall)
    if entry is not None:
        if entry["state"] != "charged" or (entry["amount"], entry["basis"]) != (amount, basis):
            raise Conflict(
                f"{charge_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                charge_id=charge_id,
            )
        return int(entry["settled_version"]), int(entry.get("overrun", 0))
    check_not_retracted((account, *parents))
    overrun = account.excess(amount)
    account.record(
        Account.SpendCharged, audit, charge_id=charge_id, amount=amount, basis=basis, reason=reason, overrun=overrun
    )
    roll_up(parents, audit, account, charge_id, "charge", 0, amount)
    return None, overrun


def adjust(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    adjustment_id: str,
    amount: int,
    bill: dict[str, Any],
    recall: Recall | None = None,
) -> tuple[int | None, int]:
    """Bring the spend to a provider's bill: add `amount` (negative for a bill below the estimate,
    taken off presumed spend first; one that would take the spend below nothing is Invalid). What lies beyond
    the cap of the account or of a parent is recorded as overrun, as for a charge: the money was
    billed. The same id again with the same amount answers with its first version; with another
    amount it is a Conflict."""
    entry = account.entry(adjustment_id, recall)
    if entry is not None:
        if entry["state"] != "adjusted" or entry["amount"] != amount:
            raise Conflict(
                f"{adjustment_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                adjustment_id=adjustment_id,
            )
        return int(entry["settled_version"]), int(entry.get("overrun", 0))
    if amount < -(account.committed + account.presumed):
        raise Invalid(
            f"an adjustment of {usd_text(amount)} would take the spend below nothing",
            reason=Reason.OUT_OF_RANGE,
            adjustment_id=adjustment_id,
        )
    overrun = account.excess(amount) if amount > 0 else 0
    # A bill below the estimate takes off what the ledger presumed first (its own guess), then
    # what the trainers committed.
    presumed = -min(account.presumed, -amount) if amount < 0 else 0
    fields: dict[str, Any] = {"presumed": presumed} if presumed else {}
    account.record(
        Account.SpendAdjusted, audit, adjustment_id=adjustment_id, amount=amount, bill=bill, overrun=overrun, **fields
    )
    roll_up(parents, audit, account, adjustment_id, "adjust", 0, amount - presumed, presumed)
    return None, overrun


def settle_attempts(
    account: Account, parents: list[Account], audit: Audit, *, below: int, reason: str, last_seen: LastSeen
) -> int:
    """Settle the pending holds of the attempts numbered below `below` (settle_abandoned with
    `reason`): a dead trainer's holds neither block the cap until their expiry nor vanish at $0.
    Returns how many were settled. A plan is not a call's hold: it is left to ledger.domain.plans."""
    keys = [key for key, hold in account.holds.items() if 0 < hold["attempt"] < below and hold.get("kind") != "plan"]
    return settle_abandoned(account, parents, audit, keys=keys, reason=reason, last_seen=last_seen)


def set_cap(account: Account, audit: Audit, cap: int | None, *, scope: str = "") -> int | None:
    """Change the cap. A cap below what is already committed and held is refused, so the
    invariant holds at every position. A caller whose token is scoped to this very account
    (`scope`) may lower its cap but never raise or lift it: the cap is the limit set on that
    scope from above, so only a token scoped above it (or unscoped) may widen it."""
    if cap == account.cap:
        return account.version
    if scope and scope == account.name and (cap is None or (account.cap is not None and cap > account.cap)):
        raise PermissionDenied(
            f"a token scoped to {scope} may lower its cap, not raise or lift it:"
            f" ask an operator whose token is scoped above {scope}, or an unscoped one",
            reason=Reason.CAP_RAISE_OUTSIDE_SCOPE,
            scope=scope,
        )
    floor = account.committed + account.presumed + account.pending - account.overrun
    if cap is not None and cap < floor:
        raise Refused(
            f"cap {usd_text(cap)} of {account_text(account.name)} is below the {usd_text(floor)}"
            " already committed and held",
            reason=Reason.CAP_BELOW_SPEND,
            account=account.name,
            minimum_cap_usd_micro=floor,
        )
    account.record(Account.CapSet, audit, cap=cap)
    return None
