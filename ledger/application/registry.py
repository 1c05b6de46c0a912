"""The model registry: register immutable versions, promote through a passing gate verdict
(compare-and-set on the current version), roll back to an earlier promoted version.

A version may name the run's checkpoint it was made from (source_checkpoint): the run's checkpoint
is checked (it exists, was not deleted, has the digest named, the run was not retracted), and the
same write records Run.CheckpointRegistered on the run, so that retention keeps that checkpoint. A
bare source_run_id and source_step of a run that has a checkpoint at that step records it too
(without a digest to check); one of an unknown run is recorded as it is, unchecked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from ledger.application.commands import Promote, Register, Rollback
from ledger.application.kernel import Receipt, storage_read
from ledger.application.reads import Reads
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.errors import Invalid, NotFound
from ledger.domain.limits import PAGE_SIZE_MAX, check_id, check_int
from ledger.domain.reasons import Reason
from ledger.domain.registry import Family
from ledger.domain.runs import Run
from ledger.views import models

__all__ = ["RegistryCommands"]


class RegistryCommands(Reads):
    """The commands on registry families, and the states retention must keep."""

    @storage_read
    def protected_states(
        self,
        *,
        after: tuple[str, str, int] | None = None,
        limit: int = 1000,
        min_position: int = 0,
        timeout_s: float = 5.0,
    ) -> models.ProtectedPage:
        """A page of every state no prune may delete, across all runs and the registry: each
        run's live resume and best checkpoints and those registry versions were made from, then
        every registry version's artifact (ledger.views.models.ProtectedPage). Raises Invalid."""
        check_int(limit, "limit", minimum=1, maximum=PAGE_SIZE_MAX)
        if after is not None and after[0] not in ("runs", "versions"):
            raise Invalid("after names no page of protected states", reason=Reason.INVALID_PAGE_TOKEN, field="after")
        self.wait(min_position, timeout_s)
        return self.views.protected_page(after=after, limit=limit, now=self.clock())

    def register(
        self,
        *,
        family: str,
        artifact_uri: str,
        digest: str,
        source_run_id: str = "",
        source_step: int = 0,
        metadata: dict[str, Any] | None = None,
        source_checkpoint: dict[str, Any] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Register an immutable version (never promotes). Idempotent by digest. With
        `source_checkpoint` {run_id, step, attempt (0: the usable one at that step),
        checkpoint_digest} the version records that checkpoint (RUN_NOT_FOUND,
        CHECKPOINT_NOT_FOUND, CHECKPOINT_DELETED, CHECKPOINT_DIGEST_MISMATCH, RUN_RETRACTED)."""
        command = Register(
            family=family,
            artifact_uri=artifact_uri,
            digest=digest,
            source_run_id=source_run_id,
            source_step=source_step,
            metadata={} if metadata is None else metadata,
            source_checkpoint=source_checkpoint,
        )
        audit = self._audit(principal, request_id)
        family_id = ledger_id("family", family)

        def decide(touched: list[LedgerAggregate]) -> tuple[int, int | None]:
            try:
                aggregate: Family = self.repository.get(family_id)
            except AggregateNotFoundError:
                check_id(family, "family")  # A new family takes a name under the identifier rules.
                aggregate = Family._create(Family.Created, id=family_id, name=family, **audit.fields())
            touched.append(aggregate)
            fields = command.version_fields()
            source = self._registered_source(aggregate, command) if command.source_checkpoint else None
            if source is not None:
                fields["source_checkpoint"] = source
            number, version = aggregate.register(audit, version_fields=fields)
            if version is None:
                run = self._source_run(command.source_run_id)
                if run is not None:
                    self._note_registered(run, aggregate.name, number, command, source, audit, touched)
            return number, version

        (number, version), position = self._write(decide)
        return self._receipt(family_id, version, position, version=number)

    def _registered_source(self, family: Family, command: Register) -> dict[str, Any]:
        """The source checkpoint as the version records it: with the attempt that saved it. A retry
        of a registration (the same digest and checkpoint, attempt 0 or the one recorded) answers
        with what was recorded, before the run is looked at again."""
        given = command.source_checkpoint
        assert given is not None
        for existing in family.versions:
            recorded = existing.get("source_checkpoint")
            if existing["digest"] == command.digest and recorded is not None:
                same = all(recorded[key] == given[key] for key in ("run_id", "step", "checkpoint_digest"))
                if same and given["attempt"] in (0, recorded["attempt"]):
                    return dict(recorded)
        _, run = self._run(given["run_id"])
        checkpoint = run.source_checkpoint(
            step=given["step"], attempt=given["attempt"], digest=given["checkpoint_digest"]
        )
        return {**given, "attempt": checkpoint["attempt"]}

    def _source_run(self, run_id: str) -> Run | None:
        """The run a version names as its source, when it is one this ledger knows."""
        if not run_id:
            return None
        try:
            uuid = UUID(run_id)
            run: object = self.repository.get(uuid)
        except (ValueError, AggregateNotFoundError):
            return None
        return run if isinstance(run, Run) else None

    @staticmethod
    def _note_registered(
        run: Run,
        family: str,
        number: int,
        command: Register,
        source: dict[str, Any] | None,
        audit: Audit,
        touched: list[LedgerAggregate],
    ) -> None:
        """Record on the run which of its checkpoints the new version was made from (kept from
        deletion): the source checkpoint's, else the checkpoint at the bare source step if any."""
        if source is not None:
            attempt = int(source["attempt"])
        else:
            try:
                attempt = int(run.checkpoint_at(command.source_step)["attempt"])
            except NotFound:
                return
        run.note_registered(audit, family=family, version=number, attempt=attempt, step=command.source_step)
        touched.append(run)

    def promote(
        self,
        *,
        family: str,
        version: int,
        expected_current: int,
        verdict: dict[str, Any],
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Compare-and-set promotion through a passing gate verdict {passed, reason, stats}."""
        command = Promote(family=family, version=version, expected_current=expected_current, verdict=verdict)
        audit = self._audit(principal, request_id)
        return self._promotion(
            family,
            lambda f: f.promote(audit, version=version, expected_current=expected_current, verdict=command.verdict),
        )

    def rollback(
        self,
        *,
        family: str,
        version: int,
        expected_current: int,
        reason: str,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Promote an earlier, once-promoted version again, with a reason."""
        Rollback(family=family, version=version, expected_current=expected_current, reason=reason)
        audit = self._audit(principal, request_id)
        return self._promotion(
            family, lambda f: f.rollback(audit, version=version, expected_current=expected_current, reason=reason)
        )

    def _promotion(self, family: str, act: Callable[[Family], int | None]) -> Receipt:
        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int, int]:
            aggregate = self._family(family)
            touched.append(aggregate)
            version = act(aggregate)
            entry = next(p for p in reversed(aggregate.promotions) if version is None or p["event_version"] == version)
            return version, entry["version"], entry["previous"]

        (version, current, previous), position = self._write(decide)
        return self._receipt(ledger_id("family", family), version, position, version=current, previous=previous)
