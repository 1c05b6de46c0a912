"""Spend accounts: caps, reservations, commits, releases, expiry and after-the-fact charges.

Invariant, for an account and every parent above it, at every position of the log:
    committed + pending - overrun <= cap        (when the account has a cap)
where `overrun` is the money recorded beyond what a hold covered: the excess of an actual above
its reservation, or the part of a charge or late commit beyond what remained. A reservation that
would cross the cap of the account or of any parent is refused, and the refusal is recorded.
Every change on an account is mirrored onto each parent by a SpendRolledUp event saved in the
same transaction, so the chain moves atomically.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.errors import CapExceeded, Conflict, NotFound, Refused
from ledger.domain.reasons import Reason

__all__ = ["Account", "SETTLED_WINDOW", "SUPERSEDED", "Recall"]

# Settled reservations and charges kept in the state, a cache for idempotent retries; older ones
# leave it and are recalled from the keys index (ledger.storage.keys), so an id is never forgotten.
# Pending holds are always kept.
SETTLED_WINDOW = 2_000
# The reason of a release recorded when a new attempt fences off the attempt that held the spend.
SUPERSEDED: str = Reason.ATTEMPT_SUPERSEDED.value
# Why a reservation that is settled refuses a commit or a release: the state it is in.
SETTLED: dict[str, Reason] = {
    "released": Reason.RESERVATION_RELEASED,
    "refused": Reason.RESERVATION_REFUSED,
    "charged": Reason.RESERVATION_CHARGED,
    "committed": Reason.RESERVATION_COMMITTED,
}

# Recalls the entry of an id that has left an account's window (None: never used on it).
Recall = Callable[[str], "dict[str, Any] | None"]


class Account(LedgerAggregate):
    """A spend account: one per run, optionally under parent accounts (project, team)."""

    if TYPE_CHECKING:  # Set by the events' apply(): the state, as the type checker sees it.
        name: str
        parent: str
        cap: int | None
        committed: int
        pending: int
        overrun: int
        holds: dict[str, dict[str, Any]]
        settled: dict[str, dict[str, Any]]
        evicted: int

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
            account.holds = {}  # reservation id -> entry, pending ones only
            account.settled = {}  # reservation or charge id -> entry, bounded window
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
            account.holds[self.reservation_id] = {
                "state": "pending",
                "amount": self.amount,
                "basis": self.basis,
                "attempt": self.attempt,
                "expires_at": self.expires_at,
                "reserved_version": self.originator_version,
            }

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
                {
                    "state": "refused",
                    "amount": self.amount,
                    "basis": self.basis,
                    "attempt": self.attempt,
                    "refused_by": self.refused_by,
                    "remaining": self.remaining,
                    "reserved_version": self.originator_version,
                    "settled_version": self.originator_version,
                },
            )

    class SpendCommitted(LedgerAggregate.Event):
        reservation_id: str
        reserved: int
        actual: int
        basis: dict[str, Any]
        overrun: int
        late: bool

        def apply(self, account: Account) -> None:
            hold = account.holds.pop(self.reservation_id, None)
            if hold is not None:
                account.pending -= self.reserved
            else:
                # A late commit: the settled entry may have left the window (then this entry is
                # partial, and the full one is recalled from the keys index when needed).
                hold = account.settled.get(self.reservation_id) or {"partial": True}
            account.committed += self.actual
            account.overrun += self.overrun
            account.settle(
                self.reservation_id,
                {
                    **hold,
                    "state": "committed",
                    "actual": self.actual,
                    "overrun": self.overrun,
                    "settled_version": self.originator_version,
                },
            )

    class SpendReleased(LedgerAggregate.Event):
        reservation_id: str
        amount: int
        reason: str

        def apply(self, account: Account) -> None:
            hold = account.holds.pop(self.reservation_id)
            account.pending -= self.amount
            account.settle(
                self.reservation_id,
                {**hold, "state": "released", "reason": self.reason, "settled_version": self.originator_version},
            )

    class SpendExpired(LedgerAggregate.Event):
        reservation_id: str
        amount: int

        def apply(self, account: Account) -> None:
            hold = account.holds.pop(self.reservation_id)
            account.pending -= self.amount
            account.settle(
                self.reservation_id, {**hold, "state": "expired", "settled_version": self.originator_version}
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
                {
                    "state": "charged",
                    "amount": self.amount,
                    "basis": self.basis,
                    "reason": self.reason,
                    "overrun": self.overrun,
                    "settled_version": self.originator_version,
                },
            )

    class SpendRolledUp(LedgerAggregate.Event):
        child: str
        ref: str
        kind: str
        pending_delta: int
        committed_delta: int
        overrun_delta: int

        def apply(self, account: Account) -> None:
            account.pending += self.pending_delta
            account.committed += self.committed_delta
            account.overrun += self.overrun_delta

    @classmethod
    def scratch(cls) -> Account:
        """An empty account, to fold the recalled events of one id into (ledger.storage.keys)."""
        account = cls.__new__(cls)
        account.__dict__.update(
            name="",
            parent="",
            cap=None,
            committed=0,
            pending=0,
            overrun=0,
            holds={},
            settled={},
            evicted=0,
            window_max=float("inf"),
        )
        return account

    # State helpers.

    def settle(self, key: str, entry: dict[str, Any]) -> None:
        self.settled.pop(key, None)
        self.settled[key] = entry
        if len(self.settled) > self.__dict__.get("window_max", SETTLED_WINDOW):
            del self.settled[next(iter(self.settled))]
            self.evicted = getattr(self, "evicted", 0) + 1

    def entry(self, key: str, recall: Recall | None = None) -> dict[str, Any] | None:
        """The entry of a reservation or charge id: from the state, else (when entries have left
        the window, or the one in the window is partial) from `recall`."""
        found = self.holds.get(key) or self.settled.get(key)
        if recall is None:
            return found
        # A state saved before the window was counted has no `evicted`: entries may have left it.
        evicted: int = getattr(self, "evicted", 1)
        if found.get("partial") if found else evicted:
            return recall(key)
        return found

    @property
    def remaining(self) -> int | None:
        if self.cap is None:
            return None
        return max(0, self.cap - self.committed - self.pending)

    def excess(self, amount: int) -> int:
        """The part of `amount` of new spend without a hold that lies beyond the cap."""
        remaining = self.remaining
        return 0 if remaining is None else max(0, amount - remaining)

    def summary(self) -> dict[str, Any]:
        return {
            "account": self.name,
            "parent": self.parent,
            "cap": self.cap,
            "committed": self.committed,
            "pending": self.pending,
            "remaining": self.remaining,
            "overrun": self.overrun,
        }


def roll_up(
    parents: list[Account], audit: Audit, child: Account, ref: str, kind: str, pending_delta: int, committed_delta: int
) -> None:
    """Mirror a change of `child` onto every parent, each computing its own overrun: a commit
    overruns by what its actual exceeds its hold; spend without a hold (a charge, a late
    commit) overruns by what lies beyond the parent's remaining amount."""
    for parent in parents:
        if kind == "commit":
            overrun_delta = max(0, committed_delta + pending_delta)
        elif kind in ("charge", "late_commit"):
            overrun_delta = parent.excess(committed_delta)
        else:
            overrun_delta = 0
        parent.record(
            Account.SpendRolledUp,
            audit,
            child=child.name,
            ref=ref,
            kind=kind,
            pending_delta=pending_delta,
            committed_delta=committed_delta,
            overrun_delta=overrun_delta,
        )


def expire_overdue(account: Account, parents: list[Account], audit: Audit) -> int:
    """Record SpendExpired for every pending hold of `account` past its expiry."""
    overdue = [(key, hold) for key, hold in account.holds.items() if hold["expires_at"] <= audit.now]
    for key, hold in overdue:
        account.record(Account.SpendExpired, audit, reservation_id=key, amount=hold["amount"])
        roll_up(parents, audit, account, key, "expire", -hold["amount"], 0)
    return len(overdue)


def reserve(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    reservation_id: str,
    amount: int,
    basis: dict[str, Any],
    expires_at: datetime,
    attempt: int,
    recall: Recall | None = None,
) -> int | None:
    """Hold `amount` against the account and every parent. Returns the version of an identical
    earlier request. Raises CapExceeded after recording the refusal on `account`."""
    entry = account.entry(reservation_id, recall)
    if entry is not None:
        # A charge entry has no attempt: check its kind before comparing payloads.
        if entry["state"] == "charged":
            raise Conflict(
                f"{reservation_id} is a charge id",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        if (entry["amount"], entry["basis"], entry["attempt"]) != (amount, basis, attempt):
            raise Conflict(
                f"reservation {reservation_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        if entry["state"] == "refused":
            raise CapExceeded(
                f"reservation {reservation_id} was refused: it would cross the cap of {entry['refused_by']}",
                reason=Reason.SPEND_CAP_EXCEEDED,
                account=entry["refused_by"],
                remaining_usd_micro=entry["remaining"],
            )
        return int(entry["reserved_version"])
    expire_overdue(account, parents, audit)
    for holder in (account, *parents):
        headroom = holder.remaining
        if headroom is not None and amount > headroom:
            account.record(
                Account.SpendRefused,
                audit,
                reservation_id=reservation_id,
                amount=amount,
                basis=basis,
                attempt=attempt,
                refused_by=holder.name,
                remaining=headroom,
            )
            raise CapExceeded(
                f"reserving {amount} would cross the cap of {holder.name}: {headroom} remains",
                reason=Reason.SPEND_CAP_EXCEEDED,
                account=holder.name,
                remaining_usd_micro=headroom,
            )
    account.record(
        Account.SpendReserved,
        audit,
        reservation_id=reservation_id,
        amount=amount,
        basis=basis,
        expires_at=expires_at,
        attempt=attempt,
    )
    roll_up(parents, audit, account, reservation_id, "reserve", amount, 0)
    return None


def commit(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    reservation_id: str,
    actual: int,
    basis: dict[str, Any],
    recall: Recall | None = None,
) -> tuple[int | None, int]:
    """Settle a hold with the actual amount, charged in full. Returns (version of an identical
    earlier commit or None, overrun). A hold that expired, or was released because a new attempt
    fenced off its attempt, is committed late: the money was spent all the same, without a hold."""
    entry = account.entry(reservation_id, recall)
    if entry is None:
        raise NotFound(
            f"no reservation {reservation_id}", reason=Reason.RESERVATION_NOT_FOUND, reservation_id=reservation_id
        )
    state = entry["state"]
    if state == "committed":
        if entry["actual"] != actual:
            raise Conflict(
                f"reservation {reservation_id} was committed with another amount",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                reservation_id=reservation_id,
            )
        # The overrun first answered (a late commit's is what lay beyond the cap, not the hold).
        return int(entry["settled_version"]), int(entry.get("overrun", max(0, actual - entry["amount"])))
    late = state == "expired" or (state == "released" and entry.get("reason") == SUPERSEDED)
    if state in ("released", "refused", "charged") and not late:
        raise Refused(f"reservation {reservation_id} is {state}", reason=SETTLED[state], reservation_id=reservation_id)
    reserved = entry["amount"]
    if state == "pending":
        overrun = max(0, actual - reserved)
        account.record(
            Account.SpendCommitted,
            audit,
            reservation_id=reservation_id,
            reserved=reserved,
            actual=actual,
            basis=basis,
            overrun=overrun,
            late=False,
        )
        roll_up(parents, audit, account, reservation_id, "commit", -reserved, actual)
    else:  # Expired: the money was spent all the same, without a hold.
        overrun = account.excess(actual)
        account.record(
            Account.SpendCommitted,
            audit,
            reservation_id=reservation_id,
            reserved=0,
            actual=actual,
            basis=basis,
            overrun=overrun,
            late=True,
        )
        roll_up(parents, audit, account, reservation_id, "late_commit", 0, actual)
    return None, overrun


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
    if entry["state"] in ("released", "expired", "refused"):
        return int(entry["settled_version"])
    if entry["state"] != "pending":
        raise Refused(
            f"reservation {reservation_id} is {entry['state']}",
            reason=SETTLED[entry["state"]],
            reservation_id=reservation_id,
        )
    account.record(Account.SpendReleased, audit, reservation_id=reservation_id, amount=entry["amount"], reason=reason)
    roll_up(parents, audit, account, reservation_id, "release", -entry["amount"], 0)
    return None


def charge(
    account: Account,
    parents: list[Account],
    audit: Audit,
    *,
    charge_id: str,
    amount: int,
    basis: dict[str, Any],
    reason: str,
    recall: Recall | None = None,
) -> tuple[int | None, int]:
    """Record spend that already happened, in full; the part beyond the cap is an overrun."""
    entry = account.entry(charge_id, recall)
    if entry is not None:
        if entry["state"] != "charged" or (entry["amount"], entry["basis"]) != (amount, basis):
            raise Conflict(
                f"{charge_id} exists with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                charge_id=charge_id,
            )
        return int(entry["settled_version"]), int(entry.get("overrun", 0))
    overrun = account.excess(amount)
    account.record(
        Account.SpendCharged, audit, charge_id=charge_id, amount=amount, basis=basis, reason=reason, overrun=overrun
    )
    roll_up(parents, audit, account, charge_id, "charge", 0, amount)
    return None, overrun


def release_superseded(account: Account, parents: list[Account], audit: Audit, *, attempt: int) -> int:
    """Give back the pending holds of the attempts before `attempt` (fenced off by it): a dead
    trainer's holds must not block the cap until their expiry. Returns how many were released."""
    fenced = [(key, hold) for key, hold in account.holds.items() if 0 < hold["attempt"] < attempt]
    for key, hold in fenced:
        account.record(Account.SpendReleased, audit, reservation_id=key, amount=hold["amount"], reason=SUPERSEDED)
        roll_up(parents, audit, account, key, "release", -hold["amount"], 0)
    return len(fenced)


def set_cap(account: Account, audit: Audit, cap: int | None) -> int | None:
    """Change the cap. A cap below what is already committed and held is refused, so the
    invariant holds at every position."""
    if cap == account.cap:
        return account.version
    floor = account.committed + account.pending - account.overrun
    if cap is not None and cap < floor:
        raise Refused(
            f"cap {cap} is below the {floor} already committed and held",
            reason=Reason.CAP_BELOW_SPEND,
            minimum_cap_usd_micro=floor,
        )
    account.record(Account.CapSet, audit, cap=cap)
    return None
