"""The entries an account keeps of its ids (ledger.domain.accounts): a pending `Hold` (a call's
or a plan's) and the `SettledEntry` an id leaves once settled (committed, released, refused,
expired, settled by the ledger, charged or adjusted); and the totals a spend write answers with
(`AccountTotals`, with the account's plan as `PlanTotals`). Money is integer micro-dollars.

An account's snapshot stores its entries as maps: each field under the key it has always been
stored under (`amount`, not `amount_usd_micro`), a field the entry does not hold left out, so a
snapshot of the same state holds the same maps as before the entries were typed, and snapshots
stored as maps load as entries (`typed_entries`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import msgspec

from ledger.domain.basis import CostBasis

__all__ = ["AccountTotals", "Hold", "PlanTotals", "Recall", "SettledEntry", "SpendEntry", "known", "typed_entries"]

T = TypeVar("T")
E = TypeVar("E", "Hold", "SettledEntry")


class Hold(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A pending hold: a call's reservation, or a plan (kind "plan"), whose `amount_usd_micro` is
    what it adds to pending (a plan's: what is left undrawn of what was `planned_usd_micro`)."""

    state: str  # Always "pending": a hold that is settled leaves for a SettledEntry.
    kind: str = ""  # "plan" for a plan; "" for a call's hold.
    amount_usd_micro: int = msgspec.field(name="amount")
    planned_usd_micro: int | None = msgspec.field(default=None, name="planned")  # A plan's only.
    drawn_usd_micro: int | None = msgspec.field(default=None, name="drawn")  # A plan's only.
    basis: CostBasis
    attempt: int
    expires_at: datetime
    reserved_version: int
    # When a call's hold was granted (absent for a plan, and in states saved before it was kept).
    reserved_at: datetime | None = None


class SettledEntry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The entry a settled id leaves in the account's window: the fields of its hold, if it had
    one, with what settled it. Which fields it holds depends on how it came there (None: not held);
    `partial` marks a late commit's entry made after the hold's had left the window."""

    state: str  # refused, committed, released, expired, settled, charged or adjusted.
    kind: str = ""
    amount_usd_micro: int | None = msgspec.field(default=None, name="amount")
    planned_usd_micro: int | None = msgspec.field(default=None, name="planned")
    drawn_usd_micro: int | None = msgspec.field(default=None, name="drawn")
    basis: CostBasis | None = None
    bill: dict[str, Any] | None = None  # An adjustment's: the bill it was computed from.
    attempt: int | None = None
    expires_at: datetime | None = None
    refused_by: str | None = None  # A refusal's: the account whose cap it would have crossed.
    remaining_usd_micro: int | None = msgspec.field(default=None, name="remaining")
    reserved_version: int | None = None
    reserved_at: datetime | None = None
    partial: bool = False
    actual_usd_micro: int | None = msgspec.field(default=None, name="actual")
    # What the ledger charged for the abandoned hold (SpendSettled), and how ("pro_rata", "as_reserved").
    presumed_usd_micro: int | None = msgspec.field(default=None, name="presumed")
    method: str | None = None
    reason: str | None = None
    overrun_usd_micro: int | None = msgspec.field(default=None, name="overrun")
    settled_version: int

    @classmethod
    def of(cls, hold: Hold | SettledEntry, **fields: Any) -> SettledEntry:
        """The entry `hold` (or an entry settled before) leaves with `fields` (attribute names)."""
        return cls(**{**msgspec.structs.asdict(hold), **fields})


#: The entry of an id on an account: pending or settled (Account.entry).
SpendEntry = Hold | SettledEntry
#: Recalls the entry of an id that has left an account's window (None: never used on it).
Recall = Callable[[str], "SpendEntry | None"]


def known(value: T | None, key: str) -> T:
    """A field the entry's state always holds (`key`: its stored name), as a stored map missing
    it would have raised."""
    if value is None:
        raise KeyError(key)
    return value


def typed_entries(entries: dict[str, Any], entry_type: type[E]) -> dict[str, E]:
    """An account's `entries` by id, as `entry_type`: converted in place (order kept) when they
    are the maps a snapshot was loaded with; every entry of one account is of one form."""
    if entries and type(next(iter(entries.values()))) is dict:
        entries.update(msgspec.convert(entries, dict[str, entry_type]))  # type: ignore[valid-type]
    return entries


class PlanTotals(msgspec.Struct, frozen=True):
    """An account's latest plan (ledger.domain.plans.summary): its id, state, what was planned,
    drawn by holds, and is still held undrawn."""

    reservation_id: str
    state: str
    planned_usd_micro: int
    drawn_usd_micro: int
    held_usd_micro: int


class AccountTotals(msgspec.Struct, frozen=True):
    """An account's totals from its aggregate (Account.summary), as of a write; `plan` is set in
    the answer to a plan's write only."""

    account: str
    parent: str
    cap_usd_micro: int | None
    committed_usd_micro: int
    presumed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int | None
    overrun_usd_micro: int
    plan: PlanTotals | None = None
