"""The typed results of runs.proto: a run's info, attempts, checkpoints, resume point and spend
totals gathered in RunState, the pages of list_runs and get_series, the receipts of the run
commands, and the updates of watch_run; a run's objective, progress, datasets and retraction, the
best checkpoint on a metric and a retention plan's entries.

The enums a user writes become the words they name: a RunStatus "running" | "done" | "failed" |
"stopped", an ObjectiveMode "min" | "max", a DatasetRole "train" | "eval" ("" when unspecified).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from clients.models.base import Model, empty_dict, empty_list
from clients.models.common import BillTotals, MetricColumn, PlanHold, StateHandle, StepBatch

__all__ = [
    "RunStatus",
    "RunInfo",
    "Attempt",
    "Checkpoint",
    "Resume",
    "SpendTotals",
    "LinkSessionReceipt",
    "RunState",
    "RunSummary",
    "RunPage",
    "SeriesPage",
    "OpenRunReceipt",
    "StartAttemptReceipt",
    "HeartbeatReceipt",
    "AppendReceipt",
    "StepAck",
    "CheckpointReceipt",
    "FinishReceipt",
    "SummaryReceipt",
    "WatchUpdate",
    "ObjectiveMode",
    "DatasetRole",
    "Objective",
    "Progress",
    "Retraction",
    "Dataset",
    "BestCheckpoint",
    "PruneEntry",
    "PrunePage",
    "RetractReceipt",
    "DatasetReceipt",
    "DeleteCheckpointReceipt",
]

RunStatus = Literal["", "running", "done", "failed", "stopped", "lost"]
ObjectiveMode = Literal["", "min", "max"]
DatasetRole = Literal["", "train", "eval"]


class Objective(Model, frozen=True, kw_only=True):
    """The metric that ranks a run's checkpoints and which way is better ("min": lower)."""

    metric: str = ""
    mode: ObjectiveMode = ""


class Retraction(Model, frozen=True, kw_only=True):
    """Why, when and by whom an operator retracted a run."""

    reason: str = ""
    retracted_at: datetime | None = None
    principal: str = ""


class Progress(Model, frozen=True, kw_only=True):
    """How far a run has come against its plan: `fraction` is step / max_steps, `eta` when it
    should reach max_steps at the recent `steps_per_second` (None unless running with both)."""

    max_steps: int | None = None
    step: int | None = None
    fraction: float | None = None
    steps_per_second: float | None = None
    eta: datetime | None = None


class Dataset(Model, frozen=True, kw_only=True):
    """A dataset a run trains or evaluates on, by the digest of its rows, with its export report."""

    role: DatasetRole = ""
    digest: str = ""
    format: str = ""
    rows: int = 0
    tokens: int | None = None
    source_uri: str = ""
    report: dict[str, Any] = msgspec.field(default_factory=empty_dict)
    recorded_at: datetime | None = None


class RunInfo(Model, frozen=True, kw_only=True):
    run_id: str = ""
    run_key: str = ""
    name: str = ""
    status: RunStatus = ""
    spec: dict[str, Any] = msgspec.field(default_factory=empty_dict)
    summary: dict[str, Any] = msgspec.field(default_factory=empty_dict)
    error: str = ""
    opened_at: datetime | None = None
    finished_at: datetime | None = None
    objective: Objective | None = None
    retraction: Retraction | None = None


class Attempt(Model, frozen=True, kw_only=True):
    number: int = 0
    attempt_id: str = ""
    label: str = ""
    started_at: datetime | None = None
    resumed_from_step: int | None = None
    ended: bool = False
    # The current attempt's lease, its last sign of life, and when the lease lapsed (lost).
    lease_s: int | None = None
    last_seen_at: datetime | None = None
    lost_at: datetime | None = None


class Checkpoint(Model, frozen=True, kw_only=True):
    attempt: int = 0
    step: int = 0
    handle: StateHandle | None = None
    sampler_uri: str = ""
    final: bool = False
    saved_at: datetime | None = None
    expires_at: datetime | None = None
    digest: str = ""
    superseded: bool = False
    scores: dict[str, float] = msgspec.field(default_factory=empty_dict)
    deleted_at: datetime | None = None
    expired: bool = False


class BestCheckpoint(Model, frozen=True, kw_only=True):
    """The usable checkpoint that scores best on `metric` ("min" or "max" is better) and its score."""

    checkpoint: Checkpoint = msgspec.field(default_factory=Checkpoint)
    score: float = 0.0
    metric: str = ""
    mode: ObjectiveMode = ""


class PruneEntry(Model, frozen=True, kw_only=True):
    """A checkpoint in a retention plan: `delete` when its state may go, else `kept_because`
    ("resume", "best", "registered", "recent", "deleted", "expired")."""

    checkpoint: Checkpoint = msgspec.field(default_factory=Checkpoint)
    delete: bool = False
    kept_because: list[str] = msgspec.field(default_factory=empty_list)


class PrunePage(Model, frozen=True, kw_only=True):
    """A page of a retention plan in (step, attempt) order ("" after the last); plan_prune reads
    every page."""

    entries: list[PruneEntry] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


class CheckpointPage(Model, frozen=True, kw_only=True):
    """A page of list_checkpoints in (step, attempt) order; pass `next_page_token` back for the
    next ("" after the last)."""

    checkpoints: list[Checkpoint] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


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
    bill: BillTotals | None = None
    plan: PlanHold | None = None
    # What the ledger charged for holds nobody settled (pro rata or presumed as reserved).
    presumed_usd_micro: int = 0


class RunSourceCheckpoint(Model, frozen=True, kw_only=True):
    """The checkpoint of another run a new run starts from (open_run's `source_checkpoint`): the
    source run, the checkpoint's step and its uri as the trainer knew it ("" when not given)."""

    run_id: str = ""
    step: int = 0
    uri: str = ""


class LineageRun(Model, frozen=True, kw_only=True):
    """One link of a run's lineage: a run (its id, name, when it was opened and whether it was
    retracted since) and the step (and uri) of the checkpoint that joins it to the other run."""

    run_id: str = ""
    name: str = ""
    step: int = 0
    uri: str = ""
    opened_at: datetime | None = None
    retracted: bool = False


class RunState(Model, frozen=True, kw_only=True):
    """A run as it stands. The server always sends `run`, `resume`, `spend` and `progress`;
    `best_checkpoint` is None unless the run has an objective and a usable checkpoint scored on it."""

    run: RunInfo = msgspec.field(default_factory=RunInfo)
    attempts: list[Attempt] = msgspec.field(default_factory=empty_list)
    current_attempt: int = 0
    checkpoint: Checkpoint | None = None
    expired_checkpoints: list[Checkpoint] = msgspec.field(default_factory=empty_list)
    resume: Resume = msgspec.field(default_factory=Resume)
    last_step: int | None = None
    spend: SpendTotals = msgspec.field(default_factory=SpendTotals)
    position: int = 0
    expired_checkpoint_count: int = 0
    best_checkpoint: Checkpoint | None = None
    progress: Progress = msgspec.field(default_factory=Progress)
    datasets: list[Dataset] = msgspec.field(default_factory=empty_list)
    # The latest reports on whether training worked, by kind ("holdout", "delta", "notes").
    reports: dict[str, Any] = msgspec.field(default_factory=empty_dict)
    # The run's tags (set_tags), by key.
    tags: dict[str, str] = msgspec.field(default_factory=empty_dict)
    # The run this one started from (its checkpoint's step), the runs started from this one (the
    # latest 50, newest first) and how many there are in all.
    source: LineageRun | None = None
    children: list[LineageRun] = msgspec.field(default_factory=empty_list)
    child_count: int = 0


class RunSummary(Model, frozen=True, kw_only=True):
    run_id: str = ""
    name: str = ""
    status: RunStatus = ""
    current_attempt: int = 0
    last_step: int | None = None
    committed_usd_micro: int = 0
    opened_at: datetime | None = None
    parent_account: str = ""
    cap_usd_micro: int | None = None
    pending_usd_micro: int = 0
    progress: Progress = msgspec.field(default_factory=Progress)
    retracted: bool = False
    # What the ledger charged for holds nobody settled: spent as far as the cap is concerned.
    presumed_usd_micro: int = 0
    # The run's tags (set_tags), by key.
    tags: dict[str, str] = msgspec.field(default_factory=empty_dict)


class RunPage(Model, frozen=True, kw_only=True):
    """A page of list_runs; pass `next_page_token` back for the next ("" after the last)."""

    runs: list[RunSummary] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


class MetricStats(Model, frozen=True, kw_only=True):
    """One metric over a run's live line of steps: how many steps hold it, the first and last of
    them, the value at the last, the least and the greatest."""

    name: str = ""
    count: int = 0
    first_step: int = 0
    last_step: int = 0
    last: float = 0.0
    min: float = 0.0
    max: float = 0.0


class RunMetrics(Model, frozen=True, kw_only=True):
    """A page of a run's metrics, by name; `next_page_token` continues it ("" after the last)."""

    metrics: list[MetricStats] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


class SeriesPage(Model, frozen=True, kw_only=True):
    """A page of get_series, column-wise; `next_from_step` is None on the last page."""

    steps: list[int] = msgspec.field(default_factory=empty_list)
    attempts: list[int] = msgspec.field(default_factory=empty_list)
    tokens: list[int] = msgspec.field(default_factory=empty_list)
    usd_micro: list[int] = msgspec.field(default_factory=empty_list)
    superseded: list[bool] = msgspec.field(default_factory=empty_list)
    metrics: list[MetricColumn] = msgspec.field(default_factory=empty_list)
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


class LinkSessionReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False


class RetractReceipt(Model, frozen=True, kw_only=True):
    """RetractRun's answer; `duplicate` when the run was retracted before with the same reason."""

    position: int = 0
    duplicate: bool = False


class DatasetReceipt(Model, frozen=True, kw_only=True):
    """RecordDataset's answer; `duplicate` when the same dataset was recorded before."""

    position: int = 0
    duplicate: bool = False


class HeartbeatReceipt(Model, frozen=True, kw_only=True):
    """Heartbeat's answer: the position of the run's latest event."""

    position: int = 0


class DeleteCheckpointReceipt(Model, frozen=True, kw_only=True):
    """DeleteCheckpoint's answer; `duplicate` when the checkpoint was recorded as deleted before."""

    position: int = 0
    duplicate: bool = False
