"""The bill view: providers' bill lines beside the spend the trainers committed."""

from __future__ import annotations

from ledger.views.bills.reads import DEFAULT_THRESHOLD_PERCENT, Figures, totals

__all__ = ["DEFAULT_THRESHOLD_PERCENT", "Figures", "totals"]
