"""Plans: a run's whole projected cost reserved up front on its account (ledger.domain.plans), so
a run that cannot afford its plan is refused before its first billable call and spends nothing.
The attempt's holds draw the plan down; what is left is released when the run finishes or is
retracted, when its attempt is recorded lost or a new attempt fences it off, or at the plan's TTL.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import msgspec

from ledger.application.context import Context
from ledger.application.outcomes import Receipt
from ledger.application.spend import write_hold
from ledger.application.spend_commands import PLAN_TTL_DEFAULT, ReservePlan
from ledger.domain import plans
from ledger.domain.accounts import Account, Recall
from ledger.domain.basis import cost_basis
from ledger.domain.entries import AccountTotals

__all__ = ["PlanCommands"]


class PlanCommands(Context):
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
        audit = self.writer.audit(principal, request_id)

        def hold(spend_account: Account, parents: list[Account], recall: Recall, expires_at: datetime) -> int | None:
            return plans.reserve_plan(
                spend_account,
                parents,
                audit,
                reservation_id=reservation_id,
                amount=amount_usd_micro,
                basis=cost_basis(command.basis),
                expires_at=expires_at,
                attempt=attempt,
                recall=recall,
            )

        def with_plan(spend_account: Account) -> AccountTotals:
            return msgspec.structs.replace(spend_account.summary(), plan=plans.summary(spend_account))

        return write_hold(self.writer, command, audit, hold, with_plan)
