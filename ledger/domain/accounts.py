"""Spend accounts: the Account aggregate, its events (caps, reservations, commits, releases,
expiry and after-the-fact charges) and its state, with the window of settled ids. The commands
that check requests and record these events, and the invariant they keep, are in
ledger.domain.spending. Stored events carry the topic of their class here (ledger.domain.topics),
so the events stay in this module.

A run's account is retracted with its run (Retracted, saved in the transaction of the run's
Retracted): new spend on it (a reservation, a charge) is refused RUN_RETRACTED, while what settles
spend that happened before (a commit or release of an earlier hold, an expiry, a bill's
adjustment) still goes through, since the truth about money is never refused.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

import msgspec

from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.basis import cost_basis
from ledger.domain.entries import AccountTotals, Hold, Recall, SettledEntry, SpendEntry, known, typed_entries
from ledger.domain.errors import Refused
from ledger.domain.reasons import Reason

__all__ = ["Account", "SETTLED_WINDOW", "Recall"]

# Settled reservations and charges kept in the state, a cache for idempotent retries; older ones
# leave it and are recalled from the keys index (ledger.storage.keys), so an id is never forgotten.
# Pending holds are always kept.
SETTLED_WINDOW = 2_000


class Account(LedgerAggregate):
    """A spend account: one per run, optionally under parent accounts (project, team)."""

    if TYPE_CHECKING:  # Set by the events' apply(): the state, as the type checker sees it.
        name: str
        parent: str
        cap: int | None
        committed: int
        pending: int
        overrun: int
        evicted: int
        adjusted: int  # The adjustments to providers' bills, in all (absent before the first).
        # presumed, holds, settled: read through their properties (presumed is absent in states saved
        # before it existed; holds and settled are maps in a state loaded from a snapshot).

    def __init__(self) -> None:
        pass

    class Opened(LedgerAggregate.Created):
        name: str
        parent: str
        cap: int | None

        def apply(self, account: Account) -> None:
            account.name = self.name
            account.parent = self.parent
            account.cap = self.cap
            account.committed = 0
            account.pending = 0
            account.overrun = 0
            account.__dict__["presumed"] = 0
            account.__dict__["holds"] = {}  # reservation id -> Hold, pending ones only
            account.__dict__["settled"] = {}  # reservation or charge id -> SettledEntry, bounded window
            account.evicted = 0  # How many settled entries have left the window.

    class CapSet(LedgerAggregate.Event):
        cap: int | None

        def apply(self, account: Account) -> None:
            account.cap = self.cap

    class SpendReserved(LedgerAggregate.Event):
        reservation_id: str
        amount: int
        basis: dict[str, Any]
        expires_at: datetime
        attempt: int

        def apply(self, account: Account) -> None:
            account.pending += self.amount
            account.holds[self.reservation_id] = Hold(
                state="pending",
                amount_usd_micro=self.amount,
                basis=cost_basis(self.basis),
                attempt=self.attempt,
                expires_at=self.expires_at,
                reserved_version=self.originator_version,
                reserved_at=self.timestamp,
            )

    class SpendRefused(LedgerAggregate.Event):
        reservation_id: str
        amount: int
        basis: dict[str, Any]
        attempt: int
        refused_by: str
        remaining: int

        def apply(self, account: Account) -> None:
            account.settle(
                self.reservation_id,
                SettledEntry(
                    state="refused",
                    amount_usd_micro=self.amount,
                    basis=cost_basis(self.basis),
                    attempt=self.attempt,
                    refused_by=self.refused_by,
                    remaining_usd_micro=self.remaining,
                    reserved_version=self.originator_version,
                    settled_version=self.originator_version,
                ),
            )

    class SpendCommitted(LedgerAggregate.Event):
        reservation_id: str
        reserved: int
        actual: int
        basis: dict[str, Any]
        overrun: int
        late: bool
        # What the ledger had charged for the hold (SpendSettled) that this late commit replaces.
        replaced: int = 0

        def apply(self, account: Account) -> None:
            account.__dict__["presumed"] = account.presumed - self.replaced
            hold: SpendEntry | None = account.holds.pop(self.reservation_id, None)
            if hold is not None:
                account.pending -= self.reserved
            else:
                # A late commit: the settled entry may have left the window (then this entry is
                # partial, and the full one is recalled from the keys index when needed).
                hold = account.settled.get(self.reservation_id)
            account.committed += self.actual
            account.overrun += self.overrun
            settled: dict[str, Any] = {"state": "committed", "actual_usd_micro": self.actual}
            settled.update(overrun_usd_micro=self.overrun, settled_version=self.originator_version)
            entry = SettledEntry(partial=True, **settled) if hold is None else SettledEntry.of(hold, **settled)
            account.settle(self.reservation_id, entry)

    class SpendReleased(LedgerAggregate.Event):
        reservation_id: str
        amount: int
        reason: str

        def apply(self, account: Account) -> None:
            account.close_hold(
                self.reservation_id,
                self.amount,
                state="released",
                reason=self.reason,
                settled_version=self.originator_version,
            )

    class SpendExpired(LedgerAggregate.Event):
        reservation_id: str
        amount: int

        def apply(self, account: Account) -> None:
            account.close_hold(
                self.reservation_id, self.amount, state="expired", settled_version=self.originator_version
            )

    class SpendSettled(LedgerAggregate.Event):
        """A hold nobody settled, charged by the ledger itself (never written off at $0): `reason`
        says why it was abandoned (ATTEMPT_SUPERSEDED, ATTEMPT_LOST, RESERVATION_EXPIRED);
        `method` how it was charged: "pro_rata" (a GPU-time hold: the basis's rate times the time
        from the grant to `last_seen_at`, the attempt's last sign of life, at most the hold) or
        "as_reserved" (any other hold: presumed spent in full)."""

        reservation_id: str
        reserved: int
        amount: int
        method: str
        reason: str
        last_seen_at: datetime | None = None

        def apply(self, account: Account) -> None:
            account.__dict__["presumed"] = account.presumed + self.amount
            account.close_hold(
                self.reservation_id,
                self.reserved,
                state="settled",
                presumed_usd_micro=self.amount,
                method=self.method,
                reason=self.reason,
                settled_version=self.originator_version,
            )

    class SpendCharged(LedgerAggregate.Event):
        charge_id: str
        amount: int
        basis: dict[str, Any]
        reason: str
        overrun: int

        def apply(self, account: Account) -> None:
            account.committed += self.amount
            account.overrun += self.overrun
            account.settle(
                self.charge_id,
                SettledEntry(
                    state="charged",
                    amount_usd_micro=self.amount,
                    basis=cost_basis(self.basis),
                    reason=self.reason,
                    overrun_usd_micro=self.overrun,
                    settled_version=self.originator_version,
                ),
            )

    class SpendAdjusted(LedgerAggregate.Event):
        """The spend brought to a provider's bill: `amount` (negative when the bill was below the
        estimate) is what the bill said beyond what was spent; `bill` says which bill and estimate
        it was computed from (ledger.application.bills). `presumed` (zero or negative) is the part
        of a downward `amount` taken off what the ledger presumed spent; the rest moves committed."""

        adjustment_id: str
        amount: int
        bill: dict[str, Any]
        overrun: int
        presumed: int = 0

        def apply(self, account: Account) -> None:
            account.__dict__["presumed"] = account.presumed + self.presumed
            account.committed += self.amount - self.presumed
            account.overrun += self.overrun
            account.adjusted = getattr(account, "adjusted", 0) + self.amount
            account.settle(
                self.adjustment_id,
                SettledEntry(
                    state="adjusted",
                    amount_usd_micro=self.amount,
                    bill=self.bill,
                    overrun_usd_micro=self.overrun,
                    settled_version=self.originator_version,
                ),
            )

    class PlanReserved(LedgerAggregate.Event):
        """A run's projected cost held up front (ledger.domain.plans). Its entry's `amount` is what
        is left undrawn (what it adds to pending), `planned` what was reserved."""

        reservation_id: str
        amount: int
        basis: dict[str, Any]
        expires_at: datetime
        attempt: int

        def apply(self, account: Account) -> None:
            account.pending += self.amount
            account.holds[self.reservation_id] = Hold(
                state="pending",
                kind="plan",
                amount_usd_micro=self.amount,
                planned_usd_micro=self.amount,
                drawn_usd_micro=0,
                basis=cost_basis(self.basis),
                attempt=self.attempt,
                expires_at=self.expires_at,
                reserved_version=self.originator_version,
            )
            account.__dict__["plan_id"] = self.reservation_id

    class PlanRefused(SpendRefused):
        """A plan that would cross a cap, refused (the plan's kind of SpendRefused)."""

        def apply(self, account: Account) -> None:
            super().apply(account)
            settled = account.settled
            settled[self.reservation_id] = msgspec.structs.replace(settled[self.reservation_id], kind="plan")
            account.__dict__["plan_id"] = self.reservation_id

    class PlanDrawn(LedgerAggregate.Event):
        """A hold (`drawn_by`) took `amount` of its attempt's plan: pending counts it once."""

        plan_id: str
        drawn_by: str
        amount: int

        def apply(self, account: Account) -> None:
            plan = account.holds[self.plan_id]
            drawn = known(plan.drawn_usd_micro, "drawn") + self.amount
            left = plan.amount_usd_micro - self.amount
            account.holds[self.plan_id] = msgspec.structs.replace(plan, amount_usd_micro=left, drawn_usd_micro=drawn)
            account.pending -= self.amount

    class Retracted(LedgerAggregate.Event):
        """The account's run was retracted: no new spend is taken on it."""

        reason: str

        def apply(self, account: Account) -> None:
            account.__dict__["retraction"] = {"reason": self.reason, "version": self.originator_version}

    class SpendRolledUp(LedgerAggregate.Event):
        child: str
        ref: str
        kind: str
        pending_delta: int
        committed_delta: int
        overrun_delta: int
        presumed_delta: int = 0

        def apply(self, account: Account) -> None:
            account.__dict__["presumed"] = account.presumed + self.presumed_delta
            account.pending += self.pending_delta
            account.committed += self.committed_delta
            account.overrun += self.overrun_delta

    # State helpers.

    @property
    def holds(self) -> dict[str, Hold]:  # The pending holds by id.
        return typed_entries(self.__dict__["holds"], Hold)

    @property
    def settled(self) -> dict[str, SettledEntry]:  # The window of settled ids' entries, oldest first.
        return typed_entries(self.__dict__["settled"], SettledEntry)

    @property
    def retraction(self) -> dict[str, Any] | None:
        """{"reason", "version"} once the account's run was retracted (absent in older snapshots)."""
        value: dict[str, Any] | None = self.__dict__.get("retraction")
        return value

    def retract(self, audit: Audit, *, reason: str) -> None:
        """Record that the account's run was retracted (once: a second retraction records nothing)."""
        if self.retraction is None:
            self.record(self.Retracted, audit, reason=reason)

    def check_not_retracted(self) -> None:
        """New spend on a retracted run's account is refused (RUN_RETRACTED)."""
        retraction = self.retraction
        if retraction is not None:
            raise Refused(
                f"the run of account {self.name} was retracted: {retraction['reason']}",
                reason=Reason.RUN_RETRACTED,
                account=self.name,
            )

    def close_hold(self, key: str, reserved: int, **fields: Any) -> None:
        """The pending hold `key` is settled: `reserved` leaves pending, its entry takes `fields`
        (SettledEntry's attribute names)."""
        hold = self.holds.pop(key)
        self.pending -= reserved
        self.settle(key, SettledEntry.of(hold, **fields))

    def settle(self, key: str, entry: SettledEntry) -> None:
        settled = self.settled
        settled.pop(key, None)
        settled[key] = entry
        if len(settled) > self.__dict__.get("window_max", SETTLED_WINDOW):
            del settled[next(iter(settled))]
            self.evicted = getattr(self, "evicted", 0) + 1

    def entry(self, key: str, recall: Recall | None = None) -> SpendEntry | None:
        """The entry of a reservation or charge id: from the state, else (when entries have left
        the window, or the one in the window is partial) from `recall`."""
        found: SpendEntry | None = self.holds.get(key) or self.settled.get(key)
        if recall is None:
            return found
        # A state saved before the window was counted has no `evicted`: entries may have left it.
        evicted: int = getattr(self, "evicted", 1)
        if (isinstance(found, SettledEntry) and found.partial) if found else evicted:
            return recall(key)
        return found

    @property
    def presumed(self) -> int:
        """What the ledger charged for abandoned holds (SpendSettled) that no commit replaced nor
        adjustment to a bill took off."""
        value: int = self.__dict__.get("presumed", 0)
        return value

    @property
    def remaining(self) -> int | None:
        if self.cap is None:
            return None
        return max(0, self.cap - self.committed - self.presumed - self.pending)

    def excess(self, amount: int) -> int:
        """The part of `amount` of new spend without a hold that lies beyond the cap."""
        remaining = self.remaining
        return 0 if remaining is None else max(0, amount - remaining)

    def summary(self) -> AccountTotals:
        return AccountTotals(
            account=self.name,
            parent=self.parent,
            cap_usd_micro=self.cap,
            committed_usd_micro=self.committed,
            presumed_usd_micro=self.presumed,
            pending_usd_micro=self.pending,
            remaining_usd_micro=self.remaining,
            overrun_usd_micro=self.overrun,
        )
