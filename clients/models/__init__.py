"""The client's typed results: frozen msgspec Structs that mirror the trainledger.v1 response
messages field for field (the same names as in proto/trainledger/v1/*.proto).

Every method of LedgerClient and AsyncLedgerClient answers with one of these instead of a dict:
`state.resume.handle.uri`, `page.next_page_token`. Timestamps are aware datetimes, Struct fields
(spec, summary, metadata, stats) plain dicts with their whole numbers as ints, unset optional
fields and unset messages None, a RunStatus one of "running" | "done" | "failed" | "stopped" (""
when unspecified). `.to_dict()` gives a JSON-ready dict (datetimes as RFC 3339 strings).

The few fields a response does not carry are named where they are added: the client-made
`reservation_id` of a ReserveReceipt and `charge_id` of a ChargeReceipt. They are decoded from the
messages generically (clients.codec.decode), so a field added to a message is added here too.

Each proto file's results are in a module of their own (clients.models.common, .runs, .spend,
.registry, .events) on the base in clients.models.base; every name is importable from here.
"""

from __future__ import annotations

from clients.models.base import Model
from clients.models.common import BillTotals, CostBasis, GpuCost, MetricColumn, StateHandle, StepBatch, TokenCost
from clients.models.events import ChainHead, Event, Verification
from clients.models.registry import (
    Family,
    FamilyList,
    FamilySummary,
    GateVerdict,
    ModelVersion,
    PromoteReceipt,
    Promotion,
    RegisterReceipt,
    RollbackReceipt,
)
from clients.models.runs import (
    AppendReceipt,
    Attempt,
    Checkpoint,
    CheckpointPage,
    CheckpointReceipt,
    FinishReceipt,
    LinkSessionReceipt,
    MetricStats,
    OpenRunReceipt,
    Resume,
    RunInfo,
    RunMetrics,
    RunPage,
    RunState,
    RunStatus,
    RunSummary,
    SeriesPage,
    SpendTotals,
    StartAttemptReceipt,
    StepAck,
    SummaryReceipt,
    WatchUpdate,
)
from clients.models.spend import (
    Account,
    Adjustment,
    AdjustReceipt,
    BilledLine,
    BilledUsageReceipt,
    ChargeReceipt,
    CommitReceipt,
    OpenAccountReceipt,
    ProviderBill,
    ReconcileReport,
    Reconciliation,
    ReleaseReceipt,
    Reservation,
    ReservationPage,
    ReserveReceipt,
    SetCapReceipt,
    TokenClassDrift,
    UnattributedGroup,
)

__all__ = [
    "Model",
    "BillTotals",
    "LinkSessionReceipt",
    "MetricStats",
    "BilledLine",
    "BilledUsageReceipt",
    "TokenClassDrift",
    "Reconciliation",
    "ProviderBill",
    "UnattributedGroup",
    "ReconcileReport",
    "Adjustment",
    "AdjustReceipt",
    "RunStatus",
    "TokenCost",
    "GpuCost",
    "CostBasis",
    "StateHandle",
    "MetricColumn",
    "StepBatch",
    "RunInfo",
    "RunMetrics",
    "Attempt",
    "Checkpoint",
    "Resume",
    "SpendTotals",
    "RunState",
    "RunSummary",
    "RunPage",
    "SeriesPage",
    "OpenRunReceipt",
    "StartAttemptReceipt",
    "AppendReceipt",
    "StepAck",
    "CheckpointPage",
    "CheckpointReceipt",
    "FinishReceipt",
    "SummaryReceipt",
    "WatchUpdate",
    "Account",
    "Reservation",
    "ReservationPage",
    "OpenAccountReceipt",
    "SetCapReceipt",
    "ReserveReceipt",
    "CommitReceipt",
    "ReleaseReceipt",
    "ChargeReceipt",
    "GateVerdict",
    "ModelVersion",
    "Promotion",
    "Family",
    "FamilyList",
    "FamilySummary",
    "RegisterReceipt",
    "PromoteReceipt",
    "RollbackReceipt",
    "Event",
    "ChainHead",
    "Verification",
]
