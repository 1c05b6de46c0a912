"""Aliases of a registry family (staging, production ...): names of versions that passed a gate
(were promoted once: NEVER_PROMOTED otherwise), moved by compare-and-set on the version they name
now (ALIAS_MOVED), at most ALIASES_MAX a family. The Family aggregate and its AliasMoved event
are ledger.domain.registry.
"""

from __future__ import annotations

import re

from ledger.domain.base import Audit
from ledger.domain.errors import Contended, Invalid, Refused
from ledger.domain.reasons import Reason
from ledger.domain.registry import Family

__all__ = ["ALIASES_MAX", "check_alias", "move_alias"]

ALIASES_MAX = 32
_ALIAS = re.compile(r"[a-z][a-z0-9_\-]{0,63}")


def check_alias(alias: str) -> str:
    """An alias: a lowercase letter, then up to 63 lowercase letters, digits, "-" or "_" (INVALID_ALIAS)."""
    if not isinstance(alias, str) or _ALIAS.fullmatch(alias) is None:
        raise Invalid(
            f"alias {alias!r} is not a lowercase letter then up to 63 lowercase letters, digits, - or _",
            reason=Reason.INVALID_ALIAS,
            field="alias",
        )
    return alias


def move_alias(
    family: Family, audit: Audit, *, alias: str, version: int, expected_version: int, request_digest: str = ""
) -> int | None:
    """Point `alias` at `version` (0 removes it), compare-and-set on the version it names now
    (ALIAS_MOVED). Refused on a retired family (FAMILY_RETIRED), for a version never promoted
    through a passing gate (NEVER_PROMOTED), past ALIASES_MAX aliases (TOO_MANY_ALIASES);
    VERSION_NOT_FOUND."""
    check_alias(alias)
    if version:
        family._check_version(version)
    family.check_not_retired()
    named = family.aliases.get(alias, 0)
    if named != expected_version:
        raise Contended(
            f"{family.name}: expected alias {alias} to name version {expected_version}, but it names {named}",
            reason=Reason.ALIAS_MOVED,
            alias=alias,
            current=named,
            expected=expected_version,
        )
    if version and not family.passed_gate(version):
        raise Refused(
            f"version {version} never passed a gate: an alias names only a version once promoted",
            reason=Reason.NEVER_PROMOTED,
            version=version,
        )
    if version and not named and len(family.aliases) >= ALIASES_MAX:
        raise Refused(f"{family.name} holds {ALIASES_MAX} aliases already", reason=Reason.TOO_MANY_ALIASES)
    family.record(family.AliasMoved, audit, alias=alias, version=version, previous=named, request_digest=request_digest)
    return None
