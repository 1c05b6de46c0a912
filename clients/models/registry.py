"""The typed results of registry.proto: model versions (with the checkpoint each was made from
and the aliases that name them), promotions (and refused promotions) with their gate verdicts,
asserted or evaluated with their evidence, a family's page of versions, history, aliases and
retirement, and the receipts of register, promote, rollback, alias moves and retirement.
SourceCheckpoint is also what register takes to name a version's source checkpoint.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from clients.models.base import Model, empty_dict, empty_list

__all__ = [
    "SourceCheckpoint",
    "GateEvidence",
    "GateVerdict",
    "Alias",
    "Retirement",
    "CurrentVersion",
    "MoveAliasReceipt",
    "RetireReceipt",
    "ModelVersion",
    "Promotion",
    "Family",
    "RegisterReceipt",
    "PromoteReceipt",
    "RollbackReceipt",
    "ProtectedState",
    "ProtectedStates",
]


class GateEvidence(Model, frozen=True, kw_only=True):
    """A recorded score a gate rule was evaluated on; `value` None when it was never recorded,
    `position` the log position of the event that recorded it."""

    name: str = ""
    value: float | None = None
    source: str = ""
    run_id: str = ""
    step: int = 0
    position: int = 0


class GateVerdict(Model, frozen=True, kw_only=True):
    """A gate's verdict; `mode` "asserted" (the caller said so) or "evaluated" (the ledger
    evaluated `rule` on the scores in `evidence`)."""

    passed: bool = False
    reason: str = ""
    stats: dict[str, Any] = msgspec.field(default_factory=empty_dict)
    mode: str = ""
    rule: str = ""
    evidence: list[GateEvidence] = msgspec.field(default_factory=empty_list)


class SourceCheckpoint(Model, frozen=True, kw_only=True):
    """A run's checkpoint a version is made from: `attempt` 0 names the usable one at `step`;
    `checkpoint_digest` must be the digest the checkpoint was saved with."""

    run_id: str = ""
    step: int = 0
    attempt: int = 0
    checkpoint_digest: str = ""


class ModelVersion(Model, frozen=True, kw_only=True):
    """A registered version; `source_retracted` when the run it was made from was retracted."""

    family: str = ""
    version: int = 0
    artifact_uri: str = ""
    digest: str = ""
    source_run_id: str = ""
    source_step: int = 0
    metadata: dict[str, Any] = msgspec.field(default_factory=empty_dict)
    registered_at: datetime | None = None
    source_checkpoint: SourceCheckpoint | None = None
    source_retracted: bool = False
    aliases: list[str] = msgspec.field(default_factory=empty_list)


class Promotion(Model, frozen=True, kw_only=True):
    """A change of the current version (`kind` promote | rollback), or a promotion the ledger
    refused and recorded (`kind` refused, with its reason in `refusal`)."""

    version: int = 0
    previous: int = 0
    kind: str = ""
    verdict: GateVerdict | None = None
    reason: str = ""
    at: datetime | None = None
    principal: str = ""
    position: int = 0
    refusal: str = ""
    expected_current: int = 0


class Alias(Model, frozen=True, kw_only=True):
    alias: str = ""
    version: int = 0
    moved_at: datetime | None = None
    principal: str = ""
    position: int = 0


class Retirement(Model, frozen=True, kw_only=True):
    reason: str = ""
    at: datetime | None = None
    principal: str = ""
    position: int = 0


class CurrentVersion(Model, frozen=True, kw_only=True):
    """A family's current version (or an alias's), the promotion that made it current, and the
    family's retirement; each None when there is none."""

    version: ModelVersion | None = None
    promotion: Promotion | None = None
    retired: Retirement | None = None


class Family(Model, frozen=True, kw_only=True):
    """A page of a family's versions and promotion history (list_versions); pass
    `next_page_token` back for the next page ("" after the last)."""

    versions: list[ModelVersion] = msgspec.field(default_factory=empty_list)
    current: int = 0
    history: list[Promotion] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""
    aliases: list[Alias] = msgspec.field(default_factory=empty_list)
    retired: Retirement | None = None


class FamilySummary(Model, frozen=True, kw_only=True):
    """A family in the list of families: its current version (0: none) and how many it has."""

    family: str = ""
    current: int = 0
    version_count: int = 0
    retired: bool = False


class FamilyList(Model, frozen=True, kw_only=True):
    """A page of list_families, by name; pass `next_page_token` back for the next ("" after the last)."""

    families: list[FamilySummary] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


class ProtectedState(Model, frozen=True, kw_only=True):
    """A state no prune may delete: its uri, its checkpoint backend ("" for an artifact), and why
    ("resume", "best", "registered", "artifact")."""

    uri: str = ""
    backend: str = ""
    why: list[str] = msgspec.field(default_factory=empty_list)


class ProtectedStates(Model, frozen=True, kw_only=True):
    """A page of list_protected_states; `next_page_token` is "" after the last."""

    states: list[ProtectedState] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


class RegisterReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    version: int = 0
    duplicate: bool = False


class PromoteReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    current: int = 0
    previous: int = 0
    verdict: GateVerdict | None = None


class RollbackReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    current: int = 0
    previous: int = 0


class MoveAliasReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    version: int = 0
    previous: int = 0


class RetireReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
