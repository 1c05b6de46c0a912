"""The read models: what the views answer, as frozen msgspec Structs.

Each mirrors the trainledger.v1 message of the same name field for field where one exists, so the
ledger, the wire and the client speak one vocabulary (`state.resume.handle.uri`,
`state.spend.committed_usd_micro`). Money is int micro-dollars, times are aware UTC datetimes,
documents (spec, summary, metadata, cost bases, gate stats) are plain dicts. A run's status is the
ledger's name for it ("running", "done", "failed", "stopped"); the codec maps it to RunStatus.

Structs are built directly from view rows (no validation on construction, so they cost about
what a dict does); nested collections are tuples.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

__all__ = [
    "Moment",
    "RunStatus",
    "ObjectiveMode",
    "DatasetRole",
    "Objective",
    "Progress",
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

#: An aware datetime (UTC as read from the views).
Moment = Annotated[datetime, msgspec.Meta(tz=True)]
RunStatus = Literal["running", "done", "failed", "stopped"]
ObjectiveMode = Literal["min", "max"]
DatasetRole = Literal["train", "eval"]


# Runs.


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


class PlanHold(msgspec.Struct, frozen=True, kw_only=True):
    """An account's latest plan hold (ledger.domain.plans): its id and state, what was planned,
    drawn by the attempt's holds, and is still held undrawn (0 once released or expired)."""

    reservation_id: str
    state: str
    planned_usd_micro: int
    drawn_usd_micro: int
    held_usd_micro: int


class SpendTotals(msgspec.Struct, frozen=True, kw_only=True):
    """A run's spend; cap and remaining are None for an uncapped account; `bill` is None when
    nothing was billed or estimated. `presumed_usd_micro` is what the ledger charged for holds
    nobody settled (pro rata or as reserved), apart from what was committed."""

    cap_usd_micro: int | None
    committed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int | None
    overrun_usd_micro: int
    bill: BillTotals | None = None
    plan: PlanHold | None = None
    presumed_usd_micro: int = 0


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


class RunPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of runs, newest first; `after` is the (opened_at epoch, run_id) the next page
    follows, None when no run is left."""

    runs: tuple[RunSummary, ...]
    after: tuple[float, str] | None


class MetricColumn(msgspec.Struct, frozen=True, kw_only=True):
    """One metric of a series page: its values, and with a non-empty `index` the position within
    the page's steps that each value belongs to (empty: one value per step of the page)."""

    name: str
    values: tuple[float, ...]
    index: tuple[int, ...] = ()


class SeriesPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a run's series, column-wise: one entry per record in steps, attempts, tokens,
    usd_micro and superseded (tokens and cost 0 where none was given), metrics by name.
    `next_from_step` continues it; None on the last page."""

    steps: tuple[int, ...]
    attempts: tuple[int, ...]
    tokens: tuple[int, ...]
    usd_micro: tuple[int, ...]
    superseded: tuple[bool, ...]
    metrics: tuple[MetricColumn, ...]
    next_from_step: int | None

    def metric(self, name: str) -> MetricColumn | None:
        """The column of metric `name`, or None when the page holds none of its values."""
        return next((column for column in self.metrics if column.name == name), None)


# Spend.


class Account(msgspec.Struct, frozen=True, kw_only=True):
    """A spend account's totals; cap and remaining are None for an uncapped account, `parent` is
    empty for a top-level one."""

    account: str
    parent: str
    cap_usd_micro: int | None
    committed_usd_micro: int
    pending_usd_micro: int
    remaining_usd_micro: int | None
    overrun_usd_micro: int
    bill: BillTotals | None = None
    plan: PlanHold | None = None
    presumed_usd_micro: int = 0  # What the ledger charged for abandoned holds (see SpendTotals).


class Reservation(msgspec.Struct, frozen=True, kw_only=True):
    """An entry of an account's audit trail: a reservation (kind "reservation", state pending,
    committed, released, expired or refused) or a charge (kind "charge", state charged). Bases
    are cost-basis documents; `actual_basis` is None until a commit gives one."""

    reservation_id: str
    kind: str
    state: str
    amount_usd_micro: int
    actual_usd_micro: int
    overrun_usd_micro: int
    basis: dict[str, Any]
    actual_basis: dict[str, Any] | None
    reason: str
    attempt: int
    reserved_at: Moment
    settled_at: Moment | None
    expires_at: Moment | None
    position: int


class ReservationPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of an account's audit trail in log order; `after_position` is what the next page
    follows when this one is full (it may be empty), None otherwise."""

    reservations: tuple[Reservation, ...]
    after_position: int | None


# Registry.


class SourceCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    """The run's checkpoint a version was made from: its run, step, the attempt that saved it and
    the digest it was saved with."""

    run_id: str
    step: int
    attempt: int
    checkpoint_digest: str


class ModelVersion(msgspec.Struct, frozen=True, kw_only=True):
    """A registered version; `source_run_id` is empty when no run is named, `source_checkpoint`
    None unless the version named one; `source_retracted` when its source run was retracted."""

    family: str
    version: int
    artifact_uri: str
    digest: str
    source_run_id: str
    source_step: int
    metadata: dict[str, Any]
    registered_at: Moment
    source_checkpoint: SourceCheckpoint | None = None
    source_retracted: bool = False
    aliases: tuple[str, ...] = ()


class GateEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """A recorded score a gate rule was evaluated on: its value (None: never recorded), where it
    was recorded (checkpoint | summary), the run, the checkpoint's step and the log position."""

    name: str
    value: float | None
    source: str
    run_id: str
    step: int
    position: int


class GateVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The gate's verdict a promotion carried: asserted by the caller, or evaluated by the ledger
    on a rule, with its evidence."""

    passed: bool
    reason: str
    stats: dict[str, Any]
    mode: str = "asserted"
    rule: str = ""
    evidence: tuple[GateEvidence, ...] = ()


class Promotion(msgspec.Struct, frozen=True, kw_only=True):
    """A promotion, a rollback or a refused promotion (`kind` promote | rollback | refused), in
    the family's history; `previous` is 0 when no version was current (for a refusal: the version
    current then), `verdict` None when none was given; a refusal's reason is `refusal`."""

    version: int
    previous: int
    kind: str
    verdict: GateVerdict | None
    reason: str
    at: Moment
    principal: str
    position: int
    refusal: str = ""
    expected_current: int = 0


class Alias(msgspec.Struct, frozen=True, kw_only=True):
    """An alias of a family and the version it names."""

    alias: str
    version: int
    moved_at: Moment
    principal: str
    position: int


class Retirement(msgspec.Struct, frozen=True, kw_only=True):
    """A family's retirement."""

    reason: str
    at: Moment
    principal: str
    position: int


class Family(msgspec.Struct, frozen=True, kw_only=True):
    """A registry family: its current version (0: none), versions and promotion history."""

    family: str
    current: int
    versions: tuple[ModelVersion, ...]
    history: tuple[Promotion, ...]
    aliases: tuple[Alias, ...] = ()
    retired: Retirement | None = None


class FamilyPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a family: versions and promotions after those of the previous page; `more` when
    either list goes on."""

    family: str
    current: int
    versions: tuple[ModelVersion, ...]
    history: tuple[Promotion, ...]
    more: bool
    aliases: tuple[Alias, ...] = ()
    retired: Retirement | None = None


class MetricStats(msgspec.Struct, frozen=True, kw_only=True):
    """One metric over a run's live line of steps (those no later attempt superseded): how many
    steps hold a value, the first and last of them, the value at the last, the least and the
    greatest."""

    name: str
    count: int
    first_step: int
    last_step: int
    last: float
    min: float
    max: float


class ChartSeries(msgspec.Struct, frozen=True, kw_only=True):
    """The points of one attempt's steps in a chart, live or `superseded` (steps a later attempt
    recorded again after resuming below them): steps ascending, each a real (step, value) of the
    run, at most about the chart's width of them (the least and the greatest kept)."""

    attempt: int
    superseded: bool
    steps: tuple[int, ...]
    values: tuple[float, ...]


class ChartMetric(msgspec.Struct, frozen=True, kw_only=True):
    """One metric of a chart: `sparse` when it holds fewer values than there are steps in the
    range (eval_*: drawn as points), its series by (attempt, superseded)."""

    name: str
    sparse: bool
    series: tuple[ChartSeries, ...]


class Chart(msgspec.Struct, frozen=True, kw_only=True):
    """A run's metrics against step over [from_step, to_step], downsampled to about `width` points
    a series; `resolution` is 1 when the points came from every step, else the width in steps of
    the buckets whose first, last, least and greatest values they are."""

    run_id: str
    from_step: int
    to_step: int
    width: int
    resolution: int
    metrics: tuple[ChartMetric, ...]


class SpendHour(msgspec.Struct, frozen=True, kw_only=True):
    """What an account committed in one UTC hour (adjustments to a provider's bill included), and
    apart from it what the ledger presumed spent in that hour for abandoned holds."""

    hour: Moment
    committed_usd_micro: int
    presumed_usd_micro: int = 0


class FamilySummary(msgspec.Struct, frozen=True, kw_only=True):
    """A family in the list of families: its current version (0: none), how many it has and
    whether it was retired."""

    family: str
    current: int
    version_count: int
    retired: bool = False


# Integrity (ledger.storage.chain, ledger.application.integrity).


class ChainHead(msgspec.Struct, frozen=True, kw_only=True):
    """A point of the log's hash chain: the position of an event and the chain's digest there
    (64 lowercase hex characters). The head of an empty log is position 0 with 64 zeros."""

    position: int
    digest: str


class Verification(msgspec.Struct, frozen=True, kw_only=True):
    """What a check of the log found. `ok` when nothing broke; `head` is the last event whose digest
    was recomputed and found sealed (the log's head when ok); `checked` counts those events. Otherwise
    `broken_at` is the first position where it breaks (for a snapshot, its event's; for a view, the
    differing row's position where it has one, else the view's), `problem` one of
    ledger.storage.chain.PROBLEMS and `detail` says what was found."""

    ok: bool
    head: ChainHead
    checked: int
    broken_at: int = 0
    problem: str = ""
    detail: str = ""


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
