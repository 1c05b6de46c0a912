"""The read models of the bill view: a bill beside the ledger's estimate (ledger.views.bills) and
the reconciliation report."""

from __future__ import annotations

from datetime import datetime

import msgspec

__all__ = ["BillTotals", "ProviderBill", "ReconcileReport", "Reconciliation", "TokenClassDrift", "UnattributedGroup"]


class BillTotals(msgspec.Struct, frozen=True, kw_only=True):
    """A provider's bill beside the ledger's estimate (see ledger.views.bills for each figure)."""

    estimated_usd_micro: int = 0
    billed_usd_micro: int = 0
    drift_usd_micro: int = 0
    drift_percent: float | None = None
    adjusted_usd_micro: int = 0
    pending_bill_usd_micro: int = 0
    provisional_usd_micro: int = 0
    lines: int = 0
    unpriced_lines: int = 0
    flagged: bool = False
    unadjusted_usd_micro: int = 0


class TokenClassDrift(msgspec.Struct, frozen=True, kw_only=True):
    token_class: str
    ledger_tokens: int
    billed_tokens: int
    drift_tokens: int


class Reconciliation(msgspec.Struct, frozen=True, kw_only=True):
    """One run's (run_id set) or account's reconciliation."""

    run_id: str
    name: str
    account: str
    parent: str
    bill: BillTotals
    providers: tuple[str, ...]
    token_classes: tuple[TokenClassDrift, ...]


class ProviderBill(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    billed_usd_micro: int
    unattributed_usd_micro: int
    lines: int
    unattributed_lines: int
    restatements: int
    cost_data_through: datetime | None
    first_interval_start: datetime | None
    last_interval_end: datetime | None


class UnattributedGroup(msgspec.Struct, frozen=True, kw_only=True):
    provider: str
    source: str
    billed_usd_micro: int
    lines: int


class ReconcileReport(msgspec.Struct, frozen=True, kw_only=True):
    runs: tuple[Reconciliation, ...]
    accounts: tuple[Reconciliation, ...]
    providers: tuple[ProviderBill, ...]
    unattributed: tuple[UnattributedGroup, ...]
    next_page_token: str
    threshold_percent: float
    position: int
