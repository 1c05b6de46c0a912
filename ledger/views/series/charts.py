"""Chart reads of the views: a run's metrics downsampled at any length, and exact metric stats.

Reading raw steps cannot keep up with a long run: a million steps take a third of a second to read
and as long again to decode one metric. So the chart view (ledger.views.series.rollup) keeps a
rollup, view_series_rollup: per metric, attempt and bucket of 64, 512, 4,096 and 32,768 steps, the
count and the first, last, least and greatest (step, value). A chart picks the finest level whose
number of buckets in its range is at most RAW_FACTOR times its width (raw steps when the range
holds no more steps than that), takes each bucket's four points, and downsamples each series to
the width with tsdownsample's MinMaxLTTB (the least and greatest points always kept). A metric is
sparse when the coarsest buckets over the range (or, raw, the range itself) hold fewer of its
values than steps; the rollup's metric "" counts the steps.

Superseded steps (recorded by an attempt above a later attempt's resume point) are told apart at
read: attempt a's steps above its floor, the lowest resume point of the attempts after it (-1 for
an attempt started fresh), are superseded. A bucket lying wholly on one side of the floor gives
its points as they are; the few buckets that straddle a floor or the range's ends are computed
exactly over their part (StepRanges.aggregates in ledger.views.series.ranges: the coarsest whole
buckets that fit, finer ones at the edges, and raw steps only within the last 64), so the least
and the greatest of a range's live line are always among its points, and metric stats (count,
first, last, min, max of the live line) are exact while costing a few dozen indexed queries at
any length.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ledger.views.models import Chart, ChartMetric, ChartSeries, MetricStats
from ledger.views.series.ranges import END, TOP, Points, StepRanges, agg_points
from ledger.views.series.rollup import ROLLUP_COLUMNS, ROLLUP_SHIFTS, STEPS_METRIC, Aggregate, merge
from ledger.views.store import Query

__all__ = ["RAW_FACTOR", "METRICS_LISTED_MAX", "CHART_METRICS_MAX", "ChartReads"]

#: A chart reads at most about this many buckets (or raw steps) per point of its width.
RAW_FACTOR = 4
# A run may hold any number of metrics: metric_stats answers a page of them, and a chart that names
# none draws the first CHART_METRICS_MAX by name.
METRICS_LISTED_MAX = 1_000
CHART_METRICS_MAX = 64
# (attempt, bucket) -> the parts of a bucket computed exactly: (first step, last step, superseded).
ExactParts = dict[tuple[int, int], list[tuple[int, int, bool]]]


def _downsample(steps: list[int], values: list[float], width: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """At most `width` of the points, by MinMaxLTTB, the least and the greatest always among them."""
    if len(steps) <= width:
        return tuple(steps), tuple(values)
    import numpy as np  # noqa: PLC0415 - only charts need numpy and tsdownsample
    from tsdownsample import MinMaxLTTBDownsampler  # noqa: PLC0415

    x = np.asarray(steps, dtype=np.int64)
    y = np.asarray(values, dtype=np.float64)
    sampler = MinMaxLTTBDownsampler()  # type: ignore[no-untyped-call]
    picked = sampler.downsample(x, y, n_out=width - 2).astype(np.int64)
    keep = np.unique(np.concatenate((picked, np.array([int(np.argmin(y)), int(np.argmax(y))], dtype=np.int64))))
    return tuple(x[keep].tolist()), tuple(y[keep].tolist())


def _exact_parts(
    low: int, high: int, shift: int, floors: dict[int, int | None], spans: dict[int, tuple[int, int]]
) -> ExactParts:
    """The buckets of 2**shift steps cut by the ends of [low, high] or by an attempt's floor, each
    as the parts of it to compute exactly (live, or superseded, within the range)."""
    size = 1 << shift
    exact: ExactParts = {}
    for attempt, span in spans.items():
        floor = floors.get(attempt)
        cuts = {low >> shift, high >> shift}
        if floor is not None and low <= floor < high:
            cuts.add(floor >> shift)
        for bucket in cuts:
            start, end = max(low, bucket << shift, span[0]), min(high, (bucket + 1) * size - 1, span[1])
            if start > end:
                parts = []  # The attempt has no step there: the bucket's row lies outside the range.
            elif floor is None or floor >= end:
                parts = [(start, end, False)]
            elif floor < start:
                parts = [(start, end, True)]
            else:
                parts = [(start, floor, False), (floor + 1, end, True)]
            exact[(attempt, bucket)] = parts
    return exact


def _add_bucket_points(points: Points, rows: list[Any], exact: ExactParts, floors: dict[int, int | None]) -> None:
    """Add to one metric's `points` the four points of each of its rollup `rows` (bucket, attempt,
    ROLLUP_COLUMNS) but those of the buckets computed exactly, live or superseded by the floor."""
    import numpy as np  # noqa: PLC0415 - only charts need numpy

    # Columns: bucket, attempt, count, then (step, value) of first, last, min and max.
    table = np.array(rows, dtype=np.float64)
    keep = np.ones(len(table), dtype=bool)
    for attempt, bucket in exact:
        keep &= (table[:, 0] != bucket) | (table[:, 1] != attempt)
    table = table[keep]
    for attempt in np.unique(table[:, 1]).tolist():
        rows_of = table[table[:, 1] == attempt]
        # Each bucket's four points in step order; buckets come in order, so the points
        # ascend, and a point that is two of the four (first and min...) comes once.
        steps = rows_of[:, [3, 7, 9, 5]]
        order = np.argsort(steps, axis=1, kind="stable")
        steps = np.take_along_axis(steps, order, axis=1).ravel()
        values = np.take_along_axis(rows_of[:, [4, 8, 10, 6]], order, axis=1).ravel()
        distinct = np.ones(len(steps), dtype=bool)
        distinct[1:] = steps[1:] != steps[:-1]
        steps, values = steps[distinct].astype(np.int64), values[distinct]
        floor = floors.get(int(attempt))
        cut = len(steps) if floor is None else int(np.searchsorted(steps, floor, side="right"))
        for superseded, (a, b) in ((False, (0, cut)), (True, (cut, len(steps)))):
            if a < b:
                series = points.setdefault((int(attempt), superseded), ([], []))
                series[0].extend(steps[a:b].tolist())
                series[1].extend(values[a:b].tolist())


class ChartReads:
    """Charts and metric stats, read by `query` over a run's step ranges (`ranges`)."""

    def __init__(self, query: Query) -> None:
        self.query = query
        self.ranges = StepRanges(query)

    def metric_stats(
        self, run_id: str, *, after: str = "", limit: int = METRICS_LISTED_MAX
    ) -> tuple[MetricStats, ...] | None:
        """At most `limit` metrics over the run's live line of steps, exact, by name after `after`
        (a run may hold any number of metrics: they are read a page at a time); None for an
        unknown run."""
        floors = self.ranges.floors(run_id)
        if floors is None:
            return None
        names = self.ranges.metric_names(run_id, after=after or STEPS_METRIC, limit=limit)
        spans = self.ranges.spans(run_id)
        whole: dict[str, Aggregate] = {}
        for attempt, floor in floors.items():
            if floor is not None and floor < 0:
                continue
            for name, agg in self.ranges.aggregates(
                run_id, names, attempt, 0, END if floor is None else floor, spans
            ).items():
                whole[name] = merge(whole.get(name), agg)
        return tuple(
            MetricStats(
                name=name,
                count=agg[0],
                first_step=agg[1],
                last_step=agg[3],
                last=agg[4],
                min=agg[6],
                max=agg[8],
            )
            for name, agg in sorted(whole.items())
        )

    # Charts.

    def chart(
        self,
        run_id: str,
        *,
        metrics: Sequence[str] = (),
        from_step: int | None = None,
        to_step: int | None = None,
        width: int = 800,
    ) -> Chart | None:
        """The run's metrics (the first CHART_METRICS_MAX by name when none are named) over
        [from_step, to_step] (default: every recorded step), at most about `width` points a
        series; None for an unknown run."""
        floors = self.ranges.floors(run_id)
        if floors is None:
            return None
        names = list(dict.fromkeys(metrics)) or self.ranges.metric_names(run_id, limit=CHART_METRICS_MAX)
        spans = self.ranges.spans(run_id)
        low = min((span[0] for span in spans.values()), default=0) if from_step is None else from_step
        high = max((span[1] for span in spans.values()), default=low) if to_step is None else to_step
        high = max(high, low)
        budget = RAW_FACTOR * width
        shift = self._resolution(run_id, low, high, budget)
        if shift == 0:
            points, step_count, counts = self.ranges.raw(run_id, names, None, low, high, floors, spans)
        else:
            points, step_count, counts = self._rolled_up(run_id, names, low, high, shift, floors, spans)
        return Chart(
            run_id=run_id,
            from_step=low,
            to_step=high,
            width=width,
            resolution=1 << shift,
            metrics=tuple(
                ChartMetric(
                    name=name,
                    sparse=0 < counts[name] < step_count,
                    series=tuple(
                        ChartSeries(attempt=attempt, superseded=superseded, steps=steps, values=values)
                        for (attempt, superseded), (steps, values) in (
                            (key, _downsample(*points[name][key], width)) for key in sorted(points[name])
                        )
                    ),
                )
                for name in names
            ),
        )

    def _resolution(self, run_id: str, low: int, high: int, budget: int) -> int:
        """0 to read raw steps (the range holds at most `budget` of them), else the shift of the
        finest level with at most `budget` buckets in the range (the coarsest when none has)."""
        if high - low + 1 <= budget:
            return 0
        row = self.query.row(
            "SELECT SUM(count) FROM view_series_rollup WHERE run_id = ? AND metric = ? AND level = ?"
            " AND bucket >= ? AND bucket <= ?",
            (run_id, STEPS_METRIC, 1 << TOP, low >> TOP, high >> TOP),
        )
        if row is None or row[0] is None or row[0] <= budget:
            return 0
        return next((shift for shift in ROLLUP_SHIFTS if (high >> shift) - (low >> shift) < budget), TOP)

    def _rolled_up(
        self,
        run_id: str,
        names: Sequence[str],
        low: int,
        high: int,
        shift: int,
        floors: dict[int, int | None],
        spans: dict[int, tuple[int, int]],
    ) -> tuple[dict[str, Points], int, dict[str, int]]:
        """The points of `names` in [low, high] from the rollup's buckets of 2**shift steps. The
        buckets cut by the range's ends or by an attempt's floor are computed exactly over each of
        their parts instead."""
        size = 1 << shift
        exact = _exact_parts(low, high, shift, floors, spans)
        points: dict[str, Points] = {name: {} for name in names}
        for (attempt, _), parts in sorted(exact.items()):
            for start, end, superseded in parts:
                for name, agg in self.ranges.aggregates(run_id, names, attempt, start, end, spans).items():
                    series = points[name].setdefault((attempt, superseded), ([], []))
                    for step, value in agg_points(agg):
                        series[0].append(step)
                        series[1].append(value)
        first, last = low >> shift, high >> shift
        for name in names:
            rows = self.query.rows(
                f"SELECT bucket, attempt, {ROLLUP_COLUMNS} FROM view_series_rollup WHERE run_id = ? AND metric = ?"
                " AND level = ? AND bucket >= ? AND bucket <= ?",
                (run_id, name, size, first, last),
            )
            if not rows:
                continue
            _add_bucket_points(points[name], rows, exact, floors)
            for key, (steps_of, values_of) in points[name].items():
                order_of = sorted(range(len(steps_of)), key=steps_of.__getitem__)
                points[name][key] = ([steps_of[i] for i in order_of], [values_of[i] for i in order_of])
        step_count, counts = self._counts(run_id, names, low, high)
        return points, step_count, counts

    def _counts(self, run_id: str, names: Sequence[str], low: int, high: int) -> tuple[int, dict[str, int]]:
        """How many steps, and values of each metric, the coarsest buckets overlapping [low, high]
        hold: what tells a sparse metric from a dense one, a few rows each."""
        sums = []
        for name in (STEPS_METRIC, *names):
            row = self.query.row(
                "SELECT SUM(count) FROM view_series_rollup WHERE run_id = ? AND metric = ? AND level = ?"
                " AND bucket >= ? AND bucket <= ?",
                (run_id, name, 1 << TOP, low >> TOP, high >> TOP),
            )
            sums.append(int(row[0] or 0) if row else 0)
        return sums[0], dict(zip(names, sums[1:], strict=True))
