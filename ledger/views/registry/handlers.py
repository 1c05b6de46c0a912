"""How Family events change the registry view (its tables: ledger.views.registry.schema)."""

from __future__ import annotations

from typing import Any

from ledger.views.handling import Names, ViewHandlers, dump, named, naming, to_epoch
from ledger.views.store import ViewCursor

__all__ = ["registry_handlers"]


def _family_created(c: ViewCursor, e: Any, position: int) -> None:
    c.execute("INSERT INTO view_families (family, current, position) VALUES (?, 0, ?)", (e.name, position))


def _version_registered(c: ViewCursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_versions (family, version, artifact_uri, digest, source_run_id, source_step, metadata,"
        " registered_at, principal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            family,
            e.version,
            e.artifact_uri,
            e.digest,
            e.source_run_id,
            e.source_step,
            dump(e.metadata),
            to_epoch(e.timestamp),
            e.principal,
        ),
    )


def _version_promoted(c: ViewCursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_promotions (family, position, version, previous, kind, verdict, reason, at, principal)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            family,
            position,
            e.version,
            e.previous,
            e.kind,
            dump(e.verdict),
            e.reason,
            to_epoch(e.timestamp),
            e.principal,
        ),
    )
    c.execute("UPDATE view_families SET current = ?, position = ? WHERE family = ?", (e.version, position, family))


def _promotion_refused(c: ViewCursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_promotions (family, position, version, previous, kind, verdict, reason, at, principal)"
        " VALUES (?, ?, ?, ?, 'refused', ?, ?, ?, ?)",
        (family, position, e.version, e.current, dump(e.verdict), e.message, to_epoch(e.timestamp), e.principal),
    )
    c.execute(
        "INSERT INTO view_refusals (family, position, refusal, expected_current) VALUES (?, ?, ?, ?)",
        (family, position, e.refusal, e.expected_current),
    )


def _alias_moved(c: ViewCursor, e: Any, position: int, family: str) -> None:
    c.execute("DELETE FROM view_aliases WHERE family = ? AND alias = ?", (family, e.alias))
    if e.version:
        c.execute(
            "INSERT INTO view_aliases (family, alias, version, moved_at, principal, position)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (family, e.alias, e.version, to_epoch(e.timestamp), e.principal, position),
        )


def _family_retired(c: ViewCursor, e: Any, position: int, family: str) -> None:
    c.execute(
        "INSERT INTO view_retirements (family, reason, at, principal, position) VALUES (?, ?, ?, ?, ?)",
        (family, e.reason, to_epoch(e.timestamp), e.principal, position),
    )


def registry_handlers(names: Names) -> ViewHandlers:
    """The registry view's handler of each event class it projects, families named through
    `names`."""
    from ledger.domain.registry import Family

    return {
        Family.Created: naming(names, _family_created),
        Family.VersionRegistered: named(names, _version_registered),
        Family.VersionPromoted: named(names, _version_promoted),
        Family.PromotionRefused: named(names, _promotion_refused),
        Family.AliasMoved: named(names, _alias_moved),
        Family.Retired: named(names, _family_retired),
    }
