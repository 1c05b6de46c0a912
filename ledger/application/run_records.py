"""What a run records: step batches (one event each, also a sequence of them at once), scored
checkpoints and their deletions, summary notes, reports and datasets. Each command validates its
arguments (ledger.application.commands), then decides on the Run aggregate through the writer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from ledger.application.commands import (
    DeleteCheckpoint,
    NoteSummary,
    RecordDataset,
    SaveCheckpoint,
)
from ledger.application.context import Context
from ledger.application.outcomes import Receipt
from ledger.domain import run_checkpoints, run_notes, run_steps, run_tags
from ledger.domain.base import LedgerAggregate
from ledger.domain.batches import StepBatch
from ledger.domain.errors import Invalid
from ledger.domain.limits import check_reference
from ledger.domain.reasons import Reason
from ledger.domain.run_reports import check_report

__all__ = ["RunRecords"]


class RunRecords(Context):
    """The commands that record what a run does: its step batches, checkpoints (saved and
    deleted), summary notes, reports and datasets."""

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
        (version, last_step), position = self.writer.write(decide)
        return self.writer.receipt(UUID(run_id), version, position, last_step=last_step)

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
        answers = self.writer.write_all(decides) if decides else []
        for batch, answer in zip(batches[: len(decides)], answers, strict=True):
            if isinstance(answer, Exception):
                outcomes.append(answer)
                continue
            (version, last_step), position = answer
            try:
                outcomes.append(self.writer.receipt(UUID(batch["run_id"]), version, position, last_step=last_step))
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
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int | None]:
            _, run = self.aggregates.run(run_id)
            touched.append(run)
            version = run_steps.record_steps(run, audit, batch, self.aggregates.recall_batch(run))
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
        audit = self.writer.audit(principal, request_id)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            _, run = self.aggregates.run(run_id)
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

        version, position = self.writer.write(decide)
        return self.writer.receipt(UUID(run_id), version, position)

    def note_summary(
        self, *, run_id: str, summary: dict[str, Any], principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Merge notes into the run's summary, also after it finished."""
        command = NoteSummary(run_id=run_id, summary=summary)
        audit = self.writer.audit(principal, request_id)

        return self.write_on_run(run_id, lambda run: run_notes.note_summary(run, audit, summary=command.summary))

    def set_tags(
        self,
        *,
        run_id: str,
        tags: Mapping[str, str] | None = None,
        remove: Sequence[str] = (),
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Set and remove the run's tags (ledger.domain.run_tags), also after it finished."""
        check_reference(run_id, "run_id")
        changes, removed = run_tags.check_tags(tags or {}, remove)
        audit = self.writer.audit(principal, request_id)

        return self.write_on_run(run_id, lambda run: run_tags.set_tags(run, audit, changes=changes, removed=removed))

    def record_report(
        self, *, run_id: str, kind: str, report: dict[str, Any], principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Record a holdout, delta or notes report on the run (ledger.domain.run_reports), also
        after it finished; the same report again is a duplicate."""
        check_reference(run_id, "run_id")
        checked = check_report(kind, report)
        audit = self.writer.audit(principal, request_id)

        return self.write_on_run(run_id, lambda run: run_notes.record_report(run, audit, kind=kind, report=checked))

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
        audit = self.writer.audit(principal, request_id)

        return self.write_on_run(run_id, lambda run: run_notes.record_dataset(run, audit, dataset=dataset))

    def delete_checkpoint(
        self, *, run_id: str, attempt: int, step: int, reason: str = "", principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Record that a checkpoint's state was deleted from its storage (attempt 0: the usable
        one at `step`): never offered for resume again. Refused for a protected checkpoint
        (CHECKPOINT_PROTECTED, ledger.domain.retention); a second deletion is a duplicate."""
        command = DeleteCheckpoint(run_id=run_id, attempt=attempt, step=step, reason=reason)
        audit = self.writer.audit(principal, request_id)

        return self.write_on_run(
            run_id,
            lambda run: run_checkpoints.delete_checkpoint(
                run, audit, attempt=command.attempt, step=command.step, reason=command.reason
            ),
        )
