"""Runs: open a run (with its spend account, its plan and its objective), start attempts, finish
and retract a run. Each command validates its arguments (ledger.application.commands), then
decides on the Run aggregate through the writer. What a run records as it trains (step batches,
checkpoints, notes, reports, datasets) is ledger.application.run_records.

A retraction touches two aggregates in one write, as opening a run does: the run (Run.Retracted:
no more writes) and its spend account (Account.Retracted: no new spend), saved together, so a run
is never retracted without its account or the other way round.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from ledger.application.commands import (
    FinishRun,
    OpenRun,
    RetractRun,
    StartAttempt,
)
from ledger.application.context import Context
from ledger.application.outcomes import Receipt
from ledger.domain import abandoned, leases, parents, plans, run_attempts, run_checkpoints, run_notes
from ledger.domain import spending as spend
from ledger.domain.accounts import Account
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.errors import Conflict, Invalid, NotFound, Refused
from ledger.domain.limits import check_id
from ledger.domain.reasons import Reason
from ledger.domain.runs import Run

__all__ = ["RunCommands"]


class RunCommands(Context):
    """The commands that open a run, start its attempts, finish it and retract it."""

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
        source_checkpoint: dict[str, Any] | None = None,
    ) -> Receipt:
        """Open a run by its key (idempotent) with its spend account. `max_steps` is the run's
        plan (another value for an existing run changes it: PlanChanged); `objective` the
        (metric, mode) that ranks its checkpoints, set when the run is opened and never changed
        (another one on an existing run: OBJECTIVE_DIFFERS; None leaves it). An existing run that
        was retracted is RUN_RETRACTED. `source_checkpoint` ({"run_id", "step", "uri"}) is the
        checkpoint of another run this one starts from: it must exist (RUN_NOT_FOUND,
        CHECKPOINT_NOT_FOUND), never be the run itself (INVALID_FIELD) and never change
        (EXISTS_WITH_DIFFERENT_PAYLOAD); None leaves an existing run's as it is."""
        command = OpenRun(
            run_key=run_key,
            name=name,
            spec={} if spec is None else spec,
            cap_usd_micro=cap_usd_micro,
            parent_account=parent_account,
            max_steps=max_steps,
            objective=objective,
            source_checkpoint=source_checkpoint,
        )
        audit = self.writer.audit(principal, request_id)
        run_id = ledger_id("run", run_key)
        account_id = ledger_id("account", str(run_id))
        if command.source_checkpoint is not None and command.source_checkpoint["run_id"] == str(run_id):
            raise Invalid("a run cannot be its own source", reason=Reason.INVALID_FIELD, field="source_checkpoint")

        def decide(touched: list[LedgerAggregate]) -> tuple[bool, int | None]:
            try:
                touched.append(self.aggregates.repository.get(run_id))
            except AggregateNotFoundError:
                pass
            else:
                planned = self._reopen_run(touched[-1], command, audit)
                self._reopen_account(str(run_id), command, audit, touched)
                return False, planned
            self._open_new(run_key, command, audit, touched)
            return True, None

        (created, planned), position = self.writer.write(decide)
        if position is None:
            position = self._first_position(run_id, account_id, planned)
        return Receipt(position, duplicate=not created, created=created, run_id=str(run_id))

    def _open_new(self, run_key: str, command: OpenRun, audit: Audit, touched: list[LedgerAggregate]) -> None:
        """Open a new run and its account (or take the account a ledger written before run account
        names were reserved opened for it, when its cap and parent are the run's)."""
        run_id = ledger_id("run", run_key)
        account_id = ledger_id("account", str(run_id))
        check_id(run_key, "run_key")  # A new run takes a key under the identifier rules.
        plan: dict[str, Any] = {}
        if command.max_steps is not None:
            plan["max_steps"] = command.max_steps
        if command.objective is not None:
            plan["objective"] = command.objective
        if command.source_checkpoint is not None:
            self._check_source(command.source_checkpoint)
            plan["source"] = command.source_checkpoint
        touched.append(
            Run._create(
                Run.Opened,
                id=run_id,
                run_key=run_key,
                name=command.name or run_key,
                spec=command.spec,
                **plan,
                **audit.fields(),
            )
        )
        try:
            taken: Account = self.aggregates.repository.get(account_id)
        except AggregateNotFoundError:
            parents.check_not_retracted(self.aggregates.parents(command.parent_account, touched))
            touched.append(
                Account._create(
                    Account.Opened,
                    id=account_id,
                    name=str(run_id),
                    parent=command.parent_account,
                    cap=command.cap_usd_micro,
                    **audit.fields(),
                )
            )
            return
        # Only in a ledger written before run account names were reserved: the account was
        # opened by OpenAccount. The run is opened only if its cap and parent are honoured.
        if (taken.cap, taken.parent) != (command.cap_usd_micro, command.parent_account):
            raise Refused(
                f"the account {run_id} of this run was opened before it with another cap or parent",
                reason=Reason.RUN_ACCOUNT_TAKEN,
                account=str(run_id),
            )

    def _check_source(self, source: dict[str, Any]) -> None:
        """The source run exists and has a checkpoint at the source step (NotFound otherwise)."""
        try:
            _, source_run = self.aggregates.run(source["run_id"])
            run_checkpoints.checkpoint_at(source_run, source["step"])
        except NotFound as refused:
            raise NotFound(
                f"source_checkpoint: {refused.message}",
                reason=refused.reason,
                field="source_checkpoint",
                run_id=source["run_id"],
                step=source["step"],
            ) from None

    def _first_position(self, run_id: UUID, account_id: UUID, planned: int | None) -> int:
        """A retry of OpenRun answers with the first answer: the position of the transaction that
        opened the run and its account together (the later of the two events), or of the plan
        change that set the max_steps it asks for."""
        position = self.storage.position_of(run_id, 1)
        try:
            position = max(position, self.storage.position_of(account_id, 1))
        except LookupError:
            pass
        if planned is not None:
            position = max(position, self.storage.position_of(run_id, planned))
        return position

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
        if command.source_checkpoint is not None and command.source_checkpoint != run.source:
            raise Conflict(
                "the run was opened with another source checkpoint: a run's source never changes",
                reason=Reason.EXISTS_WITH_DIFFERENT_PAYLOAD,
                field="source_checkpoint",
            )
        return run_attempts.change_plan(run, audit, max_steps=command.max_steps)

    def _reopen_account(self, name: str, command: OpenRun, audit: Audit, touched: list[LedgerAggregate]) -> None:
        """What an OpenRun of an existing run asks of its account: a cap given is a cap change
        (set_cap's rules), an absent one leaves the cap; a parent given must be the account's."""
        account = self.aggregates.account(name)
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
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int]:
            uuid, run = self.aggregates.run(run_id)
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
                spend_account, parents = self.aggregates.with_parents(str(uuid), touched)
                plans.release_plan(
                    spend_account, parents, audit, reason=plans.SUPERSEDED, before_attempt=run.current_attempt
                )
                abandoned.settle_attempts(
                    spend_account,
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

        (version, number), position = self.writer.write(decide)
        return self.writer.receipt(UUID(run_id), version, position, attempt=number, run_id=run_id)

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
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            uuid, run = self.aggregates.run(run_id)
            touched.append(run)
            version = run_attempts.finish(
                run, audit, attempt=attempt, status=status, summary=command.summary, error=command.error
            )
            if version is None:
                # What the run's plan left undrawn goes back: the run spends nothing more.
                spend_account, parents = self.aggregates.with_parents(str(uuid), touched)
                plans.release_plan(spend_account, parents, audit, reason=plans.FINISHED)
            return version

        version, position = self.writer.write(decide)
        return self.writer.receipt(UUID(run_id), version, position)

    def retract_run(self, *, run_id: str, reason: str, principal: str = "", request_id: str = "") -> Receipt:
        """Retract a run (an operator's act, with a reason): it is left out of lists, takes no more
        writes (RUN_RETRACTED) and its account no new spend; its history stays. Retracting again
        with the same reason is a duplicate; with another, EXISTS_WITH_DIFFERENT_PAYLOAD."""
        command = RetractRun(run_id=run_id, reason=reason)
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            uuid, run = self.aggregates.run(run_id)
            touched.append(run)
            version = run_notes.retract(run, audit, reason=command.reason)
            account, parents = self.aggregates.with_parents(str(uuid), touched)
            account.retract(audit, reason=command.reason)
            plans.release_plan(account, parents, audit, reason=plans.RETRACTED)
            return version

        version, position = self.writer.write(decide)
        return self.writer.receipt(UUID(run_id), version, position)


def _objective_text(objective: dict[str, str] | None) -> str:
    return "none" if objective is None else f"{objective['mode']} {objective['metric']}"
