"""The read models: what the views answer, as frozen msgspec Structs.

Each mirrors the trainledger.v1 message of the same name field for field where one exists, so the
ledger, the wire and the client speak one vocabulary (`state.resume.handle.uri`,
`state.spend.committed_usd_micro`). Money is int micro-dollars, times are aware UTC datetimes,
documents (spec, summary, metadata, cost bases, gate stats) are plain dicts. A run's status is the
ledger's name for it ("running", "done", "failed", "stopped"); the codec maps it to RunStatus.

Structs are built directly from view rows (no validation on construction, so they cost about
what a dict does); nested collections are tuples. They live in one module per view (runs,
spend, bills, series, registry), integrity's, and kinds (the kinds of value they share); every
one is named from here (`from ledger.views import models; models.RunState`).
"""

from __future__ import annotations

from ledger.views.models.bills import (
    BillTotals,
    ProviderBill,
    ReconcileReport,
    Reconciliation,
    TokenClassDrift,
    UnattributedGroup,
)
from ledger.views.models.integrity import ChainHead, Verification
from ledger.views.models.kinds import DatasetRole, Moment, ObjectiveMode, RunStatus
from ledger.views.models.registry import (
    Alias,
    Family,
    FamilyPage,
    FamilySummary,
    GateEvidence,
    GateVerdict,
    ModelVersion,
    Promotion,
    Retirement,
    SourceCheckpoint,
)
from ledger.views.models.runs import (
    Attempt,
    BestCheckpoint,
    Checkpoint,
    Dataset,
    LineageRun,
    Objective,
    Progress,
    ProtectedPage,
    ProtectedState,
    PruneEntry,
    PrunePage,
    Resume,
    Retraction,
    RunInfo,
    RunPage,
    RunState,
    RunSummary,
    StateHandle,
)
from ledger.views.models.series import Chart, ChartMetric, ChartSeries, MetricColumn, MetricStats, SeriesPage
from ledger.views.models.spend import Account, PlanHold, Reservation, ReservationPage, SpendHour, SpendTotals

__all__ = [
    "Moment",
    "RunStatus",
    "ObjectiveMode",
    "DatasetRole",
    "Objective",
    "Progress",
    "LineageRun",
    "Retraction",
    "Dataset",
    "BestCheckpoint",
    "PruneEntry",
    "PrunePage",
    "ProtectedState",
    "ProtectedPage",
    "SourceCheckpoint",
    "StateHandle",
    "RunInfo",
    "Attempt",
    "Checkpoint",
    "Resume",
    "BillTotals",
    "TokenClassDrift",
    "Reconciliation",
    "ProviderBill",
    "UnattributedGroup",
    "ReconcileReport",
    "SpendTotals",
    "PlanHold",
    "RunState",
    "RunSummary",
    "RunPage",
    "MetricColumn",
    "SeriesPage",
    "Account",
    "Reservation",
    "ReservationPage",
    "ModelVersion",
    "GateEvidence",
    "GateVerdict",
    "Promotion",
    "Alias",
    "Retirement",
    "Family",
    "FamilyPage",
    "FamilySummary",
    "MetricStats",
    "Chart",
    "ChartMetric",
    "ChartSeries",
    "SpendHour",
    "ChainHead",
    "Verification",
]
