"""The typed results of spend.proto: accounts, reservations and their pages, and the receipts of
the spend commands (open, cap, reserve, commit, release, charge); the receipts of reserve and
charge carry the client-made id they were sent with.
"""

from __future__ import annotations

from datetime import datetime

import msgspec

from clients.models.base import Model, empty_list
from clients.models.common import BillTotals, CostBasis, PlanHold

__all__ = [
    "Account",
    "Reservation",
    "ReservationPage",
    "OpenAccountReceipt",
    "SetCapReceipt",
    "ReserveReceipt",
    "ReservePlanReceipt",
    "CommitReceipt",
    "ReleaseReceipt",
    "ChargeReceipt",
    "BilledLine",
    "BilledUsageReceipt",
    "TokenClassDrift",
    "Reconciliation",
    "ProviderBill",
    "UnattributedGroup",
    "ReconcileReport",
    "Adjustment",
    "AdjustReceipt",
]


class Account(Model, frozen=True, kw_only=True):
    account: str = ""
    parent: str = ""
    cap_usd_micro: int | None = None
    committed_usd_micro: int = 0
    pending_usd_micro: int = 0
    remaining_usd_micro: int | None = None
    overrun_usd_micro: int = 0
    bill: BillTotals | None = None
    plan: PlanHold | None = None
    # What the ledger charged for holds nobody settled (pro rata or presumed as reserved).
    presumed_usd_micro: int = 0


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


class ReservePlanReceipt(Model, frozen=True, kw_only=True):
    """A granted plan hold (account.plan); `reservation_id` is the client-made id it was sent with."""

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


class BilledLine(Model, frozen=True, kw_only=True):
    """One line of a provider's bill, as sent to RecordBilledUsage (see spend.proto's BilledLine).
    Made by the pullers in clients.billing from a provider's own records; `amount_usd_micro` is
    the provider's figure `amount_text` rounded half-even (trainledger.bills)."""

    line_id: str = ""
    interval_start: datetime | None = None
    interval_end: datetime | None = None
    amount_usd_micro: int | None = None
    amount_text: str = ""
    currency: str = "USD"
    quantities: dict[str, float] = msgspec.field(default_factory=dict)
    run_id: str = ""
    account: str = ""
    session_id: str = ""
    tags: dict[str, str] = msgspec.field(default_factory=dict)
    description: str = ""


class BilledUsageReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    recorded: int = 0
    restated: int = 0
    unchanged: int = 0


class TokenClassDrift(Model, frozen=True, kw_only=True):
    token_class: str = ""
    ledger_tokens: int = 0
    billed_tokens: int = 0
    drift_tokens: int = 0


class Reconciliation(Model, frozen=True, kw_only=True):
    run_id: str = ""
    name: str = ""
    account: str = ""
    parent: str = ""
    bill: BillTotals | None = None
    providers: list[str] = msgspec.field(default_factory=empty_list)
    token_classes: list[TokenClassDrift] = msgspec.field(default_factory=empty_list)


class ProviderBill(Model, frozen=True, kw_only=True):
    provider: str = ""
    billed_usd_micro: int = 0
    unattributed_usd_micro: int = 0
    lines: int = 0
    unattributed_lines: int = 0
    restatements: int = 0
    cost_data_through: datetime | None = None
    first_interval_start: datetime | None = None
    last_interval_end: datetime | None = None


class UnattributedGroup(Model, frozen=True, kw_only=True):
    provider: str = ""
    source: str = ""
    billed_usd_micro: int = 0
    lines: int = 0


class ReconcileReport(Model, frozen=True, kw_only=True):
    runs: list[Reconciliation] = msgspec.field(default_factory=empty_list)
    accounts: list[Reconciliation] = msgspec.field(default_factory=empty_list)
    providers: list[ProviderBill] = msgspec.field(default_factory=empty_list)
    unattributed: list[UnattributedGroup] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""
    threshold_percent: float = 0.0
    position: int = 0


class Adjustment(Model, frozen=True, kw_only=True):
    account: str = ""
    run_id: str = ""
    adjustment_id: str = ""
    amount_usd_micro: int = 0
    overrun_usd_micro: int = 0
    position: int = 0
    duplicate: bool = False


class AdjustReceipt(Model, frozen=True, kw_only=True):
    adjustments: list[Adjustment] = msgspec.field(default_factory=empty_list)
    position: int = 0
