"""The schema of the views: every table, its columns, keys and indexes, and the view that owns it.

The views, each with its own tracking position so each can be dropped and rebuilt alone:
- runs: runs, attempts and checkpoints (everything resume needs), and the lease of each run's
  current attempt (ledger.views.leases: what the lease sweep nominates);
- series: one row per recorded batch of steps (its columns stay in its event, read by position),
  superseded ones marked;
- chart: the min/max rollup of every metric of a run over buckets of 64, 512, 4,096 and 32,768
  steps, per attempt, which charts and metric stats read at any length (ledger.views.charts);
- spend: accounts and every reservation, refusal and charge (the audit trail), and what the
  ledger presumed spent for abandoned holds, per account (view_presumed);
- registry: families, versions, the promotion history (refused promotions too), aliases and
  retirements;
- bill: providers' bill lines, the sessions runs are linked to, and the spend the trainers
  committed by hour and token class, which a bill is compared with (ledger.views.bills);
- provenance: each run's objective, plan (max_steps), retraction and the anchors of its recent
  step rate, its checkpoints' scores and deletions, its datasets, the registry versions made from
  its checkpoints (ledger.views.provenance). A view of its own, so a ledger written before it
  existed builds it from its log when opened, as any new view is;
- reports: each run's latest holdout, delta and notes (ledger.views.reports), a view of its own
  for the same reason;
- search: what a run search compares, indexed: spec, summary and tag values and each metric's
  last, least and greatest value (its tables: ledger.views.search.tables).
The schema is declared once here; each storage backend makes its CREATE statements from it
(column types from the Python types), and adds the indexes declared after a database was made
when it opens one.
"""

from __future__ import annotations

from typing import NamedTuple

from ledger.views.search.tables import SEARCH_TABLES

__all__ = ["TABLES", "VIEWS", "Table"]

VIEWS = ("runs", "series", "spend", "registry", "bill", "chart", "provenance", "reports", "search")


class Table(NamedTuple):
    """A view table: columns {name: Python type}, primary key, extra indexes, and the view that
    owns it (rebuilding that view drops it); "" for view_names, which maps account and family
    aggregate ids to their names: any view may add to it, none owns it."""

    columns: dict[str, type]
    primary_key: tuple[str, ...]
    indexes: list[tuple[str, ...]]
    view: str


TABLES: dict[str, Table] = {
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
    # The lease of each run's current attempt (ledger.views.leases); expires_at is NULL once
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
    "view_series": Table(
        {
            "run_id": str,
            "first_step": int,
            "attempt": int,
            "last_step": int,
            "superseded_above": int,
            "count": int,
            "position": int,
        },
        # Series pages read the rows nothing superseded, and those straddling a resume point, by
        # index: never the rows whose steps were all superseded.
        ("run_id", "first_step", "attempt"),
        [("run_id", "superseded_above", "first_step", "attempt")],
        # A row names its batch's event by position: a page reads the steps, tokens, cost and
        # metrics from the log, where they are stored once.
        "series",
    ),
    # One row per (metric, level, bucket, attempt): how many values the bucket holds and its first,
    # last, least and greatest (step, value); `level` is the bucket's width in steps (64, 512, 4096
    # or 32768) and `bucket` the step shifted right by its log2. The metric "" counts the steps
    # themselves, at the coarsest level only (no metric is named ""). Superseded steps are told
    # apart at read, by attempt.
    "view_series_rollup": Table(
        {
            "run_id": str,
            "metric": str,
            "level": int,
            "bucket": int,
            "attempt": int,
            "count": int,
            "first_step": int,
            "first_value": float,
            "last_step": int,
            "last_value": float,
            "min_step": int,
            "min_value": float,
            "max_step": int,
            "max_value": float,
            "position": int,
        },
        ("run_id", "metric", "level", "bucket", "attempt"),
        [],
        "chart",
    ),
    "view_accounts": Table(
        {"account": str, "parent": str, "cap": int, "committed": int, "pending": int, "overrun": int, "position": int},
        ("account",),
        [("parent",)],
        "spend",
    ),
    # What the ledger charged for abandoned holds (SpendSettled, less what late commits replaced),
    # per account, its parents' rolled up: a table of its own, so a file made before it gets it.
    "view_presumed": Table({"account": str, "presumed": int}, ("account",), [], "spend"),
    "view_reservations": Table(
        {
            "account": str,
            "reservation_id": str,
            "kind": str,
            "state": str,
            "amount": int,
            "actual": int,
            "overrun": int,
            "basis": str,
            "actual_basis": str,
            "reason": str,
            "attempt": int,
            "reserved_at": float,
            "settled_at": float,
            "expires_at": float,
            "position": int,
        },
        ("account", "reservation_id"),
        # An account's plan hold is found by its kind without a walk of its other reservations.
        [("state", "expires_at"), ("account", "position"), ("account", "kind", "position")],
        "spend",
    ),
    "view_bill_lines": Table(
        {
            "provider": str,
            "line_id": str,
            "start": float,
            "end_at": float,
            "amount": int,
            "amount_text": str,
            "quantities": str,
            "run_id": str,
            "account": str,
            "session_id": str,
            "tags": str,
            "description": str,
            "restated": int,
            "position": int,
        },
        ("provider", "line_id", "start", "end_at"),
        [("run_id",), ("provider", "session_id"), ("account",)],
        "bill",
    ),
    "view_bill_providers": Table(
        {
            "provider": str,
            "lines": int,
            "restatements": int,
            "cost_data_through": float,
            "first_start": float,
            "last_end": float,
            "position": int,
        },
        ("provider",),
        [],
        "bill",
    ),
    "view_run_sessions": Table(
        {"provider": str, "session_id": str, "run_id": str, "attempt": int, "position": int},
        ("provider", "session_id"),
        [("run_id",)],
        "bill",
    ),
    "view_spend_hours": Table(
        {"account": str, "hour": int, "committed": int, "adjusted": int},
        ("account", "hour"),
        [],
        "bill",
    ),
    "view_spend_tokens": Table(
        {"account": str, "hour": int, "token_class": str, "tokens": int},
        ("account", "hour", "token_class"),
        [],
        "bill",
    ),
    "view_names": Table({"id": str, "name": str}, ("id",), [], ""),
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
    # provenance view (ledger.views.provenance reads it).
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
    # reports view (ledger.views.reports): a run's latest report of each kind.
    "view_run_reports": Table(
        {"run_id": str, "kind": str, "report": str, "position": int},
        ("run_id", "kind"),
        [],
        "reports",
    ),
}
TABLES.update({name: Table(*table, "search") for name, table in SEARCH_TABLES.items()})
