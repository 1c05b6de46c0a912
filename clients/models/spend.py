"""The typed results of spend.proto: accounts, reservations and their pages, and the receipts of
the spend commands (open, cap, reserve, commit, release, charge); the receipts of reserve and
charge carry the client-made id they were sent with.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from clients.models.base import Model, empty_list
from clients.models.common import CostBasis

__all__ = [
    "Account",
    "Reservation",
    "ReservationPage",
    "OpenAccountReceipt",
    "SetCapReceipt",
    "ReserveReceipt",
    "CommitReceipt",
    "ReleaseReceipt",
    "ChargeReceipt",
]


class Account(Model, frozen=True, kw_only=True):
    account: str = ""
    parent: str = ""
    cap_usd_micro: int | None = None
    committed_usd_micro: int = 0
    pending_usd_micro: int = 0
    remaining_usd_micro: int | None = None
    overrun_usd_micro: int = 0


class Reservation(Model, frozen=True, kw_only=True):
    reservation_id: str = ""
    kind: str = ""
    state: str = ""
    amount_usd_micro: int = 0
    actual_usd_micro: int = 0
    overrun_usd_micro: int = 0
    basis: CostBasis | None = None
    actual_basis: CostBasis | None = None
    reason: str = ""
    attempt: int = 0
    reserved_at: datetime | None = None
    settled_at: datetime | None = None
    expires_at: datetime | None = None
    position: int = 0


class ReservationPage(Model, frozen=True, kw_only=True):
    reservations: list[Reservation] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


class OpenAccountReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    created: bool = False
    account: Account | None = None


class SetCapReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    account: Account | None = None


class ReserveReceipt(Model, frozen=True, kw_only=True):
    """A granted reservation; `reservation_id` is the client-made id it was sent with."""

    position: int = 0
    duplicate: bool = False
    expires_at: datetime | None = None
    account: Account | None = None
    reservation_id: str = ""


class CommitReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    overrun_usd_micro: int = 0
    account: Account | None = None


class ReleaseReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    account: Account | None = None


class ChargeReceipt(Model, frozen=True, kw_only=True):
    """A recorded charge; `charge_id` is the client-made id it was sent with."""

    position: int = 0
    duplicate: bool = False
    overrun_usd_micro: int = 0
    account: Account | None = None
    charge_id: str = ""
