"""Commands on spend accounts: reserve, commit, release, charge, adjust to a bill and set a cap.

Each takes an Account (ledger.domain.accounts) and the parents above it, checks the request
against the account's state, and records past-tense events on it; every change is mirrored onto
each parent (ledger.domain.parents), so the caller saves the account and its parents in one
transaction. Holds nobody settles are settled by the ledger (ledger.domain.abandoned).
A repeated id is answered from the entry it left: an identical retry gets its first answer
(the version first recorded, or the same refusal), the same id with another payload is a
Conflict. Ids that have left an account's settled window are looked up through `recall`.

Invariant, for an account and every parent above it, at every position of the log:
    committed + presumed + pending - overrun <= cap        (when the account has a cap)
where `presumed` is what the ledger itself charged for holds nobody settled (SpendSettled: a hold
whose attempt was superseded or lost, or whose expiry passed): a GPU-time hold pro rata up to the
attempt's last sign of life, any other as reserved. A commit that comes later replaces it, and an
adjustment to a bill below the estimate takes from it first (SpendAdjusted.presumed).
where `overrun` is the money recorded beyond what a hold covered: the excess of an actual above
its reservation, or the part of a charge or late commit beyond what remained. A reservation that
would cross the cap of the account or of any parent is refused, and the refusal is recorded.
Every change on an account is mirrored onto each parent by a SpendRolledUp event saved in the
same transaction, so an account and its parents move atomically.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger.domain.abandoned import SUPERSEDED, LastSeen, expire_overdue
from ledger.domain.accounts import Account, Recall
from ledger.domain.base import Audit
from ledger.domain.basis import CostBasis, basis_map
from ledger.domain.entries import SettledEntry, known
from ledger.domain.errors import Conflict, Invalid, NotFound, PermissionDenied, Refused
from ledger.domain.holds import check_headroom, plan_cover, refused_again
from ledger.domain.parents import check_not_retracted, roll_up
from ledger.domain.reasons import Reason
from trainledger.text import account_text, usd_text

__all__ = [
    "SETTLED",
    "adjust",
    "charge",
    "commit",
    "release",
    "reserve",
    "set_cap",
]

# Why a reservation that is settled refuses a commit or a release: the state it is in.
SETTLED: dict[str, Reason] = {
    "released": Reason.RESERVATION_RELEASED,
    "refused": Reason.RESERVATION_REFUSED,
    "charged": Reason.RESERVATION_CHARGED,
    "committed": Reason.RESERVATION_COMMITTED,
}


def reserve(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    reservation_id: str,
    amount: int,
    basis: CostBasis,
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
        if entry.state == "charged" or entry.kind == "plan":
            raise Conflict(
                f"{reservation_id} is a charge's or a plan's id",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        if (entry.amount_usd_micro, entry.basis, entry.attempt) != (amount, basis, attempt):
            raise Conflict(
                f"reservation {reservation_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        return refused_again(entry, f"reservation {reservation_id}")
    check_not_retracted((account, *parents))
    expire_overdue(account, parents, audit, last_seen)
    # The part of the hold the attempt's plan covers is pending already (ledger.domain.plans).
    plan_id, drawn = plan_cover(account, attempt, amount, audit.now)
    check_headroom(
        account,
        parents,
        audit,
        amount - drawn,
        refusal=Account.SpendRefused,
        what=f"reserving {usd_text(amount)}",
        hold={"reservation_id": reservation_id, "amount": amount, "basis": basis_map(basis), "attempt": attempt},
    )
    account.record(
        Account.SpendReserved,
        audit,
        reservation_id=reservation_id,
        amount=amount,
        basis=basis_map(basis),
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
    basis: CostBasis,
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
    if entry.kind == "plan":
        raise Refused(
            f"{reservation_id} is a plan: its holds are committed, not the plan",
            reason=Reason.RESERVATION_IS_PLAN,
            reservation_id=reservation_id,
        )
    state = entry.state
    if state == "committed" and isinstance(entry, SettledEntry):
        if entry.actual_usd_micro != actual:
            raise Conflict(
                f"reservation {reservation_id} was committed with another amount",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        # The overrun first answered (a late commit's is what lay beyond the cap, not the hold).
        overrun = entry.overrun_usd_micro
        if overrun is None:  # Absent in entries saved before it was kept.
            overrun = max(0, actual - known(entry.amount_usd_micro, "amount"))
        return entry.settled_version, overrun
    late = isinstance(entry, SettledEntry) and (
        state in ("expired", "settled") or (state == "released" and entry.reason == SUPERSEDED)
    )
    if state in ("released", "refused", "charged") and not late:
        raise Refused(f"reservation {reservation_id} is {state}", reason=SETTLED[state], reservation_id=reservation_id)
    if isinstance(entry, SettledEntry):  # Abandoned: the money was spent all the same, without a hold.
        return None, _commit_late(account, parents, audit, entry, reservation_id, actual, basis)
    reserved = entry.amount_usd_micro
    overrun = max(0, actual - reserved)
    account.record(
        Account.SpendCommitted,
        audit,
        reservation_id=reservation_id,
        reserved=reserved,
        actual=actual,
        basis=basis_map(basis),
        overrun=overrun,
        late=False,
    )
    roll_up(parents, audit, account, reservation_id, "commit", -reserved, actual)
    return None, overrun


def _commit_late(
    account: Account,
    parents: list[Account],
    audit: Audit,
    entry: SettledEntry,
    reservation_id: str,
    actual: int,
    basis: CostBasis,
) -> int:
    """Commit a hold that expired or that the ledger settled: the actual replaces what the ledger
    presumed for it. Returns the overrun: what lies beyond the cap."""
    # What the ledger presumed for the hold, at most what is left presumed on the account: an
    # adjustment to a bill may have taken part of it off already (adjust), and what it took
    # stays taken, so the spend never counts below nothing.
    replaced = min(entry.presumed_usd_micro or 0, account.presumed) if entry.state == "settled" else 0
    overrun = account.excess(actual - replaced)
    fields: dict[str, Any] = {"replaced": replaced} if replaced else {}
    account.record(
        Account.SpendCommitted,
        audit,
        reservation_id=reservation_id,
        reserved=0,
        actual=actual,
        basis=basis_map(basis),
        overrun=overrun,
        late=True,
        **fields,
    )
    roll_up(parents, audit, account, reservation_id, "late_commit", 0, actual, -replaced)
    return overrun


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
    if isinstance(entry, SettledEntry):
        if entry.state in ("released", "expired", "refused", "settled"):
            return entry.settled_version
        raise Refused(
            f"reservation {reservation_id} is {entry.state}", reason=SETTLED[entry.state], reservation_id=reservation_id
        )
    amount = entry.amount_usd_micro
    account.record(Account.SpendReleased, audit, reservation_id=reservation_id, amount=amount, reason=reason)
    roll_up(parents, audit, account, reservation_id, "release", -amount, 0)
    return None


def charge(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    charge_id: str,
    amount: int,
    basis: CostBasis,
    reason: str,
    recall: Recall | None = None,
) -> tuple[int | None, int]:
    """Record spend that already happened, in full; the part beyond the cap is an overrun."""
    entry = account.entry(charge_id, recall)
    if entry is not None:
        if not (
            isinstance(entry, SettledEntry)
            and entry.state == "charged"
            and (entry.amount_usd_micro, entry.basis) == (amount, basis)
        ):
            raise Conflict(
                f"{charge_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                charge_id=charge_id,
            )
        return entry.settled_version, entry.overrun_usd_micro or 0
    check_not_retracted((account, *parents))
    overrun = account.excess(amount)
    account.record(
        Account.SpendCharged,
        audit,
        charge_id=charge_id,
        amount=amount,
        basis=basis_map(basis),
        reason=reason,
        overrun=overrun,
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
        if not isinstance(entry, SettledEntry) or entry.state != "adjusted" or entry.amount_usd_micro != amount:
            raise Conflict(
                f"{adjustment_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                adjustment_id=adjustment_id,
            )
        return entry.settled_version, entry.overrun_usd_micro or 0
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
