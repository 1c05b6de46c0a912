"""The Registry RPCs as client methods (see clients.methods): model versions registered by
digest, promotions through a gate, rollbacks, aliases and retirement, and the states no prune may
delete. Each takes `timeout_s`, the per-try deadline (the client's default when None), and answers
with a typed result of clients.models."""

from __future__ import annotations

from clients import codec
from clients.methods import Doc, Transport, field_of, reply
from clients.models import (
    CurrentVersion,
    Family,
    FamilyList,
    ModelVersion,
    MoveAliasReceipt,
    PromoteReceipt,
    ProtectedState,
    ProtectedStates,
    RegisterReceipt,
    RetireReceipt,
    RollbackReceipt,
    SourceCheckpoint,
)
from trainledger.v1 import registry_pb2

__all__ = ["RegistryMethods"]


class RegistryMethods(Transport):
    """The Registry RPCs: versions, promotions, rollbacks, aliases, retirement, protected states."""

    def register(
        self,
        *,
        family: str,
        artifact_uri: str,
        digest: str,
        source_run_id: str = "",
        source_step: int = 0,
        metadata: Doc | None = None,
        source_checkpoint: SourceCheckpoint | None = None,
        timeout_s: float | None = None,
    ) -> RegisterReceipt:
        """Register an immutable version of a family (idempotent by digest): version, position,
        duplicate. With `source_checkpoint` the ledger checks the run's checkpoint exists, was not
        deleted and was saved with `checkpoint_digest` (source_run_id and source_step are filled
        from it), and keeps that checkpoint from retention."""
        request = registry_pb2.RegisterRequest(
            family=family,
            artifact_uri=artifact_uri,
            digest=digest,
            source_run_id=source_run_id,
            source_step=source_step,
            metadata=codec.struct(metadata or {}),
            source_checkpoint=codec.source_checkpoint(source_checkpoint),
        )
        return self._ask("Registry", "Register", request, reply(RegisterReceipt), timeout_s=timeout_s)

    def promote(
        self,
        *,
        family: str,
        version: int,
        expected_current: int,
        verdict: Doc | None = None,
        gate_rule: str = "",
        evaluation_run_id: str = "",
        timeout_s: float | None = None,
    ) -> PromoteReceipt:
        """Compare-and-set the current version through a gate: an asserted `verdict` {passed,
        reason, stats}, recorded as asserted, or a `gate_rule` ("eval_loss <= 0.5 and accuracy >=
        0.8") the ledger evaluates on the version's source checkpoint's scores, or on the summary
        of `evaluation_run_id`; the receipt's verdict is the one recorded, with its evidence. A
        refusal is recorded too: raises GateNotPassed or CurrentVersionMoved."""
        request = registry_pb2.PromoteRequest(
            family=family,
            version=version,
            expected_current=expected_current,
            verdict=None if verdict is None else codec.verdict(verdict),
            gate_rule=gate_rule,
            evaluation_run_id=evaluation_run_id,
        )
        return self._ask("Registry", "Promote", request, reply(PromoteReceipt), timeout_s=timeout_s)

    def rollback(
        self, *, family: str, version: int, expected_current: int, reason: str, timeout_s: float | None = None
    ) -> RollbackReceipt:
        request = registry_pb2.RollbackRequest(
            family=family, version=version, expected_current=expected_current, reason=reason
        )
        return self._ask("Registry", "Rollback", request, reply(RollbackReceipt), timeout_s=timeout_s)

    def get_current(
        self, *, family: str, alias: str = "", min_position: int = 0, timeout_s: float | None = None
    ) -> ModelVersion | None:
        """The current version (or the one `alias` names), or None when there is none."""
        request = registry_pb2.GetCurrentRequest(family=family, alias=alias, min_position=min_position)
        return self._ask("Registry", "GetCurrent", request, field_of("version", ModelVersion), timeout_s=timeout_s)

    def current_version(
        self, *, family: str, alias: str = "", min_position: int = 0, timeout_s: float | None = None
    ) -> CurrentVersion:
        """The current version (or the one `alias` names) with the promotion that made it current
        (its verdict asserted or evaluated) and the family's retirement, if any."""
        request = registry_pb2.GetCurrentRequest(family=family, alias=alias, min_position=min_position)
        return self._ask("Registry", "GetCurrent", request, reply(CurrentVersion), timeout_s=timeout_s)

    def move_alias(
        self, *, family: str, alias: str, version: int, expected_version: int, timeout_s: float | None = None
    ) -> MoveAliasReceipt:
        """Point `alias` at `version` (0 removes it), compare-and-set on the version it names now:
        raises Aborted (ALIAS_MOVED) when it names another."""
        request = registry_pb2.MoveAliasRequest(
            family=family, alias=alias, version=version, expected_version=expected_version
        )
        return self._ask("Registry", "MoveAlias", request, reply(MoveAliasReceipt), timeout_s=timeout_s)

    def retire_family(self, *, family: str, reason: str, timeout_s: float | None = None) -> RetireReceipt:
        """Retire a family: no further registrations, promotions, rollbacks or alias moves
        (FAMILY_RETIRED); its reads still work."""
        request = registry_pb2.RetireFamilyRequest(family=family, reason=reason)
        return self._ask("Registry", "RetireFamily", request, reply(RetireReceipt), timeout_s=timeout_s)

    def list_versions(
        self,
        *,
        family: str,
        page_size: int = 0,
        page_token: str = "",
        min_position: int = 0,
        timeout_s: float | None = None,
    ) -> Family:
        """A page of a family's versions and promotion history (versions, current, history,
        next_page_token); pass next_page_token back for the next page (empty after the last)."""
        request = registry_pb2.ListVersionsRequest(
            family=family, page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Registry", "ListVersions", request, reply(Family), timeout_s=timeout_s)

    def list_families(
        self, *, page_size: int = 0, page_token: str = "", min_position: int = 0, timeout_s: float | None = None
    ) -> FamilyList:
        """A page of the registry's families by name (family, current, version_count); pass
        next_page_token back for the next page (empty after the last)."""
        request = registry_pb2.ListFamiliesRequest(
            page_size=page_size, page_token=page_token, min_position=min_position
        )
        return self._ask("Registry", "ListFamilies", request, reply(FamilyList), timeout_s=timeout_s)

    def list_protected_states(
        self, *, min_position: int = 0, page_size: int = 0, timeout_s: float | None = None
    ) -> list[ProtectedState]:
        """Every state no prune may delete, across all runs and the registry: live resume and
        best checkpoints, those registry versions were made from, and every version's artifact.
        Every page is read (an operator's or admin's unscoped token)."""
        request = registry_pb2.ListProtectedStatesRequest(page_size=page_size, min_position=min_position)
        return self._all_pages(
            "Registry", "ListProtectedStates", request, reply(ProtectedStates), _states_of_page, timeout_s=timeout_s
        )


def _states_of_page(page: ProtectedStates) -> list[ProtectedState]:
    return page.states
