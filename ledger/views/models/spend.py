"""The read models of the spend view: accounts, their audit trail, plan holds and spend by hour."""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.views.models.bills import BillTotals
from ledger.views.models.kinds import Moment

__all__ = ["Account", "PlanHold", "Reservation", "ReservationPage", "SpendHour", "SpendTotals"]


class PlanHold(msgspec.Struct, frozen=True, kw_only=True):
    """An account's latest plan hold (ledger.domain.plans): its id and state, what was planned,
    drawn by the attempt's holds, and is still held undrawn (0 once released or expired)."""

    reservation_id: str
    state: str
    planned_usd_micro: int
    drawn_usd_micro: int
    held_usd_micro: int


class SpendTotals(msgspec.Struct, frozen=True, kw_only=True):
    """A run's spend; cap and remaining are None for an uncapped account; `bill` is None when
    nothing was billed or estimated. `presumed_usd_micro` is what the ledger charged for holds
    nobody settled (pro rata or as reserved), apart from what was committed."""

    cap_usd_micro: int | None
    committed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int | None
    overrun_usd_micro: int
    bill: BillTotals | None = None
    plan: PlanHold | None = None
    presumed_usd_micro: int = 0


class Account(msgspec.Struct, frozen=True, kw_only=True):
    """A spend account's totals; cap and remaining are None for an uncapped account, `parent` is
    empty for a top-level one."""

    account: str
    parent: str
    cap_usd_micro: int | None
    committed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int | None
    overrun_usd_micro: int
    bill: BillTotals | None = None
    plan: PlanHold | None = None
    presumed_usd_micro: int = 0  # What the ledger charged for abandoned holds (see SpendTotals).


class Reservation(msgspec.Struct, frozen=True, kw_only=True):
    """An entry of an account's audit trail: a reservation (kind "reservation", state pending,
    committed, released, expired or refused) or a charge (kind "charge", state charged). Bases
    are cost-basis documents; `actual_basis` is None until a commit gives one."""

    reservation_id: str
    kind: str
    state: str
    amount_usd_micro: int
    actual_usd_micro: int
    overrun_usd_micro: int
    basis: dict[str, Any]
    actual_basis: dict[str, Any] | None
    reason: str
    attempt: int
    reserved_at: Moment
    settled_at: Moment | None
    expires_at: Moment | None
    position: int


class ReservationPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of an account's audit trail in log order; `after_position` is what the next page
    follows when this one is full (it may be empty), None otherwise."""

    reservations: tuple[Reservation, ...]
    after_position: int | None


class SpendHour(msgspec.Struct, frozen=True, kw_only=True):
    """What an account committed in one UTC hour (adjustments to a provider's bill included), and
    apart from it what the ledger presumed spent in that hour for abandoned holds."""

    hour: Moment
    committed_usd_micro: int
    presumed_usd_micro: int = 0
