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
from ledger.domain.errors import CapExceeded
from ledger.domain.reasons import Reason
from trainledger.text import account_text, usd_text

__all__ = ["check_headroom", "pending_plan", "plan_cover", "refused_again"]


def pending_plan(account: Account) -> dict[str, Any] | None:
    """The entry of the account's pending plan with its "id"; None when there is none."""
    plan = account.holds.get(account.__dict__.get("plan_id", ""))
    return None if plan is None else {**plan, "id": account.__dict__["plan_id"]}


def plan_cover(account: Account, attempt: int, amount: int, now: datetime) -> tuple[str, int]:
    """(plan id, the part of a new hold of `amount` for `attempt` the pending plan covers):
    ("", 0) when there is no pending plan for that attempt, or it has expired."""
    plan = pending_plan(account)
    if plan is None or plan["expires_at"] <= now or plan["attempt"] not in (0, attempt):
        return "", 0
    return plan["id"], min(amount, plan["amount"])


def refused_again(entry: dict[str, Any], what: str) -> int:
    """The answer to a hold's id used before (`entry`, with the same payload): the version that
    recorded it, or, when it was refused, the same refusal again (CapExceeded; `what` names the
    hold in its message)."""
    if entry["state"] == "refused":
        raise CapExceeded(
            f"{what} was refused: it would cross the cap of {account_text(entry['refused_by'])}",
            reason=Reason.SPEND_CAP_EXCEEDED,
            account=entry["refused_by"],
            remaining_usd_micro=entry["remaining"],
        )
    return int(entry["reserved_version"])


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
