"""The model registry: register immutable versions, promote through a passing gate verdict
(compare-and-set on the current version), roll back to an earlier promoted version, move aliases,
retire a family.

A promotion's verdict is asserted by the caller, or evaluated here on a gate rule over recorded
scores (ledger.application.gating); a refused promotion is recorded with the family (Recorded).

A version may name the run's checkpoint it was made from (source_checkpoint): the run's checkpoint
is checked (it exists, was not deleted, has the digest named, the run was not retracted), and the
same write records Run.CheckpointRegistered on the run, so that retention keeps that checkpoint. A
bare source_run_id and source_step of a run that has a checkpoint at that step records it too
(without a digest to check); one of an unknown run is recorded as it is, unchecked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError

from ledger.application import gating
from ledger.application.commands import INT32_MAX
from ledger.application.context import Context
from ledger.application.outcomes import Receipt, Recorded, storage_read
from ledger.application.registry_commands import Promote, Register, Rollback
from ledger.domain import aliases, run_checkpoints
from ledger.domain.base import Audit, LedgerAggregate, ledger_id
from ledger.domain.errors import Invalid, LedgerError, NotFound
from ledger.domain.gates import evaluate
from ledger.domain.limits import PAGE_SIZE_MAX, check_id, check_int, check_text
from ledger.domain.reasons import Reason
from ledger.domain.registry import Family
from ledger.domain.runs import Run
from ledger.views import models

__all__ = ["PromotionReceipt", "RegistryCommands"]


@dataclasses.dataclass(frozen=True)
class PromotionReceipt(Receipt):
    """A promotion's receipt, with the verdict it was recorded with."""

    verdict: dict[str, Any] | None = None


class RegistryCommands(Context):
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
        self.reader.wait(min_position, timeout_s)
        return self.reader.views.protected_page(after=after, limit=limit, now=self.writer.clock())

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
        audit = self.writer.audit(principal, request_id)
        family_id = ledger_id("family", family)

        def decide(touched: list[LedgerAggregate]) -> tuple[int, int | None]:
            try:
                aggregate: Family = self.aggregates.repository.get(family_id)
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

        (number, version), position = self.writer.write(decide)
        return self.writer.receipt(family_id, version, position, version=number)

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
        _, run = self.aggregates.run(given["run_id"])
        checkpoint = run_checkpoints.source_checkpoint(
            run, step=given["step"], attempt=given["attempt"], digest=given["checkpoint_digest"]
        )
        return {**given, "attempt": checkpoint["attempt"]}

    def _source_run(self, run_id: str) -> Run | None:
        """The run a version names as its source, when it is one this ledger knows."""
        if not run_id:
            return None
        try:
            uuid = UUID(run_id)
            run: object = self.aggregates.repository.get(uuid)
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
                attempt = int(run_checkpoints.checkpoint_at(run, command.source_step)["attempt"])
            except NotFound:
                return
        run_checkpoints.note_registered(
            run, audit, family=family, version=number, attempt=attempt, step=command.source_step
        )
        touched.append(run)

    def promote(
        self,
        *,
        family: str,
        version: int,
        expected_current: int,
        verdict: dict[str, Any] | None = None,
        gate_rule: str = "",
        evaluation_run_id: str = "",
        principal: str = "",
        request_id: str = "",
    ) -> PromotionReceipt:
        """Compare-and-set promotion through a passing gate: an asserted verdict {passed, reason,
        stats}, or a gate rule the ledger evaluates on the version's source checkpoint's scores or
        on `evaluation_run_id`'s summary (INVALID_GATE_RULE, GATE_EVIDENCE_MISSING, RUN_NOT_FOUND).
        A failed gate or a lost compare-and-set is recorded, then raised."""
        gating.check_gate(verdict, gate_rule, evaluation_run_id)
        command = Promote(family=family, version=version, expected_current=expected_current, verdict=verdict or {})
        audit = self.writer.audit(principal, request_id)
        digest = gating.request_digest(
            "promote",
            version=version,
            expected_current=expected_current,
            verdict=command.verdict if not gate_rule else None,
            gate_rule=gate_rule,
            evaluation_run_id=evaluation_run_id,
        )

        def judge(aggregate: Family) -> dict[str, Any]:
            if not gate_rule:
                # No assertion vouches for a retracted run's version (a rule refuses its scores too).
                source = self._source_run(aggregate.versions[version - 1]["source_run_id"])
                if source is not None:
                    source.check_not_retracted()
                return gating.asserted(command.verdict)
            if evaluation_run_id:
                scores = gating.summary_scores(self.aggregates.run(evaluation_run_id)[1], self.storage.position_of)
            else:
                entry = aggregate.versions[version - 1]
                scores = gating.checkpoint_scores(entry, self._source_run, self.storage.position_of)
            return evaluate(gate_rule, scores)

        def act(aggregate: Family) -> int | None:
            retry = aggregate.answered(audit, digest)
            if retry is not None:
                return retry
            aggregate._check_version(version)
            return aggregate.promote(
                audit,
                version=version,
                expected_current=expected_current,
                verdict=judge(aggregate),
                request_digest=digest,
            )

        return self._promotion(family, act)

    def rollback(
        self,
        *,
        family: str,
        version: int,
        expected_current: int,
        reason: str,
        principal: str = "",
        request_id: str = "",
    ) -> PromotionReceipt:
        """Promote an earlier, once-promoted version again, with a reason."""
        Rollback(family=family, version=version, expected_current=expected_current, reason=reason)
        audit = self.writer.audit(principal, request_id)
        digest = gating.request_digest("rollback", version=version, expected_current=expected_current, reason=reason)

        def act(aggregate: Family) -> int | None:
            retry = aggregate.answered(audit, digest)
            if retry is not None:
                return retry
            return aggregate.rollback(
                audit, version=version, expected_current=expected_current, reason=reason, request_digest=digest
            )

        return self._promotion(family, act)

    def _promotion(self, family: str, act: Callable[[Family], int | None]) -> PromotionReceipt:
        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int, int, dict[str, Any] | None]:
            aggregate = self.aggregates.family(family)
            touched.append(aggregate)
            version = _recording(aggregate, lambda: act(aggregate))
            entry = next(p for p in reversed(aggregate.promotions) if version is None or p["event_version"] == version)
            return version, entry["version"], entry["previous"], entry["verdict"]

        (version, current, previous, verdict), position = self.writer.write(decide)
        receipt = self.writer.receipt(
            ledger_id("family", family), version, position, version=current, previous=previous
        )
        return PromotionReceipt(
            **{f.name: getattr(receipt, f.name) for f in dataclasses.fields(receipt)}, verdict=verdict
        )

    def move_alias(
        self, *, family: str, alias: str, version: int, expected_version: int, principal: str = "", request_id: str = ""
    ) -> Receipt:
        """Point `alias` at `version` (0 removes it), compare-and-set on the version it names now
        (ALIAS_MOVED); INVALID_ALIAS, TOO_MANY_ALIASES, FAMILY_RETIRED, VERSION_NOT_FOUND."""
        aliases.check_alias(alias)
        check_int(version, "version", maximum=INT32_MAX)
        check_int(expected_version, "expected_version", maximum=INT32_MAX)
        audit = self.writer.audit(principal, request_id)
        digest = gating.request_digest("alias", alias=alias, version=version, expected_version=expected_version)

        def decide(touched: list[LedgerAggregate]) -> tuple[int | None, int, int]:
            aggregate = self.aggregates.family(family)
            touched.append(aggregate)
            retry = aggregate.answered(audit, digest)
            if retry is None:
                aliases.move_alias(
                    aggregate,
                    audit,
                    alias=alias,
                    version=version,
                    expected_version=expected_version,
                    request_digest=digest,
                )
            return retry, version, expected_version

        (retry, moved_to, previous), position = self.writer.write(decide)
        return self.writer.receipt(ledger_id("family", family), retry, position, version=moved_to, previous=previous)

    def retire_family(self, *, family: str, reason: str, principal: str = "", request_id: str = "") -> Receipt:
        """Retire a family, with a reason (required): it takes no more registrations, promotions,
        rollbacks or alias moves (FAMILY_RETIRED); reads still work."""
        check_text(reason, "reason")
        if not reason.strip():
            raise Invalid("reason is required", reason=Reason.MISSING_FIELD, field="reason")
        audit = self.writer.audit(principal, request_id)
        digest = gating.request_digest("retire", reason=reason)

        def decide(touched: list[LedgerAggregate]) -> int | None:
            aggregate = self.aggregates.family(family)
            touched.append(aggregate)
            retry = aggregate.answered(audit, digest)
            return retry if retry is not None else aggregate.retire(audit, reason=reason, request_digest=digest)

        retry, position = self.writer.write(decide)
        return self.writer.receipt(ledger_id("family", family), retry, position)


def _recording(family: Family, act: Callable[[], int | None]) -> int | None:
    """Run `act` on `family`; a refusal that recorded an event on it (a refused promotion) is
    saved with it before the caller gets the refusal."""
    pending = len(family.pending_events)
    try:
        return act()
    except LedgerError as error:
        if len(family.pending_events) > pending:
            raise Recorded(error) from error
        raise
