"""The model registry: register immutable versions, promote through a passing gate verdict
(compare-and-set on the current version), roll back to an earlier promoted version."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from eventsourcing.application import AggregateNotFoundError

from ledger.application.commands import Promote, Register, Rollback
from ledger.application.kernel import Kernel, Receipt
from ledger.domain.base import LedgerAggregate, ledger_id
from ledger.domain.limits import check_id
from ledger.domain.registry import Family

__all__ = ["RegistryCommands"]


class RegistryCommands(Kernel):
    """The commands on registry families."""

    def register(
        self,
        *,
        family: str,
        artifact_uri: str,
        digest: str,
        source_run_id: str = "",
        source_step: int = 0,
        metadata: dict[str, Any] | None = None,
        principal: str = "",
        request_id: str = "",
    ) -> Receipt:
        """Register an immutable version (never promotes). Idempotent by digest."""
        command = Register(
            family=family,
            artifact_uri=artifact_uri,
            digest=digest,
            source_run_id=source_run_id,
            source_step=source_step,
            metadata={} if metadata is None else metadata,
        )
        fields = command.version_fields()
        audit = self._audit(principal, request_id)
        family_id = ledger_id("family", family)

        def decide(touched: list[LedgerAggregate]) -> tuple[int, int | None]:
            try:
                aggregate: Family = self.repository.get(family_id)
            except AggregateNotFoundError:
                check_id(family, "family")  # A new family takes a name under the identifier rules.
                aggregate = Family._create(Family.Created, id=family_id, name=family, **audit.fields())
            touched.append(aggregate)
            return aggregate.register(audit, version_fields=fields)

        (number, version), position = self._write(decide)
        return self._receipt(family_id, version, position, version=number)

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
