"""Chart reads of the views: a run's metrics downsampled at any length, exact metric stats, its
checkpoints, an account's spend by hour and the tree of accounts (mixed into
ledger.views.queries.ViewReader).

Reading raw steps cannot keep up with a long run: a million steps take a third of a second to read
and as long again to decode one metric. So the chart view (ledger.views.handlers) keeps a rollup,
view_series_rollup: per metric, attempt and bucket of 64, 512, 4,096 and 32,768 steps, the count
and the first, last, least and greatest (step, value). A chart picks the finest level whose number
of buckets in its range is at most RAW_FACTOR times its width (raw steps when the range holds no
more steps than that), takes each bucket's four points, and downsamples each series to the width
with tsdownsample's MinMaxLTTB (the least and greatest points always kept). A metric is sparse
when the coarsest buckets over the range (or, raw, the range itself) hold fewer of its values than
steps; the rollup's metric "" counts the steps.

Superseded steps (recorded by an attempt above a later attempt's resume point) are told apart at
read: attempt a's steps above its floor, the lowest resume point of the attempts after it (-1 for
an attempt started fresh), are superseded. A bucket lying wholly on one side of the floor gives
its points as they are; the few buckets that straddle a floor or the range's ends are computed
exactly over their part (`_aggregates`: the coarsest whole buckets that fit, finer ones at the
edges, and raw steps only within the last 64), so the least and the greatest of a range's live
line are always among its points, and metric stats (count, first, last, min, max of the live line)
are exact while costing a few dozen indexed queries at any length.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from ledger.views.bills.handlers import HOUR_S
from ledger.views.models import (
    Account,
    BillTotals,
    Chart,
    ChartMetric,
    ChartSeries,
    Checkpoint,
    MetricStats,
    SpendHour,
)
from ledger.views.rows import CHECKPOINT_COLUMNS, remaining, to_checkpoint, utc_time
from ledger.views.series.pages import decode_batch, decode_metric
from ledger.views.series.rollup import ROLLUP_COLUMNS, ROLLUP_SHIFTS, STEPS_METRIC, Aggregate, merge

__all__ = ["RAW_FACTOR", "METRICS_LISTED_MAX", "CHART_METRICS_MAX", "ChartReads"]

#: A chart reads at most about this many buckets (or raw steps) per point of its width.
RAW_FACTOR = 4
# A run may hold any number of metrics: metric_stats answers a page of them, and a chart that names
# none draws the first CHART_METRICS_MAX by name.
METRICS_LISTED_MAX = 1_000
CHART_METRICS_MAX = 64
#: Past every step (STEP_MAX is 2**53): the end of the range of an attempt nothing superseded.
_END = 2**53 - 1
_TOP = ROLLUP_SHIFTS[-1]
_NAMES_PER_QUERY = 200


# (attempt, superseded) -> (steps, values), each ascending.
Points = dict[tuple[int, bool], tuple[list[int], list[float]]]


def _cover(low: int, high: int, shifts: tuple[int, ...]) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]]]:
    """[low, high] as runs of whole buckets (shift, first bucket, last bucket), coarsest first,
    and the raw step ranges left at its ends (each within one finest bucket)."""
    if not shifts:
        return [], [(low, high)]
    shift = shifts[-1]
    first = (low + (1 << shift) - 1) >> shift
    last = ((high + 1) >> shift) - 1
    if first > last:
        return _cover(low, high, shifts[:-1])
    ranges, raws = [(shift, first, last)], []
    if low < first << shift:
        left = _cover(low, (first << shift) - 1, shifts[:-1])
        ranges += left[0]
        raws += left[1]
    if (last + 1) << shift <= high:
        right = _cover((last + 1) << shift, high, shifts[:-1])
        ranges += right[0]
        raws += right[1]
    return ranges, raws


def _agg_points(agg: Aggregate) -> list[tuple[int, float]]:
    """The distinct (step, value) points of an aggregate, by step."""
    return sorted({agg[1]: agg[2], agg[5]: agg[6], agg[7]: agg[8], agg[3]: agg[4]}.items())


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


class ChartReads:
    """Charts, metric stats, checkpoints, spend by hour and the account tree (mixed into
    ViewReader, which provides `_rows`, `_row`, `_with_columns`, `connect` and `bill_totals`)."""

    _rows: Callable[..., list[Any]]
    _row: Callable[..., Any]
    _with_columns: Callable[[str], str]
    bill_totals: Callable[..., BillTotals | None]

    # Runs' attempts and metrics.

    def _floors(self, run_id: str) -> dict[int, int | None] | None:
        """Each attempt's floor: its steps above it are superseded (None: none are); None for an
        unknown run."""
        if self._row("SELECT 1 FROM view_runs WHERE run_id = ?", (run_id,)) is None:
            return None
        rows = self._rows(
            "SELECT number, resumed_from_step FROM view_attempts WHERE run_id = ? ORDER BY number DESC", (run_id,)
        )
        floors: dict[int, int | None] = {}
        lowest: int | None = None
        for number, resumed in rows:
            floors[number] = lowest
            floor = -1 if resumed is None else resumed
            lowest = floor if lowest is None else min(lowest, floor)
        return floors

    def _metric_names(self, run_id: str, *, after: str = STEPS_METRIC, limit: int) -> list[str]:
        """At most `limit` of the run's metrics by name, after `after`: one index seek each."""
        names: list[str] = []
        while len(names) < limit:
            row = self._row(
                "SELECT metric FROM view_series_rollup WHERE run_id = ? AND metric > ? ORDER BY metric LIMIT 1",
                (run_id, after),
            )
            if row is None:
                return names
            after = row[0]
            names.append(after)
        return names

    def _spans(self, run_id: str) -> dict[int, tuple[int, int]]:
        """Each attempt's first and last recorded step."""
        return {
            attempt: (first, last)
            for attempt, first, last in self._rows(
                "SELECT attempt, MIN(first_step), MAX(last_step) FROM view_series_rollup WHERE run_id = ?"
                " AND metric = ? AND level = ? GROUP BY attempt",
                (run_id, STEPS_METRIC, 1 << _TOP),
            )
        }

    # Raw steps.

    def _batches(self, run_id: str, attempt: int | None, low: int, high: int, spans: dict[int, tuple[int, int]]) -> Any:
        """The batch rows (first_step, attempt, event state) holding steps in [low, high], of one
        attempt or (None) all, in (first_step, attempt) order: those starting in the range, after,
        for each attempt, the one batch that starts before it and may reach into it."""
        attempts = [attempt] if attempt is not None else sorted(spans)
        before = []
        for number in attempts:
            span = spans.get(number)
            if span is None or span[0] >= low or span[1] < low:
                continue
            row = self._row(
                self._with_columns(
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
        return before + self._rows(self._with_columns(sql + " ORDER BY s.first_step, s.attempt"), params)

    def _raw(
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
        for _, number, state in self._batches(run_id, attempt, low, high, spans):
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

    def _aggregates(
        self, run_id: str, names: Sequence[str], attempt: int, low: int, high: int, spans: dict[int, tuple[int, int]]
    ) -> dict[str, Aggregate]:
        """The exact aggregate of each metric over attempt `attempt`'s steps in [low, high]: whole
        buckets from the rollup, coarsest first, and raw steps only at the ends (at most 63 steps
        each side)."""
        span = spans.get(attempt)
        if span is None or span[1] < low or span[0] > high:
            return {}
        ranges, raws = _cover(low, high, ROLLUP_SHIFTS)
        out: dict[str, Aggregate] = {}
        # One query per range for a chunk of metrics (an index seek per metric within it).
        for at in range(0, len(names), _NAMES_PER_QUERY):
            chunk = names[at : at + _NAMES_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            for shift, first, last in ranges:
                for name, *row in self._rows(
                    f"SELECT metric, {ROLLUP_COLUMNS} FROM view_series_rollup WHERE run_id = ? AND metric IN ({marks})"
                    " AND level = ? AND bucket >= ? AND bucket <= ? AND attempt = ?",
                    (run_id, *chunk, 1 << shift, first, last, attempt),
                ):
                    out[name] = merge(out.get(name), tuple(row))
        for raw_low, raw_high in raws:
            if raw_high < span[0] or raw_low > span[1]:
                continue
            points, _, _ = self._raw(run_id, names, attempt, raw_low, raw_high, {}, spans)
            for name, series in points.items():
                for steps, values in series.values():
                    for at, step in enumerate(steps):
                        one = (1, step, values[at], step, values[at], step, values[at], step, values[at])
                        out[name] = merge(out.get(name), one)
        return out

    def metric_stats(
        self, run_id: str, *, after: str = "", limit: int = METRICS_LISTED_MAX
    ) -> tuple[MetricStats, ...] | None:
        """At most `limit` metrics over the run's live line of steps, exact, by name after `after`
        (a run may hold any number of metrics: they are read a page at a time); None for an
        unknown run."""
        floors = self._floors(run_id)
        if floors is None:
            return None
        names = self._metric_names(run_id, after=after or STEPS_METRIC, limit=limit)
        spans = self._spans(run_id)
        totals: dict[str, Aggregate] = {}
        for attempt, floor in floors.items():
            if floor is not None and floor < 0:
                continue
            for name, agg in self._aggregates(
                run_id, names, attempt, 0, _END if floor is None else floor, spans
            ).items():
                totals[name] = merge(totals.get(name), agg)
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
            for name, agg in sorted(totals.items())
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
        floors = self._floors(run_id)
        if floors is None:
            return None
        names = list(dict.fromkeys(metrics)) or self._metric_names(run_id, limit=CHART_METRICS_MAX)
        spans = self._spans(run_id)
        low = min((span[0] for span in spans.values()), default=0) if from_step is None else from_step
        high = max((span[1] for span in spans.values()), default=low) if to_step is None else to_step
        high = max(high, low)
        budget = RAW_FACTOR * width
        shift = self._resolution(run_id, low, high, budget)
        if shift == 0:
            points, step_count, counts = self._raw(run_id, names, None, low, high, floors, spans)
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
        row = self._row(
            "SELECT SUM(count) FROM view_series_rollup WHERE run_id = ? AND metric = ? AND level = ?"
            " AND bucket >= ? AND bucket <= ?",
            (run_id, STEPS_METRIC, 1 << _TOP, low >> _TOP, high >> _TOP),
        )
        if row is None or row[0] is None or row[0] <= budget:
            return 0
        return next((shift for shift in ROLLUP_SHIFTS if (high >> shift) - (low >> shift) < budget), _TOP)

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
        exact: dict[tuple[int, int], list[tuple[int, int, bool]]] = {}
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
        import numpy as np  # noqa: PLC0415 - only charts need numpy

        points: dict[str, Points] = {name: {} for name in names}
        for (attempt, _), parts in sorted(exact.items()):
            for start, end, superseded in parts:
                for name, agg in self._aggregates(run_id, names, attempt, start, end, spans).items():
                    series = points[name].setdefault((attempt, superseded), ([], []))
                    for step, value in _agg_points(agg):
                        series[0].append(step)
                        series[1].append(value)
        first, last = low >> shift, high >> shift
        for name in names:
            rows = self._rows(
                f"SELECT bucket, attempt, {ROLLUP_COLUMNS} FROM view_series_rollup WHERE run_id = ? AND metric = ?"
                " AND level = ? AND bucket >= ? AND bucket <= ?",
                (run_id, name, size, first, last),
            )
            if not rows:
                continue
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
                        series = points[name].setdefault((int(attempt), superseded), ([], []))
                        series[0].extend(steps[a:b].tolist())
                        series[1].extend(values[a:b].tolist())
            for key, (steps_of, values_of) in points[name].items():
                order_of = sorted(range(len(steps_of)), key=steps_of.__getitem__)
                points[name][key] = ([steps_of[i] for i in order_of], [values_of[i] for i in order_of])
        step_count, counts = self._counts(run_id, names, low, high)
        return points, step_count, counts

    def _counts(self, run_id: str, names: Sequence[str], low: int, high: int) -> tuple[int, dict[str, int]]:
        """How many steps, and values of each metric, the coarsest buckets overlapping [low, high]
        hold: what tells a sparse metric from a dense one, a few rows each."""
        totals = []
        for name in (STEPS_METRIC, *names):
            row = self._row(
                "SELECT SUM(count) FROM view_series_rollup WHERE run_id = ? AND metric = ? AND level = ?"
                " AND bucket >= ? AND bucket <= ?",
                (run_id, name, 1 << _TOP, low >> _TOP, high >> _TOP),
            )
            totals.append(int(row[0] or 0) if row else 0)
        return totals[0], dict(zip(names, totals[1:], strict=True))

    # Checkpoints, spend by hour, the account tree.

    def checkpoints(self, run_id: str, limit: int) -> tuple[Checkpoint, ...] | None:
        """Every checkpoint of the run in (step, attempt) order, superseded and expired ones
        included (at most `limit`); None for an unknown run."""
        if self._row("SELECT 1 FROM view_runs WHERE run_id = ?", (run_id,)) is None:
            return None
        return tuple(
            msgspec.structs.replace(to_checkpoint(row[:-1]), superseded=bool(row[-1]))
            for row in self._rows(
                f"SELECT {CHECKPOINT_COLUMNS}, superseded FROM view_checkpoints WHERE run_id = ?"
                " ORDER BY step, attempt LIMIT ?",
                (run_id, limit),
            )
        )

    def spend_hours(self, account: str) -> tuple[SpendHour, ...] | None:
        """What `account` spent in each UTC hour it spent in (adjustments included, as in its
        committed total), oldest first, with the part of it the ledger presumed for abandoned holds
        (settlements no late commit replaced, by the hour they were settled in) apart; None for an
        unknown account."""
        if self._row("SELECT 1 FROM view_accounts WHERE account = ?", (account,)) is None:
            return None
        presumed: dict[int, int] = {}
        for actual, settled_at in self._rows(
            "SELECT actual, settled_at FROM view_reservations WHERE account = ? AND state = 'settled'", (account,)
        ):
            hour = int(settled_at) // HOUR_S * HOUR_S
            presumed[hour] = presumed.get(hour, 0) + actual
        return tuple(
            SpendHour(
                hour=utc_time(hour),
                committed_usd_micro=committed + adjusted - presumed.get(hour, 0),
                presumed_usd_micro=presumed.get(hour, 0),
            )
            for hour, committed, adjusted in self._rows(
                "SELECT hour, committed, adjusted FROM view_spend_hours WHERE account = ? ORDER BY hour", (account,)
            )
        )

    def account_tree(self, limit: int) -> tuple[Account, ...]:
        """Every account that is not a run's own (those are named by their run's id), with its
        totals, parents before children (depth first, children by name); at most `limit`. An
        account whose parent is not among them is a root."""
        rows = {
            row[0]: row
            for row in self._rows(
                "SELECT a.account, a.parent, a.cap, a.committed, a.pending, a.overrun,"
                " COALESCE((SELECT p.presumed FROM view_presumed p WHERE p.account = a.account), 0)"
                " FROM view_accounts a WHERE NOT EXISTS (SELECT 1 FROM view_runs r WHERE r.run_id = a.account)"
            )
        }
        children: dict[str, list[str]] = {}
        for account, row in rows.items():
            parent = row[1] or ""
            children.setdefault(parent if parent in rows else "", []).append(account)
        ordered: list[str] = []
        stack = sorted(children.get("", ()), reverse=True)
        while stack and len(ordered) < limit:
            account = stack.pop()
            ordered.append(account)
            stack.extend(sorted(children.get(account, ()), reverse=True))
        out = []
        for name in ordered:
            account, parent, cap, committed, pending, overrun, presumed = rows[name]
            out.append(
                Account(
                    account=account,
                    parent=parent or "",
                    cap_usd_micro=cap,
                    committed_usd_micro=committed,
                    pending_usd_micro=pending,
                    remaining_usd_micro=remaining(cap, committed + presumed, pending),
                    overrun_usd_micro=overrun,
                    bill=self.bill_totals(account, rolled_up=True),
                    presumed_usd_micro=presumed,
                )
            )
        return tuple(out)
