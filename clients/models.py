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
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, cast

import msgspec

__all__ = [
    "Model",
    "RunStatus",
    "TokenCost",
    "GpuCost",
    "CostBasis",
    "StateHandle",
    "MetricColumn",
    "StepBatch",
    "RunInfo",
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
    "RegisterReceipt",
    "PromoteReceipt",
    "RollbackReceipt",
    "Event",
]

RunStatus = Literal["", "running", "done", "failed", "stopped"]


def _empty_list() -> list[Any]:
    return []


def _empty_dict() -> dict[str, Any]:
    return {}


class Model(msgspec.Struct, frozen=True, kw_only=True):
    """The base of every result: immutable, compared by value, `.to_dict()` for JSON."""

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready builtins: nested results as dicts, datetimes as strings."""
        return cast(dict[str, Any], msgspec.to_builtins(self))


# common.proto


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
    tokens: list[TokenCost] = msgspec.field(default_factory=_empty_list)
    gpu: GpuCost | None = None


class StateHandle(Model, frozen=True, kw_only=True):
    """Where a checkpoint's state lives: backend ("tinker", "local", ...), uri and fidelity."""

    backend: str = ""
    uri: str = ""
    fidelity: str = ""


class MetricColumn(Model, frozen=True, kw_only=True):
    """One metric over a batch or page: `values`, one per step, or per step of `index` when given."""

    name: str = ""
    values: list[float] = msgspec.field(default_factory=_empty_list)
    index: list[int] = msgspec.field(default_factory=_empty_list)


class StepBatch(Model, frozen=True, kw_only=True):
    run_id: str = ""
    attempt: int = 0
    steps: list[int] = msgspec.field(default_factory=_empty_list)
    tokens: list[int] = msgspec.field(default_factory=_empty_list)
    usd_micro: list[int] = msgspec.field(default_factory=_empty_list)
    metrics: list[MetricColumn] = msgspec.field(default_factory=_empty_list)


# runs.proto


class RunInfo(Model, frozen=True, kw_only=True):
    run_id: str = ""
    run_key: str = ""
    name: str = ""
    status: RunStatus = ""
    spec: dict[str, Any] = msgspec.field(default_factory=_empty_dict)
    summary: dict[str, Any] = msgspec.field(default_factory=_empty_dict)
    error: str = ""
    opened_at: datetime | None = None
    finished_at: datetime | None = None


class Attempt(Model, frozen=True, kw_only=True):
    number: int = 0
    attempt_id: str = ""
    label: str = ""
    started_at: datetime | None = None
    resumed_from_step: int | None = None
    ended: bool = False


class Checkpoint(Model, frozen=True, kw_only=True):
    attempt: int = 0
    step: int = 0
    handle: StateHandle | None = None
    sampler_uri: str = ""
    final: bool = False
    saved_at: datetime | None = None
    expires_at: datetime | None = None
    digest: str = ""


class Resume(Model, frozen=True, kw_only=True):
    """Where a new attempt resumes: `handle` is None unless `available`."""

    available: bool = False
    from_step: int = 0
    handle: StateHandle | None = None
    sampler_uri: str = ""
    spend_committed_usd_micro: int = 0


class SpendTotals(Model, frozen=True, kw_only=True):
    cap_usd_micro: int | None = None
    committed_usd_micro: int = 0
    pending_usd_micro: int = 0
    remaining_usd_micro: int | None = None
    overrun_usd_micro: int = 0


class RunState(Model, frozen=True, kw_only=True):
    """A run as it stands. The server always sends `run`, `resume` and `spend`."""

    run: RunInfo = msgspec.field(default_factory=RunInfo)
    attempts: list[Attempt] = msgspec.field(default_factory=_empty_list)
    current_attempt: int = 0
    checkpoint: Checkpoint | None = None
    expired_checkpoints: list[Checkpoint] = msgspec.field(default_factory=_empty_list)
    resume: Resume = msgspec.field(default_factory=Resume)
    last_step: int | None = None
    spend: SpendTotals = msgspec.field(default_factory=SpendTotals)
    position: int = 0
    expired_checkpoint_count: int = 0


class RunSummary(Model, frozen=True, kw_only=True):
    run_id: str = ""
    name: str = ""
    status: RunStatus = ""
    current_attempt: int = 0
    last_step: int | None = None
    committed_usd_micro: int = 0
    opened_at: datetime | None = None


class RunPage(Model, frozen=True, kw_only=True):
    """A page of list_runs; pass `next_page_token` back for the next ("" after the last)."""

    runs: list[RunSummary] = msgspec.field(default_factory=_empty_list)
    next_page_token: str = ""


class SeriesPage(Model, frozen=True, kw_only=True):
    """A page of get_series, column-wise; `next_from_step` is None on the last page."""

    steps: list[int] = msgspec.field(default_factory=_empty_list)
    attempts: list[int] = msgspec.field(default_factory=_empty_list)
    tokens: list[int] = msgspec.field(default_factory=_empty_list)
    usd_micro: list[int] = msgspec.field(default_factory=_empty_list)
    superseded: list[bool] = msgspec.field(default_factory=_empty_list)
    metrics: list[MetricColumn] = msgspec.field(default_factory=_empty_list)
    next_from_step: int | None = None


class OpenRunReceipt(Model, frozen=True, kw_only=True):
    state: RunState = msgspec.field(default_factory=RunState)
    created: bool = False
    position: int = 0


class StartAttemptReceipt(Model, frozen=True, kw_only=True):
    attempt: int = 0
    position: int = 0
    duplicate: bool = False
    state: RunState = msgspec.field(default_factory=RunState)


class AppendReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    last_step: int = 0


class StepAck(Model, frozen=True, kw_only=True):
    """The ack of one batch of a RecordSteps stream."""

    sequence: int = 0
    position: int = 0
    duplicate: bool = False
    last_step: int = 0


class CheckpointReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False


class FinishReceipt(Model, frozen=True, kw_only=True):
    position: int = 0


class SummaryReceipt(Model, frozen=True, kw_only=True):
    position: int = 0


class WatchUpdate(Model, frozen=True, kw_only=True):
    """One item of watch_run: the event at `position` (its steps for a steps event) and the whole
    state as it stands after it (the spec left out: get_run_state has it)."""

    position: int = 0
    event_type: str = ""
    steps: StepBatch | None = None
    state: RunState = msgspec.field(default_factory=RunState)


# spend.proto


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
    reservations: list[Reservation] = msgspec.field(default_factory=_empty_list)
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


# registry.proto


class GateVerdict(Model, frozen=True, kw_only=True):
    passed: bool = False
    reason: str = ""
    stats: dict[str, Any] = msgspec.field(default_factory=_empty_dict)


class ModelVersion(Model, frozen=True, kw_only=True):
    family: str = ""
    version: int = 0
    artifact_uri: str = ""
    digest: str = ""
    source_run_id: str = ""
    source_step: int = 0
    metadata: dict[str, Any] = msgspec.field(default_factory=_empty_dict)
    registered_at: datetime | None = None


class Promotion(Model, frozen=True, kw_only=True):
    version: int = 0
    previous: int = 0
    kind: str = ""
    verdict: GateVerdict | None = None
    reason: str = ""
    at: datetime | None = None
    principal: str = ""
    position: int = 0


class Family(Model, frozen=True, kw_only=True):
    """A page of a family's versions and promotion history (list_versions); pass
    `next_page_token` back for the next page ("" after the last)."""

    versions: list[ModelVersion] = msgspec.field(default_factory=_empty_list)
    current: int = 0
    history: list[Promotion] = msgspec.field(default_factory=_empty_list)
    next_page_token: str = ""


class RegisterReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    version: int = 0
    duplicate: bool = False


class PromoteReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    current: int = 0
    previous: int = 0


class RollbackReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    current: int = 0
    previous: int = 0


# events.proto


class Event(Model, frozen=True, kw_only=True):
    """One event of the log; `data_json` is its data, decoded."""

    position: int = 0
    type: str = ""
    originator_id: str = ""
    originator_version: int = 0
    recorded_at: datetime | None = None
    principal: str = ""
    request_id: str = ""
    data_json: dict[str, Any] = msgspec.field(default_factory=_empty_dict)
