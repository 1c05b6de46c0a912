"""Plans: a run's whole projected cost held up front, before its first billable call, so a run
that cannot afford its plan spends nothing.

A plan is a reservation of its own kind on an account (one pending at a time), made for an
attempt (0: for whichever attempt reserves). Each reservation that attempt makes afterwards
draws on the plan first (PlanDrawn, saved with its SpendReserved): the part drawn was already
pending under the plan, so only what the plan no longer covers is checked against the caps and
added to pending; the cap is never counted twice. What a drawn hold does not spend is freed as
any hold's is (to the account, not back to the plan). What is left undrawn is released when the
run finishes or is retracted, when a new attempt fences off the plan's attempt, or when asked
(Release with the plan's id), and expires at the plan's TTL: no money was spent from it. A plan
is never committed: its holds are.
"""

from __future__ import annotations

from datetime import datetime

from ledger.domain.abandoned import LOST, SUPERSEDED, expire_overdue
from ledger.domain.accounts import Account, Recall
from ledger.domain.base import Audit
from ledger.domain.basis import CostBasis, basis_map
from ledger.domain.entries import Hold, PlanTotals, known
from ledger.domain.errors import Conflict, Refused
from ledger.domain.holds import check_headroom, pending_plan, refused_again
from ledger.domain.parents import check_not_retracted, roll_up
from ledger.domain.reasons import Reason
from trainledger.text import usd_text

__all__ = ["FINISHED", "LOST", "RETRACTED", "SUPERSEDED", "release_plan", "reserve_plan", "summary"]

# The reasons a plan's undrawn part is released for (and SUPERSEDED, a fenced-off attempt's; LOST,
# a lost attempt's).
FINISHED = "the run finished"
RETRACTED = "the run was retracted"


def reserve_plan(
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
) -> int | None:
    """Hold a plan of `amount` against the account and every parent. Returns the version of an
    identical earlier request. Raises CapExceeded after recording the refusal on `account`,
    Refused PLAN_ALREADY_HELD while another plan is pending, Conflict for an id used otherwise."""
    entry = account.entry(reservation_id, recall)
    if entry is not None:
        planned = entry.amount_usd_micro if entry.planned_usd_micro is None else entry.planned_usd_micro
        if entry.kind != "plan" or (planned, entry.basis, entry.attempt) != (amount, basis, attempt):
            raise Conflict(
                f"{reservation_id} was used before with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        return refused_again(entry, f"plan {reservation_id}")
    check_not_retracted((account, *parents))
    expire_overdue(account, parents, audit)  # A plan past its TTL holds nothing any more.
    held = pending_plan(account)
    if held is not None:
        raise Refused(
            f"account {account.name} holds a plan already: release it first",
            reason=Reason.PLAN_ALREADY_HELD,
            account=account.name,
            attempt=str(held[1].attempt),
        )
    check_headroom(
        account,
        parents,
        audit,
        amount,
        refusal=Account.PlanRefused,
        what=f"a plan of {usd_text(amount)}",
        hold={"reservation_id": reservation_id, "amount": amount, "basis": basis_map(basis), "attempt": attempt},
    )
    account.record(
        Account.PlanReserved,
        audit,
        reservation_id=reservation_id,
        amount=amount,
        basis=basis_map(basis),
        expires_at=expires_at,
        attempt=attempt,
    )
    roll_up(parents, audit, account, reservation_id, "plan", amount, 0)
    return None


def release_plan(
    account: Account, parents: list[Account], audit: Audit, *, reason: str, before_attempt: int | None = None
) -> int:
    """Release what is left undrawn of the account's pending plan (with `before_attempt`, only
    of a plan made for an attempt before it, which that attempt fenced off). Returns the amount
    released."""
    pending = pending_plan(account)
    if pending is None:
        return 0
    plan_id, plan = pending
    if before_attempt is not None and not 0 < plan.attempt < before_attempt:
        return 0
    undrawn = plan.amount_usd_micro
    account.record(Account.SpendReleased, audit, reservation_id=plan_id, amount=undrawn, reason=reason)
    roll_up(parents, audit, account, plan_id, "release", -undrawn, 0)
    return undrawn


def summary(account: Account) -> PlanTotals | None:
    """The account's latest plan while its entry is in the state: its id, state, what was
    planned, drawn by holds, and is still held undrawn; None when there is none."""
    plan_id: str | None = account.__dict__.get("plan_id")
    if plan_id is None:
        return None
    entry = account.holds.get(plan_id) or account.settled.get(plan_id)
    if entry is None:
        return None
    amount = known(entry.amount_usd_micro, "amount")
    return PlanTotals(
        reservation_id=plan_id,
        state=entry.state,
        planned_usd_micro=amount if entry.planned_usd_micro is None else entry.planned_usd_micro,
        drawn_usd_micro=entry.drawn_usd_micro or 0,
        held_usd_micro=amount if isinstance(entry, Hold) else 0,
    )
