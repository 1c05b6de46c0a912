"""The model registry for people: families, a family's versions and history, gate verdicts, and
what the registry's writes print."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.render.tables import fields, table, when

__all__ = [
    "alias_text",
    "families_table",
    "family_text",
    "move_text",
    "register_text",
    "retire_text",
    "verdict_text",
]


def register_text(family: str, version: int, position: int, duplicate: bool, source: str) -> str:
    """What `registry register` prints."""
    again = " (already registered: answered as a duplicate)" if duplicate else ""
    made = f" from {source}" if source else ""
    return f"{family}: version {version}{made} at position {position}{again}"


def families_table(families: Sequence[Any]) -> str:
    rows = [(f.family, f.current or None, f.version_count, "yes" if f.retired else None) for f in families]
    return table(["FAMILY", "CURRENT", "VERSIONS", "RETIRED"], rows)


def verdict_text(verdict: Any) -> str | None:
    """A gate verdict on one line: who reached it (evaluated by the ledger, or asserted by the
    caller), whether it passed, why, and for an evaluated one each score with the log position
    that recorded it."""
    if verdict is None:
        return None
    mode = getattr(verdict, "mode", "") or "asserted"
    evidence = getattr(verdict, "evidence", None) or ()
    if evidence:
        scores = ", ".join(
            f"{e.name}={'none' if e.value is None else f'{e.value:g}'}@{e.position or '-'}" for e in evidence
        )
    else:
        scores = ", ".join(f"{key}={value}" for key, value in sorted((verdict.stats or {}).items()))
    return (
        f"{mode}, {'passed' if verdict.passed else 'failed'}"
        + (f": {verdict.reason}" if verdict.reason else "")
        + (f" ({scores})" if scores else "")
    )


def _history_reason(promotion: Any) -> str | None:
    refusal = getattr(promotion, "refusal", "")
    if refusal:
        return f"{refusal}: {promotion.reason}" if promotion.reason else refusal
    return promotion.reason or None


def family_text(
    family: str,
    current: int,
    versions: Sequence[Any],
    history: Sequence[Any],
    aliases: Sequence[Any] = (),
    retired: Any = None,
) -> str:
    """A family: its current version, aliases and retirement, every version, and the history of
    promotions, rollbacks and refused promotions with their gate verdicts (evaluated or asserted),
    alias moves (each alias's latest) and the retirement, with who made them."""
    named = ", ".join(f"{a.alias}={a.version}" for a in aliases)
    return "\n\n".join(
        [
            fields(
                [
                    ("family", family),
                    ("current", current or None),
                    ("aliases", named or None),
                    ("retired", None if retired is None else f"{retired.reason} ({when(retired.at)})"),
                ]
            ),
            "versions\n"
            + table(
                ["VERSION", "ARTIFACT", "DIGEST", "SOURCE RUN", "STEP", "REGISTERED"],
                [
                    (
                        v.version,
                        v.artifact_uri,
                        v.digest.rpartition(":")[2][:12],
                        (v.source_run_id + " (retracted)" if getattr(v, "source_retracted", False) else v.source_run_id)
                        or None,
                        v.source_step,
                        when(v.registered_at),
                    )
                    for v in versions
                ],
            ),
            "history\n"
            + (
                table(
                    ["AT", "KIND", "VERSION", "PREVIOUS", "BY", "GATE", "REASON"],
                    _history_rows(history, aliases, retired),
                )
                if history or aliases or retired is not None
                else "  (never promoted)"
            ),
        ]
    )


def _history_rows(history: Sequence[Any], aliases: Sequence[Any], retired: Any) -> list[tuple[Any, ...]]:
    """A family's history in log order: its promotions, rollbacks and refusals, each alias's move
    to the version it names now and the retirement, each with who made it."""
    rows: list[tuple[int, tuple[Any, ...]]] = [
        (
            p.position,
            (
                when(p.at),
                p.kind,
                p.version,
                p.previous or None,
                p.principal,
                verdict_text(p.verdict),
                _history_reason(p),
            ),
        )
        for p in history
    ]
    rows += [(a.position, (when(a.moved_at), "alias", a.version, None, a.principal, None, a.alias)) for a in aliases]
    if retired is not None:
        rows.append(
            (retired.position, (when(retired.at), "retire", None, None, retired.principal, None, retired.reason))
        )
    return [row for _, row in sorted(rows, key=lambda entry: entry[0])]


def move_text(kind: str, family: str, current: int, previous: int, position: int, duplicate: bool) -> str:
    """What `registry promote` and `registry rollback` print."""
    again = " (already done: answered as a duplicate)" if duplicate else ""
    return f"{family}: {kind} to version {current} (was {previous or 'none'}) at position {position}{again}"


def alias_text(family: str, alias: str, version: int, previous: int, position: int, duplicate: bool) -> str:
    """What `registry alias` prints."""
    again = " (already done: answered as a duplicate)" if duplicate else ""
    moved = f"names version {version}" if version else "removed"
    return f"{family}: alias {alias} {moved} (was {previous or 'none'}) at position {position}{again}"


def retire_text(family: str, position: int, duplicate: bool) -> str:
    """What `registry retire` prints."""
    again = " (already retired: answered as a duplicate)" if duplicate else ""
    return f"{family}: retired at position {position}{again}"
