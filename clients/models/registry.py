"""The typed results of registry.proto: model versions (with the checkpoint each was made from),
promotions with their gate verdicts, a family's page of versions and history, and the receipts of
register, promote and rollback. SourceCheckpoint is also what register takes to name a version's
source checkpoint.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec

from clients.models.base import Model, empty_dict, empty_list

__all__ = [
    "SourceCheckpoint",
    "GateVerdict",
    "ModelVersion",
    "Promotion",
    "Family",
    "RegisterReceipt",
    "PromoteReceipt",
    "RollbackReceipt",
    "ProtectedState",
    "ProtectedStates",
]


class GateVerdict(Model, frozen=True, kw_only=True):
    passed: bool = False
    reason: str = ""
    stats: dict[str, Any] = msgspec.field(default_factory=empty_dict)


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


class Promotion(Model, frozen=True, kw_only=True):
    version: int = 0
    previous: int = 0
    kind: str = ""
    verdict: GateVerdict | None = None
    reason: str = ""
    at: datetime | None = None
    principal: str = ""
    position: int = 0


class Family(Model, frozen=True, kw_only=True):
    """A page of a family's versions and promotion history (list_versions); pass
    `next_page_token` back for the next page ("" after the last)."""

    versions: list[ModelVersion] = msgspec.field(default_factory=empty_list)
    current: int = 0
    history: list[Promotion] = msgspec.field(default_factory=empty_list)
    next_page_token: str = ""


class FamilySummary(Model, frozen=True, kw_only=True):
    """A family in the list of families: its current version (0: none) and how many it has."""

    family: str = ""
    current: int = 0
    version_count: int = 0


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


class RollbackReceipt(Model, frozen=True, kw_only=True):
    position: int = 0
    duplicate: bool = False
    current: int = 0
    previous: int = 0
