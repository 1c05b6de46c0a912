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

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ledger.domain import run_reports
from ledger.domain.base import Audit, LedgerAggregate
from ledger.domain.batches import StepBatch
from ledger.domain.errors import Conflict, Invalid, NotFound, Refused
from ledger.domain.limits import SUMMARY_BYTES_MAX, check_document_bytes
from ledger.domain.reasons import Reason

__all__ = ["Run", "RUN_STATUSES", "FINISH_STATUSES", "FIDELITIES", "OBJECTIVE_MODES", "DATASET_ROLES"]

# "lost": the current attempt's lease lapsed (ledger.domain.leases); it runs again when it writes.
RUN_STATUSES = ("running", "done", "failed", "stopped", "lost")
FINISH_STATUSES = ("done", "failed", "stopped")
FIDELITIES = ("weights", "weights+optimizer")
OBJECTIVE_MODES = ("min", "max")
DATASET_ROLES = ("train", "eval")
# How many datasets one run may record (each RunState lists them all).
DATASETS_MAX = 64
# How many batch fingerprints of the current attempt are kept in the state for exact-retry
# answers; older batches are recalled from the keys index (ledger.storage.keys), so a retry at any
# distance is answered as the duplicate it is.
BATCH_WINDOW = 4_096
# How many provider sessions one run may be linked to (a session per attempt, and then some).
SESSIONS_MAX = 1_024

# Recalls the (digest, version) of the batch an attempt recorded from a first to a last step.
RecallBatch = Callable[[int, int, int], "tuple[str, int] | None"]


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

        def apply(self, run: Run) -> None:
            run.__dict__["max_steps"] = self.max_steps
            run.__dict__["objective"] = self.objective
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

    # Commands. Each validates against the current state, then records one event, or answers
    # with the version of the event that already recorded the same request (an idempotent retry).

    def seen(self, attempt: int, moment: datetime) -> None:
        """A sign of life of `attempt` at `moment` (state only: its lease is renewed)."""
        if self.attempts and self.attempts[-1]["number"] == attempt:
            self.attempts[-1]["last_seen_at"] = moment

    def revive(self, audit: Audit, *, attempt: int) -> bool:
        """A write of the current attempt of a lost run: record that it is running again (before
        the write). Returns whether it was lost."""
        if self.status != "lost" or attempt != self.current_attempt:
            return False
        self.record(self.AttemptReturned, audit, attempt=attempt, lost_at=self.attempts[-1].get("lost_at"))
        return True

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
    def retraction(self) -> dict[str, Any] | None:
        value: dict[str, Any] | None = self.__dict__.get("retraction")
        return value

    @property
    def datasets(self) -> list[dict[str, Any]]:
        value: list[dict[str, Any]] = self.__dict__.get("datasets", [])
        return value

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

    def check_max_steps(self, max_steps: int, floor: int | None) -> None:
        """A plan may not end before the step the run (or the attempt's resume point) has reached."""
        if floor is not None and max_steps < floor:
            raise Invalid(
                f"max_steps {max_steps} is below step {floor} the run has reached",
                reason=Reason.MAX_STEPS_BELOW_LAST_STEP,
                max_steps=max_steps,
                last_step=floor,
            )

    def change_plan(self, audit: Audit, *, max_steps: int | None) -> int | None:
        """An OpenRun of this run with a max_steps: records the new plan when it differs. The same
        plan again answers with the version of the PlanChanged that set it (None when the plan
        was set otherwise: at the opening, or by an attempt's start)."""
        if max_steps is None or max_steps == self.max_steps:
            if max_steps is None:
                return None
            version: int | None = self.__dict__.get("plan_version")
            return version
        self.check_not_retracted()
        self.check_max_steps(max_steps, self.last_step)
        self.record(self.PlanChanged, audit, max_steps=max_steps)
        return None

    def start_attempt(
        self,
        audit: Audit,
        *,
        attempt_id: str,
        label: str,
        resume_from_step: int | None,
        max_steps: int | None = None,
        lease_s: int | None = None,
        lease_asked: bool = True,
    ) -> int | None:
        """Start attempt n+1, fencing attempt n, holding a lease of `lease_s` seconds (None: no
        lease). Returns the version of an earlier identical start (a retry), or None when a new
        event was recorded; a retry that did not ask for a lease (`lease_asked` False: a replay
        that never knew it) takes the attempt's as it is. `max_steps` (when given) is the run's
        plan from now on; it may not be below the resume point."""
        for attempt in self.attempts:
            if attempt_id and attempt["attempt_id"] == attempt_id:
                # An attempt started before leases holds none: any lease retries it.
                held_s = attempt.get("lease_s")
                if (
                    attempt["resumed_from_step"] != resume_from_step
                    or attempt["label"] != label
                    or (lease_asked and held_s is not None and held_s != lease_s)
                ):
                    raise Conflict(
                        f"attempt id {attempt_id} was used with another resume point, label or lease",
                        reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                    )
                return int(attempt["version"])
        self.check_not_retracted()
        if self.status == "done":
            raise Refused("the run is done", reason=Reason.RUN_FINISHED, status=self.status)
        if resume_from_step is not None:
            self.resumable_checkpoint(resume_from_step, audit.now)
        if max_steps is not None:
            self.check_max_steps(max_steps, resume_from_step)
        fields: dict[str, Any] = {} if max_steps is None else {"max_steps": max_steps}
        if lease_s is not None:
            fields["lease_s"] = lease_s
        self.record(
            self.AttemptStarted,
            audit,
            attempt=self.current_attempt + 1,
            attempt_id=attempt_id,
            label=label,
            resumed_from_step=resume_from_step,
            **fields,
        )
        return None

    def resumable_checkpoint(self, step: int, now: datetime) -> dict[str, Any]:
        """The live checkpoint at `step` a new attempt may resume from, else an error."""
        checkpoint: dict[str, Any]
        for checkpoint in reversed(self.checkpoints):
            if checkpoint["step"] == step and not checkpoint["superseded"]:
                if checkpoint.get("deleted_at") is not None:
                    raise Refused(
                        f"the checkpoint at step {step} was deleted", reason=Reason.CHECKPOINT_DELETED, step=step
                    )
                expires_at = checkpoint["expires_at"]
                if expires_at is not None and expires_at <= now:
                    raise Refused(
                        f"the checkpoint at step {step} expired at {expires_at.isoformat()}",
                        reason=Reason.CHECKPOINT_EXPIRED,
                        step=step,
                    )
                return checkpoint
        raise NotFound(f"no checkpoint at step {step} to resume from", reason=Reason.CHECKPOINT_NOT_FOUND, step=step)

    def check_writer(self, attempt: int) -> None:
        """Only the current attempt of a running run that was not retracted may append."""
        self.check_not_retracted()
        current = self.current_attempt
        if attempt < 1 or attempt > current:
            raise NotFound(f"attempt {attempt} was never started", reason=Reason.ATTEMPT_NOT_FOUND, attempt=attempt)
        if attempt < current:
            raise Refused(
                f"attempt {attempt} is superseded by attempt {current}",
                reason=Reason.ATTEMPT_SUPERSEDED,
                attempt=attempt,
                current_attempt=current,
            )
        if self.status not in ("running", "lost"):
            raise Refused(f"the run is {self.status}", reason=Reason.RUN_FINISHED, status=self.status)

    def record_steps(self, audit: Audit, batch: StepBatch, recall: RecallBatch | None = None) -> int | None:
        """Record one batch. Returns the version of the identical batch recorded before (a
        retry), or None when a new event was recorded. `recall` finds batches older than the
        state's window."""
        current = self.current_attempt
        if batch.attempt == current and self.last_step is not None and batch.steps[0] <= self.last_step:
            return self._match_recorded(batch, recall)
        if batch.attempt < current:
            for first, last, digest, version in self.fenced_batches:
                if (first, last, digest) == (batch.steps[0], batch.steps[-1], batch.digest):
                    return int(version)
            found = recall(batch.attempt, batch.steps[0], batch.steps[-1]) if recall is not None else None
            if found is not None and found[0] == batch.digest:
                return found[1]
        self.check_writer(batch.attempt)
        self.revive(audit, attempt=batch.attempt)
        self.record(
            self.StepsRecorded,
            audit,
            attempt=batch.attempt,
            steps=batch.steps,
            tokens=batch.tokens,
            usd_micro=batch.usd_micro,
            metrics=batch.metrics,
            digest=batch.digest,
        )
        return None

    def _match_recorded(self, batch: StepBatch, recall: RecallBatch | None) -> int:
        first, last = batch.steps[0], batch.steps[-1]
        for recorded_first, recorded_last, digest, version in reversed(self.batches):
            if recorded_first == first and recorded_last == last and digest == batch.digest:
                return int(version)
            if recorded_first <= last and first <= recorded_last:
                raise Conflict(
                    f"steps {first}..{last} overlap steps already recorded with another payload",
                    reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                    first_step=first,
                    last_step=last,
                )
        floor = self.attempts[-1]["resumed_from_step"]
        if floor is not None and first <= floor:
            raise Invalid(
                f"step {first} is not after the attempt's resume point {floor}",
                reason=Reason.STEP_BEFORE_RESUME,
                step=first,
                resumed_from_step=floor,
            )
        # Until the window has pruned a batch it holds every batch of the attempt, so a step
        # below all of them was never recorded: it does not increase.
        if self.batches and (first >= self.batches[0][0] or len(self.batches) < BATCH_WINDOW):
            raise Invalid(
                f"steps must increase within an attempt: step {first} is not after {self.last_step}",
                reason=Reason.STEPS_NOT_INCREASING,
                step=first,
                last_step=self.last_step,
            )
        found = recall(batch.attempt, first, last) if recall is not None else None
        if found is not None:
            if found[0] == batch.digest:
                return found[1]
            raise Conflict(
                f"steps {first}..{last} were recorded with another payload",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                first_step=first,
                last_step=last,
            )
        raise Conflict(
            f"steps {first}..{last} overlap steps recorded earlier in this attempt",
            reason=Reason.STEP_ALREADY_RECORDED,
            first_step=first,
            last_step=last,
        )

    def save_checkpoint(self, audit: Audit, *, attempt: int, checkpoint: dict[str, Any]) -> int | None:
        """Record a durable checkpoint. Returns the version of an identical earlier save."""
        for saved in self.checkpoints:
            if saved["attempt"] == attempt and saved["step"] == checkpoint["step"]:
                # Scores are part of the identity; a checkpoint in a snapshot taken before they
                # existed has none (unscored: None or {}).
                if all(
                    (saved.get(key) or {}) == (value or {}) if key == "scores" else saved[key] == value
                    for key, value in checkpoint.items()
                ):
                    return int(saved["version"])
                raise Conflict(
                    f"a checkpoint at step {checkpoint['step']} was saved with another payload",
                    reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                    step=checkpoint["step"],
                )
        self.check_writer(attempt)
        floor = self.attempts[-1]["resumed_from_step"]
        if floor is not None and checkpoint["step"] <= floor:
            raise Invalid(
                f"step {checkpoint['step']} is not after the attempt's resume point {floor}",
                reason=Reason.STEP_BEFORE_RESUME,
            )
        self.revive(audit, attempt=attempt)
        self.record(self.CheckpointSaved, audit, attempt=attempt, **checkpoint)
        return None

    def finish(self, audit: Audit, *, attempt: int, status: str, summary: dict[str, Any], error: str) -> int | None:
        """Finish the run. A retry of the same finish answers with the first one's version."""
        if self.status not in ("running", "lost"):
            if (
                self.status == status
                and self.error == error
                and attempt == self.current_attempt
                and all(self.summary.get(key) == value for key, value in summary.items())
            ):
                return int(self.finished_version)
            raise Refused(f"the run is already {self.status}", reason=Reason.RUN_FINISHED, status=self.status)
        self.check_writer(attempt)
        self._check_summary(summary)
        self.revive(audit, attempt=attempt)
        self.record(self.Finished, audit, attempt=attempt, status=status, summary=summary, error=error)
        return None

    def link_session(self, audit: Audit, *, provider: str, session_id: str, attempt: int) -> int | None:
        """Link a provider's session to the run (allowed at any time: a bill comes after the run).
        Linking the same session again answers with the version of the first link."""
        sessions: dict[str, int] = getattr(self, "sessions", {})
        linked = sessions.get(f"{provider}/{session_id}")
        if linked is not None:
            return linked
        self.check_not_retracted()
        if len(sessions) >= SESSIONS_MAX:
            raise Invalid(
                f"the run has {SESSIONS_MAX} sessions linked already", reason=Reason.MAP_TOO_LARGE, limit=SESSIONS_MAX
            )
        if attempt and not any(entry["number"] == attempt for entry in self.attempts):
            raise NotFound(f"the run has no attempt {attempt}", reason=Reason.ATTEMPT_NOT_FOUND, attempt=attempt)
        self.record(self.SessionLinked, audit, provider=provider, session_id=session_id, attempt=attempt)
        return None

    def note_summary(self, audit: Audit, *, summary: dict[str, Any]) -> int | None:
        """Merge notes into the summary; allowed after finish (a correction keeps the status)."""
        if all(self.summary.get(key) == value for key, value in summary.items()):
            return self.version
        self.check_not_retracted()
        self._check_summary(summary)
        self.record(self.SummaryNoted, audit, summary=summary)
        return None

    def record_report(self, audit: Audit, *, kind: str, report: dict[str, Any]) -> int | None:
        """Record a holdout, delta or notes report (ledger.domain.run_reports); allowed after
        finish (a correction keeps the status); the same report again is a duplicate."""
        reports = self.__dict__.get("reports", {})
        if run_reports.is_recorded(reports, kind, report):
            return self.version
        self.check_not_retracted()
        if kind == "notes":
            run_reports.check_notes_bytes(reports, report)
        self.record(self.ReportRecorded, audit, kind=kind, report=report)
        return None

    def _check_summary(self, notes: dict[str, Any]) -> None:
        """The summary these notes would merge into stays within SUMMARY_BYTES_MAX, since every
        RunState carries it whole (SUMMARY_TOO_LARGE)."""
        check_document_bytes({**self.summary, **notes}, "summary", SUMMARY_BYTES_MAX, Reason.SUMMARY_TOO_LARGE)

    # Datasets, retraction, checkpoint deletion and registration.

    def record_dataset(self, audit: Audit, *, dataset: dict[str, Any]) -> int | None:
        """Record a dataset (role, digest, format, rows, tokens, source_uri, report). The same
        role and digest again answers with the first record's version when the payload is the
        same, else EXISTS_WITH_DIFFERENT_PAYLOAD. Allowed before the first attempt and after the
        finish (provenance may come late), refused on a retracted run; at most DATASETS_MAX."""
        for recorded in self.datasets:
            if recorded["role"] == dataset["role"] and recorded["digest"] == dataset["digest"]:
                if all(recorded[key] == value for key, value in dataset.items()):
                    return int(recorded["version"])
                raise Conflict(
                    f"the {dataset['role']} dataset {dataset['digest']} was recorded with another payload",
                    reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                    digest=dataset["digest"],
                )
        self.check_not_retracted()
        if len(self.datasets) >= DATASETS_MAX:
            raise Invalid(
                f"the run has {DATASETS_MAX} datasets recorded already", reason=Reason.MAP_TOO_LARGE, limit=DATASETS_MAX
            )
        self.record(self.DatasetRecorded, audit, **dataset)
        return None

    def retract(self, audit: Audit, *, reason: str) -> int | None:
        """Retract the run. Retracting again with the same reason answers with the first
        retraction's version; with another reason it is EXISTS_WITH_DIFFERENT_PAYLOAD."""
        retraction = self.retraction
        if retraction is not None:
            if retraction["reason"] == reason:
                return int(retraction["version"])
            raise Conflict(
                f"the run was retracted with another reason: {retraction['reason']}",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
            )
        self.record(self.Retracted, audit, reason=reason)
        return None

    def checkpoint_at(self, step: int, attempt: int = 0) -> dict[str, Any]:
        """The checkpoint saved at `step` by `attempt`; attempt 0 means the one a resume at that
        step would use (not superseded), else the latest saved at that step. CHECKPOINT_NOT_FOUND."""
        found: dict[str, Any] | None = None
        for checkpoint in self.checkpoints:
            if checkpoint["step"] != step:
                continue
            if attempt:
                if checkpoint["attempt"] == attempt:
                    return checkpoint
            elif found is None or found["superseded"] or not checkpoint["superseded"]:
                found = checkpoint
        if found is None:
            where = f" by attempt {attempt}" if attempt else ""
            raise NotFound(
                f"the run has no checkpoint at step {step}{where}", reason=Reason.CHECKPOINT_NOT_FOUND, step=step
            )
        return found

    def delete_checkpoint(self, audit: Audit, *, attempt: int, step: int, reason: str) -> int | None:
        """Record that a checkpoint's state was deleted. Refused (CHECKPOINT_PROTECTED) for the
        live resume point, the best checkpoint on the run's objective and a registered version's
        source (ledger.domain.retention). Deleting it again answers with the first record's version."""
        from ledger.domain.retention import protections

        checkpoint = self.checkpoint_at(step, attempt)
        if checkpoint.get("deleted_at") is not None:
            return int(checkpoint["deleted_version"])
        # Allowed on a retracted run: reclaiming its storage is housekeeping, not a training record.
        kept = protections(self, audit.now).get((checkpoint["attempt"], step), ())
        if kept:
            raise Refused(
                f"the checkpoint at step {step} is protected ({', '.join(kept)})",
                reason=Reason.CHECKPOINT_PROTECTED,
                step=step,
                protected_by=",".join(kept),
            )
        self.record(self.CheckpointDeleted, audit, attempt=checkpoint["attempt"], step=step, reason=reason)
        return None

    def source_checkpoint(self, *, step: int, attempt: int, digest: str) -> dict[str, Any]:
        """The checkpoint a registry version is made from: it exists, was not deleted and was
        saved with `digest` (CHECKPOINT_NOT_FOUND, CHECKPOINT_DELETED, CHECKPOINT_DIGEST_MISMATCH).
        A retracted run is no source (RUN_RETRACTED)."""
        self.check_not_retracted()
        checkpoint = self.checkpoint_at(step, attempt)
        if checkpoint.get("deleted_at") is not None:
            raise Refused(f"the checkpoint at step {step} was deleted", reason=Reason.CHECKPOINT_DELETED, step=step)
        if checkpoint["digest"] != digest:
            raise Refused(
                f"the checkpoint at step {step} was saved with digest {checkpoint['digest'] or '(none)'}, not {digest}",
                reason=Reason.CHECKPOINT_DIGEST_MISMATCH,
                step=step,
                checkpoint_digest=checkpoint["digest"],
            )
        return checkpoint

    def note_registered(self, audit: Audit, *, family: str, version: int, attempt: int, step: int) -> None:
        """Keep the checkpoint a registry version was made from (recorded with the registration)."""
        for entry in self.registered:
            if (entry["family"], entry["version"]) == (family, version):
                return
        self.record(self.CheckpointRegistered, audit, family=family, version=version, attempt=attempt, step=step)
