"""The runs view's tables: runs, attempts and checkpoints (everything resume needs), and the
lease of each run's current attempt (ledger.views.runs.leases: what the lease sweep nominates)."""

from __future__ import annotations

from ledger.views.store import Table

__all__ = ["RUNS_TABLES"]


RUNS_TABLES: dict[str, Table] = {
    "view_runs": Table(
        {
            "run_id": str,
            "run_key": str,
            "name": str,
            "status": str,
            "spec": str,
            "summary": str,
            "error": str,
            "opened_at": float,
            "finished_at": float,
            "current_attempt": int,
            "last_step": int,
            "position": int,
        },
        ("run_id",),
        # ListRuns pages, newest first, from a (opened_at, run_id) cursor, of all runs or of one
        # status: an index range walked backwards, however many runs there are.
        [("opened_at", "run_id"), ("status", "opened_at", "run_id")],
        "runs",
    ),
    "view_attempts": Table(
        {
            "run_id": str,
            "number": int,
            "attempt_id": str,
            "label": str,
            "started_at": float,
            "resumed_from_step": int,
            "ended": int,
        },
        ("run_id", "number"),
        [],
        "runs",
    ),
    # The lease of each run's current attempt (ledger.views.runs.leases); expires_at is NULL once
    # there is nothing to lapse (the run lost or finished, or retracted). A table of its own, so
    # a file made before leases existed gets it (its attempts hold none).
    "view_leases": Table(
        {
            "run_id": str,
            "attempt": int,
            "lease_s": int,
            "last_seen_at": float,
            "expires_at": float,
            "lost_at": float,
        },
        ("run_id",),
        [("expires_at",)],
        "runs",
    ),
    # Each run's tags (Run.TagsChanged). A table of its own, so a file made before tags existed
    # gets it (its runs carry none).
    "view_run_tags": Table({"run_id": str, "key": str, "value": str}, ("run_id", "key"), [], "runs"),
    "view_checkpoints": Table(
        {
            "run_id": str,
            "attempt": int,
            "step": int,
            "backend": str,
            "uri": str,
            "fidelity": str,
            "sampler_uri": str,
            "final": int,
            "saved_at": float,
            "expires_at": float,
            "digest": str,
            "superseded": int,
        },
        # RunState's best checkpoint (highest step down) and its most recently expired ones.
        ("run_id", "attempt", "step"),
        [("run_id", "superseded", "step", "attempt"), ("run_id", "superseded", "expires_at", "step", "attempt")],
        "runs",
    ),
}
