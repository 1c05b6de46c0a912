"""Spend: accounts and their caps, reservations held before billable calls and settled after,
charges after the fact, and the sweep that expires overdue holds. Every command decides on the
account and the parents above it together, so no cap on the way up is ever crossed.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from eventsourcing.application import AggregateNotFoundError

from ledger.application.context import Context
from ledger.application.leases import check_hold_attempt, last_seen_of
from ledger.application.outcomes import Receipt, Recorded, storage_read
from ledger.application.spend_commands import (
    RESERVATION_TTL_DEFAULT,
    Charge,
    Commit,
    OpenAccount,
    Release,
    Reserve,
    SetCap,
)
from ledger.application.writer import Writer
from ledger.domain import abandoned, parents
from ledger.domain import spending as spend
from ledger.domain.accounts import Account, Recall
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.basis import cost_basis
from ledger.domain.entries import AccountTotals
from ledger.domain.errors import Conflict, LedgerError
from ledger.domain.limits import check_id

__all__ = ["HoldDecision", "SpendCommands", "write_hold"]

#: What a hold's decision answers: the version of an identical earlier hold (None: recorded now),
#: when the hold expires, and the account's totals.
HoldDecision = tuple[int | None, datetime | None, AccountTotals]


class SpendCommands(Context):
    """The commands on spend accounts (the sweep reads the spend view first)."""

    def open_account(
        self,
        *,
        account: str,
        parent: str = "",
        cap_usd_micro: int | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Open a spend account (idempotent by name; a different parent or cap is a conflict)."""
        OpenAccount(account=account, parent=parent, cap_usd_micro=cap_usd_micro)
        audit = self.writer.audit(principal, request_id)
        account_id = ledger_id("account", account)

        def decide(touched: list[LedgerAggregate]) -> tuple[bool, AccountTotals]:
            try:
                existing: Account = self.aggregates.repository.get(account_id)
            except AggregateNotFoundError:
                check_id(account, "account")  # A new account takes a name under the identifier rules.
                parents.check_not_retracted(self.aggregates.parents(parent, touched))
                opened = Account._create(
                    Account.Opened, id=account_id, name=account, parent=parent, cap=cap_usd_micro, **audit.fields()
                )
                touched.append(opened)
                return True, opened.summary()
            if existing.parent != parent or existing.cap != cap_usd_micro:
                raise Conflict(f"account {account} exists with another parent or cap", account=account)
            return False, existing.summary()

        (created, totals), position = self.writer.write(decide)
        # A retry points at the account's first event, the one that opened it.
        return self.writer.receipt(account_id, None if created else 1, position, created=created, account=totals)

    def set_cap(
        self, *, account: str, cap_usd_micro: int | None, scope: str = "", principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Change an account's cap (None = uncapped). A cap below committed + held is refused, and
        so is raising or lifting the cap of `scope`, the account the caller's token is scoped to
        (CAP_RAISE_OUTSIDE_SCOPE), as is any change to a retracted run's cap (RUN_RETRACTED)."""
        SetCap(account=account, cap_usd_micro=cap_usd_micro)
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, AccountTotals]:
            spend_account = self.aggregates.account(account)
            spend_account.check_not_retracted()  # A retracted run takes no further write.
            touched.append(spend_account)
            return spend.set_cap(spend_account, audit, cap_usd_micro, scope=scope), spend_account.summary()

        (version, totals), position = self.writer.write(decide)
        return self.writer.receipt(ledger_id("account", account), version, position, account=totals)

    def reserve(
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
        """Hold an amount before a billable call. Raises CapExceeded (recorded)."""
        command = Reserve(
            account=account,
            reservation_id=reservation_id,
            amount_usd_micro=amount_usd_micro,
            basis={} if basis is None else basis,
            ttl=RESERVATION_TTL_DEFAULT if ttl is None else ttl,
            attempt=attempt,
        )
        audit = self.writer.audit(principal, request_id)

        def hold(spend_account: Account, parents: list[Account], recall: Recall, expires_at: datetime) -> int | None:
            return spend.reserve(
                spend_account,
                parents,
                audit,
                last_seen=lambda number: self._last_seen(account, number),
                reservation_id=reservation_id,
                amount=amount_usd_micro,
                basis=cost_basis(command.basis),
                expires_at=expires_at,
                attempt=attempt,
                recall=recall,
            )

        return write_hold(self.writer, command, audit, hold, Account.summary)

    def commit(
        self,
        *,
        account: str,
        reservation_id: str,
        actual_usd_micro: int,
        basis: dict[str, Any] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Settle a reservation with the actual amount; above the hold it is an overrun."""
        command = Commit(
            account=account,
            reservation_id=reservation_id,
            actual_usd_micro=actual_usd_micro,
            basis={} if basis is None else basis,
        )
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[tuple[int | None, int], AccountTotals]:
            spend_account, parents = self.aggregates.with_parents(account, touched)
            decided = spend.commit(
                spend_account,
                parents,
                audit,
                reservation_id=reservation_id,
                actual=actual_usd_micro,
                basis=cost_basis(command.basis),
                recall=self.aggregates.recall_spend(spend_account),
            )
            return decided, spend_account.summary()

        ((version, overrun), totals), position = self.writer.write(decide)
        return self.writer.receipt(
            ledger_id("account", account), version, position, overrun_usd_micro=overrun, account=totals
        )

    def release(
        self, *, account: str, reservation_id: str, reason: str = "", principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Give a reservation back (on failure or when the call was not made)."""
        Release(account=account, reservation_id=reservation_id, reason=reason)
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, AccountTotals]:
            spend_account, parents = self.aggregates.with_parents(account, touched)
            version = spend.release(
                spend_account,
                parents,
                audit,
                reservation_id=reservation_id,
                reason=reason,
                recall=self.aggregates.recall_spend(spend_account),
            )
            return version, spend_account.summary()

        (version, totals), position = self.writer.write(decide)
        return self.writer.receipt(ledger_id("account", account), version, position, account=totals)

    def charge(
        self,
        *,
        account: str,
        charge_id: str,
        amount_usd_micro: int,
        basis: dict[str, Any] | None = None,
        reason: str = "",
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Record spend after the fact, in full; what lies beyond the cap is an overrun."""
        command = Charge(
            account=account,
            charge_id=charge_id,
            amount_usd_micro=amount_usd_micro,
            basis={} if basis is None else basis,
            reason=reason,
        )
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[tuple[int | None, int], AccountTotals]:
            spend_account, parents = self.aggregates.with_parents(account, touched)
            decided = spend.charge(
                spend_account,
                parents,
                audit,
                charge_id=charge_id,
                amount=amount_usd_micro,
                basis=cost_basis(command.basis),
                reason=reason,
                recall=self.aggregates.recall_spend(spend_account),
            )
            return decided, spend_account.summary()

        ((version, overrun), totals), position = self.writer.write(decide)
        return self.writer.receipt(
            ledger_id("account", account), version, position, overrun_usd_micro=overrun, account=totals
        )

    def expire_reservations(self, *, principal: str = "ledger", request_id: str = "") -> int:
        """The sweep: record SpendExpired for every pending reservation past its expiry.
        Returns how many expired."""
        now = self.writer.clock()
        expired = 0
        # The overdue holds are found in the spend view: let it reflect every write first.
        self.reader.wait(self.reader.head())
        audit = Audit(principal, request_id, now)
        for name in self.reader.views.accounts_with_overdue_holds(now):

            def decide(touched: list[LedgerAggregate], name: str = name) -> int:
                spend_account, parents = self.aggregates.with_parents(name, touched)
                return abandoned.expire_overdue(
                    spend_account, parents, audit, last_seen_of(self.aggregates.repository, name)
                )

            count, _ = self.writer.write(decide)
            expired += count
        return expired

    def _last_seen(self, account: str, attempt: int) -> datetime | None:
        """The last sign of life of `attempt` of the run whose account is `account` (None for an
        account of no run): loaded only when a reservation finds expired holds to settle."""
        last_seen = last_seen_of(self.aggregates.repository, account)
        return None if last_seen is None else last_seen(attempt)

    @storage_read
    def account_now(self, account: str) -> AccountTotals:
        """An account's totals straight from its aggregate (no projection in between)."""
        with self.writer.lock:
            return self.aggregates.account(account).summary()


def write_hold(
    writer: Writer,
    command: Reserve,
    audit: Audit,
    hold: Callable[[Account, list[Account], Recall, datetime], int | None],
    totals: Callable[[Account], AccountTotals],
) -> Receipt:
    """Write a hold on the command's account, a call's (reserve) or a plan's (reserve_plan): `hold`
    records it on the account and its parents, to expire at the end of the command's ttl. A new
    hold for an attempt that a later one fenced off is refused; a refusal of the hold itself is
    recorded for audit, with any expiries found on the way (Recorded). Answers with the hold's
    expiry and the account's `totals`."""
    aggregates = writer.aggregates
    expires_at = audit.now + command.ttl

    def decide(touched: list[LedgerAggregate]) -> HoldDecision:
        spend_account, parents = aggregates.with_parents(command.account, touched)
        recall = aggregates.recall_spend(spend_account)
        if spend_account.entry(command.reservation_id, recall) is None:
            # A retry is answered as it was.
            check_hold_attempt(aggregates.repository, command.account, command.attempt)
        try:
            version = hold(spend_account, parents, recall, expires_at)
        except LedgerError as error:
            raise Recorded(error) from error
        entry = spend_account.entry(command.reservation_id, recall)
        return version, None if entry is None else entry.expires_at, totals(spend_account)

    (version, expires, account_totals), position = writer.write(decide)
    account_id = ledger_id("account", command.account)
    return writer.receipt(account_id, version, position, expires_at=expires, account=account_totals)
