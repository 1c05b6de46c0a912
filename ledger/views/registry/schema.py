"""The registry view's tables: families, versions, the promotion history (refused promotions
too), aliases and retirements."""

from __future__ import annotations

from ledger.views.store import Table

__all__ = ["REGISTRY_TABLES"]


REGISTRY_TABLES: dict[str, Table] = {
    "view_families": Table(
        {"family": str, "current": int, "position": int},
        ("family",),
        [],
        "registry",
    ),
    "view_versions": Table(
        {
            "family": str,
            "version": int,
            "artifact_uri": str,
            "digest": str,
            "source_run_id": str,
            "source_step": int,
            "metadata": str,
            "registered_at": float,
            "principal": str,
        },
        ("family", "version"),
        [],
        "registry",
    ),
    "view_promotions": Table(
        {
            "family": str,
            "position": int,
            "version": int,
            "previous": int,
            "kind": str,
            "verdict": str,
            "reason": str,
            "at": float,
            "principal": str,
        },
        ("family", "position"),
        [],
        "registry",
    ),
    # A refused promotion's reason; its row in view_promotions (kind "refused") has the rest.
    "view_refusals": Table(
        {"family": str, "position": int, "refusal": str, "expected_current": int},
        ("family", "position"),
        [],
        "registry",
    ),
    "view_aliases": Table(
        {"family": str, "alias": str, "version": int, "moved_at": float, "principal": str, "position": int},
        ("family", "alias"),
        [],
        "registry",
    ),
    "view_retirements": Table(
        {"family": str, "reason": str, "at": float, "principal": str, "position": int},
        ("family",),
        [],
        "registry",
    ),
}
