"""Spend: accounts and their caps, reservations held before billable calls and settled after,
charges after the fact, and the sweep that expires overdue holds. Every command decides on the
account and its parents together, so no cap in the chain is ever crossed.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from eventsourcing.application import AggregateNotFoundError

from ledger.application.commands import (
    RESERVATION_TTL_DEFAULT,
    Charge,
    Commit,
    OpenAccount,
    Release,
    Reserve,
    SetCap,
)
from ledger.application.kernel import Receipt, Recorded, storage_read
from ledger.application.leases import check_hold_attempt, last_seen_of
from ledger.application.reads import Reads
from ledger.domain import abandoned, parents
from ledger.domain import spending as spend
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.errors import Conflict, LedgerError
from ledger.domain.limits import check_id

__all__ = ["SpendCommands"]


class SpendCommands(Reads):
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
        audit = self._audit(principal, request_id)
        account_id = ledger_id("account", account)

        def decide(touched: list[LedgerAggregate]) -> tuple[bool, dict[str, Any]]:
            try:
                existing: Account = self.repository.get(account_id)
            except AggregateNotFoundError:
                check_id(account, "account")  # A new account takes a name under the identifier rules.
                parents.check_not_retracted(self._parents(parent, touched))
                opened = Account._create(
                    Account.Opened, id=account_id, name=account, parent=parent, cap=cap_usd_micro, **audit.fields()
                )
                touched.append(opened)
                return True, opened.summary()
            if existing.parent != parent or existing.cap != cap_usd_micro:
                raise Conflict(f"account {account} exists with another parent or cap", account=account)
            return False, existing.summary()

        (created, totals), position = self._write(decide)
        # A retry points at the account's first event, the one that opened it.
        return self._receipt(account_id, None if created else 1, position, created=created, account=totals)

    def set_cap(
        self, *, account: str, cap_usd_micro: int | None, scope: str = "", principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Change an account's cap (None = uncapped). A cap below committed + held is refused, and
        so is raising or lifting the cap of `scope`, the account the caller's token is scoped to
        (CAP_RAISE_OUTSIDE_SCOPE), as is any change to a retracted run's cap (RUN_RETRACTED)."""
        SetCap(account=account, cap_usd_micro=cap_usd_micro)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, dict[str, Any]]:
            holder = self._account(account)
            holder.check_not_retracted()  # A retracted run takes no further write.
            touched.append(holder)
            return spend.set_cap(holder, audit, cap_usd_micro, scope=scope), holder.summary()

        (version, totals), position = self._write(decide)
        return self._receipt(ledger_id("account", account), version, position, account=totals)

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
        audit = self._audit(principal, request_id)
        expires_at = audit.now + command.ttl

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, datetime | None, dict[str, Any]]:
            holder, parents = self._chain(account, touched)
            recall = self._recall_spend(holder)
            if holder.entry(reservation_id, recall) is None:
                check_hold_attempt(self.repository, account, attempt)  # A retry is answered as it was.
            try:
                version = spend.reserve(
                    holder,
                    parents,
                    audit,
                    last_seen=lambda number: self._last_seen(account, number),
                    reservation_id=reservation_id,
                    amount=amount_usd_micro,
                    basis=command.basis,
                    expires_at=expires_at,
                    attempt=attempt,
                    recall=recall,
                )
            except LedgerError as error:
                # The refusal is itself recorded for audit, with any expiries found on the way.
                raise Recorded(error) from error
            entry = holder.entry(reservation_id, recall) or {}
            expires: datetime | None = entry.get("expires_at")
            return version, expires, holder.summary()

        (version, expires, totals), position = self._write(decide)
        return self._receipt(ledger_id("account", account), version, position, expires_at=expires, account=totals)

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
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[tuple[int | None, int], dict[str, Any]]:
            holder, parents = self._chain(account, touched)
            decided = spend.commit(
                holder,
                parents,
                audit,
                reservation_id=reservation_id,
                actual=actual_usd_micro,
                basis=command.basis,
                recall=self._recall_spend(holder),
            )
            return decided, holder.summary()

        ((version, overrun), totals), position = self._write(decide)
        return self._receipt(
            ledger_id("account", account), version, position, overrun_usd_micro=overrun, account=totals
        )

    def release(
        self, *, account: str, reservation_id: str, reason: str = "", principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Give a reservation back (on failure or when the call was not made)."""
        Release(account=account, reservation_id=reservation_id, reason=reason)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, dict[str, Any]]:
            holder, parents = self._chain(account, touched)
            version = spend.release(
                holder, parents, audit, reservation_id=reservation_id, reason=reason, recall=self._recall_spend(holder)
            )
            return version, holder.summary()

        (version, totals), position = self._write(decide)
        return self._receipt(ledger_id("account", account), version, position, account=totals)

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
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[tuple[int | None, int], dict[str, Any]]:
            holder, parents = self._chain(account, touched)
            decided = spend.charge(
                holder,
                parents,
                audit,
                charge_id=charge_id,
                amount=amount_usd_micro,
                basis=command.basis,
                reason=reason,
                recall=self._recall_spend(holder),
            )
            return decided, holder.summary()

        ((version, overrun), totals), position = self._write(decide)
        return self._receipt(
            ledger_id("account", account), version, position, overrun_usd_micro=overrun, account=totals
        )

    def expire_reservations(self, *, principal: str = "ledger", request_id: str = "") -> int:
        """The sweep: record SpendExpired for every pending reservation past its expiry.
        Returns how many expired."""
        now = self.clock()
        expired = 0
        # The overdue holds are found in the spend view: let it reflect every write first.
        self.wait(self.head())
        audit = Audit(principal, request_id, now)
        for name in self.views.accounts_with_overdue_holds(now):

            def decide(touched: list[LedgerAggregate], name: str = name) -> int:
                holder, parents = self._chain(name, touched)
                return abandoned.expire_overdue(holder, parents, audit, last_seen_of(self.repository, name))

            count, _ = self._write(decide)
            expired += count
        return expired

    def _last_seen(self, account: str, attempt: int) -> datetime | None:
        """The last sign of life of `attempt` of the run whose account is `account` (None for an
        account of no run): loaded only when a reservation finds expired holds to settle."""
        last_seen = last_seen_of(self.repository, account)
        return None if last_seen is None else last_seen(attempt)

    @storage_read
    def account_now(self, account: str) -> dict[str, Any]:
        """An account's totals straight from its aggregate (no projection in between)."""
        with self._lock:
            return self._account(account).summary()
