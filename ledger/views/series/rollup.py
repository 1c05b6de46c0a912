"""The chart view's rollup, computed a chunk at a time: what the chart view's handler writes to
view_series_rollup for a run of step batches (ledger.views.series.handlers).

The rollup holds, per run, metric, attempt and bucket of 64, 512, 4,096 and 32,768 steps, how many
values the bucket holds and its first, last, least and greatest (step, value) (ledger.views.series.charts
reads it). Projecting it one batch at a time cost a Python loop per bucket and an upsert per bucket
and batch; `ChartRollup` instead gathers every batch of a projector's chunk (`add`), groups the
values by (run, attempt, metric), computes each level's buckets over every group of the chunk at
once with numpy (a handful of array operations per level, however many steps and groups: a chunk
of a rebuild holds batches of many runs), and writes each bucket once per chunk (`write`).
Buckets already in the table are merged by the upsert, so the rows are the same whatever the
chunks: a bucket's count adds up, first and last are the lowest and highest step, the least and
greatest value keep the earliest step of equal values, and the row's position is the highest
position of the events that fed it.

A group whose batches are not in step order (a batch recorded below an earlier one of the same
attempt) is cut into runs that are, and the runs' buckets merged in the order of their events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

from ledger.views.store import ViewCursor

__all__ = [
    "ROLLUP_COLUMNS",
    "ROLLUP_SHIFTS",
    "STEPS_METRIC",
    "Aggregate",
    "ChartRollup",
    "aggregate",
    "merge",
]

#: The rollup's levels: buckets of 2**shift steps, 64, 512, 4,096 and 32,768 wide.
ROLLUP_SHIFTS = (6, 9, 12, 15)
#: The rollup's name for the steps themselves: its rows, at the coarsest level only, count the
#: steps of a bucket (values 0) and give each attempt's first and last step.
STEPS_METRIC = ""
#: What one bucket holds: count, then (step, value) of the first, the last, the least and the
#: greatest value (the earliest of equal extremes).
Aggregate = tuple[int, int, float, int, float, int, float, int, float]
ROLLUP_COLUMNS = "count, first_step, first_value, last_step, last_value, min_step, min_value, max_step, max_value"
_T = "view_series_rollup"
# Buckets already written are merged by the database, so projecting never reads a row back.
ROLLUP_UPSERT = (
    f"INSERT INTO {_T} (run_id, metric, level, bucket, attempt, {ROLLUP_COLUMNS}, position)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (run_id, metric, level, bucket, attempt) DO UPDATE SET"
    f" count = {_T}.count + excluded.count,"
    f" first_step = CASE WHEN excluded.first_step < {_T}.first_step THEN excluded.first_step ELSE {_T}.first_step END,"
    f" first_value = CASE WHEN excluded.first_step < {_T}.first_step THEN excluded.first_value"
    f" ELSE {_T}.first_value END,"
    f" last_step = CASE WHEN excluded.last_step > {_T}.last_step THEN excluded.last_step ELSE {_T}.last_step END,"
    f" last_value = CASE WHEN excluded.last_step > {_T}.last_step THEN excluded.last_value ELSE {_T}.last_value END,"
    f" min_step = CASE WHEN excluded.min_value < {_T}.min_value"
    f" OR (excluded.min_value = {_T}.min_value AND excluded.min_step < {_T}.min_step)"
    f" THEN excluded.min_step ELSE {_T}.min_step END,"
    f" min_value = CASE WHEN excluded.min_value < {_T}.min_value THEN excluded.min_value ELSE {_T}.min_value END,"
    f" max_step = CASE WHEN excluded.max_value > {_T}.max_value"
    f" OR (excluded.max_value = {_T}.max_value AND excluded.max_step < {_T}.max_step)"
    f" THEN excluded.max_step ELSE {_T}.max_step END,"
    f" max_value = CASE WHEN excluded.max_value > {_T}.max_value THEN excluded.max_value ELSE {_T}.max_value END,"
    " position = CASE WHEN excluded.position > {_T}.position THEN excluded.position ELSE {_T}.position END"
).replace("{_T}", _T)

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]
# One bucket's row before it is written: the aggregate and the highest position that fed it.
Bucket = tuple[Aggregate, int]


def aggregate(steps: list[int], values: list[float] | None) -> Aggregate:
    """The aggregate of ascending `steps` (at least one) with their values (None: the steps
    alone, values 0)."""
    if values is None:
        return (len(steps), steps[0], 0.0, steps[-1], 0.0, steps[0], 0.0, steps[0], 0.0)
    low, high = min(values), max(values)
    return (
        len(steps),
        steps[0],
        values[0],
        steps[-1],
        values[-1],
        steps[values.index(low)],
        low,
        steps[values.index(high)],
        high,
    )


def merge(a: Aggregate | None, b: Aggregate) -> Aggregate:
    """Two aggregates of disjoint steps as one (equal extremes: the earlier step's; equal first
    or last steps: `a`'s)."""
    if a is None:
        return b
    first = a[1:3] if a[1] <= b[1] else b[1:3]
    last = a[3:5] if a[3] >= b[3] else b[3:5]
    low = a[5:7] if (a[6], a[5]) <= (b[6], b[5]) else b[5:7]
    high = a[7:9] if (a[8], -a[7]) >= (b[8], -b[7]) else b[7:9]
    return (a[0] + b[0], *first, *last, *low, *high)


def _earliest(values: Floats, extremes: Floats, starts: Ints, counts: Ints) -> Ints:
    """The index of the first value equal to its bucket's extreme, in each bucket."""
    hits = np.flatnonzero(values == np.repeat(extremes, counts))
    found: Ints = hits[np.searchsorted(hits, starts)]
    return found


Part = tuple[Ints, Floats | None, int]
# One bucket of one segment: the segment's index, the bucket, its aggregate and position.
Cell = tuple[int, int, Aggregate, int]


def _ordered_runs(parts: list[Part]) -> Iterable[list[Part]]:
    """`parts` cut where a part does not start above the one before (step order breaks)."""
    run: list[Part] = []
    for part in parts:
        if run and part[0][0] <= run[-1][0][-1]:
            yield run
            run = []
        run.append(part)
    if run:
        yield run


def _levels(segments: list[list[Part]], shifts: tuple[int, ...]) -> dict[int, list[Cell]]:
    """Each level's buckets of every segment (parts whose steps strictly increase throughout),
    all segments at once: a handful of array operations per level, however many segments."""
    parts = [part for segment in segments for part in segment]
    lengths = [len(part[0]) for part in parts]
    steps: Ints = np.concatenate([part[0] for part in parts])
    values: Floats = np.concatenate([part[1] if part[1] is not None else np.zeros(len(part[0])) for part in parts])
    positions: Ints = np.repeat(np.array([part[2] for part in parts], np.int64), lengths)
    owner: Ints = np.repeat(np.arange(len(segments), dtype=np.int64), [sum(len(p[0]) for p in s) for s in segments])
    # A bucket never spans two segments: each segment's first step opens one.
    opens = np.concatenate(([True], owner[1:] != owner[:-1]))
    out: dict[int, list[Cell]] = {}
    for shift in shifts:
        buckets = steps >> shift
        starts = np.flatnonzero(opens | np.concatenate(([True], buckets[1:] != buckets[:-1])))
        ends = np.append(starts[1:], len(steps))
        counts = ends - starts
        lasts = ends - 1
        lows = _earliest(values, np.minimum.reduceat(values, starts), starts, counts)
        highs = _earliest(values, np.maximum.reduceat(values, starts), starts, counts)
        columns = zip(
            owner[starts].tolist(),
            buckets[starts].tolist(),
            counts.tolist(),
            steps[starts].tolist(),
            values[starts].tolist(),
            steps[lasts].tolist(),
            values[lasts].tolist(),
            steps[lows].tolist(),
            values[lows].tolist(),
            steps[highs].tolist(),
            values[highs].tolist(),
            np.maximum.reduceat(positions, starts).tolist(),
            strict=True,
        )
        out[shift] = [
            (segment, bucket, (count, *rest), position) for segment, bucket, count, *rest, position in columns
        ]
    return out


class _Group:
    """The steps and values of one (run, attempt, metric) in a chunk, in event order."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[Part] = []


class ChartRollup:
    """The chart view's handler of step batches, gathered per chunk (ledger.views.handling runs
    `add` for each event of a chunk, then writes its `rows()` once in the chunk's transaction)."""

    gathered = True

    def __init__(self) -> None:
        self._groups: dict[tuple[str, int, str], _Group] = {}

    def add(self, event: Any, position: int) -> None:
        run_id, attempt = str(event.originator_id), event.attempt
        steps = np.array(event.steps, np.int64)
        self._group(run_id, attempt, STEPS_METRIC).parts.append((steps, None, position))
        for name, column in event.metrics.items():
            index, values = column["index"], column["values"]
            if values:
                metric_steps = steps if index is None else steps[np.array(index, np.intp)]
                self._group(run_id, attempt, name).parts.append((metric_steps, np.array(values, np.float64), position))

    def _group(self, run_id: str, attempt: int, metric: str) -> _Group:
        key = (run_id, attempt, metric)
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = _Group()
        return group

    def rows(self) -> list[tuple[Any, ...]]:
        """The rows of everything added since the last call, and forget it. Every group's
        segments (its batches cut where step order breaks) are rolled up together, the steps
        themselves at the coarsest level only; a group of several segments has their buckets
        merged in the order of their events."""
        groups, self._groups = self._groups, {}
        keys = list(groups)
        rows: list[tuple[Any, ...]] = []
        for steps_only in (False, True):
            shifts = ROLLUP_SHIFTS[-1:] if steps_only else ROLLUP_SHIFTS
            owners: list[int] = []
            segments: list[list[Part]] = []
            split: set[int] = set()
            for index, key in enumerate(keys):
                if (key[2] == STEPS_METRIC) != steps_only:
                    continue
                cut = list(_ordered_runs(groups[key].parts))
                if len(cut) > 1:
                    split.add(index)
                owners += [index] * len(cut)
                segments += cut
            if not segments:
                continue
            for shift, cells in _levels(segments, shifts).items():
                width = 1 << shift
                merged: dict[tuple[int, int], Bucket] = {}
                for segment, bucket, agg, position in cells:
                    index = owners[segment]
                    if index in split:
                        held = merged.get((index, bucket))
                        merged[(index, bucket)] = (
                            (agg, position) if held is None else (merge(held[0], agg), max(held[1], position))
                        )
                    else:
                        run_id, attempt, metric = keys[index]
                        rows.append((run_id, metric, width, bucket, attempt, *agg, position))
                for (index, bucket), (agg, position) in merged.items():
                    run_id, attempt, metric = keys[index]
                    rows.append((run_id, metric, width, bucket, attempt, *agg, position))
        return rows

    def write(self, cursor: ViewCursor, rows: list[tuple[Any, ...]]) -> None:
        if rows:
            cursor.executemany(ROLLUP_UPSERT, rows)

    def clear(self) -> None:
        self._groups = {}
