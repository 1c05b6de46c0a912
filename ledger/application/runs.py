"""Runs: open a run (with its spend account, its plan and its objective), start attempts, record
step batches, scored checkpoints, the finish and summary notes, datasets, checkpoint deletions, and
retract a run. Each command validates its arguments (ledger.application.commands), then decides on
the Run aggregate in the kernel's write loop.

A retraction touches two aggregates in one write, as opening a run does: the run (Run.Retracted:
no more writes) and its spend account (Account.Retracted: no new spend), saved together, so a run
is never retracted without its account or the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from ledger.application.commands import (
    DeleteCheckpoint,
    FinishRun,
    NoteSummary,
    OpenRun,
    RecordDataset,
    RetractRun,
    SaveCheckpoint,
    StartAttempt,
)
from ledger.application.kernel import Kernel, Receipt
from ledger.domain import abandoned, leases, parents, plans, run_attempts, run_checkpoints, run_notes, run_steps
from ledger.domain import spending as spend
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.batches import StepBatch
from ledger.domain.errors import Invalid, Refused
from ledger.domain.limits import check_id, check_reference
from ledger.domain.reasons import Reason
from ledger.domain.run_reports import check_report
from ledger.domain.runs import Run

__all__ = ["RunCommands"]


class RunCommands(Kernel):
    """The commands on runs."""

    def open_run(
        self,
        *,
        run_key: str,
        name: str = "",
        spec: dict[str, Any] | None = None,
        cap_usd_micro: int | None = None,
        parent_account: str = "",
        max_steps: int | None = None,
        objective: tuple[str, str] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Open a run by its key (idempotent) with its spend account. `max_steps` is the run's
        plan (another value for an existing run changes it: PlanChanged); `objective` the
        (metric, mode) that ranks its checkpoints, set when the run is opened and never changed
        (another one on an existing run: OBJECTIVE_DIFFERS; None leaves it). An existing run that
        was retracted is RUN_RETRACTED."""
        command = OpenRun(
            run_key=run_key,
            name=name,
            spec={} if spec is None else spec,
            cap_usd_micro=cap_usd_micro,
            parent_account=parent_account,
            max_steps=max_steps,
            objective=objective,
        )
        audit = self._audit(principal, request_id)
        run_id = ledger_id("run", run_key)
        account_id = ledger_id("account", str(run_id))

        def decide(touched: list[LedgerAggregate]) -> tuple[bool, int | None]:
            try:
                touched.append(self.repository.get(run_id))
            except AggregateNotFoundError:
                pass
            else:
                planned = self._reopen_run(touched[-1], command, audit)
                self._reopen_account(str(run_id), command, audit, touched)
                return False, planned
            check_id(run_key, "run_key")  # A new run takes a key under the identifier rules.
            plan: dict[str, Any] = {}
            if command.max_steps is not None:
                plan["max_steps"] = command.max_steps
            if command.objective is not None:
                plan["objective"] = command.objective
            touched.append(
                Run._create(
                    Run.Opened,
                    id=run_id,
                    run_key=run_key,
                    name=name or run_key,
                    spec=command.spec,
                    **plan,
                    **audit.fields(),
                )
            )
            try:
                taken: Account = self.repository.get(account_id)
            except AggregateNotFoundError:
                parents.check_not_retracted(self._parents(parent_account, touched))
                touched.append(
                    Account._create(
                        Account.Opened,
                        id=account_id,
                        name=str(run_id),
                        parent=parent_account,
                        cap=cap_usd_micro,
                        **audit.fields(),
                    )
                )
                return True, None
            # Only in a ledger written before run account names were reserved: the account was
            # opened by OpenAccount. The run is opened only if its cap and parent are honoured.
            if (taken.cap, taken.parent) != (cap_usd_micro, parent_account):
                raise Refused(
                    f"the account {run_id} of this run was opened before it with another cap or parent",
                    reason=Reason.RUN_ACCOUNT_TAKEN,
                    account=str(run_id),
                )
            return True, None

        (created, planned), position = self._write(decide)
        if position is None:
            # A retry answers with the first answer: the position of the transaction that opened
            # the run and its account together (the later of the two events), or of the plan
            # change that set the max_steps it asks for.
            position = self.storage.position_of(run_id, 1)
            try:
                position = max(position, self.storage.position_of(account_id, 1))
            except LookupError:
                pass
            if planned is not None:
                position = max(position, self.storage.position_of(run_id, planned))
        return Receipt(position, duplicate=not created, created=created, run_id=str(run_id))

    @staticmethod
    def _reopen_run(run: LedgerAggregate, command: OpenRun, audit: Audit) -> int | None:
        """What an OpenRun of an existing run asks of the run: not retracted, the same objective
        (when one is given), and its plan (a max_steps given that differs is recorded). Returns
        the version of the plan change an identical earlier OpenRun recorded, if any."""
        assert isinstance(run, Run)
        run.check_not_retracted()
        if command.objective is not None and command.objective != run.objective:
            held = run.objective
            raise Refused(
                f"the run's objective is {_objective_text(held)}, not {_objective_text(command.objective)}:"
                " an objective never changes",
                reason=Reason.OBJECTIVE_DIFFERS,
                metric=held["metric"] if held else "",
                mode=held["mode"] if held else "",
            )
        return run_attempts.change_plan(run, audit, max_steps=command.max_steps)

    def _reopen_account(self, name: str, command: OpenRun, audit: Audit, touched: list[LedgerAggregate]) -> None:
        """What an OpenRun of an existing run asks of its account: a cap given is a cap change
        (set_cap's rules), an absent one leaves the cap; a parent given must be the account's."""
        account = self._account(name)
        touched.append(account)
        parent = command.parent_account
        if parent and parent != account.parent:
            raise Refused(
                f"the run's account is under {account.parent or 'no parent'}, not {parent}: a parent cannot change",
                reason=Reason.PARENT_ACCOUNT_DIFFERS,
                parent=account.parent,
                requested_parent=parent,
            )
        if command.cap_usd_micro is not None:
            spend.set_cap(account, audit, command.cap_usd_micro)

    def start_attempt(
        self,
        *,
        run_id: str,
        attempt_id: str = "",
        label: str = "",
        resume_from_step: int | None = None,
        max_steps: int | None = None,
        lease_s: int | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Start the next attempt on a run, fencing the previous one; `max_steps` (None: unchanged)
        is the run's plan from now on, never below the resume point (MAX_STEPS_BELOW_LAST_STEP);
        the attempt holds a lease of `lease_s` seconds (None: LEASE_S_DEFAULT; INVALID_LEASE
        outside its range), renewed by its writes and heartbeats (ledger.domain.leases)."""
        command = StartAttempt(
            run_id=run_id,
            attempt_id=attempt_id,
            label=label,
            resume_from_step=resume_from_step,
            max_steps=max_steps,
            lease_s=lease_s,
        )
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int]:
            uuid, run = self._run(run_id)
            touched.append(run)
            version = run_attempts.start_attempt(
                run,
                audit,
                attempt_id=command.attempt_id,
                label=command.label,
                resume_from_step=command.resume_from_step,
                max_steps=command.max_steps,
                lease_s=command.lease_s,
                lease_asked=lease_s is not None,
            )
            if version is None:
                # The fenced attempts' holds are settled at once, not at their expiry, and not at
                # $0: what they spent up to their last sign of life (ledger.domain.abandoned). What
                # their plan left undrawn goes back first (no money was spent from it).
                holder, parents = self._chain(str(uuid), touched)
                plans.release_plan(holder, parents, audit, reason=plans.SUPERSEDED, before_attempt=run.current_attempt)
                abandoned.settle_attempts(
                    holder,
                    parents,
                    audit,
                    below=run.current_attempt,
                    reason=abandoned.SUPERSEDED,
                    last_seen=lambda number: leases.last_seen(run, number),
                )
            number: int = (
                next(a["number"] for a in run.attempts if a["version"] == version) if version else run.current_attempt
            )
            return version, number

        (version, number), position = self._write(decide)
        return self._receipt(UUID(run_id), version, position, attempt=number, run_id=run_id)

    def append_steps(
        self,
        *,
        run_id: str,
        attempt: int,
        steps: Sequence[int],
        tokens: Sequence[int] | None = None,
        usd_micro: Sequence[int] | None = None,
        metrics: dict[str, Any] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Record one batch of steps as one event (see ledger.domain.batches for the shape)."""
        decide = self._steps_decision(
            run_id=run_id,
            attempt=attempt,
            steps=steps,
            tokens=tokens,
            usd_micro=usd_micro,
            metrics=metrics,
            principal=principal,
            request_id=request_id,
        )
        (version, last_step), position = self._write(decide)
        return self._receipt(UUID(run_id), version, position, last_step=last_step)

    def append_steps_all(self, batches: Sequence[Mapping[str, Any]]) -> list[Receipt | Exception]:
        """Record step batches in their order, each as `append_steps` records it (`batches` are
        its keyword arguments), in as few transactions as group commit makes of them. The
        batches are a sequence: once one is refused, none after it is recorded, as if each were
        sent once the one before it was answered. Answers one outcome per batch, in order: its
        Receipt, or the refusal append_steps would raise (for a batch after a refused one, a
        Refused of the same reason: kernel.unrecorded). A batch that cannot be built (Invalid)
        is the last answered: those after it are not even built."""
        decides: list[Callable[[list[LedgerAggregate]], tuple[int | None, int | None]]] = []
        refusal: Exception | None = None
        for batch in batches:
            try:
                decides.append(self._steps_decision(**batch))
            except Exception as error:
                refusal = error
                break
        outcomes: list[Receipt | Exception] = []
        answers = self._write_all(decides) if decides else []
        for batch, answer in zip(batches[: len(decides)], answers, strict=True):
            if isinstance(answer, Exception):
                outcomes.append(answer)
                continue
            (version, last_step), position = answer
            try:
                outcomes.append(self._receipt(UUID(batch["run_id"]), version, position, last_step=last_step))
            except Exception as error:  # The position of a duplicate could not be read.
                outcomes.append(error)
        if refusal is not None:
            outcomes.append(refusal)
        return outcomes

    def _steps_decision(
        self,
        *,
        run_id: str,
        attempt: int,
        steps: Sequence[int],
        tokens: Sequence[int] | None = None,
        usd_micro: Sequence[int] | None = None,
        metrics: dict[str, Any] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Callable[[list[LedgerAggregate]], tuple[int | None, int | None]]:
        """The write loop's decision of one step batch: the version of the identical batch
        recorded before (None: recorded now) and the run's last step."""
        batch = StepBatch.build(attempt=attempt, steps=steps, tokens=tokens, usd_micro=usd_micro, metrics=metrics)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int | None]:
            _, run = self._run(run_id)
            touched.append(run)
            version = run_steps.record_steps(run, audit, batch, self._recall_batch(run))
            last_step: int | None = run.last_step
            return version, last_step

        return decide

    def save_checkpoint(
        self,
        *,
        run_id: str,
        attempt: int,
        step: int,
        backend: str,
        uri: str,
        fidelity: str = "weights+optimizer",
        sampler_uri: str = "",
        final: bool = False,
        expires_at: datetime | None = None,
        digest: str = "",
        scores: dict[str, float] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Record a checkpoint whose files are durable: the commit point for resume. `scores` are
        the eval scores measured at it (name -> finite value), part of its identity."""
        command = SaveCheckpoint(
            run_id=run_id,
            attempt=attempt,
            step=step,
            backend=backend,
            uri=uri,
            fidelity=fidelity,
            sampler_uri=sampler_uri,
            final=final,
            expires_at=expires_at,
            digest=digest,
            scores=scores,
        )
        checkpoint = command.checkpoint()
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            version = run_checkpoints.save_checkpoint(run, audit, attempt=attempt, checkpoint=checkpoint)
            # After the duplicate test: a retry of a save made before its expiry is still answered
            # as that save. The refusal drops the event just triggered with the rest of the write.
            if version is None and expires_at is not None and expires_at <= audit.now:
                raise Invalid(
                    "expires_at has already passed: the checkpoint cannot be resumed from",
                    reason=Reason.CHECKPOINT_ALREADY_EXPIRED,
                    field="expires_at",
                )
            return version

        version, position = self._write(decide)
        return self._receipt(UUID(run_id), version, position)

    def finish_run(
        self,
        *,
        run_id: str,
        attempt: int,
        status: str,
        summary: dict[str, Any] | None = None,
        error: str = "",
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Finish the run as done, failed or stopped; the error is cut to 2,000 characters."""
        command = FinishRun(
            run_id=run_id, attempt=attempt, status=status, summary={} if summary is None else summary, error=error
        )
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            uuid, run = self._run(run_id)
            touched.append(run)
            version = run_attempts.finish(
                run, audit, attempt=attempt, status=status, summary=command.summary, error=command.error
            )
            if version is None:
                # What the run's plan left undrawn goes back: the run spends nothing more.
                holder, parents = self._chain(str(uuid), touched)
                plans.release_plan(holder, parents, audit, reason=plans.FINISHED)
            return version

        version, position = self._write(decide)
        return self._receipt(UUID(run_id), version, position)

    def note_summary(
        self, *, run_id: str, summary: dict[str, Any], principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Merge notes into the run's summary, also after it finished."""
        command = NoteSummary(run_id=run_id, summary=summary)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            return run_notes.note_summary(run, audit, summary=command.summary)

        version, position = self._write(decide)
        return self._receipt(UUID(run_id), version, position)

    def record_report(
        self, *, run_id: str, kind: str, report: dict[str, Any], principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Record a holdout, delta or notes report on the run (ledger.domain.run_reports), also
        after it finished; the same report again is a duplicate."""
        check_reference(run_id, "run_id")
        checked = check_report(kind, report)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            return run_notes.record_report(run, audit, kind=kind, report=checked)

        version, position = self._write(decide)
        return self._receipt(UUID(run_id), version, position)

    def retract_run(self, *, run_id: str, reason: str, principal: str = "", request_id: str = "") -> Receipt:
        """Retract a run (an operator's act, with a reason): it is left out of lists, takes no more
        writes (RUN_RETRACTED) and its account no new spend; its history stays. Retracting again
        with the same reason is a duplicate; with another, EXISTS_WITH_DIFFERENT_PAYLOAD."""
        command = RetractRun(run_id=run_id, reason=reason)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            uuid, run = self._run(run_id)
            touched.append(run)
            version = run_notes.retract(run, audit, reason=command.reason)
            account, parents = self._chain(str(uuid), touched)
            account.retract(audit, reason=command.reason)
            plans.release_plan(account, parents, audit, reason=plans.RETRACTED)
            return version

        version, position = self._write(decide)
        return self._receipt(UUID(run_id), version, position)

    def record_dataset(
        self,
        *,
        run_id: str,
        role: str,
        digest: str,
        format: str,
        rows: int,
        tokens: int | None = None,
        source_uri: str = "",
        report: dict[str, Any] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Record a dataset the run trains ("train") or evaluates ("eval") on, by the digest of its
        rows, with its export report (at most 64 KiB as JSON). The same role and digest again is a
        duplicate, or EXISTS_WITH_DIFFERENT_PAYLOAD with another payload."""
        command = RecordDataset(
            run_id=run_id,
            role=role,
            digest=digest,
            format=format,
            rows=rows,
            tokens=tokens,
            source_uri=source_uri,
            report={} if report is None else report,
        )
        dataset = command.dataset()
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            return run_notes.record_dataset(run, audit, dataset=dataset)

        version, position = self._write(decide)
        return self._receipt(UUID(run_id), version, position)

    def delete_checkpoint(
        self, *, run_id: str, attempt: int, step: int, reason: str = "", principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Record that a checkpoint's state was deleted from its storage (attempt 0: the usable
        one at `step`): never offered for resume again. Refused for a protected checkpoint
        (CHECKPOINT_PROTECTED, ledger.domain.retention); a second deletion is a duplicate."""
        command = DeleteCheckpoint(run_id=run_id, attempt=attempt, step=step, reason=reason)
        audit = self._audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self._run(run_id)
            touched.append(run)
            return run_checkpoints.delete_checkpoint(
                run, audit, attempt=command.attempt, step=command.step, reason=command.reason
            )

        version, position = self._write(decide)
        return self._receipt(UUID(run_id), version, position)


def _objective_text(objective: dict[str, str] | None) -> str:
    return "none" if objective is None else f"{objective['mode']} {objective['metric']}"
