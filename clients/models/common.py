"""The typed results of common.proto: costs and their basis, where a checkpoint's state lives, and
a batch of steps with its metric columns; the runs and spend results are built from them.
"""

from __future__ import annotations

import msgspec

from clients.models.base import Model, empty_list

__all__ = ["TokenCost", "GpuCost", "CostBasis", "StateHandle", "MetricColumn", "StepBatch", "BillTotals", "PlanHold"]


class TokenCost(Model, frozen=True, kw_only=True):
    token_class: str = ""
    tokens: int = 0
    usd_micro_per_million_tokens: int = 0


class GpuCost(Model, frozen=True, kw_only=True):
    gpu_milliseconds: int = 0
    usd_micro_per_gpu_hour: int = 0
    gpu_type: str = ""
    gpu_count: int = 0


class CostBasis(Model, frozen=True, kw_only=True):
    price_sheet: str = ""
    price_source: str = ""
    tokens: list[TokenCost] = msgspec.field(default_factory=empty_list)
    gpu: GpuCost | None = None


class StateHandle(Model, frozen=True, kw_only=True):
    """Where a checkpoint's state lives: backend ("tinker", "local", ...), uri and fidelity."""

    backend: str = ""
    uri: str = ""
    fidelity: str = ""


class MetricColumn(Model, frozen=True, kw_only=True):
    """One metric over a batch or page: `values`, one per step, or per step of `index` when given."""

    name: str = ""
    values: list[float] = msgspec.field(default_factory=empty_list)
    index: list[int] = msgspec.field(default_factory=empty_list)


class StepBatch(Model, frozen=True, kw_only=True):
    run_id: str = ""
    attempt: int = 0
    steps: list[int] = msgspec.field(default_factory=empty_list)
    tokens: list[int] = msgspec.field(default_factory=empty_list)
    usd_micro: list[int] = msgspec.field(default_factory=empty_list)
    metrics: list[MetricColumn] = msgspec.field(default_factory=empty_list)


class BillTotals(Model, frozen=True, kw_only=True):
    """A provider's bill beside the ledger's estimate (micro-dollars): see spend.proto's BillTotals."""

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


class PlanHold(Model, frozen=True, kw_only=True):
    """An account's latest plan hold (micro-dollars): see common.proto's PlanHold."""

    reservation_id: str = ""
    state: str = ""
    planned_usd_micro: int = 0
    drawn_usd_micro: int = 0
    held_usd_micro: int = 0
