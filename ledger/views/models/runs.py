"""The read models of the runs view and what the provenance and reports views add to a run:
RunState (what a resuming trainer gets), runs, attempts, checkpoints, progress, datasets and
retention pages."""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.views.models.kinds import DatasetRole, Moment, ObjectiveMode, RunStatus
from ledger.views.models.spend import SpendTotals

__all__ = [
    "Attempt",
    "BestCheckpoint",
    "Checkpoint",
    "Dataset",
    "Objective",
    "Progress",
    "ProtectedPage",
    "ProtectedState",
    "PruneEntry",
    "PrunePage",
    "Resume",
    "Retraction",
    "RunInfo",
    "RunPage",
    "RunState",
    "RunSummary",
    "StateHandle",
]


class Objective(msgspec.Struct, frozen=True, kw_only=True):
    """The score that ranks a run's checkpoints and which way is better ("min": lower)."""

    metric: str
    mode: ObjectiveMode


class Retraction(msgspec.Struct, frozen=True, kw_only=True):
    """Why, when and by whom an operator retracted a run."""

    reason: str
    retracted_at: Moment
    principal: str


class Progress(msgspec.Struct, frozen=True, kw_only=True):
    """How far a run has come against its plan: `fraction` is step / max_steps (at most 1),
    `steps_per_second` the recent rate of the current attempt, `eta` when it should reach
    max_steps at that rate (None unless running with a rate and a plan)."""

    max_steps: int | None = None
    step: int | None = None
    fraction: float | None = None
    steps_per_second: float | None = None
    eta: Moment | None = None


class Dataset(msgspec.Struct, frozen=True, kw_only=True):
    """A dataset a run trains or evaluates on, by the digest of its rows, with its export report;
    `tokens` None when not counted."""

    role: DatasetRole
    digest: str
    format: str
    rows: int
    tokens: int | None
    source_uri: str
    report: dict[str, Any]
    recorded_at: Moment


class StateHandle(msgspec.Struct, frozen=True, kw_only=True):
    """Where a checkpoint's state lives: backend, uri, fidelity ("weights" or "weights+optimizer")."""

    backend: str
    uri: str
    fidelity: str


class RunInfo(msgspec.Struct, frozen=True, kw_only=True):
    """A run's identity and lifecycle; `error` is empty unless it failed."""

    run_id: str
    run_key: str
    name: str
    status: RunStatus
    spec: dict[str, Any]
    summary: dict[str, Any]
    error: str
    opened_at: Moment
    finished_at: Moment | None
    objective: Objective | None = None
    retraction: Retraction | None = None


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    """One process's life on a run; `resumed_from_step` is None for an attempt that started fresh.
    The current attempt carries its lease (None for one started before leases existed) and, while
    it is lost (its lease lapsed), `lost_at` and its last sign of life before the loss."""

    number: int
    attempt_id: str
    label: str
    started_at: Moment
    resumed_from_step: int | None
    ended: bool
    lease_s: int | None = None
    last_seen_at: Moment | None = None
    lost_at: Moment | None = None


class Checkpoint(msgspec.Struct, frozen=True, kw_only=True):
    """A saved checkpoint; `expires_at` is None for state that never expires, `expired` when it
    has passed, `deleted_at` when its state was deleted; `scores` the eval scores saved with it."""

    attempt: int
    step: int
    handle: StateHandle
    sampler_uri: str
    final: bool
    saved_at: Moment
    expires_at: Moment | None
    digest: str
    superseded: bool = False
    scores: dict[str, float] = msgspec.field(default_factory=dict)
    deleted_at: Moment | None = None
    expired: bool = False


class BestCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    """The usable checkpoint (or superseded one, when asked) that scores best on `metric`
    ("min" or "max" is better), with its score."""

    checkpoint: Checkpoint
    score: float
    metric: str
    mode: ObjectiveMode


class PruneEntry(msgspec.Struct, frozen=True, kw_only=True):
    """A checkpoint in a retention plan (ledger.domain.retention): `delete` when its state may go,
    else `kept_because` ("resume", "best", "registered", "recent", "deleted", "expired")."""

    checkpoint: Checkpoint
    delete: bool
    kept_because: tuple[str, ...]


class PrunePage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a retention plan in (step, attempt) order; `after` is the (step, attempt) the next
    page follows, None after the last."""

    entries: tuple[PruneEntry, ...]
    after: tuple[int, int] | None


class ProtectedState(msgspec.Struct, frozen=True, kw_only=True):
    """State the ledger still needs, which no prune may delete: a live resume or best checkpoint
    of a run, a checkpoint a registry version was made from (`uri` and its sampler's), or a
    registry version's artifact. `why` says which ("resume", "best", "registered", "artifact")."""

    uri: str
    backend: str
    why: tuple[str, ...]


class ProtectedPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of protected states: every run's first (in run id order), then every registry
    version's artifact; `after` is where the next page starts, None after the last."""

    states: tuple[ProtectedState, ...]
    after: tuple[str, str, int] | None


class Resume(msgspec.Struct, frozen=True, kw_only=True):
    """Where a new attempt would resume: from the live checkpoint's step with its handle, and the
    spend the run has committed so far. Not `available` (handle None) when no checkpoint is live."""

    available: bool
    from_step: int
    handle: StateHandle | None
    sampler_uri: str
    spend_committed_usd_micro: int


class LineageRun(msgspec.Struct, frozen=True, kw_only=True):
    """One link of a run's lineage: a run, its name, when it was opened and whether it was
    retracted since, and the step (and uri, as the child's trainer gave it) of the checkpoint
    that joins it to the other run."""

    run_id: str
    name: str
    step: int
    uri: str = ""
    opened_at: Moment | None = None
    #: The linked run was retracted (its results are no evidence).
    retracted: bool = False


class RunState(msgspec.Struct, frozen=True, kw_only=True):
    """What a resuming trainer gets (see design.md, RunState). `current_attempt` is 0 before any
    attempt; `last_step` None before any step; `expired_checkpoints` the few that expired most
    recently, in step order, `expired_checkpoint_count` how many expired in all."""

    run: RunInfo
    attempts: tuple[Attempt, ...]
    current_attempt: int
    checkpoint: Checkpoint | None
    expired_checkpoints: tuple[Checkpoint, ...]
    expired_checkpoint_count: int
    resume: Resume
    last_step: int | None
    spend: SpendTotals
    position: int
    best_checkpoint: Checkpoint | None = None
    progress: Progress = msgspec.field(default_factory=Progress)
    datasets: tuple[Dataset, ...] = ()
    reports: dict[str, Any] = msgspec.field(default_factory=dict)
    tags: dict[str, str] = msgspec.field(default_factory=dict)
    # The run's source checkpoint's run and step; the runs started from it (the latest few) and
    # how many there are (ledger.views.provenance.lineage).
    source: LineageRun | None = None
    children: tuple[LineageRun, ...] = ()
    child_count: int = 0


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    """A run in a list of runs."""

    run_id: str
    name: str
    status: RunStatus
    current_attempt: int
    last_step: int | None
    committed_usd_micro: int
    opened_at: Moment
    parent_account: str = ""
    cap_usd_micro: int | None = None
    pending_usd_micro: int = 0
    progress: Progress = msgspec.field(default_factory=Progress)
    retracted: bool = False
    presumed_usd_micro: int = 0  # What the ledger charged for abandoned holds (see SpendTotals).
    tags: dict[str, str] = msgspec.field(default_factory=dict)


class RunPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of runs, newest first; `after` is the (opened_at epoch, run_id) the next page
    follows, None when no run is left."""

    runs: tuple[RunSummary, ...]
    after: tuple[float, str] | None
