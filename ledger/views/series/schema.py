"""The tables of the series view (one row per recorded batch of steps: its columns stay in its
event, read by position; superseded ones marked) and of the chart view (the min/max rollup of
every metric of a run over buckets of 64, 512, 4,096 and 32,768 steps, per attempt, which charts
and metric stats read at any length: ledger.views.series.charts)."""

from __future__ import annotations

from ledger.views.store import Table

__all__ = ["SERIES_TABLES", "CHART_TABLES"]


SERIES_TABLES: dict[str, Table] = {
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
}

CHART_TABLES: dict[str, Table] = {
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
}
