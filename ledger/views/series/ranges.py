"""The step ranges a chart or a metric's stats read, over the series and chart views: each
attempt's floor (the steps above it are superseded) and span, a run's metrics by name, the raw
points of a range (from the batches' events), and the exact aggregate of any range (whole buckets
of the rollup, coarsest first, and raw steps only at its ends). See ledger.views.series.charts."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

from ledger.views.series.pages import decode_batch, decode_metric
from ledger.views.series.rollup import ROLLUP_COLUMNS, ROLLUP_SHIFTS, STEPS_METRIC, Aggregate, merge
from ledger.views.store import Query

__all__ = ["END", "TOP", "Points", "StepRanges", "agg_points", "cover"]

#: Past every step (STEP_MAX is 2**53): the end of the range of an attempt nothing superseded.
END = 2**53 - 1
#: The coarsest level's shift: its rows count the steps (STEPS_METRIC) and the values of each metric.
TOP = ROLLUP_SHIFTS[-1]
_NAMES_PER_QUERY = 200

# (attempt, superseded) -> (steps, values), each ascending.
Points = dict[tuple[int, bool], tuple[list[int], list[float]]]


def cover(low: int, high: int, shifts: tuple[int, ...]) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    """[low, high] as runs of whole buckets (shift, first bucket, last bucket), coarsest first,
    and the raw step ranges left at its ends (each within one finest bucket)."""
    if not shifts:
        return [], [(low, high)]
    shift = shifts[-1]
    first = (low + (1 << shift) - 1) >> shift
    last = ((high + 1) >> shift) - 1
    if first > last:
        return cover(low, high, shifts[:-1])
    ranges, raws = [(shift, first, last)], []
    if low < first << shift:
        left = cover(low, (first << shift) - 1, shifts[:-1])
        ranges += left[0]
        raws += left[1]
    if (last + 1) << shift <= high:
        right = cover((last + 1) << shift, high, shifts[:-1])
        ranges += right[0]
        raws += right[1]
    return ranges, raws


def agg_points(agg: Aggregate) -> list[tuple[int, float]]:
    """The distinct (step, value) points of an aggregate, by step."""
    return sorted({agg[1]: agg[2], agg[5]: agg[6], agg[7]: agg[8], agg[3]: agg[4]}.items())


class StepRanges:
    """Reads of a run's step ranges, run by `query`."""

    def __init__(self, query: Query) -> None:
        self.query = query

    def floors(self, run_id: str) -> dict[int, int | None] | None:
        """Each attempt's floor: its steps above it are superseded (None: none are); None for an
        unknown run."""
        if self.query.row("SELECT 1 FROM view_runs WHERE run_id = ?", (run_id,)) is None:
            return None
        rows = self.query.rows(
            "SELECT number, resumed_from_step FROM view_attempts WHERE run_id = ? ORDER BY number DESC", (run_id,)
        )
        floors: dict[int, int | None] = {}
        lowest: int | None = None
        for number, resumed in rows:
            floors[number] = lowest
            floor = -1 if resumed is None else resumed
            lowest = floor if lowest is None else min(lowest, floor)
        return floors

    def metric_names(self, run_id: str, *, after: str = STEPS_METRIC, limit: int) -> list[str]:
        """At most `limit` of the run's metrics by name, after `after`: one index seek each."""
        names: list[str] = []
        while len(names) < limit:
            row = self.query.row(
                "SELECT metric FROM view_series_rollup WHERE run_id = ? AND metric > ? ORDER BY metric LIMIT 1",
                (run_id, after),
            )
            if row is None:
                return names
            after = row[0]
            names.append(after)
        return names

    def spans(self, run_id: str) -> dict[int, tuple[int, int]]:
        """Each attempt's first and last recorded step."""
        return {
            attempt: (first, last)
            for attempt, first, last in self.query.rows(
                "SELECT attempt, MIN(first_step), MAX(last_step) FROM view_series_rollup WHERE run_id = ?"
                " AND metric = ? AND level = ? GROUP BY attempt",
                (run_id, STEPS_METRIC, 1 << TOP),
            )
        }

    # Raw steps.

    def batches(self, run_id: str, attempt: int | None, low: int, high: int, spans: dict[int, tuple[int, int]]) -> Any:
        """The batch rows (first_step, attempt, event state) holding steps in [low, high], of one
        attempt or (None) all, in (first_step, attempt) order: those starting in the range, after,
        for each attempt, the one batch that starts before it and may reach into it."""
        attempts = [attempt] if attempt is not None else sorted(spans)
        before = []
        for number in attempts:
            span = spans.get(number)
            if span is None or span[0] >= low or span[1] < low:
                continue
            row = self.query.row(
                self.query.with_columns(
                    "SELECT s.first_step, s.attempt, s.last_step FROM view_series s WHERE s.run_id = ?"
                    " AND s.first_step < ? AND s.attempt = ? ORDER BY s.first_step DESC LIMIT 1"
                ),
                (run_id, low, number),
            )
            if row is not None and row[2] >= low:
                before.append((row[0], row[1], row[3]))
        before.sort(key=lambda row: (row[0], row[1]))
        sql = "SELECT s.first_step, s.attempt FROM view_series s WHERE s.run_id = ? AND s.first_step >= ?"
        sql += " AND s.first_step <= ?"
        params: tuple[Any, ...] = (run_id, low, high)
        if attempt is not None:
            sql += " AND s.attempt = ?"
            params += (attempt,)
        return before + self.query.rows(self.query.with_columns(sql + " ORDER BY s.first_step, s.attempt"), params)

    def raw(
        self,
        run_id: str,
        names: Sequence[str],
        attempt: int | None,
        low: int,
        high: int,
        floors: dict[int, int | None],
        spans: dict[int, tuple[int, int]],
    ) -> tuple[dict[str, Points], int, dict[str, int]]:
        """The raw points of `names` in [low, high] (of one attempt, or all), by metric and (attempt,
        superseded); with how many steps the range holds and how many values of each metric."""
        points: dict[str, Points] = {name: {} for name in names}
        counts = dict.fromkeys(names, 0)
        step_count = 0
        for _, number, state in self.batches(run_id, attempt, low, high, spans):
            batch = decode_batch(state)
            steps = batch.steps
            floor = floors.get(number)
            start, end = bisect_left(steps, low), bisect_right(steps, high)
            step_count += end - start
            for name in names:
                raw = batch.metrics.get(name)
                if raw is None:
                    continue
                column = decode_metric(raw)
                metric_steps = steps if column.index is None else list(map(steps.__getitem__, column.index))
                start, end = bisect_left(metric_steps, low), bisect_right(metric_steps, high)
                if start == end:
                    continue
                counts[name] += end - start
                cut = end if floor is None else max(start, min(end, bisect_right(metric_steps, floor)))
                for superseded, (a, b) in ((False, (start, cut)), (True, (cut, end))):
                    if a < b:
                        series = points[name].setdefault((number, superseded), ([], []))
                        series[0].extend(metric_steps[a:b])
                        series[1].extend(column.values[a:b])
        return points, step_count, counts

    # Exact aggregates over any range, from the rollup.

    def aggregates(
        self, run_id: str, names: Sequence[str], attempt: int, low: int, high: int, spans: dict[int, tuple[int, int]]
    ) -> dict[str, Aggregate]:
        """The exact aggregate of each metric over attempt `attempt`'s steps in [low, high]: whole
        buckets from the rollup, coarsest first, and raw steps only at the ends (at most 63 steps
        each side)."""
        span = spans.get(attempt)
        if span is None or span[1] < low or span[0] > high:
            return {}
        ranges, raws = cover(low, high, ROLLUP_SHIFTS)
        out: dict[str, Aggregate] = {}
        # One query per range for a chunk of metrics (an index seek per metric within it).
        for at in range(0, len(names), _NAMES_PER_QUERY):
            chunk = names[at : at + _NAMES_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            for shift, first, last in ranges:
                for name, *row in self.query.rows(
                    f"SELECT metric, {ROLLUP_COLUMNS} FROM view_series_rollup WHERE run_id = ? AND metric IN ({marks})"
                    " AND level = ? AND bucket >= ? AND bucket <= ? AND attempt = ?",
                    (run_id, *chunk, 1 << shift, first, last, attempt),
                ):
                    out[name] = merge(out.get(name), tuple(row))
        for raw_low, raw_high in raws:
            if raw_high < span[0] or raw_low > span[1]:
                continue
            points, _, _ = self.raw(run_id, names, attempt, raw_low, raw_high, {}, spans)
            for name, series in points.items():
                for steps, values in series.values():
                    for at, step in enumerate(steps):
                        one = (1, step, values[at], step, values[at], step, values[at], step, values[at])
                        out[name] = merge(out.get(name), one)
        return out
