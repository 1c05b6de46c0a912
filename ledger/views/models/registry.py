"""The read models of the registry view: families, versions, promotions, aliases and retirements."""

from __future__ import annotations

from typing import Any

import msgspec

from ledger.views.models.kinds import Moment

__all__ = [
    "Alias",
    "Family",
    "FamilyPage",
    "FamilySummary",
    "GateEvidence",
    "GateVerdict",
    "ModelVersion",
    "Promotion",
    "Retirement",
    "SourceCheckpoint",
]


class SourceCheckpoint(msgspec.Struct, frozen=True, kw_only=True):
    """The run's checkpoint a version was made from: its run, step, the attempt that saved it and
    the digest it was saved with."""

    run_id: str
    step: int
    attempt: int
    checkpoint_digest: str


class ModelVersion(msgspec.Struct, frozen=True, kw_only=True):
    """A registered version; `source_run_id` is empty when no run is named, `source_checkpoint`
    None unless the version named one; `source_retracted` when its source run was retracted."""

    family: str
    version: int
    artifact_uri: str
    digest: str
    source_run_id: str
    source_step: int
    metadata: dict[str, Any]
    registered_at: Moment
    source_checkpoint: SourceCheckpoint | None = None
    source_retracted: bool = False
    aliases: tuple[str, ...] = ()


class GateEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """A recorded score a gate rule was evaluated on: its value (None: never recorded), where it
    was recorded (checkpoint | summary), the run, the checkpoint's step and the log position."""

    name: str
    value: float | None
    source: str
    run_id: str
    step: int
    position: int


class GateVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The gate's verdict a promotion carried: asserted by the caller, or evaluated by the ledger
    on a rule, with its evidence."""

    passed: bool
    reason: str
    stats: dict[str, Any]
    mode: str = "asserted"
    rule: str = ""
    evidence: tuple[GateEvidence, ...] = ()


class Promotion(msgspec.Struct, frozen=True, kw_only=True):
    """A promotion, a rollback or a refused promotion (`kind` promote | rollback | refused), in
    the family's history; `previous` is 0 when no version was current (for a refusal: the version
    current then), `verdict` None when none was given; a refusal's reason is `refusal`."""

    version: int
    previous: int
    kind: str
    verdict: GateVerdict | None
    reason: str
    at: Moment
    principal: str
    position: int
    refusal: str = ""
    expected_current: int = 0


class Alias(msgspec.Struct, frozen=True, kw_only=True):
    """An alias of a family and the version it names."""

    alias: str
    version: int
    moved_at: Moment
    principal: str
    position: int


class Retirement(msgspec.Struct, frozen=True, kw_only=True):
    """A family's retirement."""

    reason: str
    at: Moment
    principal: str
    position: int


class Family(msgspec.Struct, frozen=True, kw_only=True):
    """A registry family: its current version (0: none), versions and promotion history."""

    family: str
    current: int
    versions: tuple[ModelVersion, ...]
    history: tuple[Promotion, ...]
    aliases: tuple[Alias, ...] = ()
    retired: Retirement | None = None


class FamilyPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a family: versions and promotions after those of the previous page; `more` when
    either list goes on."""

    family: str
    current: int
    versions: tuple[ModelVersion, ...]
    history: tuple[Promotion, ...]
    more: bool
    aliases: tuple[Alias, ...] = ()
    retired: Retirement | None = None


class FamilySummary(msgspec.Struct, frozen=True, kw_only=True):
    """A family in the list of families: its current version (0: none), how many it has and
    whether it was retired."""

    family: str
    current: int
    version_count: int
    retired: bool = False
