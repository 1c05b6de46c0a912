"""Reads of the registry view (its tables: ledger.views.registry.schema): a family with its
versions, history, aliases and retirement, a page of it, and the list of families; and the
decoders of its rows. A version is read with the checkpoint it was made from and whether its
source run was retracted (tables of the provenance view)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import msgspec

from ledger.domain.limits import PAGE_BYTES_MAX
from ledger.views.models import (
    Alias,
    Family,
    FamilyPage,
    FamilySummary,
    GateEvidence,
    GateVerdict,
    ModelVersion,
    Promotion,
    Retirement,
    SourceCheckpoint,
)
from ledger.views.rows import decode, utc_time
from ledger.views.store import Query

__all__ = [
    "ALIAS_COLUMNS",
    "PROMOTION_SELECT",
    "RETIREMENT_COLUMNS",
    "VERSION_COLUMNS",
    "VERSION_SELECT",
    "RegistryReads",
    "to_alias",
    "to_model_version",
    "to_promotion",
    "to_retirement",
    "to_verdict",
    "to_version",
]

VERSION_COLUMNS = "family, version, artifact_uri, digest, source_run_id, source_step, metadata, registered_at"
#: A family's history, with each refused promotion's reason (filter on p.family).
PROMOTION_SELECT = (
    "SELECT p.version, p.previous, p.kind, p.verdict, p.reason, p.at, p.principal, p.position, r.refusal,"
    " r.expected_current FROM view_promotions p"
    " LEFT JOIN view_refusals r ON r.family = p.family AND r.position = p.position"
)
#: Registry versions with their source checkpoint and whether the source run was retracted
#: (filter on v.family); its first eight are VERSION_COLUMNS.
VERSION_SELECT = (
    "SELECT v.family, v.version, v.artifact_uri, v.digest, v.source_run_id, v.source_step, v.metadata,"
    " v.registered_at, s.run_id, s.step, s.attempt, s.checkpoint_digest, p.retracted_at FROM view_versions v"
    " LEFT JOIN view_version_sources s ON s.family = v.family AND s.version = v.version"
    " LEFT JOIN view_run_plans p ON p.run_id = v.source_run_id"
)


def _verdict(stored: str) -> GateVerdict | None:
    return to_verdict(decode(stored))


def to_verdict(verdict: dict[str, Any] | None) -> GateVerdict | None:
    """A verdict as recorded (a promotion's event) as a GateVerdict; None for none."""
    if not verdict:
        return None
    # A verdict recorded before the ledger evaluated gate rules has no mode: it was asserted.
    return GateVerdict(
        passed=bool(verdict.get("passed")),
        reason=str(verdict.get("reason", "")),
        stats=verdict.get("stats") or {},
        mode=str(verdict.get("mode") or "asserted"),
        rule=str(verdict.get("rule") or ""),
        evidence=tuple(msgspec.convert(e, GateEvidence) for e in verdict.get("evidence") or ()),
    )


def to_promotion(row: Any) -> Promotion:
    version, previous, kind, verdict, reason, at, principal, position, refusal, expected_current = row
    return Promotion(
        version=version,
        previous=previous or 0,
        kind=kind,
        verdict=_verdict(verdict),
        reason=reason or "",
        at=utc_time(at),
        principal=principal or "",
        position=position,
        refusal=refusal or "",
        expected_current=expected_current or 0,
    )


ALIAS_COLUMNS = "alias, version, moved_at, principal, position"
RETIREMENT_COLUMNS = "reason, at, principal, position"


def to_alias(row: Any) -> Alias:
    alias, version, moved_at, principal, position = row
    return Alias(
        alias=alias, version=version, moved_at=utc_time(moved_at), principal=principal or "", position=position
    )


def to_retirement(row: Any) -> Retirement:
    reason, at, principal, position = row
    return Retirement(reason=reason, at=utc_time(at), principal=principal or "", position=position)


def to_model_version(row: Any) -> ModelVersion:
    family, version, uri, digest, run_id, step, metadata, registered_at = row
    return ModelVersion(
        family=family,
        version=version,
        artifact_uri=uri,
        digest=digest,
        source_run_id=run_id or "",
        source_step=step or 0,
        metadata=decode(metadata),
        registered_at=utc_time(registered_at),
    )


def to_version(row: Sequence[Any]) -> ModelVersion:
    """A row of VERSION_SELECT as a ModelVersion."""
    source_run, source_step, source_attempt, source_digest, retracted_at = row[8:13]
    return msgspec.structs.replace(
        to_model_version(row[:8]),
        source_checkpoint=None
        if source_run is None
        else SourceCheckpoint(
            run_id=source_run, step=source_step, attempt=source_attempt, checkpoint_digest=source_digest or ""
        ),
        source_retracted=retracted_at is not None,
    )


class RegistryReads:
    """Reads of the registry view, run by `query`."""

    def __init__(self, query: Query) -> None:
        self.query = query

    def family(self, family: str) -> Family | None:
        """A family with all its versions and its whole history, or None if unknown."""
        row = self.query.row("SELECT current FROM view_families WHERE family = ?", (family,))
        if row is None:
            return None
        aliases, retired = self._family_marks(family)
        versions = _aliased(
            (
                to_version(r)
                for r in self.query.rows(f"{VERSION_SELECT} WHERE v.family = ? ORDER BY v.version", (family,))
            ),
            aliases,
        )
        history = tuple(
            to_promotion(r)
            for r in self.query.rows(f"{PROMOTION_SELECT} WHERE p.family = ? ORDER BY p.position", (family,))
        )
        return Family(
            family=family, current=row[0] or 0, versions=versions, history=history, aliases=aliases, retired=retired
        )

    def _family_marks(self, family: str) -> tuple[tuple[Alias, ...], Retirement | None]:
        """A family's aliases (by name) and its retirement, if any."""
        aliases = tuple(
            to_alias(r)
            for r in self.query.rows(
                f"SELECT {ALIAS_COLUMNS} FROM view_aliases WHERE family = ? ORDER BY alias", (family,)
            )
        )
        retired = self.query.row(f"SELECT {RETIREMENT_COLUMNS} FROM view_retirements WHERE family = ?", (family,))
        return aliases, None if retired is None else to_retirement(retired)

    def family_page(
        self, family: str, *, after_version: int = 0, after_position: int = 0, limit: int
    ) -> FamilyPage | None:
        """A page of a family: versions after `after_version` and history (promotions) after
        `after_position`, each list at most `limit` long and the page within about
        PAGE_BYTES_MAX on the wire (documents counted at six times their JSON, what a Struct of
        small numbers takes at most), holding at least one item while any is left. None if the
        family is unknown."""
        row = self.query.row("SELECT current FROM view_families WHERE family = ?", (family,))
        if row is None:
            return None
        versions, more_versions, used = self._bounded(
            f"{VERSION_SELECT} WHERE v.family = ? AND v.version > ? ORDER BY v.version LIMIT ?",
            (family, after_version, limit + 1),
            limit,
            0,
            lambda r: 64 + len(r[2]) + len(r[3]) + len(r[4] or "") + 6 * len(r[6]),
        )
        history, more_history, _ = self._bounded(
            f"{PROMOTION_SELECT} WHERE p.family = ? AND p.position > ? ORDER BY p.position LIMIT ?",
            (family, after_position, limit + 1),
            limit,
            used,
            lambda r: 64 + 6 * len(r[3]) + len(r[4] or "") + len(r[6] or ""),
        )
        aliases, retired = self._family_marks(family)
        return FamilyPage(
            family=family,
            current=row[0] or 0,
            versions=_aliased((to_version(r) for r in versions), aliases),
            history=tuple(to_promotion(r) for r in history),
            more=more_versions or more_history,
            aliases=aliases,
            retired=retired,
        )

    def _bounded(
        self, sql: str, params: tuple[Any, ...], limit: int, used: int, size_of: Callable[[Any], int]
    ) -> tuple[list[Any], bool, int]:
        """Rows of `sql` (which selects limit + 1) while they fit in PAGE_BYTES_MAX after `used`
        bytes (the first row always, when nothing was used): (rows, whether more are left, bytes
        used). Rows are streamed, so a page of large rows reads no more of them than it holds."""
        rows: list[Any] = []
        cursor = self.query.cursor()
        try:
            for row in cursor.execute(sql, params):
                size = size_of(row)
                if len(rows) == limit or (used + size > PAGE_BYTES_MAX and (rows or used)):
                    return rows, True, used
                rows.append(row)
                used += size
        finally:
            cursor.close()
        return rows, False, used

    def families(self, *, after: str = "", limit: int | None = None) -> list[FamilySummary]:
        """Families by name after `after`, at most `limit` of them (all when None)."""
        sql = (
            "SELECT f.family, f.current, (SELECT COUNT(*) FROM view_versions v WHERE v.family = f.family),"
            " (SELECT COUNT(*) FROM view_retirements r WHERE r.family = f.family)"
            " FROM view_families f WHERE f.family > ? ORDER BY f.family"
        )
        params: tuple[Any, ...] = (after,)
        if limit is not None:
            sql += " LIMIT ?"
            params = (after, limit)
        return [
            FamilySummary(family=family, current=current or 0, version_count=count, retired=bool(retired))
            for family, current, count, retired in self.query.rows(sql, params)
        ]


def _aliased(versions: Iterable[ModelVersion], aliases: tuple[Alias, ...]) -> tuple[ModelVersion, ...]:
    """The versions, each with the names of the aliases that name it."""
    return tuple(
        msgspec.structs.replace(v, aliases=tuple(a.alias for a in aliases if a.version == v.version)) for v in versions
    )
