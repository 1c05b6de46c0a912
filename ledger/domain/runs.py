"""The Run aggregate: attempts with fencing, step batches, checkpoints, finish and summary; the
run's plan (max_steps) and objective, scored checkpoints, datasets, checkpoint deletions and the
registry versions made from its checkpoints, and its retraction.

Steps stay out of the aggregate's state: a StepsRecorded event carries a whole batch
column-wise, and the aggregate keeps only what its invariants need (the last step of the
current attempt and a bounded window of batch fingerprints for idempotent retries). Loading a
run therefore costs the same at step 1,000,000 as at step 1.

Fields added to events after runs were first recorded carry a default (None), and state added
after snapshots were first taken is read with a default (`getattr`), so every stored run still
loads: see ledger.storage.transcoder for the rules.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ledger.domain import run_reports
from ledger.domain.base import LedgerAggregate
from ledger.domain.errors import Refused
from ledger.domain.reasons import Reason

__all__ = ["Run", "RUN_STATUSES", "FINISH_STATUSES", "FIDELITIES", "OBJECTIVE_MODES", "DATASET_ROLES"]

# "lost": the current attempt's lease lapsed (ledger.domain.leases); it runs again when it writes.
RUN_STATUSES = ("running", "done", "failed", "stopped", "lost")
FINISH_STATUSES = ("done", "failed", "stopped")
FIDELITIES = ("weights", "weights+optimizer")
OBJECTIVE_MODES = ("min", "max")
DATASET_ROLES = ("train", "eval")
# How many batch fingerprints of the current attempt are kept in the state for exact-retry
# answers; older batches are recalled from the keys index (ledger.storage.keys), so a retry at any
# distance is answered as the duplicate it is.
BATCH_WINDOW = 4_096


class Run(LedgerAggregate):
    """One training job, identified by its run key."""

    if TYPE_CHECKING:  # Set by the events' apply(): the state, as the type checker sees it.
        run_key: str
        name: str
        spec: dict[str, Any]
        status: str
        summary: dict[str, Any]
        error: str
        attempts: list[dict[str, Any]]
        checkpoints: list[dict[str, Any]]
        last_step: int | None
        # [first step, last step, digest, event version] of recent batches.
        batches: list[list[Any]]
        fenced_batches: list[list[Any]]
        finished_version: int
        sessions: dict[str, int]  # "provider/session id" -> version of its link (absent before the first)
        # Read through the properties below: absent in snapshots taken before they existed.
        # max_steps: int | None; objective: {"metric", "mode"} | None; retraction: {"reason",
        # "principal", "at", "version"} | None; datasets: [{role, digest, ..., "version"}];
        # registered: [{"family", "version", "attempt", "step", "event_version"}].

    def __init__(self) -> None:
        pass

    class Opened(LedgerAggregate.Created):
        run_key: str
        name: str
        spec: dict[str, Any]
        max_steps: int | None = None
        objective: dict[str, str] | None = None
        # The checkpoint of another run this run starts from: {"run_id", "step", "uri"}.
        source: dict[str, Any] | None = None

        def apply(self, run: Run) -> None:
            run.__dict__["max_steps"] = self.max_steps
            run.__dict__["objective"] = self.objective
            run.__dict__["source"] = self.source
            run.run_key = self.run_key
            run.name = self.name
            run.spec = self.spec
            run.status = "running"
            run.summary = {}
            run.error = ""
            run.attempts = []
            run.checkpoints = []
            run.last_step = None
            run.batches = []
            run.fenced_batches = []

    class AttemptStarted(LedgerAggregate.Event):
        attempt: int
        attempt_id: str
        label: str
        resumed_from_step: int | None
        max_steps: int | None = None  # None leaves the run's plan as it was
        lease_s: int | None = None  # None: started before leases existed, never lost

        def apply(self, run: Run) -> None:
            if self.max_steps is not None:
                run.__dict__["max_steps"] = self.max_steps
                run.__dict__.pop("plan_version", None)
            for attempt in run.attempts:
                attempt["ended"] = True
            run.attempts.append(
                {
                    "number": self.attempt,
                    "attempt_id": self.attempt_id,
                    "label": self.label,
                    "started_at": self.timestamp,
                    "resumed_from_step": self.resumed_from_step,
                    "ended": False,
                    "version": self.originator_version,
                    "lease_s": self.lease_s,
                    "last_seen_at": self.timestamp,
                }
            )
            # Everything above the resume point that earlier attempts recorded is superseded.
            floor = -1 if self.resumed_from_step is None else self.resumed_from_step
            for checkpoint in run.checkpoints:
                if checkpoint["step"] > floor:
                    checkpoint["superseded"] = True
            run.last_step = self.resumed_from_step
            # The fenced attempts' recent batches stay known, so an identical resend from a
            # superseded attempt is answered as the duplicate it is rather than refused.
            run.fenced_batches = (run.fenced_batches + run.batches)[-BATCH_WINDOW:]
            run.batches = []
            run.status = "running"

    class StepsRecorded(LedgerAggregate.Event):
        attempt: int
        steps: list[int]
        tokens: list[int] | None
        usd_micro: list[int] | None
        metrics: dict[str, Any]
        digest: str

        def apply(self, run: Run) -> None:
            run.seen(self.attempt, self.timestamp)
            run.last_step = self.steps[-1]
            run.batches.append([self.steps[0], self.steps[-1], self.digest, self.originator_version])
            if len(run.batches) > BATCH_WINDOW:
                del run.batches[0]

    class CheckpointSaved(LedgerAggregate.Event):
        attempt: int
        step: int
        backend: str
        uri: str
        fidelity: str
        sampler_uri: str
        final: bool
        expires_at: datetime | None
        digest: str
        scores: dict[str, float] | None = None

        def apply(self, run: Run) -> None:
            run.seen(self.attempt, self.timestamp)
            run.checkpoints.append(
                {
                    "attempt": self.attempt,
                    "step": self.step,
                    "backend": self.backend,
                    "uri": self.uri,
                    "fidelity": self.fidelity,
                    "sampler_uri": self.sampler_uri,
                    "final": self.final,
                    "expires_at": self.expires_at,
                    "digest": self.digest,
                    "scores": self.scores or {},
                    "saved_at": self.timestamp,
                    "superseded": False,
                    "deleted_at": None,
                    "version": self.originator_version,
                }
            )

    class Finished(LedgerAggregate.Event):
        attempt: int
        status: str
        summary: dict[str, Any]
        error: str

        def apply(self, run: Run) -> None:
            run.status = self.status
            run.summary = {**run.summary, **self.summary}
            run.error = self.error
            run.finished_version = self.originator_version
            for attempt in run.attempts:
                attempt["ended"] = True

    class AttemptHeartbeat(LedgerAggregate.Event):
        """The current attempt is alive though idle: its lease is renewed (ledger.domain.leases)."""

        attempt: int

        def apply(self, run: Run) -> None:
            run.seen(self.attempt, self.timestamp)

    class AttemptLost(LedgerAggregate.Event):
        """The current attempt's lease lapsed: the attempt and the run are lost, last seen alive
        at `last_seen_at`. Appended by the server's sweep."""

        attempt: int
        last_seen_at: datetime
        lease_s: int

        def apply(self, run: Run) -> None:
            run.status = "lost"
            run.attempts[-1]["lost_at"] = self.timestamp

    class AttemptReturned(LedgerAggregate.Event):
        """A lost attempt wrote again: it and the run are running again; the gap from
        `lost_at` (and the AttemptLost before it) stays in the record."""

        attempt: int
        lost_at: datetime

        def apply(self, run: Run) -> None:
            run.status = "running"
            run.attempts[-1]["lost_at"] = None
            run.seen(self.attempt, self.timestamp)

    class SessionLinked(LedgerAggregate.Event):
        """The run used a provider's session (a Tinker session): the provider's bill lines of that
        session are the run's."""

        provider: str
        session_id: str
        attempt: int

        def apply(self, run: Run) -> None:
            sessions = run.__dict__.setdefault("sessions", {})
            sessions[f"{self.provider}/{self.session_id}"] = self.originator_version

    class SummaryNoted(LedgerAggregate.Event):
        summary: dict[str, Any]

        def apply(self, run: Run) -> None:
            run.summary = {**run.summary, **self.summary}

    class ReportRecorded(LedgerAggregate.Event):
        kind: str
        report: dict[str, Any]

        def apply(self, run: Run) -> None:
            run_reports.apply_report(run.__dict__.setdefault("reports", {}), self.kind, self.report)

    class PlanChanged(LedgerAggregate.Event):
        """The run's planned number of steps changed (an OpenRun of the run with another max_steps)."""

        max_steps: int

        def apply(self, run: Run) -> None:
            run.__dict__["max_steps"] = self.max_steps
            run.__dict__["plan_version"] = self.originator_version

    class DatasetRecorded(LedgerAggregate.Event):
        """A dataset the run trains (role "train") or evaluates (role "eval") on, by content digest,
        with the export report that produced it."""

        role: str
        digest: str
        format: str
        rows: int
        tokens: int | None
        source_uri: str
        report: dict[str, Any]

        def apply(self, run: Run) -> None:
            datasets = run.__dict__.setdefault("datasets", [])
            datasets.append(
                {
                    "role": self.role,
                    "digest": self.digest,
                    "format": self.format,
                    "rows": self.rows,
                    "tokens": self.tokens,
                    "source_uri": self.source_uri,
                    "report": self.report,
                    "recorded_at": self.timestamp,
                    "version": self.originator_version,
                }
            )

    class CheckpointDeleted(LedgerAggregate.Event):
        """The state of a checkpoint was deleted from its storage: never offered for resume again."""

        attempt: int
        step: int
        reason: str

        def apply(self, run: Run) -> None:
            for checkpoint in run.checkpoints:
                if checkpoint["attempt"] == self.attempt and checkpoint["step"] == self.step:
                    checkpoint["deleted_at"] = self.timestamp
                    checkpoint["deleted_version"] = self.originator_version

    class CheckpointRegistered(LedgerAggregate.Event):
        """A registry version was made from one of the run's checkpoints: it is kept from deletion."""

        family: str
        version: int
        attempt: int
        step: int

        def apply(self, run: Run) -> None:
            registered = run.__dict__.setdefault("registered", [])
            registered.append(
                {
                    "family": self.family,
                    "version": self.version,
                    "attempt": self.attempt,
                    "step": self.step,
                    "event_version": self.originator_version,
                }
            )

    class Retracted(LedgerAggregate.Event):
        """An operator retracted the run: hidden from lists, refused writes; its history stays."""

        reason: str

        def apply(self, run: Run) -> None:
            run.__dict__["retraction"] = {
                "reason": self.reason,
                "principal": self.principal,
                "at": self.timestamp,
                "version": self.originator_version,
            }

    class TagsChanged(LedgerAggregate.Event):
        """Tags set (key: value) and removed (keys): metadata, so also after the finish."""

        set: dict[str, str]
        removed: list[str]

        def apply(self, run: Run) -> None:
            kept = {key: value for key, value in run.tags.items() if key not in self.removed}
            run.__dict__["tags"] = {**kept, **self.set}
            requests = run.__dict__.setdefault("tag_requests", {})  # The latest 64, for retries (run_tags).
            requests[self.request_id] = [self.set, self.removed, self.originator_version]
            if len(requests) > 64:
                del requests[next(iter(requests))]

    # The commands are functions over the run (run_attempts, run_steps, run_checkpoints, run_notes,
    # run_tags), each recording one event or answering an idempotent retry; here is what they share.

    def seen(self, attempt: int, moment: datetime) -> None:
        """A sign of life of `attempt` at `moment` (state only: its lease is renewed)."""
        if self.attempts and self.attempts[-1]["number"] == attempt:
            self.attempts[-1]["last_seen_at"] = moment

    @property
    def current_attempt(self) -> int:
        return self.attempts[-1]["number"] if self.attempts else 0

    @property
    def max_steps(self) -> int | None:
        value: int | None = self.__dict__.get("max_steps")
        return value

    @property
    def objective(self) -> dict[str, str] | None:
        value: dict[str, str] | None = self.__dict__.get("objective")
        return value

    @property
    def source(self) -> dict[str, Any] | None:
        """The checkpoint of another run this run started from ({"run_id", "step", "uri"})."""
        value: dict[str, Any] | None = self.__dict__.get("source")
        return value

    @property
    def retraction(self) -> dict[str, Any] | None:
        value: dict[str, Any] | None = self.__dict__.get("retraction")
        return value

    @property
    def datasets(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.__dict__.get("datasets", [])
        return value

    tags = property(lambda self: dict(self.__dict__.get("tags", {})), doc="The run's tags (a copy).")

    @property
    def registered(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.__dict__.get("registered", [])
        return value

    def check_not_retracted(self) -> None:
        """A retracted run takes no more writes (RUN_RETRACTED)."""
        retraction = self.retraction
        if retraction is not None:
            raise Refused(
                f"the run was retracted: {retraction['reason']}",
                reason=Reason.RUN_RETRACTED,
                retraction_reason=retraction["reason"],
            )
