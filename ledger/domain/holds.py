"""What the holds on an account share, a call's (ledger.domain.spending) and a plan's
(ledger.domain.plans): the account's pending plan and the part of a new hold it covers, the check
that a hold fits under the cap of the account and of every parent, and the answer to a hold's id
used again.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ledger.domain.accounts import Account
from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.entries import Hold, SettledEntry, SpendEntry, known
from ledger.domain.errors import CapExceeded
from ledger.domain.reasons import Reason
from trainledger.text import account_text, usd_text

__all__ = ["check_headroom", "pending_plan", "plan_cover", "refused_again"]


def pending_plan(account: Account) -> tuple[str, Hold] | None:
    """The id and hold of the account's pending plan; None when there is none."""
    plan_id: str = account.__dict__.get("plan_id", "")
    plan = account.holds.get(plan_id)
    return None if plan is None else (plan_id, plan)


def plan_cover(account: Account, attempt: int, amount: int, now: datetime) -> tuple[str, int]:
    """(plan id, the part of a new hold of `amount` for `attempt` the pending plan covers):
    ("", 0) when there is no pending plan for that attempt, or it has expired."""
    pending = pending_plan(account)
    if pending is None:
        return "", 0
    plan_id, plan = pending
    if plan.expires_at <= now or plan.attempt not in (0, attempt):
        return "", 0
    return plan_id, min(amount, plan.amount_usd_micro)


def refused_again(entry: SpendEntry, what: str) -> int:
    """The answer to a hold's id used before (`entry`, with the same payload): the version that
    recorded it, or, when it was refused, the same refusal again (CapExceeded; `what` names the
    hold in its message)."""
    if isinstance(entry, SettledEntry) and entry.state == "refused":
        refused_by = known(entry.refused_by, "refused_by")
        raise CapExceeded(
            f"{what} was refused: it would cross the cap of {account_text(refused_by)}",
            reason=Reason.SPEND_CAP_EXCEEDED,
            account=refused_by,
            remaining_usd_micro=known(entry.remaining_usd_micro, "remaining"),
        )
    return known(entry.reserved_version, "reserved_version")


def check_headroom(
    account: Account,
    parents: list[Account],
    audit: Audit,
    added: int,
    *,
    refusal: type[LedgerAggregate.Event],
    what: str,
    hold: dict[str, Any],
) -> None:
    """A hold that adds `added` to pending must fit under the cap of the account and of every
    parent. When it does not, the refusal (`refusal`, with the `hold`'s fields, which cap and
    what remained) is recorded on `account` and CapExceeded raised (`what` opens its message)."""
    for level in (account, *parents):
        headroom = level.remaining
        if headroom is not None and added > headroom:
            account.record(refusal, audit, **hold, refused_by=level.name, remaining=headroom)
            raise CapExceeded(
                f"{what} would cross the cap of {account_text(level.name)}: {usd_text(headroom)} remains",
                reason=Reason.SPEND_CAP_EXCEEDED,
                account=level.name,
                remaining_usd_micro=headroom,
            )
