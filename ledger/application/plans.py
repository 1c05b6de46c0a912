"""Plans: a run's whole projected cost reserved up front on its account (ledger.domain.plans), so
a run that cannot afford its plan is refused before its first billable call and spends nothing.
The attempt's holds draw the plan down; what is left is released when the run finishes or is
retracted, when its attempt is recorded lost or a new attempt fences it off, or at the plan's TTL.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import msgspec

from ledger.application.commands import INT32_MAX, RESERVATION_TTL_MAX, Command
from ledger.application.kernel import Kernel, Receipt, Recorded
from ledger.application.leases import check_hold_attempt
from ledger.domain import plans
from ledger.domain.base import LedgerAggregate, ledger_id
from ledger.domain.basis import check_basis, check_basis_amount
from ledger.domain.errors import Invalid, LedgerError
from ledger.domain.limits import check_id, check_int, check_usd_micro
from ledger.domain.reasons import Reason

__all__ = ["PLAN_TTL_DEFAULT", "PlanCommands", "ReservePlan"]

# A plan lasts a run, not a call: a day unless asked otherwise, at most a reservation's longest.
PLAN_TTL_DEFAULT = timedelta(days=1)


class ReservePlan(Command, frozen=True, kw_only=True):
    account: str
    reservation_id: str
    amount_usd_micro: int
    basis: dict[str, Any] = msgspec.field(default_factory=dict)
    ttl: timedelta = PLAN_TTL_DEFAULT
    attempt: int = 0

    def __post_init__(self) -> None:
        check_id(self.reservation_id, "reservation_id")
        check_usd_micro(self.amount_usd_micro, "amount_usd_micro")
        if self.amount_usd_micro == 0:
            raise Invalid("a plan holds a positive amount", reason=Reason.OUT_OF_RANGE, field="amount_usd_micro")
        self._normal("basis", check_basis(self.basis))
        check_basis_amount(self.basis, self.amount_usd_micro, "amount_usd_micro")
        check_int(self.attempt, "attempt", maximum=INT32_MAX)
        if self.ttl == timedelta(0):
            self._normal("ttl", PLAN_TTL_DEFAULT)
        if not timedelta(0) < self.ttl <= RESERVATION_TTL_MAX:
            raise Invalid("ttl must be positive and at most 7 days", reason=Reason.INVALID_TTL)


class PlanCommands(Kernel):
    """The command that reserves a plan (drawing and releasing it happen in other commands)."""

    def reserve_plan(
        self,
        *,
        account: str,
        reservation_id: str,
        amount_usd_micro: int,
        basis: dict[str, Any] | None = None,
        ttl: timedelta | None = None,
        attempt: int = 0,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Hold a run's plan up front, for `attempt` (0: whichever attempt reserves). Raises
        CapExceeded (recorded) when the plan would cross a cap, Refused PLAN_ALREADY_HELD while
        another plan is pending on the account, RUN_RETRACTED in a retracted run's subtree."""
        command = ReservePlan(
            account=account,
            reservation_id=reservation_id,
            amount_usd_micro=amount_usd_micro,
            basis={} if basis is None else basis,
            ttl=PLAN_TTL_DEFAULT if ttl is None else ttl,
            attempt=attempt,
        )
        audit = self._audit(principal, request_id)
        expires_at = audit.now + command.ttl

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, datetime | None, dict[str, Any]]:
            holder, parents = self._chain(account, touched)
            recall = self._recall_spend(holder)
            if holder.entry(reservation_id, recall) is None:
                check_hold_attempt(self.repository, account, attempt)  # A retry is answered as it was.
            try:
                version = plans.reserve_plan(
                    holder,
                    parents,
                    audit,
                    reservation_id=reservation_id,
                    amount=amount_usd_micro,
                    basis=command.basis,
                    expires_at=expires_at,
                    attempt=attempt,
                    recall=recall,
                )
            except LedgerError as error:
                raise Recorded(error) from error
            entry = holder.entry(reservation_id, recall) or {}
            expires: datetime | None = entry.get("expires_at")
            return version, expires, {**holder.summary(), "plan": plans.summary(holder)}

        (version, expires, totals), position = self._write(decide)
        return self._receipt(ledger_id("account", account), version, position, expires_at=expires, account=totals)
