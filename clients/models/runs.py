"""The typed results of runs.proto: a run's info, attempts, checkpoints, resume point and spend
totals gathered in RunState, the pages of list_runs and get_series, the receipts of the run
commands, and the updates of watch_run.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

import msgspec

from clients.models.base import Model, empty_dict, empty_list
from clients.models.common import BillTotals, MetricColumn, StateHandle, StepBatch

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
    "AppendReceipt",
    "StepAck",
    "CheckpointReceipt",
    "FinishReceipt",
    "SummaryReceipt",
    "WatchUpdate",
]

RunStatus = Literal["", "running", "done", "failed", "stopped"]


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
    superseded: bool = False


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


class RunState(Model, frozen=True, kw_only=True):
    """A run as it stands. The server always sends `run`, `resume` and `spend`."""

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
