"""The read models of the series and chart views: series pages, charts and metric stats."""

from __future__ import annotations

import msgspec

__all__ = ["Chart", "ChartMetric", "ChartSeries", "MetricColumn", "MetricStats", "SeriesPage"]


class MetricColumn(msgspec.Struct, frozen=True, kw_only=True):
    """One metric of a series page: its values, and with a non-empty `index` the position within
    the page's steps that each value belongs to (empty: one value per step of the page)."""

    name: str
    values: tuple[float, ...]
    index: tuple[int, ...] = ()


class SeriesPage(msgspec.Struct, frozen=True, kw_only=True):
    """A page of a run's series, column-wise: one entry per record in steps, attempts, tokens,
    usd_micro and superseded (tokens and cost 0 where none was given), metrics by name.
    `next_from_step` continues it; None on the last page."""

    steps: tuple[int, ...]
    attempts: tuple[int, ...]
    tokens: tuple[int, ...]
    usd_micro: tuple[int, ...]
    superseded: tuple[bool, ...]
    metrics: tuple[MetricColumn, ...]
    next_from_step: int | None

    def metric(self, name: str) -> MetricColumn | None:
        """The column of metric `name`, or None when the page holds none of its values."""
        return next((column for column in self.metrics if column.name == name), None)


class MetricStats(msgspec.Struct, frozen=True, kw_only=True):
    """One metric over a run's live line of steps (those no later attempt superseded): how many
    steps hold a value, the first and last of them, the value at the last, the least and the
    greatest."""

    name: str
    count: int
    first_step: int
    last_step: int
    last: float
    min: float
    max: float


class ChartSeries(msgspec.Struct, frozen=True, kw_only=True):
    """The points of one attempt's steps in a chart, live or `superseded` (steps a later attempt
    recorded again after resuming below them): steps ascending, each a real (step, value) of the
    run, at most about the chart's width of them (the least and the greatest kept)."""

    attempt: int
    superseded: bool
    steps: tuple[int, ...]
    values: tuple[float, ...]


class ChartMetric(msgspec.Struct, frozen=True, kw_only=True):
    """One metric of a chart: `sparse` when it holds fewer values than there are steps in the
    range (eval_*: drawn as points), its series by (attempt, superseded)."""

    name: str
    sparse: bool
    series: tuple[ChartSeries, ...]


class Chart(msgspec.Struct, frozen=True, kw_only=True):
    """A run's metrics against step over [from_step, to_step], downsampled to about `width` points
    a series; `resolution` is 1 when the points came from every step, else the width in steps of
    the buckets whose first, last, least and greatest values they are."""

    run_id: str
    from_step: int
    to_step: int
    width: int
    resolution: int
    metrics: tuple[ChartMetric, ...]
