"""The provenance view's tables: each run's objective, plan (max_steps), retraction and the
anchors of its recent step rate, its checkpoints' scores and deletions, its datasets, the registry
versions made from its checkpoints (ledger.views.provenance.reads). A view of its own, so a ledger
written before it existed builds it from its log when opened, as any new view is."""

from __future__ import annotations

from ledger.views.store import Table

__all__ = ["PROVENANCE_TABLES"]


PROVENANCE_TABLES: dict[str, Table] = {
    # One row per run: its objective, plan and retraction, and the progress anchors of its current
    # attempt: the older (anchor_*) and newer (recent_*) anchor (server time, step) and the last
    # batch's (last_*); the recent anchor moves on once it is a window old.
    "view_run_plans": Table(
        {
            "run_id": str,
            "metric": str,
            "mode": str,
            "max_steps": int,
            "retraction_reason": str,
            "retraction_principal": str,
            "retracted_at": float,
            "anchor_time": float,
            "anchor_step": int,
            "recent_time": float,
            "recent_step": int,
            "last_time": float,
            "last_step": int,
            "position": int,
        },
        ("run_id",),
        [],
        "provenance",
    ),
    # One row per checkpoint: its scores (JSON, "{}" when none) and when its state was deleted.
    "view_checkpoint_marks": Table(
        {"run_id": str, "attempt": int, "step": int, "scores": str, "deleted_at": float, "deleted_reason": str},
        ("run_id", "attempt", "step"),
        [],
        "provenance",
    ),
    "view_datasets": Table(
        {
            "run_id": str,
            "role": str,
            "digest": str,
            "format": str,
            "rows": int,
            "tokens": int,
            "source_uri": str,
            "report": str,
            "recorded_at": float,
            "position": int,
        },
        ("run_id", "role", "digest"),
        [],
        "provenance",
    ),
    # The checkpoints registry versions were made from (retention keeps them).
    "view_registered_points": Table(
        {"run_id": str, "family": str, "version": int, "attempt": int, "step": int},
        ("run_id", "family", "version"),
        [],
        "provenance",
    ),
    # The source checkpoint a version named (versions that named none have no row).
    "view_version_sources": Table(
        {"family": str, "version": int, "run_id": str, "step": int, "attempt": int, "checkpoint_digest": str},
        ("family", "version"),
        [],
        "provenance",
    ),
}
