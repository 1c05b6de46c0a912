"""RunRecorder's spend: a hold before each billable call and the attempt's whole plan held up
front (clients.spend holds and commits; the ledger refuses a hold that would cross a cap)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from clients.errors import LedgerClientError, SpendCapExceeded
from clients.models import FinishReceipt, ReservePlanReceipt, RunState
from clients.run_end import exit_error
from clients.spend import Hold, hold_spend

if TYPE_CHECKING:
    from clients.client import LedgerClient

__all__ = ["RecorderSpend"]

log = logging.getLogger("trainledger.clients")


class RecorderSpend:
    """The spend methods of RunRecorder (which supplies client, account, run_id, attempt,
    require_open, finish and refresh_state)."""

    if TYPE_CHECKING:
        client: LedgerClient
        account: str

        @property
        def run_id(self) -> str: ...

        @property
        def attempt(self) -> int: ...

        def require_open(self, timeout_s: float = 0.0) -> None: ...

        def finish(
            self, status: str = "done", summary: Mapping[str, Any] | None = None, error: str = ""
        ) -> FinishReceipt: ...

        def refresh_state(self, min_position: int = 0) -> RunState: ...

    @contextmanager
    def reserve(
        self,
        amount_usd_micro: int,
        *,
        basis: Mapping[str, Any] | None = None,
        ttl_s: float | None = None,
        reservation_id: str | None = None,
    ) -> Iterator[Hold]:
        """Hold spend for a billable call (see clients.spend.hold_spend): blocks for the hold, raises
        SpendCapExceeded when refused and Unavailable when the ledger cannot be reached within the
        client's outage budget (outage_budget_s): no hold, so no billable call."""
        self.require_open()
        with hold_spend(
            self.client,
            account=self.account,
            amount_usd_micro=amount_usd_micro,
            basis=basis,
            ttl_s=ttl_s,
            attempt=self.attempt,
            reservation_id=reservation_id,
        ) as hold:
            yield hold

    def hold_plan(self, amount_usd_micro: int, *, basis: Mapping[str, Any] | None = None) -> ReservePlanReceipt:
        """Reserve this attempt's whole projected cost before its first billable call: its
        reservations (`reserve`) then draw on the plan, and the ledger releases what is left when
        the run finishes or a later attempt starts. The id is the run's and attempt's, so a retry
        is answered once. When the plan would cross a cap, the run is finished "stopped" (it has
        spent nothing) and SpendCapExceeded is raised with the remaining amount."""
        self.require_open()
        try:
            receipt = self.client.reserve_plan(
                account=self.account,
                amount_usd_micro=amount_usd_micro,
                basis=basis,
                attempt=self.attempt,
                reservation_id=f"plan-{self.run_id}-{self.attempt}",
            )
        except SpendCapExceeded as error:
            try:
                self.finish("stopped", error=exit_error(error))
            except LedgerClientError as finish_error:
                log.warning("could not record the run as stopped: %s", finish_error)
            raise
        try:  # `state` shows the plan held (best effort, as after finish).
            self.refresh_state(receipt.position)
        except LedgerClientError:
            pass
        return receipt
